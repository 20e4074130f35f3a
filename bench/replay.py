"""Benchmark: replaying a large vote log, against FastChat's recipe on the same data.

    python bench/replay.py --votes 1000000
    python bench/replay.py --votes 10000000 --no-jsonl --no-fastchat
    python bench/replay.py --cli-only --data /tmp/speed-data

Generates a synthetic log with known true ratings (bench/synth.py), writes it as
JSONL shards and as Parquet (with ``--data``, once, reused by later runs), then
times what a researcher runs: the whole CLI (``python -m arena_core leaderboard
... --format json``) in a fresh process, from Parquet, from the JSONL shards, and
from the same shards with 0.2% of their lines damaged (median of ``--repeat``
runs, wall and CPU seconds, with the load average, since the machine may be
shared), and the sequential-Elo replay in a fresh process with the plain loop and
with the compiled one at 1M and 10M votes (what compiling costs against what it saves).
Without ``--cli-only`` it also times each stage of a replay in-process and the
peak memory of a whole replay. With fschat importable (see bench/requirements.txt),
it times FastChat's ``compute_elo_mle_with_tie`` (one fit, and with the stages
100 bootstrap fits, as its leaderboard does) and ``compute_elo`` on the same
battles, and prints the speed ratios and the largest rating difference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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

from runs import comparable, timed_run
from synth import damage_jsonl, simulate, true_ratings, write_jsonl, write_parquet

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
#: Run in a fresh interpreter to measure a whole replay's peak memory (bench/runs.py's
#: ``peak_rss_mb``: VmHWM, which a child does not inherit from its parent).
MEMORY_PROBE = """
import sys, time
sys.path[:0] = [{root!r}, {bench!r}]
from arena_core.leaderboard import BOARD_COLUMNS, board_from_votes
from arena_core.votes.read import read_votes
from runs import peak_rss_mb
start = time.perf_counter()
board = board_from_votes(read_votes({path!r}, columns=BOARD_COLUMNS), {arena!r})
print(time.perf_counter() - start, peak_rss_mb())
"""


ROOT = Path(__file__).resolve().parent.parent
#: Share of lines damaged in the damaged copy of the JSONL shards (issue 16's case).
DAMAGED_SHARE = 0.002
#: Run in a fresh interpreter: one sequential-Elo replay of synthetic votes, the compiled
#: loop forced on or off, timed from before the rating module is imported (its import, and
#: the compiler's with it, is part of what a fresh process pays), after the votes are made.
ELO_PROBE = """
import sys, time
sys.path.insert(0, {root!r})
import numpy as np
rng = np.random.default_rng(0)
a = rng.integers(0, 20, {votes})
b = (a + rng.integers(1, 20, {votes})) % 20
outcome = rng.integers(0, 4, {votes})
start = time.perf_counter()
import arena_core.ratings.elo as elo
elo.COMPILED_FROM = elo.COMPILED_WHEN_LOADED_FROM = {threshold}
elo.sequential_elo(20, (a, b, outcome))
print(time.perf_counter() - start)
"""


def fresh(args: list[str], repeat: int) -> tuple[float, float, str]:
    """Median wall and CPU seconds of ``repeat`` fresh processes running ``args`` (a
    ``--format json`` board), and the last one's stdout (checked to be the same board every
    time, what differs from run to run aside: bench/runs.py's ``comparable``)."""
    walls, cpus, outputs, out = [], [], set(), ""
    for _ in range(repeat):
        wall, cpu, out = timed_run(args, ROOT)
        walls.append(wall)
        cpus.append(cpu)
        outputs.add(comparable(out))
    if len(outputs) != 1:
        raise RuntimeError(f"{args}: runs printed different boards")
    return statistics.median(walls), statistics.median(cpus), out


