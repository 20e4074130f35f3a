"""Benchmark: a 100-million-vote log in monthly Parquet partitions, through the counts path.

    python bench/scale.py                          # 100M votes under /tmp/arena-100m
    python bench/scale.py --votes 10000000 --data /tmp/arena-10m --repeat 3
    python bench/scale.py --stages manifest counts       # the manifest's saving alone
    python bench/scale.py --stages counts-voters --voters-votes 10000000   # with voter hashes
    python bench/scale.py --stages counts-voters --memory-limit 500MB       # DuckDB spilling more

Generates the log once (arena_core/scale/synthetic.py: numpy and Arrow, not
VoteLog; cached under --data with a spec file), then runs each stage in a fresh
process and reports its wall time and peak memory (the process's peak RSS, VmHWM,
DuckDB's memory included; not ``ru_maxrss``, which a child inherits from its parent):

* ``manifest``: what compaction does once after writing monthly files: every row
  judged, the duplicate ids listed, ``compacted/MANIFEST.json`` written
  (arena_core/scale/manifest.py).
* ``counts``: the counts table straight from Parquet, the parts the manifest
  vouches for checked by their digests instead of row by row (anomalous-voter
  check, one counting pass). Targets: <= 30 s, <= 2 GB.
* ``counts-checked``: the same without the manifest: every row judged, every id
  hashed for duplicates (what a log without a manifest costs).
* ``counts-voters``: ``counts`` on another log whose votes carry voter hashes
  (--voters repeat voters, 20 of them campaigners; --voters-votes votes, default 10M),
  so the anomalous-voter test runs (its own time: ``flag_s``; ``flagged`` voters).
* ``elo``: the default board's sequential Elo, month by month in replay order
  (the open repeats the dedup pass the stream needs).
* ``board from counts``: selection, pair counts and the fit, from the counts file.
* ``equality``: on a smaller log with repeat voters and campaigners (--check-votes),
  the board of the in-process path against the DuckDB path's (and Spark's with
  --spark): the largest difference of any rating, and whether the rows are identical.

The reader's clock is fixed at the log's end (no vote is "from the future").
The machine is shared: the table ends with the load average (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runs import peak_rss_mb  # noqa: E402

from arena_core.dataset.compact import COMPACTED  # noqa: E402
from arena_core.scale.synthetic import SynthSpec, generate  # noqa: E402

#: The stages, in the order they run (``counts`` and ``elo`` need the manifest and the counts).
STAGES = ("manifest", "counts", "counts-checked", "counts-voters", "elo", "board", "equality")
#: Where each stage's measurements come back from its child process.
_RESULT = "BENCH_RESULT "


def ensure(spec: SynthSpec, folder: Path) -> float:
    """Generate the log unless ``folder`` already holds this spec's; returns seconds spent.

    A log made for another spec is deleted first, its compacted folder whole: ``generate``
    writes one folder per month, so a shorter log would leave the old later months in
    place, and the old compaction manifest would stay beside parts it no longer describes.
    """
    marker = folder / "spec.json"
    wanted = json.dumps(spec.__dict__, sort_keys=True)
    if marker.exists() and marker.read_text() == wanted:
        return 0.0
    start = time.perf_counter()
    marker.unlink(missing_ok=True)  # an interrupted generation leaves no marker behind
    shutil.rmtree(folder / COMPACTED, ignore_errors=True)
    generate(spec, folder)
    marker.write_text(wanted)
    return time.perf_counter() - start


def end_us(spec: SynthSpec) -> int:
    """The first microsecond after the log's last month (the reader's clock)."""
    import numpy as np

    last = np.datetime64(spec.start, "M") + spec.months
    return int(last.astype("datetime64[us]").astype(np.int64))


# -- stages (each runs in its own process: python bench/scale.py --stage NAME ...) -------------


def stage_manifest(data: Path, now_us: int) -> dict:
    from arena_core.scale.manifest import build_manifest

    start = time.perf_counter()
    path = build_manifest(data / COMPACTED, now_us=now_us)
    return {"seconds": time.perf_counter() - start, "bytes": path.stat().st_size}


def stage_counts(data: Path, now_us: int, out: Path, trust: bool, write: bool = True,
                 memory_limit: str | None = None) -> dict:  # fmt: skip
    from arena_core.scale.connection import connect
    from arena_core.scale.contract import write_counts
    from arena_core.scale.duck import DuckVotes
    from arena_core.scale.sources import resolve

    class Timed(DuckVotes):
        """Times the anomalous-voter test (run while the log is opened)."""

        def flagged_voters(self, *args, **kwargs):
            begin = time.perf_counter()
            found = super().flagged_voters(*args, **kwargs)
            self.flag_seconds, self.flagged = time.perf_counter() - begin, len(found)
            return found

    con = connect(str(out.parent / "spill"))
    if memory_limit:
        con.execute(f"SET memory_limit = '{memory_limit}'")
    start = time.perf_counter()
    duck = Timed(resolve(data), now_us=now_us, con=con, trust_manifest=trust)
    counts = duck.counts()
    seconds = time.perf_counter() - start
    if trust and not duck.trusted.ranks:  # silently the row-by-row path: not what is measured
        raise RuntimeError(f"the compaction manifest under {data} trusts no file (missing, "
                           "or stale: built for other parts or rules); run the manifest stage")  # fmt: skip
    if trust and write:
        write_counts(counts, out)
    return {"seconds": seconds, "rows": counts.num_rows, "trusted_files": len(duck.trusted.ranks),
            "flag_s": duck.flag_seconds, "flagged": duck.flagged}  # fmt: skip


def stage_elo(data: Path, now_us: int, out: Path) -> dict:
    import pyarrow.compute as pc

    from arena_core.leaderboard import BoardParams
    from arena_core.scale.board import _index_batches, pair_counts, select_counts, streaming_elo
    from arena_core.scale.connection import connect
    from arena_core.scale.contract import read_counts
    from arena_core.scale.duck import DuckVotes
    from arena_core.scale.sources import resolve

    counts = read_counts(out)
    sel = select_counts(counts, "tts-en")
    battles = pair_counts(sel).tallies()["battles"]
    start = time.perf_counter()
    duck = DuckVotes(resolve(data), now_us=now_us, con=connect(str(out.parent / "spill")))
    opened = time.perf_counter()
    first = pc.min(counts.column("first_ts_us")).as_py()
    last = pc.max(counts.column("last_ts_us")).as_py()
    prior = [e.prior_rating for e in sel.entrants]
    elo = streaming_elo(len(sel.entrants), _index_batches(duck.stream(sel.query, first, last),
                        sel.query.models), prior, BoardParams().elo, int(battles.max()))  # fmt: skip
    streamed = time.perf_counter()
    assert elo.battles == battles.tolist(), "the stream and the counts disagree"
    return {"seconds": streamed - start, "open": opened - start, "stream": streamed - opened}


def stage_board(out: Path) -> dict:
    import numpy as np

    from arena_core.leaderboard import BoardParams, standings
    from arena_core.ratings.elo import EloState
    from arena_core.scale.board import pair_counts, select_counts
    from arena_core.scale.contract import read_counts

    start = time.perf_counter()
    sel = select_counts(read_counts(out), "tts-en")
    counts = pair_counts(sel)
    elo = EloState.start(len(sel.entrants))  # the Elo column is the stream's stage
    result = standings(sel.entrants, elo, counts, BoardParams())
    assert np.isfinite([r.rating for r in result.rows]).all()
    return {"seconds": time.perf_counter() - start, "models": len(result.rows)}


def stage_equality(data: Path, now_us: int, spark: bool) -> dict:
    from arena_core.leaderboard import board_from_votes
    from arena_core.scale.board import board_from_counts
    from arena_core.scale.duck import DuckVotes
    from arena_core.scale.manifest import build_manifest
    from arena_core.scale.python_engine import read_for_counts
    from arena_core.scale.sources import resolve

    build_manifest(data / COMPACTED, now_us=now_us)  # the DuckDB side trusts it
    start = time.perf_counter()
    votes = read_for_counts(data, now_us=now_us)
    expected = board_from_votes(votes, "tts-en")
    in_process = time.perf_counter() - start
    start = time.perf_counter()
    duck = DuckVotes(resolve(data), now_us=now_us)
    counts = duck.counts()
    got = {"duckdb": board_from_counts(counts, "tts-en", lambda q: duck.stream(q, 0, now_us))}
    duck_seconds = time.perf_counter() - start
    if spark:
        from arena_core.scale.spark import counts_with_spark

        spark_counts = counts_with_spark(resolve(data), now_us=now_us, master="local[2]")
        got["spark"] = board_from_counts(spark_counts, "tts-en",
                                         lambda q: duck.stream(q, 0, now_us))  # fmt: skip
    report = {"seconds": duck_seconds, "in_process": in_process, "votes_used": expected.votes_used,
              "trusted_files": len(duck.trusted.ranks)}  # fmt: skip
    for name, board in got.items():
        diffs = [abs(a.rating - b.rating) for a, b in zip(board.rows, expected.rows, strict=True)
                 if a.rating is not None] + [abs(a.elo - b.elo) for a, b in
                                             zip(board.rows, expected.rows, strict=True)]  # fmt: skip
        report[f"{name}_max_diff"] = max(diffs)
        report[f"{name}_identical"] = (
            board.rows == expected.rows and board.skipped == expected.skipped
        )
    return report


def _child(args) -> None:
    if args.stage == "manifest":
        result = stage_manifest(args.data, args.now_us)
    elif args.stage in ("counts", "counts-checked"):
        result = stage_counts(args.data, args.now_us, args.out, trust=args.stage == "counts")
    elif args.stage == "counts-voters":
        result = stage_counts(args.data, args.now_us, args.out, trust=True, write=False,
                              memory_limit=args.memory_limit)  # fmt: skip
    elif args.stage == "elo":
        result = stage_elo(args.data, args.now_us, args.out)
    elif args.stage == "board":
        result = stage_board(args.out)
    else:
        result = stage_equality(args.data, args.now_us, args.spark)
    result["peak_mb"] = peak_rss_mb()  # VmHWM: ru_maxrss would carry the parent's over exec
    print(_RESULT + json.dumps(result), flush=True)


def run_stage(stage: str, data: Path, now_us: int, out: Path, spark: bool = False,
              memory_limit: str | None = None) -> dict:  # fmt: skip
    cmd = [sys.executable, __file__, "--stage", stage, "--data", str(data), "--now-us",
           str(now_us), "--out", str(out)] + (["--spark"] if spark else [])  # fmt: skip
    if memory_limit:
        cmd += ["--memory-limit", memory_limit]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(_RESULT):
            return json.loads(line[len(_RESULT) :])
    raise RuntimeError(f"stage {stage} failed:\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/arena-100m"))
    parser.add_argument("--votes", type=int, default=100_000_000)
    parser.add_argument("--months", type=int, default=24)
    parser.add_argument("--check-data", type=Path, default=Path("/tmp/arena-1m-check"))
    parser.add_argument("--check-votes", type=int, default=1_000_000)
    parser.add_argument("--voters-data", type=Path, default=Path("/tmp/arena-10m-voters"))
    parser.add_argument("--voters-votes", type=int, default=10_000_000)
    parser.add_argument("--voters", type=int, default=200_000, help="repeat voters of that log")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each stage (median)")
    parser.add_argument("--spark", action="store_true", help="also check Spark's counts")
    parser.add_argument(
        "--memory-limit", help="DuckDB's memory limit in counts-voters (e.g. 500MB)"
    )
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES),
                        help="stages to run (default: all)")  # fmt: skip
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--now-us", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        _child(args)
        return
    big = SynthSpec(votes=args.votes, months=args.months)
    check = SynthSpec(votes=args.check_votes, months=12, voters=20_000, campaigners=20, seed=1)
    voting = SynthSpec(votes=args.voters_votes, months=args.months, voters=args.voters,
                       campaigners=20, seed=2)  # fmt: skip
    made = []  # only the logs the chosen stages read are generated
    if set(args.stages) - {"equality", "counts-voters"}:
        made.append(ensure(big, args.data))
    if "equality" in args.stages:
        made.append(ensure(check, args.check_data))
    if "counts-voters" in args.stages:
        made.append(_with_manifest(voting, args.voters_data))
    out = args.data.parent / f"{args.data.name}-counts" / "counts.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for stage in args.stages:
        data, spec = {"equality": (args.check_data, check),
                      "counts-voters": (args.voters_data, voting)}.get(stage, (args.data, big))  # fmt: skip
        runs = [run_stage(stage, data, end_us(spec), out, args.spark, args.memory_limit)
                for _ in range(args.repeat)]  # fmt: skip
        rows.append((stage, spec.votes, runs))
    _print(rows, made)


def _with_manifest(spec: SynthSpec, folder: Path) -> float:
    """:func:`ensure`, and the compaction manifest the ``counts`` stage trusts: built again
    whenever the log is (a manifest of the old parts would trust none of the new), else
    once."""
    from arena_core.scale.manifest import MANIFEST_NAME, build_manifest

    seconds = ensure(spec, folder)
    if seconds or not (folder / COMPACTED / MANIFEST_NAME).exists():
        build_manifest(folder / COMPACTED, now_us=end_us(spec))
    return seconds


def _print(rows, made) -> None:
    print("generated in " + " / ".join(f"{s:.0f} s" for s in made) + " (0: cached)")
    print(f"{'stage':<14} {'votes':>12} {'wall s':>8} {'peak MB':>8}  details")
    for stage, votes, runs in rows:
        wall = statistics.median(r["seconds"] for r in runs)
        peak = statistics.median(r["peak_mb"] for r in runs)
        extra = {k: v for k, v in runs[len(runs) // 2].items() if k not in ("seconds", "peak_mb")}
        detail = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in extra.items())  # fmt: skip
        print(f"{stage:<14} {votes:>12,} {wall:>8.1f} {peak:>8.0f}  {detail}")
    load = os.getloadavg()
    print(f"load average during the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} cores")  # fmt: skip


if __name__ == "__main__":
    main()
