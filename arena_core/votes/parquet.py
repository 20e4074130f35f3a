"""Writing votes as Parquet: the published and compacted form of the log.

Files carry the contract schema (:data:`~arena_core.votes.schema.ARROW_SCHEMA`,
plain strings, no dictionary encoding), so every file has the same column
types even when a column is entirely null, and any Parquet reader (pandas,
DuckDB, ``datasets``) sees the same table as ours.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

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
    """Write atomically: a reader never sees half a file (:func:`write_atomically`)."""
    return write_atomically(path, lambda f: f.write(parquet_bytes(table)))


def write_atomically(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write a file through ``write(f)`` so that a reader sees the old file or the whole
    new one, never half: into a temporary file beside it, fsync, then rename.

    A path that exists and is not a regular file (``/dev/stdout``, a named pipe) is
    written through, not replaced: renaming over it would replace the device itself, and
    pyarrow, on a failed write, deletes the path it was given (as root, ``/dev/full``). So
    is a path under ``/dev`` or ``/proc``, or a link into them: ``/dev/stdout`` of a command
    whose output goes to a file leads to that regular file, and the rename replaced the
    link ``/dev/stdout`` itself with a file, for every later program on the machine, while
    the command's own output got nothing (found when a clean-clone run's ``flite -o
    /dev/stdout`` wrote nothing).
    """
    path = Path(path)
    if path.exists() and (not path.is_file() or _a_stream(path)):
        with path.open("wb") as f:
            write(f)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _a_stream(path: Path) -> bool:
    """Whether ``path`` names a process's stream rather than a file of its own: it lies
    under ``/dev`` or ``/proc``, or a link on the way leads there (``/dev/stdout`` ->
    ``/proc/self/fd/1``)."""
    streams = ("/dev/", "/proc/")
    hops = 0
    while True:
        if str(path.absolute()).startswith(streams):
            return True
        if not path.is_symlink() or hops == 40:  # 40: the kernel's own bound on links
            return False
        path, hops = path.parent / os.readlink(path), hops + 1