def cli(folder: Path, repeat: int) -> tuple[float, float, dict]:
    args = [sys.executable, "-m", "arena_core", "leaderboard", "--votes", str(folder),
            "--arena", ARENA, "--format", "json"]  # fmt: skip
    wall, cpu, out = fresh(args, repeat)
    return wall, cpu, json.loads(out)


def cli_rows(data: Path, repeat: int, rows: list, jsonl: bool) -> dict:
    """The whole CLI in fresh processes, from each format of the same votes."""
    results = {}
    formats = [("Parquet", data / "parquet")]
    if jsonl:
        formats += [("clean JSONL, 4 shards", data / "jsonl"),
                    (f"JSONL, 4 shards, {DAMAGED_SHARE:.1%} of lines damaged", data / "damaged")]  # fmt: skip
    for label, folder in formats:
        wall, cpu, board = cli(folder, repeat)
        results[label] = (wall, board)
        rows.append((f"whole CLI from {label}, fresh process", wall,
                     f"CPU {cpu:.2f} s; {board['votes_used']:,} votes used, "
                     f"skipped {board['skipped'] or 'none'}"))  # fmt: skip
    if jsonl:
        (clean, b_clean), (damaged, b_damaged) = list(results.values())[1:]
        same = [r["model_id"] for r in b_clean["rows"]] == [
            r["model_id"] for r in b_damaged["rows"]
        ]
        rows.append(("damaged JSONL / clean JSONL, whole CLI", None,
                     f"{damaged / clean:.2f}x (same ranking: {same})"))  # fmt: skip
    return results


def elo_rows(sizes: list[int], repeat: int, rows: list) -> None:
    """Sequential Elo in a fresh process, plain loop against the compiled one (llvmlite's
    import and the compile included)."""
    for votes in sizes:
        for label, threshold in (
            ("plain Python loop", 10**15),
            ("compiled loop (llvmlite's import, the compile, the loop)", 0),
        ):
            code = ELO_PROBE.format(root=str(ROOT), votes=votes, threshold=threshold)
            times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                          text=True, check=True).stdout) for _ in range(repeat)]  # fmt: skip
            rows.append((f"sequential Elo, {votes:,} votes, fresh process: {label}",
                         statistics.median(times), f"median of {repeat}"))  # fmt: skip


def make_data(args, data: Path) -> None:
    """Write the synthetic log under ``data`` unless a run with the same settings did."""
    stamp = data / "settings.json"
    settings = {"votes": args.votes, "models": args.models, "seed": args.seed,
                "jsonl": not args.no_jsonl, "version": 1}  # fmt: skip
    if stamp.exists() and json.loads(stamp.read_text()) == settings:
        return
    for old in ("parquet", "jsonl", "damaged"):  # write_jsonl appends: start from nothing
        shutil.rmtree(data / old, ignore_errors=True)
    frames, _ = simulate(args.votes, args.models, args.seed)
    write_parquet(frames, data / "parquet")
    if not args.no_jsonl:
        write_jsonl(frames, data / "jsonl")
        for shard in sorted((data / "jsonl").glob("*.jsonl")):
            damage_jsonl(shard, data / "damaged" / shard.name, DAMAGED_SHARE, args.seed)
    stamp.write_text(json.dumps(settings))


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
        root=str(ROOT), bench=str(ROOT / "bench"), path=str(path), arena=ARENA
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


