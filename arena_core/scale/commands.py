"""The command line of the scale path: ``counts``, and ``leaderboard --engine/--counts``.

``python -m arena_core counts --engine duckdb|spark|python --votes SRC --out FILE``
writes a counts table (:mod:`~arena_core.scale.contract`).
``leaderboard --engine duckdb`` computes the counts with DuckDB and streams Elo
month by month; ``--engine auto`` (the default) does so for Parquet logs of at
least :data:`AUTO_BYTES` and reads the votes in-process below, where the in-process
path is faster and its memory still small. ``leaderboard --counts FILE`` takes the counts from
a file (e.g. written by the Spark job) and the Elo stream from ``--votes``.

Settings the counts cannot answer (``--since``/``--until``, ``--half-life``,
FastChat exports) are refused with ``--engine duckdb`` or ``--counts``, and
``auto`` takes the in-process path for them.
"""

from __future__ import annotations

import logging
import sys
import time

import pyarrow as pa

from arena_core.scale.cli_options import reader_clock
from arena_core.scale.contract import (
    CountsError,
    read_at_of,
    read_counts,
    skipped_of,
    stamped,
    write_counts,
)
from arena_core.scale.sources import (
    SourceError,
    is_remote,
    local_bytes,
    parquet_only_gap,
    resolve,
)
from arena_core.snapshots.revision import Revision
from arena_core.votes.kernels import pc
from arena_core.window import format_us

log = logging.getLogger(__name__)

#: ``--engine auto`` uses DuckDB from this many bytes of Parquet votes: where the in-process
#: replay would pass ~2 GB, DuckDB's bound. Measured (fresh process, 1M votes with voters,
#: 32 MB of Parquet, load ~5 on 2 cores): in-process 4.6 s and 735 MB, DuckDB 9.0 s and 793 MB;
#: the in-process peak grows with the votes, DuckDB's stays under its limit (1.7 GB at 100M).
AUTO_BYTES = 80 << 20


def make_counts(engine: str, votes, *, spark_master: str | None = None,
                now_us: int | None = None) -> pa.Table:  # fmt: skip
    """The counts table of ``votes`` computed by ``engine``."""
    if engine == "python":
        from arena_core.scale.python_engine import counts_from_votes, read_for_counts

        return counts_from_votes(read_for_counts(votes, now_us=now_us))
    sources = resolve(votes)
    if engine == "duckdb":
        from arena_core.scale.duck import counts_with_duckdb

        counts = counts_with_duckdb(sources, now_us=now_us)
    elif engine == "spark":
        from arena_core.scale.spark import counts_with_spark

        counts = counts_with_spark(sources, now_us=now_us, master=spark_master)
    else:
        raise ValueError(f"unknown engine {engine!r}")
    warn_parquet_only(sources)  # once read: a failed read says only why it failed
    return counts


def warn_parquet_only(sources) -> None:
    """Warn when remote folders are read as their Parquet files only (:func:`parquet_only_gap`)."""
    gap = parquet_only_gap(sources)
    if gap:
        log.warning("%s", gap)


def run_counts(args) -> int:
    """``python -m arena_core counts``."""
    start = time.perf_counter()
    now_us = reader_clock(args)
    table = make_counts(args.engine, args.votes, spark_master=args.spark_master, now_us=now_us)
    write_counts(stamped(table, now_us), args.out)
    votes = int(pc.sum(table.column("votes")).as_py() or 0)
    sys.stderr.write(f"wrote {table.num_rows} count rows ({votes} votes) to {args.out} with "
                     f"{args.engine} in {time.perf_counter() - start:.1f} s\n")  # fmt: skip
    return 0


def run_manifest(args) -> int:
    """``python -m arena_core manifest``: what compaction writes, for a folder compacted
    before manifests existed (or generated, like the scale benchmark's)."""
    from pathlib import Path

    from arena_core.dataset.compact import COMPACTED
    from arena_core.scale.manifest import build_manifest

    if args.votes == "":  # Path("") is the current folder
        raise SourceError("manifest --votes takes a vote folder; an empty path names none")
    folder = Path(args.votes)
    compacted = folder if folder.name == COMPACTED else folder / COMPACTED
    start = time.perf_counter()
    path = build_manifest(compacted)
    if path is None:
        raise SourceError(f"no Parquet file under {compacted}")
    sys.stderr.write(f"wrote {path} in {time.perf_counter() - start:.1f} s\n")
    return 0


