"""Benchmark: one model's report (``python -m arena_core model``) on a large synthetic log.

    nice -n 10 python bench/model_report.py --votes 1000000

Generates a log with known true ratings (bench/synth.py, 20 models), writes it as
Parquet, reads it once, then times each stage of :func:`model_report` for one model
(median of ``--repeat`` runs) and prints a table: the goal is seconds, not minutes,
at a million votes (the history fits aggregated counts at 40 snapshots, not rows).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import simulate, write_parquet

from arena_core.analysis.model_report import MODEL_COLUMNS, model_report
from arena_core.analysis.model_stats import bt_history, elo_history
from arena_core.leaderboard import select_votes
from arena_core.votes.read import read_votes

ARENA = "synthetic"


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    frames, _ = simulate(args.votes)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_parquet(frames, Path(tmp))
        start = time.perf_counter()
        votes = read_votes(path, columns=MODEL_COLUMNS)
        read_s = time.perf_counter() - start
    sel = select_votes(votes, ARENA)
    n, battles = len(sel.entrants), (sel.a, sel.b, sel.outcome)
    rows = [
        ("read Parquet (once)", read_s),
        ("sequential Elo history", timed(lambda: elo_history(n, battles, 0), args.repeat)),
        ("Bradley-Terry history (40 fits)", timed(lambda: bt_history(n, battles, 0), args.repeat)),
        ("whole report", timed(lambda: model_report(votes, ARENA, "model-00"), args.repeat)),
    ]
    print(f"{len(votes):,} votes, {n} models; median of {args.repeat} runs")
    print(f"{'stage':<34}{'seconds':>9}")
    for name, seconds in rows:
        print(f"{name:<34}{seconds:>9.2f}")


if __name__ == "__main__":
    main()
