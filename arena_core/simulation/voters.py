"""Anomalous voters: how often the test flags a campaign, how often an honest voter, and what it saves.

A synthetic arena with known true ratings (:mod:`~arena_core.simulation.synthetic`)
gets honest voters, who vote as the half-win Bradley-Terry model says (each
optionally with tastes of their own), and a small campaign: a few voters who
vote only on battles their model is in (they skip the others) and always for
it. All votes are interleaved at random, as they would arrive, and the
anomalous-voter test (:func:`~arena_core.integrity.anomaly.sequential_test`,
the very function the Space and the CLI replay run) is applied.

Reported per campaign target (the weakest, the middle and the strongest model):
the true positive rate (campaign voters flagged), the false positive rate
(honest voters flagged), the vote count at which campaigners were flagged, and
the target's Bradley-Terry rating with the campaign counted and with the
flagged voters' votes left out, against the honest votes alone.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from arena_core.integrity.anomaly import AnomalyParams, Detection, orient, sequential_test
from arena_core.integrity.pvalue import tiebreak
from arena_core.ratings import BTParams, bradley_terry, count_pairs
from arena_core.ratings.counts import A_WINS, B_WINS
from arena_core.simulation.options import COUNT, MODELS, NON_NEGATIVE, real
from arena_core.simulation.synthetic import Truth, evenly_spread, uniform_pairs

#: First simulated vote time: 2026-01-01T00:00:00Z, in microseconds since the epoch.
START_US = 1_767_225_600_000_000
#: Seeded arenas per target when --seeds is not given (about 7 s on this 2-core machine).
DEFAULT_SEEDS = 100
#: Campaign targets reported, as positions in the true order (0 = weakest).
TARGETS = ("weakest", "middle", "strongest")


@dataclass(frozen=True)
class Population:
    """Who votes in one simulated arena."""

    n_models: int = 10
    #: Points between the weakest and the strongest model.
    spread: float = 400.0
    honest: int = 300
    #: Mean votes per honest voter (geometric: many voters vote a little, a few a lot).
    honest_mean: float = 20.0
    #: Standard deviation of each honest voter's own taste around the true ratings, in points.
    taste: float = 0.0
    campaigners: int = 5
    campaign_votes: int = 40


@dataclass(frozen=True)
class Arena:
    """One simulated log in replay order; voters ``< honest`` are honest, the rest campaign."""

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    voter: np.ndarray
    #: When each vote was logged (microseconds; votes a few seconds apart).
    ts_us: np.ndarray
    honest: int
    truth: Truth


def simulate_arena(pop: Population, target: int, rng: np.random.Generator) -> Arena:
    """Draw the honest votes, the campaign for model ``target``, and interleave them."""
    truth = Truth(evenly_spread(pop.n_models, pop.spread))
    per_voter = rng.geometric(1.0 / pop.honest_mean, pop.honest)
    h_voter = np.repeat(np.arange(pop.honest), per_voter)
    h_a, h_b = uniform_pairs(pop.n_models, len(h_voter), rng)
    # Each honest voter's own ratings: the truth plus their taste, one "virtual model" per voter.
    own = truth.ratings[None, :] + rng.normal(0.0, pop.taste, (pop.honest, pop.n_models))
    tastes = Truth(own.ravel(), truth.draw_rate, truth.both_bad_share)
    h_out = tastes.sample(h_voter * pop.n_models + h_a, h_voter * pop.n_models + h_b, rng)
    n_c = pop.campaigners * pop.campaign_votes
    c_voter = pop.honest + np.repeat(np.arange(pop.campaigners), pop.campaign_votes)
    others = np.delete(np.arange(pop.n_models), target)
    rival = others[rng.integers(0, len(others), n_c)]
    target_is_a = rng.random(n_c) < 0.5
    c_a = np.where(target_is_a, target, rival)
    c_b = np.where(target_is_a, rival, target)
    c_out = np.where(target_is_a, A_WINS, B_WINS)
    order = rng.permutation(len(h_voter) + n_c)
    ts_us = START_US + np.cumsum(rng.integers(1, 5000, len(order))) * 1000
    cat = np.concatenate
    return Arena(cat([h_a, c_a])[order], cat([h_b, c_b])[order], cat([h_out, c_out])[order],
                 cat([h_voter, c_voter])[order], ts_us, pop.honest, truth)  # fmt: skip


def flag_voters(arena: Arena, params: AnomalyParams | None = None) -> tuple[Detection, np.ndarray]:
    """The test on a simulated log, as the live app would have written it.

    The live app writes every vote of an already-flagged voter with a flag, and
    flagged votes stay out of the other voters' history. Which votes those are
    depends on the test itself, so the log "as written" is found by repeating
    the test until the flags it implies no longer change (each round settles at
    least the earliest remaining flag, in time order). Returns the detection on
    that log and the mask of votes written flagged.
    """
    params = params or AnomalyParams()
    n = len(arena.truth.ratings)
    pair = np.minimum(arena.a, arena.b) * n + np.maximum(arena.a, arena.b)
    outcome = orient(arena.outcome, arena.a > arena.b)
    tie = tiebreak(arena.ts_us)
    number = _vote_number(arena.voter)
    written = np.zeros(len(arena.a), dtype=bool)
    while True:
        det = sequential_test(pair, outcome, arena.voter, ~written, tie, params)
        limit = np.array(
            [det.flagged_at.get(v, len(number) + 1) for v in range(arena.voter.max() + 1)]
        )
        after = number > limit[arena.voter]
        if np.array_equal(after, written):
            return det, written
        written = after


def _vote_number(voter: np.ndarray) -> np.ndarray:
    """1 for each voter's first vote, 2 for the second... (rows in time order)."""
    order = np.argsort(voter, kind="stable")
    v = voter[order]
    starts = np.r_[True, v[1:] != v[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(len(v)), 0))
    number = np.empty(len(v), dtype=np.int64)
    number[order] = np.arange(len(v)) - first + 1
    return number


