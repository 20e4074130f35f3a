"""Complementarity with known truth: is a truly complementary pair flagged, and others not?

``python -m arena_core simulate --scenario complementarity`` draws arenas of six models
whose strength depends on the prompt, votes on uniformly drawn pairs and prompts (the
half-win Bradley-Terry model of :mod:`~arena_core.simulation.synthetic`, per prompt),
and runs :func:`~arena_core.analysis.complementarity.complementarity` on them:

=======  ===================================================================
model    true strength (points around 1000)
=======  ===================================================================
left     ``+specialty`` on the first half of the prompts, ``-specialty`` on the second
right    the mirror image: the pair (left, right) is truly complementary
flat     the same on every prompt
twin     identical to flat: the pair (flat, twin) is the "identical models" case
strong   flat plus ``gap``
left2    left plus ``gap``: agrees with left on which prompts are hard
tiered   ``2 * gap`` above flat on the first half, level with it on the second
=======  ===================================================================

A pair is **null** when one of its models is at least as strong as the other on every
prompt (flat/twin, flat/strong, left/left2, flat/tiered...): a router cannot beat the
better model, and the rate at which such pairs are flagged is the false-positive rate.
Among them, flat/tiered differ on some prompts and tie on others, the case a null
centred on the pair's fitted gap would flag. The other pairs have a true gain, largest
for left/right. The true gain is the oracle gain of the true per-prompt win rates
against the rest of the field (the mean, over the models other than the two, of the
win probability on that prompt), the quantity the analysis estimates.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import asdict, dataclass, replace

import numpy as np

from arena_core.analysis.complementarity import (
    ComplementarityParams,
    PromptVotes,
    complementarity,
    oracle_gain,
)
from arena_core.ratings.scale import ANCHOR, NATURAL
from arena_core.simulation.options import COUNT, real, whole
from arena_core.simulation.synthetic import Truth, uniform_pairs

#: Seeded arenas per setting when ``--seeds`` is not given.
DEFAULT_SEEDS = 100
#: Model names, in index order (see the module docstring).
MODELS = ("left", "right", "flat", "twin", "strong", "left2", "tiered")


@dataclass(frozen=True)
class Setting:
    """One simulated arena's size and truth."""

    prompts: int = 60
    votes: int = 6000
    #: Points a specialist gains on its strong half of the prompts (and loses on the other).
    specialty: float = 150.0
    #: Points by which ``strong`` and ``left2`` exceed ``flat`` and ``left``.
    gap: float = 50.0
    draw_rate: float = 0.1
    rounds: int = 200
    min_overlap: int = 10


def true_strengths(setting: Setting) -> np.ndarray:
    """(models, prompts) true ratings in points."""
    half = np.where(np.arange(setting.prompts) < setting.prompts / 2, 1.0, -1.0)
    pattern = setting.specialty * half
    flat = np.zeros(setting.prompts)
    tiered = np.where(half > 0, 2 * setting.gap, 0.0)
    rows = (pattern, -pattern, flat, flat, flat + setting.gap, pattern + setting.gap, tiered)
    return ANCHOR + np.vstack(rows)


def true_gains(strengths: np.ndarray) -> dict[tuple[int, int], float]:
    """Each pair's oracle gain on the true per-prompt win rates against the rest of the field
    (the models other than the two), the quantity the analysis estimates."""
    n = len(strengths)
    win = 1.0 / (1.0 + np.exp(-(strengths[:, None, :] - strengths[None, :, :]) * NATURAL))
    gains = {}
    for i, j in itertools.combinations(range(n), 2):
        rest = [k for k in range(n) if k not in (i, j)]
        gains[i, j] = oracle_gain(win[i, rest].mean(axis=0), win[j, rest].mean(axis=0))
    return gains


def null_pairs(strengths: np.ndarray) -> set[tuple[int, int]]:
    """Pairs with no true gain: one model at least as strong as the other on every prompt."""
    n = len(strengths)
    return {(i, j) for i, j in itertools.combinations(range(n), 2)
            if np.all(strengths[i] >= strengths[j]) or np.all(strengths[i] <= strengths[j])}  # fmt: skip


def simulate_votes(setting: Setting, rng: np.random.Generator) -> PromptVotes:
    """Votes on uniformly drawn pairs and prompts, outcomes from the per-prompt truth."""
    strengths = true_strengths(setting)
    a, b = uniform_pairs(len(strengths), setting.votes, rng)
    prompt = rng.integers(0, setting.prompts, setting.votes)
    truth = Truth(strengths.ravel(), draw_rate=setting.draw_rate)
    outcome = truth.sample(a * setting.prompts + prompt, b * setting.prompts + prompt, rng)
    return PromptVotes.from_arrays(a, b, outcome, prompt)


