"""The in-process engine: a counts table and a vote stream from a :class:`VoteTable`.

It reads with :func:`~arena_core.votes.read.read_votes` and decides flags and
the anomalous-voter test with the functions ``select_votes`` uses, so it is the
reference the other engines are checked against, and the engine for JSONL logs
and FastChat exports, which DuckDB and Spark do not read.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena_core.integrity.anomaly import anomalous_votes
from arena_core.leaderboard import BOARD_COLUMNS
from arena_core.scale.board import BoardQuery
from arena_core.scale.contract import GROUP_COLUMNS, conform
from arena_core.selection import flagged_mask, voter_kind_mask
from arena_core.votes.clean import VoteTable
from arena_core.votes.read import read_votes

#: Votes per record batch of the stream.
BATCH_ROWS = 1 << 20


def counts_from_votes(votes: VoteTable) -> pa.Table:
    """The counts table (:mod:`~arena_core.scale.contract`) of a vote table."""
    table = votes.table
    human = np.asarray(voter_kind_mask(votes, "human"))
    dims = {name: _plain(table.column(name)) for name in GROUP_COLUMNS[:7]}
    dims["flagged"] = pa.array(flagged_mask(votes))
    dims["anomalous"] = pa.array(anomalous_votes(votes) & human)
    dims["ts_us"] = pa.array(votes.ts_us, pa.int64())
    grouped = (
        pa.table(dims)
        .group_by(list(GROUP_COLUMNS), use_threads=False)
        .aggregate([("ts_us", "count"), ("ts_us", "min"), ("ts_us", "max")])
    )
    grouped = grouped.rename_columns(
        {"ts_us_count": "votes", "ts_us_min": "first_ts_us", "ts_us_max": "last_ts_us"}
    )
    return conform(grouped, votes.skipped)


def _plain(column) -> pa.ChunkedArray:
    """A dictionary-encoded column as plain strings."""
    if pa.types.is_dictionary(column.type):
        return column.cast(column.type.value_type)
    return column


def read_for_counts(paths, *, now_us: int | None = None) -> VoteTable:
    """The votes a counts table needs, read as the board reads them."""
    return read_votes(paths, columns=BOARD_COLUMNS, now_us=now_us)


def vote_stream(votes: VoteTable):
    """An :data:`~arena_core.scale.board.EloStream` over a vote table (for tests and JSONL)."""

    def stream(query: BoardQuery) -> Iterator[pa.RecordBatch]:
        keep = votes.encoded["arena"].isin([query.arena])
        if query.category is not None:
            keep &= votes.encoded["category"].isin([query.category])
        if query.voter_kind is not None:
            keep &= voter_kind_mask(votes, query.voter_kind)
        if query.judge is not None:
            keep &= votes.encoded["judge"].isin([query.judge])
        if not query.include_flagged:
            keep &= ~flagged_mask(votes) & ~anomalous_votes(votes)
        models = pa.array(query.models, pa.string())
        table = votes.table.select(["model_a", "model_b", "vote"]).filter(pa.array(keep))
        table = pa.table({n: _plain(table.column(n)) for n in table.column_names})
        known = pc.and_(pc.is_in(table.column("model_a"), models),
                        pc.is_in(table.column("model_b"), models))  # fmt: skip
        yield from table.filter(known).to_batches(max_chunksize=BATCH_ROWS)

    return stream
