"""The counts table: what every engine (Python, DuckDB, Spark) hands the board.

One row per distinct combination of the columns a board selects on, with how
many valid, deduplicated votes fall in it. Every selection the in-process path
makes (:func:`~arena_core.selection.select_votes`: arena, category, voter kind,
judge, flags, the anomalous-voter test, unknown models) is a filter on these
columns, so one counts file serves every board of the log; only what needs each
vote's time (a window, a half-life) cannot be answered from it.

A vote's fate at reading (bad rows, duplicates, unreadable files) is counted in
the file's metadata under :data:`SKIPPED_KEY`, by reason, as ``read_votes``
counts it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from arena_core.votes.kernels import pc
from arena_core.votes.parquet import write_atomically
from arena_core.votes.schema import TS_MAX_US, TS_MIN_US

#: Version of this table's layout, written in the file's metadata.
COUNTS_VERSION = 1
#: Metadata key of the layout version.
VERSION_KEY = b"arena.counts_version"
#: Metadata key of the rows skipped at reading (JSON object: reason -> rows).
SKIPPED_KEY = b"arena.skipped"
#: Metadata key of the reader's clock the votes were judged by (microseconds since the
#: epoch, as text: a vote after it was skipped as from the future). A board from the file
#: reports it as its revision's ``read_at``; files written before it have none (null).
READ_AT_KEY = b"arena.read_at_us"

#: The counts table, column by column. Group columns first, then the measures.
COUNTS_SCHEMA = pa.schema([
    pa.field("arena", pa.string(), nullable=False),
    pa.field("category", pa.string()),  # null: no category
    pa.field("model_a", pa.string(), nullable=False),
    pa.field("model_b", pa.string(), nullable=False),
    pa.field("vote", pa.string(), nullable=False),  # a, b, tie or both_bad
    pa.field("voter_kind", pa.string()),  # null: no kind written (read as human)
    pa.field("judge", pa.string()),
    pa.field("flagged", pa.bool_(), nullable=False),  # the vote carries a flag
    pa.field("anomalous", pa.bool_(), nullable=False),  # a human vote of a flagged voter
    pa.field("votes", pa.int64(), nullable=False),
    pa.field("first_ts_us", pa.int64(), nullable=False),  # earliest vote, us since the epoch
    pa.field("last_ts_us", pa.int64(), nullable=False),  # latest vote
])  # fmt: skip
#: The columns a row is grouped by.
GROUP_COLUMNS = tuple(COUNTS_SCHEMA.names[:9])


class CountsError(ValueError):
    """A counts table that does not follow the contract, or a board it cannot answer."""


def conform(table: pa.Table, skipped: Counter | dict) -> pa.Table:
    """``table`` in contract column order and types, with ``skipped`` in its metadata.

    Raises :class:`CountsError` if a column is missing or a value is out of contract.
    """
    missing = [n for n in COUNTS_SCHEMA.names if n not in table.column_names]
    if missing:
        raise CountsError(f"counts table lacks columns {missing}")
    try:
        table = table.select(COUNTS_SCHEMA.names).cast(COUNTS_SCHEMA)
    except (ValueError, pa.ArrowNotImplementedError) as exc:  # ArrowInvalid is a ValueError
        raise CountsError(f"counts table does not follow the contract: {exc}") from None
    votes = set(table.column("vote").unique().to_pylist())
    if not votes <= {"a", "b", "tie", "both_bad"}:
        raise CountsError(f"unknown vote values {sorted(votes - {'a', 'b', 'tie', 'both_bad'})}")
    _check_rows(table)
    _check_skipped(skipped)
    meta = {VERSION_KEY: str(COUNTS_VERSION).encode(),
            SKIPPED_KEY: json.dumps(dict(sorted(Counter(skipped).items()))).encode()}  # fmt: skip
    return table.replace_schema_metadata(meta)


#: Most votes one row (and the whole table) may count: beyond 2**53 a float no longer
#: holds every count exactly, and the fit's sums lose votes.
MAX_VOTES = 2**53


def _check_rows(table: pa.Table) -> None:
    """Refuse rows no engine writes: a missing value where the contract has none, a count
    below 1 or past :data:`MAX_VOTES`, a model against itself, a first vote after the last.
    A board from such a file would look like an answer (negative battles, say)."""
    for field in COUNTS_SCHEMA:
        if not field.nullable and table.column(field.name).null_count:
            raise CountsError(f"counts table has missing values in {field.name!r}")
    if not table.num_rows:
        return
    votes = table.column("votes")
    low, high = (x.as_py() for x in pc.min_max(votes).values())
    if low < 1 or high > MAX_VOTES or pc.sum(votes.cast(pa.float64())).as_py() > MAX_VOTES:
        raise CountsError(f"counts table has vote counts out of range (from {low} to {high}; "
                          "a row counts 1 vote or more, the table at most 2**53)")  # fmt: skip
    if pc.any(pc.equal(table.column("model_a"), table.column("model_b"))).as_py():
        raise CountsError("counts table has a row of a model against itself")
    if pc.any(pc.greater(table.column("first_ts_us"), table.column("last_ts_us"))).as_py():
        raise CountsError("counts table has a row whose first vote comes after its last")


def _check_skipped(skipped) -> None:
    if not isinstance(skipped, Counter | dict) or not all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in skipped.items()
    ):
        raise CountsError("the skipped rows of a counts table must map reasons to counts >= 0")


def skipped_of(table: pa.Table) -> Counter:
    """The rows skipped at reading, from the table's metadata."""
    meta = table.schema.metadata or {}
    try:
        skipped = json.loads(meta.get(SKIPPED_KEY, b"{}"))
    except ValueError:
        raise CountsError("the skipped rows in a counts table's metadata are not JSON") from None
    _check_skipped(skipped)
    return Counter(skipped)


