"""Screen sampler settings against the default on the same seeds, paired seed by seed.

    python bench/matchmaking_screen.py --seeds 60 --jobs 2 --variant exact_rho=true
    python bench/matchmaking_screen.py --variant exact_rho=true,settled_rho=0.985 \\
        --variant sharpness=3 --newcomer

``simulate`` averages each sampler over seeds; a change of a few percent in the
votes to a sustained rho is then lost in the spread between seeds (standard
errors of 24 to 70 votes on 60 seeds). Every variant here plays the same seeds
as the default ``MatchParams`` (and uniform pairs, which do not depend on them),
and the table gives each measure's mean, its saving against uniform pairs, and
the mean paired difference from the default with its standard error: the
figure that says whether a setting helps. ``--newcomer`` adds the newcomer run
(``votes_newcomer_10``), which doubles the time. A variant is a comma-separated
list of ``MatchParams`` fields (``name=value``; true/false for flags), or
``snapshot_votes=N``: the simulation refreshes the sampler's snapshot every N
votes while the board is still measured at its refits (``Setup.snapshot_votes``).
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena_core.matchmaking import MatchParams
from arena_core.simulation.matchmaking import Setup, run_arena, run_newcomer

#: Measures of a run, in table order.
MEASURES = (
    "votes_to_spearman_95",
    "votes_to_spearman_98",
    "votes_to_ci_50",
    "min_battles_share",
    "coverage",
    "votes_newcomer_10",
)
_SAVED = ("votes_to_spearman_95", "votes_to_spearman_98", "votes_to_ci_50")


def parse_variant(text: str) -> dict:
    """``"exact_rho=true,settled_rho=0.985"`` as MatchParams overrides, typed by the field."""
    kinds = {f.name: f.type for f in fields(MatchParams)} | {"snapshot_votes": int}
    out = {}
    for part in filter(None, text.split(",")):
        name, _, value = part.partition("=")
        if name not in kinds:
            raise SystemExit(f"unknown MatchParams field {name!r}")
        kind = kinds[name]
        if kind in (bool, "bool"):
            out[name] = value.lower() in ("1", "true", "yes")
        elif kind in (str, "str"):
            out[name] = value
        elif kind in (int, "int"):
            out[name] = int(value)
        else:
            out[name] = float(value)
    MatchParams(**{k: v for k, v in out.items() if k != "snapshot_votes"})  # refuse an invalid
    return out  # value before any run


def run_one(setup: Setup, sampler: str, seed: int, newcomer: bool) -> dict:
    run = run_arena(setup, sampler, seed)
    out = {k: run[k] for k in _SAVED} | {"min_battles_share": run["min_battles_share"]}
    out["coverage"] = run["covered"] / run["intervals"] if run["intervals"] else None
    if newcomer:
        out["votes_newcomer_10"] = run_newcomer(setup, sampler, seed)["votes_newcomer_10"]
    return out


def screen(variants: list[dict], seeds: list[int], jobs: int, newcomer: bool,
           votes: int) -> dict:  # fmt: skip
    """Per-seed results of uniform pairs, the default and each variant."""
    base = Setup(votes=votes)
    setups = [("uniform", "uniform", base), ("default", "matchmaking", base)]
    setups += [(_name(v), "matchmaking", _setup(base, v)) for v in variants]
    tasks = [(setup, sampler, s, newcomer) for _, sampler, setup in setups for s in seeds]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            runs = list(pool.map(run_one, *zip(*tasks, strict=True)))
    else:
        runs = [run_one(*task) for task in tasks]
    return {name: runs[k * len(seeds) : (k + 1) * len(seeds)]
            for k, (name, _, _) in enumerate(setups)}  # fmt: skip


def _setup(base: Setup, variant: dict) -> Setup:
    """``base`` with a variant's MatchParams overrides (``snapshot_votes`` is the Setup's)."""
    match = {k: v for k, v in variant.items() if k != "snapshot_votes"}
    setup = replace(base, match=replace(base.match, **match))
    if "snapshot_votes" in variant:
        setup = replace(setup, snapshot_votes=variant["snapshot_votes"])
    return setup


def _name(variant: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in variant.items())


def table(results: dict) -> str:
    """Means (saving against uniform) and paired differences from the default (± SE)."""
    uniform, default = results["uniform"], results["default"]
    keys = [k for k in MEASURES if all(k in r for r in default)]
    lines = ["| sampler | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name, runs in results.items():
        cells = []
        for key in keys:
            mean = _mean(runs, key)
            cell = "-" if mean is None else f"{mean:,.3f}" if mean < 10 else f"{mean:,.0f}"
            base = _mean(uniform, key)
            if key in _SAVED and mean is not None and base and name != "uniform":
                cell += f" ({1 - mean / base:.0%})"
            if name not in ("uniform", "default"):
                diff = _paired(runs, default, key)
                if diff is not None:
                    cell += f" [{diff[0]:+,.3g} ± {diff[1]:,.2g}]"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mean(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return float(np.mean(values)) if values else None


def _paired(runs: list[dict], default: list[dict], key: str) -> tuple[float, float] | None:
    """Mean and standard error of (variant - default) over the seeds both reached."""
    pairs = [(r[key], d[key]) for r, d in zip(runs, default, strict=True)
             if r.get(key) is not None and d.get(key) is not None]  # fmt: skip
    if len(pairs) < 2:
        return None
    diff = np.array([a - b for a, b in pairs], dtype=float)
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", default=[], type=parse_variant,
                        help="MatchParams overrides, e.g. exact_rho=true,settled_rho=0.985")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--votes", type=int, default=Setup().votes, help="votes per run")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--newcomer", action="store_true", help="add the newcomer run")
    args = parser.parse_args(argv)
    seeds = list(range(args.seed, args.seed + args.seeds))
    results = screen(args.variant, seeds, args.jobs, args.newcomer, args.votes)
    print(f"{args.seeds} seeds from {args.seed}, {args.votes:,} votes per run; "
          "[variant - default, paired, ± standard error]")  # fmt: skip
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
