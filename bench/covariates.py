"""Benchmark: the covariate Bradley-Terry fit and the judges' consensus fit, by size.

    python bench/covariates.py
    python bench/covariates.py --rows 100000 1000000 --covariates 1 4 8 --repeat 3

For each size, votes are drawn with known ratings and coefficients
(:mod:`arena_core.simulation.synthetic`) and fitted (median of ``--repeat``
runs). Continuous covariates (style differences) are fitted row by row; discrete
ones (an A-side term, per-judge position terms) are also timed after
:meth:`~arena_core.ratings.covariates.VoteRows.aggregated`, merge included.
The largest coefficient error (in standard deviations) is printed as a check.
Then the judges' consensus fit (:mod:`arena_core.judges.consensus`) at a few
panel sizes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena_core.judges.consensus import JudgeVotes, consensus_bradley_terry
from arena_core.ratings.covariates import VoteRows, covariate_bradley_terry
from arena_core.ratings.scale import NATURAL
from arena_core.simulation.synthetic import Truth, normal_spread, uniform_pairs


def _votes(n_models, rows, k, discrete, rng):
    truth = normal_spread(n_models, 150, rng)
    a, b = uniform_pairs(n_models, rows, rng)
    if discrete:  # an A-side constant, and k judges' own extra edge (judge 0 the reference)
        judge = rng.integers(0, k, rows)
        x = np.column_stack([np.ones(rows)] + [(judge == j) * 1.0 for j in range(1, k)])
    else:
        x = rng.normal(0, 1, (rows, k))
    beta = rng.normal(0, 0.2, k)
    outcome = Truth(np.r_[truth[a] - truth[b] + x @ beta / NATURAL, 0.0]).sample(
        np.arange(rows), np.full(rows, rows), rng)  # fmt: skip
    return VoteRows.from_outcomes(a, b, outcome, x), beta / NATURAL


def _time(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def covariate_table(sizes, ks, n_models, repeat, rng) -> list[str]:
    lines = ["| rows | covariates | kind | fit (s) | aggregated rows | merge + fit (s) | max error (sd) |",
             "|---:|---:|---|---:|---:|---:|---:|"]  # fmt: skip
    for rows in sizes:
        for k in ks:
            for discrete in (False, True):
                data, beta = _votes(n_models, rows, k, discrete, rng)
                seconds, fit = _time(lambda d=data: covariate_bradley_terry(n_models, d), repeat)
                error = np.max(np.abs(fit.coef - beta) / fit.coef_sd)
                merged = "-", "-"
                if discrete:
                    t, _ = _time(lambda d=data: covariate_bradley_terry(n_models, d.aggregated()),
                                   repeat)  # fmt: skip
                    merged = f"{data.aggregated().n_rows}", f"{t:.2f}"
                kind = "discrete" if discrete else "continuous"
                lines.append(f"| {rows:,} | {k} | {kind} | {seconds:.2f} | {merged[0]} | "
                             f"{merged[1]} | {error:.1f} |")  # fmt: skip
    return lines


def consensus_table(panels, n_models, repeat, rng) -> list[str]:
    lines = ["| judges | verdicts | parameters | fit (s) |", "|---:|---:|---:|---:|"]
    for judges, battles in panels:
        count = judges * battles * 2
        data, _ = _votes(n_models, count, 1, False, rng)
        judge = np.repeat(np.arange(judges), battles * 2)
        x = np.column_stack([(judge == j) * 1.0 for j in range(judges)]
                            + [(judge == j) * data.x[:, 0] for j in range(judges)])  # fmt: skip
        rows = VoteRows(data.a, data.b, data.score, x, data.weight, data.score_sq)
        votes = JudgeVotes(judge, judges, rows)
        seconds, _ = _time(lambda v=votes: consensus_bradley_terry(n_models, v), repeat)
        size = n_models * (judges + 1) + judges - 1 + x.shape[1]
        lines.append(f"| {judges} | {count:,} | {size} | {seconds:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--covariates", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"Covariate fit, {args.models} models, median of {args.repeat} runs:\n")
    print("\n".join(covariate_table(args.rows, args.covariates, args.models, args.repeat, rng)))
    print(f"\nJudges' consensus fit, {args.models} models, judges x battles in both orders, "
          "a position and a style term per judge:\n")  # fmt: skip
    panels = [(3, 2000), (6, 2000), (6, 20_000)]
    print("\n".join(consensus_table(panels, args.models, args.repeat, rng)))


if __name__ == "__main__":
    main()
