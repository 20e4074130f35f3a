"""The options of the scale path on the command line, without importing its engines.

``python -m arena_core counts`` and ``leaderboard --engine/--counts``; the work
is in :mod:`~arena_core.scale.commands`, imported when a command runs, so
``--help`` and the other commands never load DuckDB, Spark or the rating code.
"""

from __future__ import annotations

import argparse
import time

from arena_core.window import parse_instant

#: Engines of ``counts``.
COUNT_ENGINES = ("duckdb", "spark", "python")
#: Engines of ``leaderboard``.
BOARD_ENGINES = ("auto", "duckdb", "python")


def add_read_at(parser: argparse.ArgumentParser) -> None:
    """``--read-at``, the reader's clock of ``leaderboard`` and ``counts``."""
    parser.add_argument("--read-at", metavar="TIME",
                        help="the reader's clock, an ISO date or time (UTC if no zone; default:"
                        " now): rows dated over ten minutes after it are from the future and "
                        "skipped. A board's revision names the clock it was read at")  # fmt: skip


def reader_clock(args: argparse.Namespace) -> int:
    """``--read-at`` in microseconds since the epoch (now if not given): one clock for every
    read of the command, so the rows a faster clock wrote count in all its reads or none."""
    return parse_instant(args.read_at) if args.read_at else time.time_ns() // 1000


def add_counts_command(sub) -> None:
    """Register ``counts`` on the CLI's subparsers."""
    counts = sub.add_parser("counts", help="aggregate votes into a counts table (Parquet)")
    counts.add_argument("--engine", choices=COUNT_ENGINES, default="duckdb",
                        help="duckdb (in-process, default), spark (a cluster, or local mode), "
                        "or python (the in-process reader; also JSONL)")  # fmt: skip
    counts.add_argument("--votes", nargs="+", required=True, metavar="SRC",
                        help="folders, files or globs of Parquet votes, hf://datasets/..., s3://...")  # fmt: skip
    counts.add_argument("--out", required=True, metavar="FILE", help="the counts Parquet file")
    counts.add_argument("--spark-master", default=None,
                        help="Spark master URL (default: the session's, else local[*])")  # fmt: skip
    add_read_at(counts)
    counts.set_defaults(run=_run_counts)
    manifest = sub.add_parser("manifest", help="validate compacted monthly files once, so "
                              "the DuckDB engine need not check their rows at every read")  # fmt: skip
    manifest.add_argument("--votes", required=True, metavar="DIR",
                          help="the vote folder (its compacted/ folder gets the manifest)")  # fmt: skip
    manifest.set_defaults(run=_run_manifest)


def add_scale_options(board: argparse.ArgumentParser) -> None:
    """Add ``--engine`` and ``--counts`` to ``leaderboard``."""
    board.add_argument("--engine", choices=BOARD_ENGINES, default="auto",
                       help="how the votes are counted: duckdb (Parquet, any size, bounded "
                       "memory), python (in-process), or auto (duckdb for large Parquet logs)")  # fmt: skip
    board.add_argument("--counts", metavar="FILE",
                       help="a counts table written by `counts` (e.g. by Spark): the board "
                       "from it alone (Bradley-Terry, the Seq. Elo column empty), or with "
                       "--votes, which then only feed the time-ordered Elo stream")  # fmt: skip


def _run_counts(args) -> int:
    from arena_core.scale.commands import run_counts

    return run_counts(args)


def _run_manifest(args) -> int:
    from arena_core.scale.commands import run_manifest

    return run_manifest(args)