def _rating(arena: Arena, keep: np.ndarray, model: int) -> float:
    n = len(arena.truth.ratings)
    counts = count_pairs(n, arena.a[keep], arena.b[keep], arena.outcome[keep])
    return float(bradley_terry(n, counts, None, BTParams())[model])


def run_once(pop: Population, target: int, seed: int, params: AnomalyParams) -> dict:
    """One seeded arena: who was flagged, and the target's rating three ways."""
    arena = simulate_arena(pop, target, np.random.default_rng(seed))
    det, _ = flag_voters(arena, params)
    flagged = np.array(sorted(det.flagged_at), dtype=np.int64)
    honest_votes = arena.voter < arena.honest
    return {
        "true_positives": int((flagged >= arena.honest).sum()),
        "false_positives": int((flagged < arena.honest).sum()),
        "flagged_at": [j for v, j in det.flagged_at.items() if v >= arena.honest],
        "honest_only": _rating(arena, honest_votes, target),
        "counted": _rating(arena, np.ones(len(arena.a), dtype=bool), target),
        "detected": _rating(arena, ~det.mask, target),
        "truth": float(arena.truth.ratings[target]),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = Population()
    group = parser.add_argument_group("voters scenario")
    group.add_argument(
        "--voters-models", type=MODELS, default=d.n_models, help="models in the arena"
    )
    group.add_argument(
        "--voters-spread", type=NON_NEGATIVE, default=d.spread, help="true rating spread (points)"
    )
    group.add_argument("--voters-honest", type=COUNT, default=d.honest, help="honest voters")
    group.add_argument(
        "--voters-honest-mean",
        type=real(1.0),
        default=d.honest_mean,
        help="mean votes per honest voter (geometric)",
    )
    group.add_argument(
        "--voters-taste",
        type=NON_NEGATIVE,
        default=d.taste,
        help="sd of each honest voter's own taste around the truth (points)",
    )
    group.add_argument(
        "--voters-campaigners", type=COUNT, default=d.campaigners, help="campaign voters"
    )
    group.add_argument(
        "--voters-campaign-votes",
        type=COUNT,
        default=d.campaign_votes,
        help="votes per campaign voter",
    )
    group.add_argument("--voters-alpha", type=real(0.0, 1.0, above=True, below=True), default=AnomalyParams.alpha,
                       help="the test's false-positive budget per voter (the Space uses the default)")  # fmt: skip


def run(args) -> dict:
    pop = Population(args.voters_models, args.voters_spread, args.voters_honest, args.voters_honest_mean,
                     args.voters_taste, args.voters_campaigners, args.voters_campaign_votes)  # fmt: skip
    params = AnomalyParams(alpha=args.voters_alpha)
    seeds = range(args.seed, args.seed + (args.seeds or DEFAULT_SEEDS))
    positions = {"weakest": 0, "middle": pop.n_models // 2, "strongest": pop.n_models - 1}
    rows = []
    for name in TARGETS:
        runs = [run_once(pop, positions[name], seed, params) for seed in seeds]
        at = [j for r in runs for j in r["flagged_at"]]
        mean = {
            k: float(np.mean([r[k] for r in runs]))
            for k in ("honest_only", "counted", "detected", "truth")
        }
        rows.append({
            "target": name, "true_rating": mean["truth"],
            "tpr": sum(r["true_positives"] for r in runs) / (pop.campaigners * len(runs)),
            "fpr": sum(r["false_positives"] for r in runs) / (pop.honest * len(runs)),
            "false_positives": sum(r["false_positives"] for r in runs),
            "median_flagged_at": float(np.median(at)) if at else None,
            "gain_counted": mean["counted"] - mean["honest_only"],
            "gain_detected": mean["detected"] - mean["honest_only"],
        })  # fmt: skip
    return {"population": vars(pop) | {"alpha": params.alpha, "checks": list(params.checks)},
            "seeds": len(seeds), "rows": rows}  # fmt: skip


def format_table(result: dict) -> str:
    pop = result["population"]
    head = (f"{pop['honest']} honest voters (~{pop['honest_mean']:g} votes each, taste sd "
            f"{pop['taste']:g}) and {pop['campaigners']} campaigners x {pop['campaign_votes']} votes "
            f"for one model; {pop['n_models']} models over {pop['spread']:g} points; alpha "
            f"{pop['alpha']:g}; {result['seeds']} seeds")  # fmt: skip
    lines = [head, "",
             "| target | TPR | FPR (honest flagged) | flagged at vote (median) | rating gain, counted | rating gain, after the test |",
             "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in result["rows"]:
        at = "-" if r["median_flagged_at"] is None else f"{r['median_flagged_at']:g}"
        lines.append(f"| {r['target']} | {r['tpr']:.3f} | {r['fpr']:.4f} ({r['false_positives']}) | {at} "
                     f"| {r['gain_counted']:+.1f} | {r['gain_detected']:+.1f} |")  # fmt: skip
    return "\n".join(lines)
