"""Benchmark: replaying a large vote log, against FastChat's recipe on the same data.

    python bench/replay.py --votes 1000000
    python bench/replay.py --votes 10000000 --no-jsonl --no-fastchat

Generates a synthetic log with known true ratings (bench/synth.py), writes it as
JSONL shards and as Parquet, then times each stage of a replay (median of
``--repeat`` runs) and the peak memory of a whole replay in a fresh process.
With fschat installed (see bench/README.md), it also times FastChat's
``compute_elo_mle_with_tie`` (one fit plus 100 bootstrap fits, as its
leaderboard does) and ``compute_elo`` on the same battles, and prints the
speed ratio and the largest rating difference.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import simulate, write_jsonl, write_parquet

from arena_core.leaderboard import (
    BOARD_COLUMNS,
    BoardParams,
    board_from_votes,
    compute_board,
    select_votes,
)
from arena_core.ratings.bt import BTParams, bootstrap_bradley_terry, bradley_terry
from arena_core.ratings.counts import count_pairs
from arena_core.ratings.elo import sequential_elo
from arena_core.ratings.posterior import posterior_bradley_terry
from arena_core.votes.read import read_votes

ARENA = "synthetic"
#: Our vote strings to FastChat's winner strings.
WINNERS = {"a": "model_a", "b": "model_b", "tie": "tie", "both_bad": "tie (bothbad)"}
#: Run in a fresh interpreter to measure a whole replay's peak memory.
#: (VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec.)
MEMORY_PROBE = """
import re, sys, time
sys.path.insert(0, {root!r})
from arena_core.leaderboard import BOARD_COLUMNS, board_from_votes
from arena_core.votes.read import read_votes
start = time.perf_counter()
board = board_from_votes(read_votes({path!r}, columns=BOARD_COLUMNS), {arena!r})
peak_kb = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
print(time.perf_counter() - start, peak_kb / 1024)
"""


def timed(fn, repeat: int):
    """Median seconds of ``repeat`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_memory(path: Path) -> tuple[float, float]:
    code = MEMORY_PROBE.format(
        root=str(Path(__file__).resolve().parent.parent), path=str(path), arena=ARENA
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, mb = out.stdout.split()
    return float(seconds), float(mb)


def ours(folder: Path, label: str, repeat: int, rows: list) -> None:
    """Time reading and the whole replay of one format."""
    t_read, votes = timed(lambda: read_votes(folder, columns=BOARD_COLUMNS), repeat)
    t_all, _ = timed(
        lambda: board_from_votes(read_votes(folder, columns=BOARD_COLUMNS), ARENA), repeat
    )
    _, mb = peak_memory(folder)
    rows.append((f"read log ({label})", t_read, ""))
    rows.append((f"whole replay from {label}, default board", t_all, f"peak {mb:.0f} MB"))
    return votes


def stages(votes, repeat: int, rows: list, rounds: int) -> dict:
    params = BoardParams()
    t, sel = timed(lambda: select_votes(votes, ARENA), repeat)
    rows.append(("select arena, index models", t, ""))
    n = len(sel.entrants)
    prior = [e.prior_rating for e in sel.entrants]
    t, elo = timed(lambda: sequential_elo(n, (sel.a, sel.b, sel.outcome), prior), repeat)
    rows.append(("sequential Elo", t, ""))
    t, counts = timed(lambda: count_pairs(n, sel.a, sel.b, sel.outcome), repeat)
    rows.append(("aggregate pair counts", t, ""))
    t, fit = timed(lambda: bradley_terry(n, counts, prior), repeat)
    rows.append(("Bradley-Terry fit", t, ""))
    t, _ = timed(lambda: posterior_bradley_terry(n, counts, prior), repeat)
    rows.append(("posterior ratings and intervals, spread fitted (default)", t, ""))
    mle = BTParams(prior_weight=0)
    t, _ = timed(lambda: bootstrap_bradley_terry(n, counts, None, mle, rounds=1000), repeat)
    rows.append(("bootstrap CIs, 1000 rounds (--prior-weight 0)", t, ""))
    t, _ = timed(lambda: bootstrap_bradley_terry(n, counts, None, mle, rounds=100), repeat)
    rows.append(("bootstrap CIs, 100 rounds (--prior-weight 0)", t, ""))
    no_prior = BTParams(prior_weight=0)
    t_fit100, _ = timed(lambda: (bradley_terry(n, counts, None, no_prior),
                                 bootstrap_bradley_terry(n, counts, None, no_prior, rounds=rounds)),
                        repeat)  # fmt: skip
    rows.append((f"BT fit + {rounds} bootstraps, no prior (FastChat's job)", t_fit100, ""))
    compute_board(sel.entrants, elo, counts, params)
    ids = [e.id for e in sel.entrants]
    mle = bradley_terry(n, counts, None, BTParams(prior_weight=0))
    return {"ids": ids, "mle": mle, "fit": fit, "t_fit100": t_fit100, "counts": counts}


def fastchat(frame, rounds: int, rows: list, ours_result: dict) -> None:
    try:
        sys.modules.setdefault("fastchat.model.model_registry", types.ModuleType("model_registry"))
        sys.modules["fastchat.model.model_registry"].get_model_info = None
        from fastchat.serve.monitor import elo_analysis
    except ImportError as exc:
        print(f"FastChat not installed ({exc}); see bench/README.md", file=sys.stderr)
        return
    battles = frame[["model_a", "model_b"]].copy()
    battles["winner"] = frame["vote"].map(WINNERS)
    start = time.perf_counter()
    fc = elo_analysis.compute_elo_mle_with_tie(battles)
    t_fit = time.perf_counter() - start
    start = time.perf_counter()
    elo_analysis.get_bootstrap_result(battles, elo_analysis.compute_elo_mle_with_tie, rounds)
    t_boot = time.perf_counter() - start
    start = time.perf_counter()
    elo_analysis.compute_elo(battles)
    t_elo = time.perf_counter() - start
    ids, mle = ours_result["ids"], ours_result["mle"]
    diff = max(abs(fc[m] - mle[k]) for k, m in enumerate(ids))
    total = t_fit + t_boot
    rows.append(("FastChat compute_elo (sequential, K=4)", t_elo, "1 run"))
    rows.append(("FastChat compute_elo_mle_with_tie, 1 fit", t_fit, "1 run"))
    rows.append((f"FastChat fit + {rounds} bootstrap fits", total, "1 run"))
    ratio = total / ours_result["t_fit100"]
    rows.append((f"speed-up, same job (fit + {rounds} bootstraps)", None, f"{ratio:,.0f}x"))
    whole = total / ours_result["t_replay"]
    rows.append(("speed-up, our whole Parquet replay (default board) vs its fit + bootstraps",
                 None, f"{whole:,.0f}x"))  # fmt: skip
    rows.append(("largest |ours (prior 0) - FastChat| rating gap", None, f"{diff:.3f} points"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fastchat-rounds", type=int, default=100)
    parser.add_argument("--no-fastchat", action="store_true")
    parser.add_argument("--no-jsonl", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    frames, truth = simulate(args.votes, args.models, args.seed)
    rows: list = []
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        tmp = Path(tmp)
        write_parquet(frames, tmp / "parquet")
        votes = ours(tmp / "parquet", "Parquet", args.repeat, rows)
        if not args.no_jsonl:
            write_jsonl(frames, tmp / "jsonl")
            ours(tmp / "jsonl", "JSONL, 4 shards", args.repeat, rows)
        result = stages(votes, args.repeat, rows, args.fastchat_rounds)
        result["t_replay"] = next(
            r[1] for r in rows if r[0].startswith("whole replay from Parquet")
        )
    if not args.no_fastchat:
        battles = pd.concat([f[["model_a", "model_b", "vote"]] for f in frames], ignore_index=True)
        fastchat(battles, args.fastchat_rounds, rows, result)
    err = np.abs(result["mle"] - truth)
    rows.append(("largest |ours (prior 0) - true rating|", None, f"{err.max():.2f} points"))
    print_table(args, rows)
    if args.json:
        Path(args.json).write_text(json.dumps([list(r) for r in rows], indent=1))


def print_table(args, rows) -> None:
    print(f"\n{args.votes:,} votes, {args.models} models, median of {args.repeat} runs\n")
    print("| stage | seconds | note |\n|---|---:|---|")
    for name, seconds, note in rows:
        shown = "" if seconds is None else f"{seconds:.3f}"
        print(f"| {name} | {shown} | {note} |")


if __name__ == "__main__":
    main()