def fastchat(battles, rounds: int, rows: list, ours_result: dict | None, cli_wall: float,
             repeat: int = 1) -> None:  # fmt: skip
    """FastChat's fit on the same battles: one fit (median of ``repeat``: on a shared
    machine a single fit took 2.0 to 4.7 s in three runs of this script within two minutes)
    against our whole CLI, and (with the in-process stages) its bootstrap and sequential
    Elo, with the rating gap."""
    try:
        sys.modules.setdefault("fastchat.model.model_registry", types.ModuleType("model_registry"))
        sys.modules["fastchat.model.model_registry"].get_model_info = None
        import sklearn.linear_model  # noqa: F401 - imported inside the fit: not timed there
        from fastchat.serve.monitor import elo_analysis
    except ImportError as exc:
        print(f"FastChat not importable ({exc}); see bench/requirements.txt", file=sys.stderr)
        return
    frame = battles[["model_a", "model_b"]].copy()
    frame["winner"] = battles["vote"].map(WINNERS)
    fits = []
    for _ in range(repeat):
        start = time.perf_counter()
        fc = elo_analysis.compute_elo_mle_with_tie(frame)
        fits.append(time.perf_counter() - start)
    t_fit = statistics.median(fits)
    rows.append(("FastChat compute_elo_mle_with_tie, 1 fit", t_fit,
                 f"median of {repeat}, in-process ({min(fits):.2f}-{max(fits):.2f})"))  # fmt: skip
    rows.append(("one FastChat fit / our whole CLI from Parquet (fresh process)", None,
                 f"{t_fit / cli_wall:.1f}x"))  # fmt: skip
    if ours_result is None:
        return
    start = time.perf_counter()
    elo_analysis.get_bootstrap_result(frame, elo_analysis.compute_elo_mle_with_tie, rounds)
    t_boot = time.perf_counter() - start
    start = time.perf_counter()
    elo_analysis.compute_elo(frame)
    t_elo = time.perf_counter() - start
    ids, mle = ours_result["ids"], ours_result["mle"]
    diff = max(abs(fc[m] - mle[k]) for k, m in enumerate(ids))
    total = t_fit + t_boot
    rows.append(("FastChat compute_elo (sequential, K=4)", t_elo, "1 run"))
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
    parser.add_argument("--cli-only", action="store_true",
                        help="only the fresh-process rows and FastChat's one fit")  # fmt: skip
    parser.add_argument("--data", help="keep the generated log in this folder and reuse it")
    parser.add_argument("--elo-sizes", type=int, nargs="*", default=[1_000_000, 10_000_000],
                        help="votes of the fresh-process sequential-Elo rows (none: skip)")  # fmt: skip
    parser.add_argument("--elo-repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    rows: list = []
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        data = Path(args.data) if args.data else Path(tmp)
        make_data(args, data)
        cli_results = cli_rows(data, args.repeat, rows, not args.no_jsonl)
        elo_rows(args.elo_sizes, args.elo_repeat, rows)
        result = None
        if not args.cli_only:
            votes = ours(data / "parquet", "Parquet", args.repeat, rows)
            if not args.no_jsonl:
                ours(data / "jsonl", "JSONL, 4 shards", args.repeat, rows)
            result = stages(votes, args.repeat, rows, args.fastchat_rounds)
            result["t_replay"] = next(
                r[1] for r in rows if r[0].startswith("whole replay from Parquet")
            )
        if not args.no_fastchat:
            battles = pd.read_parquet(data / "parquet", columns=["model_a", "model_b", "vote"])
            fastchat(battles, args.fastchat_rounds, rows, result, cli_results["Parquet"][0],
                     repeat=args.repeat)  # fmt: skip
    if result is not None:
        err = np.abs(result["mle"] - true_ratings(args.models, args.seed))
        rows.append(("largest |ours (prior 0) - true rating|", None, f"{err.max():.2f} points"))
    load.append(os.getloadavg()[0])
    print_table(args, rows, load)
    if args.json:
        Path(args.json).write_text(json.dumps([list(r) for r in rows], indent=1))


def print_table(args, rows, load) -> None:
    print(f"\n{args.votes:,} votes, {args.models} models, median of {args.repeat} runs; "
          f"{os.cpu_count()} CPUs, load average {load[0]:.1f} at the start, {load[1]:.1f} "
          f"at the end\n")  # fmt: skip
    print("| stage | seconds | note |\n|---|---:|---|")
    for name, seconds, note in rows:
        shown = "" if seconds is None else f"{seconds:.3f}"
        print(f"| {name} | {shown} | {note} |")


if __name__ == "__main__":
    main()
