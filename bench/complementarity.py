"""Benchmark: per-prompt complementarity, its flag rates with known truth and its speed.

    python bench/complementarity.py
    python bench/complementarity.py --seeds 500 --sizes 10:100:10000 20:500:100000 --rounds 1000

First table: the scenario of :mod:`arena_core.simulation.complementarity` (seven models,
"left" and "right" each strong on a different half of the prompts) at several sizes, each
over ``--seeds`` seeded arenas: how often pairs with nothing to gain are flagged (the
false-positive rate, with a Wilson 95% interval), how often the complementary pair is,
its true gain beside the naive and noise-corrected estimates, and the lowest share of
seeds in which a pair's interval held its true gain. ``--detail`` prints each setting's
per-pair table as well.

Second table: the time of one analysis (``--rounds`` null and bootstrap rounds) on arenas
of growing size (models:prompts:votes), strengths drawn with a 100-point spread and no
prompt effect, pairs and prompts drawn uniformly (median of ``--repeat`` runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena_core.analysis.complementarity import (
    ComplementarityParams,
    PromptVotes,
    complementarity,
)
from arena_core.simulation.complementarity import Setting, format_table, summarise
from arena_core.simulation.synthetic import Truth, normal_spread, uniform_pairs

#: Settings of the first table: (label, changes to the scenario's defaults).
SETTINGS = (
    ("dense", {}),
    ("dense, small specialty", {"specialty": 75.0}),
    ("test size", {"prompts": 40, "votes": 2400}),
    ("sparse", {"prompts": 300, "votes": 3000}),
    ("sparse, small specialty", {"prompts": 300, "votes": 3000, "specialty": 100.0}),
    ("tiered", {"prompts": 30, "votes": 6000, "gap": 100.0}),
)


def flag_table(seeds: int, rounds: int, detail: bool) -> list[str]:
    lines = ["| setting | votes per model and prompt | null pairs flagged | left/right flagged "
             "| left/right true gain | naive | oracle | lowest coverage | s per arena |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    details = []
    for label, changes in SETTINGS:
        setting = replace(Setting(), rounds=rounds, **changes)
        start = time.perf_counter()
        result = summarise(setting, range(seeds))
        per_arena = (time.perf_counter() - start) / seeds
        pair = next(p for p in result["pairs"] if p["pair"] == "left/right")
        density = 2 * setting.votes / (7 * setting.prompts)
        lines.append(f"| {label} | {density:.1f} | {_rate(result['null_flag_rate'])} "
                     f"| {_rate(result['complementary_flag_rate'])} | {pair['true_gain']:.3f} "
                     f"| {pair['naive_gain']:.3f} | {pair['oracle_gain']:.3f} "
                     f"| {min(p['coverage'] for p in result['pairs']):.2f} | {per_arena:.2f} |")  # fmt: skip
        details += ["", f"### {label}", "", format_table(result)]
    return lines + (details if detail else [])


def _rate(rate: dict) -> str:
    return f"{100 * rate['rate']:.1f}% [{100 * rate['low']:.1f}, {100 * rate['high']:.1f}] of {rate['n']}"


def speed_table(sizes, rounds: int, repeat: int) -> list[str]:
    lines = ["| models | prompts | votes | pairs measured | s per analysis |",
             "|---:|---:|---:|---:|---:|"]  # fmt: skip
    for n_models, n_prompts, n_votes in sizes:
        rng = np.random.default_rng(0)
        truth = Truth(normal_spread(n_models, 100.0, rng))
        a, b = uniform_pairs(n_models, n_votes, rng)
        votes = PromptVotes.from_arrays(a, b, truth.sample(a, b, rng),
                                        rng.integers(0, n_prompts, n_votes))  # fmt: skip
        params = ComplementarityParams(rounds=rounds)
        times, result = [], None
        for _ in range(repeat):
            start = time.perf_counter()
            result = complementarity(n_models, votes, params, rng=np.random.default_rng(1))
            times.append(time.perf_counter() - start)
        lines.append(f"| {n_models} | {n_prompts} | {n_votes} | {len(result.pairs)} "
                     f"| {statistics.median(times):.2f} |")  # fmt: skip
    return lines


def _size(text: str) -> tuple[int, int, int]:
    models, prompts, votes = (int(x) for x in text.split(":"))
    return models, prompts, votes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200, help="arenas per setting")
    parser.add_argument(
        "--rounds", type=int, default=200, help="null/bootstrap rounds (first table)"
    )
    parser.add_argument("--detail", action="store_true", help="each setting's per-pair table")
    parser.add_argument("--sizes", nargs="+", type=_size, metavar="M:P:V",
                        default=[(10, 100, 10_000), (20, 500, 100_000)])  # fmt: skip
    parser.add_argument("--speed-rounds", type=int, default=1000, help="rounds (second table)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("\n".join(flag_table(args.seeds, args.rounds, args.detail)))
    print()
    print("\n".join(speed_table(args.sizes, args.speed_rounds, args.repeat)))


if __name__ == "__main__":
    main()
