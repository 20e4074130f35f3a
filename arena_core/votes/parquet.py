"""Writing votes as Parquet: the published and compacted form of the log.

Files carry the contract schema (:data:`~arena_core.votes.schema.ARROW_SCHEMA`,
plain strings, no dictionary encoding), so every file has the same column
types even when a column is entirely null, and any Parquet reader (pandas,
DuckDB, ``datasets``) sees the same table as ours.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from arena_core.votes.schema import ARROW_SCHEMA

#: Compression of every Parquet file we write.
COMPRESSION = "zstd"


def contract_table(table: pa.Table) -> pa.Table:
    """``table`` with every contract column, in contract order and types (missing ones null)."""
    columns = []
    for field in ARROW_SCHEMA:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.table(columns, schema=ARROW_SCHEMA)


def parquet_bytes(table: pa.Table) -> bytes:
    """The table as one zstd Parquet file in memory."""
    sink = io.BytesIO()
    pq.write_table(contract_table(table), sink, compression=COMPRESSION)
    return sink.getvalue()


def write_parquet(table: pa.Table, path: Path) -> Path:
    """Write atomically: a reader never sees half a file (temp file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as f:
        f.write(parquet_bytes(table))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path