def run_once(setting: Setting, seed: int) -> dict:
    """One seeded arena: per pair, its truth beside what the analysis says."""
    rng = np.random.default_rng(seed)
    strengths = true_strengths(setting)
    votes = simulate_votes(setting, rng)
    params = ComplementarityParams(min_overlap=setting.min_overlap, rounds=setting.rounds)
    result = complementarity(len(MODELS), votes, params, rng=rng)
    truth, null = true_gains(strengths), null_pairs(strengths)
    rows = {}
    for p in result.pairs:
        key = (p.a, p.b)
        rows[key] = {"null": key in null, "true_gain": truth[key], "flagged": p.flagged,
                     "naive_gain": p.naive_gain, "oracle_gain": p.oracle_gain,
                     "covered": p.gain_low <= truth[key] <= p.gain_high,

                     "spearman": p.spearman, "overlap": p.overlap}  # fmt: skip
    return {"pairs": rows, "measured": len(result.pairs), "too_few": result.too_few}


def summarise(setting: Setting, seeds) -> dict:
    """Flag rates over seeds: per pair, for the null pairs together, for left/right; the
    mean of each estimate, and how often the interval held the true gain."""
    runs = [run_once(setting, s) for s in seeds]
    pairs = []
    for key in itertools.combinations(range(len(MODELS)), 2):
        rows = [r["pairs"][key] for r in runs if key in r["pairs"]]
        if not rows:
            continue
        mean = {k: _mean([r[k] for r in rows]) for k in
                ("naive_gain", "oracle_gain", "spearman", "overlap", "flagged", "covered")}  # fmt: skip
        pairs.append({"pair": f"{MODELS[key[0]]}/{MODELS[key[1]]}", "null": rows[0]["null"],
                      "true_gain": rows[0]["true_gain"], "runs": len(rows),
                      "flag_rate": mean.pop("flagged"), "coverage": mean.pop("covered")} | mean)  # fmt: skip
    nulls = [r["pairs"][k]["flagged"] for r in runs for k in r["pairs"] if r["pairs"][k]["null"]]
    comp = [r["pairs"][(0, 1)]["flagged"] for r in runs if (0, 1) in r["pairs"]]
    return {"setting": asdict(setting), "seeds": len(runs), "pairs": pairs,
            "null_flag_rate": _rate(nulls), "complementary_flag_rate": _rate(comp)}  # fmt: skip


def _mean(values) -> float | None:
    """Mean of the finite values (a Spearman is NaN when a score column is constant)."""
    finite = [float(v) for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else None


def _rate(flags: list[bool]) -> dict:
    """Share of True with a Wilson 95% interval."""
    n, k = len(flags), int(sum(flags))
    if n == 0:
        return {"rate": None, "low": None, "high": None, "n": 0}
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return {"rate": p, "low": float(centre - half), "high": float(centre + half), "n": n}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = Setting()
    group = parser.add_argument_group("complementarity scenario")
    group.add_argument(
        "--comp-prompts", type=whole(2), default=d.prompts, help="prompts in the set"
    )
    group.add_argument("--comp-votes", type=COUNT, default=d.votes, help="votes per arena")
    group.add_argument("--comp-specialty", type=real(), default=d.specialty,
                       help="points a specialist gains on its half of the prompts")  # fmt: skip
    group.add_argument("--comp-rounds", type=COUNT, default=d.rounds,
                       help="null and bootstrap rounds of the analysis")  # fmt: skip


def run(args) -> dict:
    setting = replace(Setting(), prompts=args.comp_prompts, votes=args.comp_votes,
                      specialty=args.comp_specialty, rounds=args.comp_rounds)  # fmt: skip
    return summarise(setting, range(args.seed, args.seed + (args.seeds or DEFAULT_SEEDS)))


def format_table(result: dict) -> str:
    s = result["setting"]
    lines = [f"{s['votes']} votes over {s['prompts']} prompts, specialty {s['specialty']:g} "
             f"points, gap {s['gap']:g}, draw rate {s['draw_rate']:g}, {s['rounds']} rounds; "
             f"{result['seeds']} seeds. Gains in win rate against the rest of the field; "
             "each column the mean over seeds (flagged, covers: the share of seeds).", "",
             f"Null pairs flagged: {_pct(result['null_flag_rate'])}; left/right flagged: "
             f"{_pct(result['complementary_flag_rate'])}.", "",
             "| pair | null | true gain | naive gain | oracle gain | flagged | interval covers "
             "truth | Spearman | overlap |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for p in result["pairs"]:
        lines.append(f"| {p['pair']} | {'yes' if p['null'] else 'no'} | {p['true_gain']:.4f} "
                     f"| {p['naive_gain']:.4f} | {p['oracle_gain']:.4f} | {p['flag_rate']:.2f} "
                     f"| {p['coverage']:.2f} | {_num(p['spearman'], '+.2f')} | {p['overlap']:.0f} |")  # fmt: skip
    return "\n".join(lines)


def _num(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _pct(rate: dict) -> str:
    if rate["rate"] is None:
        return "-"
    return (f"{100 * rate['rate']:.1f}% [{100 * rate['low']:.1f}, {100 * rate['high']:.1f}] "
            f"of {rate['n']}")  # fmt: skip