def choose_engine(args, window) -> str:
    """``duckdb`` or ``python`` for a ``leaderboard`` run (see the module docstring)."""
    needs_times = not window.all_time or args.half_life is not None
    # A board of judges' verdicts counts each battle once, which needs each vote's battle.
    needs_battles = getattr(args, "judge", None) is not None or getattr(
        args, "voter_kind", "human") != "human"  # fmt: skip
    if args.engine == "python" and args.counts is None:
        return "python"
    if args.engine == "duckdb" or args.counts is not None:
        if needs_times:
            raise CountsError("--since, --until and --half-life need each vote's time: use "
                              "--engine python (without --counts)")  # fmt: skip
        if needs_battles:
            raise CountsError("a board of judges' verdicts counts each battle once, which "
                              "needs each vote's battle: use --engine python (without "
                              "--counts)")  # fmt: skip
        if args.fastchat_all:
            raise CountsError("FastChat exports are read by --engine python only")
        return "duckdb"
    if needs_times or needs_battles or args.fastchat_all:
        return "python"
    try:
        sources = _local_or_parquet(args.votes)
    except SourceError:
        return "python"  # JSONL shards or a FastChat export
    if sources.patterns or local_bytes(sources) >= AUTO_BYTES:
        return "duckdb"
    return "python"


def _local_or_parquet(votes):
    """``resolve(votes)``; its :class:`SourceError` for local files (JSONL, a FastChat
    export: the in-process reader takes them) is the caller's to catch. A remote path no
    engine reads (``hf://models/...``, a remote JSONL file) is refused with the resolver's
    own message, where the in-process path said "no vote file or folder at hf:/models/..."
    and ``--engine duckdb`` "reads Parquet only"."""
    try:
        return resolve(votes)
    except SourceError as exc:
        paths = [votes] if isinstance(votes, str) else list(votes or ())
        if any(is_remote(str(p)) for p in paths):
            raise ValueError(str(exc)) from None  # not a SourceError: not caught as local
        raise


def scaled_boards(args, params, window, registry) -> tuple[list, Revision] | None:
    """The boards of ``leaderboard`` by the counts path and the revision they were computed
    from, or None for the in-process path. The counts hold no vote order, so the revision
    names how many valid votes were counted but not the last one (``last_vote_id`` null)."""
    if choose_engine(args, window) == "python":
        return None
    from arena_core.scale.board import board_from_counts
    from arena_core.selection import Entrant

    stream, counts = _stream_and_counts(args)
    from arena_core.cli.board import choose_arenas

    skipped = skipped_of(counts)
    if skipped:  # as read_votes reports them on the in-process path
        log.warning("skipped %d vote rows: %s", sum(skipped.values()), dict(skipped))
    arenas = choose_arenas(counts, args, registry, skipped)
    boards = []
    for arena_id in arenas:
        entrants = Entrant.from_arena(registry.arena(arena_id)) if registry else None
        boards.append(board_from_counts(counts, arena_id, stream, category=args.category,
                                        entrants=entrants, params=params, window=window,
                                        available=dict.fromkeys(args.unavailable, False)))  # fmt: skip
    counted = pc.sum(counts.column("votes")).as_py() or 0
    # A counts file's clock is its own: the one its votes were judged by, if it names one.
    clock = read_at_of(counts) if args.counts else args.now_us
    read_at = None if clock is None else format_us(clock)
    return boards, Revision(votes_read=counted, last_vote_id=None, read_at=read_at,
                            **getattr(args, "hub", {}))  # fmt: skip


def _stream_and_counts(args):
    """The counts (from ``--counts`` or DuckDB) and an Elo stream over ``--votes`` (None
    with ``--counts`` alone: the board then has no Elo column)."""
    votes = args.votes
    if not votes:
        return None, read_counts(args.counts)
    try:
        sources = _local_or_parquet(votes)
    except SourceError:
        sources = None
    if sources is None:  # JSONL: the counts come from the file, the stream from the reader
        if not args.counts:
            raise CountsError("--engine duckdb reads Parquet only; use --engine python")
        from arena_core.scale.python_engine import read_for_counts, vote_stream

        return vote_stream(read_for_counts(votes, now_us=args.now_us)), read_counts(args.counts)
    from arena_core.scale.duck import DuckVotes, engine_errors

    with engine_errors():  # as counts_with_duckdb: DuckDB's errors are reported, not raised
        duck = DuckVotes(sources, now_us=args.now_us)
        counts = read_counts(args.counts) if args.counts else duck.counts()
    if not args.counts:  # once read: a failed read says only why it failed
        warn_parquet_only(sources)
    if not counts.num_rows:
        return (lambda query: iter(())), counts
    first = pc.min(counts.column("first_ts_us")).as_py()
    last = pc.max(counts.column("last_ts_us")).as_py()
    return (lambda query: duck.stream(query, first, last)), counts