def stamped(table: pa.Table, read_at_us: int | None) -> pa.Table:
    """``table`` with the clock its votes were judged by in its metadata (none: as it is)."""
    if read_at_us is None:
        return table
    return table.replace_schema_metadata({**(table.schema.metadata or {}),
                                          READ_AT_KEY: str(int(read_at_us)).encode()})  # fmt: skip


#: A clock as :func:`stamped` writes it: an integer in plain decimal digits.
_CLOCK = re.compile(rb"-?[0-9]{1,18}")


def read_at_of(table: pa.Table) -> int | None:
    """The clock in a counts table's metadata (:data:`READ_AT_KEY`), or None without one."""
    raw = (table.schema.metadata or {}).get(READ_AT_KEY)
    if raw is None:
        return None
    # Any clock of the years 1 to 9999, as ``counts --read-at`` takes it: before 1970 it is
    # negative, from year 5138 on it has 18 digits (both were refused: the file written by
    # ``counts`` was then refused by ``leaderboard --counts``).
    if not _CLOCK.fullmatch(raw) or not TS_MIN_US <= int(raw) <= TS_MAX_US:
        raise CountsError(f"the reader's clock in a counts table's metadata is not a time: {raw!r}")
    return int(raw)


def write_counts(table: pa.Table, path: str | Path) -> Path:
    """Write a conformed counts table as one Parquet file (atomically: a failed write
    leaves the old file, and never deletes what the path named)."""
    return write_atomically(path, lambda f: pq.write_table(table, f, compression="zstd"))


def read_counts(path: str | Path) -> pa.Table:
    """Read a counts file, checking its layout version and columns."""
    if "://" not in str(path) and not Path(path).is_file():  # pyarrow would name the path alone
        raise FileNotFoundError(f"no counts file at {path}")
    table = pq.read_table(path)
    version = (table.schema.metadata or {}).get(VERSION_KEY)
    if version != str(COUNTS_VERSION).encode():
        raise CountsError(
            f"{path} is not a counts file of layout {COUNTS_VERSION} (found {version!r}); "
            "write it with `python -m arena_core counts`"
        )
    return stamped(conform(table, skipped_of(table)), read_at_of(table))
