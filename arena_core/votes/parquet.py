"""Writing votes as Parquet: the published and compacted form of the log.

Files carry the contract schema (:data:`~arena_core.votes.schema.ARROW_SCHEMA`,
plain strings, no dictionary encoding), so every file has the same column
types even when a column is entirely null, and any Parquet reader (pandas,
DuckDB, ``datasets``) sees the same table as ours.
"""

from __future__ import annotations

import io
import os
import re
import sys
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
    new one, never half: into a temporary file beside it, fsync, then rename; the rename
    is synced too (its folder, and any folder made for it), so the file is durable when
    this returns.

    A path that exists and is not a regular file (a device, a named pipe) is written
    through, not replaced: renaming over it would replace the device itself, and pyarrow,
    on a failed write, deletes the path it was given (as root, ``/dev/full``). A path naming
    one of this process's streams (``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/1``,
    directly or through links) is written through that stream itself, at its place and
    with its mode (a shell's ``>>`` appends): ``/dev/stdout`` of a command whose output
    goes to a file leads to that regular file, and the rename replaced the link
    ``/dev/stdout`` itself with a file, for every later program on the machine, while the
    command's own output got nothing (found when a clean-clone run's ``flite -o
    /dev/stdout`` wrote nothing). A closed stream is an error, never a file made in its place.
    """
    path = Path(path)
    fd = _stream_fd(path)
    if fd is not None:
        for stream in (sys.stdout, sys.stderr):  # what Python holds for the fd goes first
            if stream is not None and _fileno(stream) == fd:
                stream.flush()
        with os.fdopen(os.dup(fd), "wb") as f:  # EBADF, an OSError, when it is closed
            write(f)
        return path
    if path.exists() and not path.is_file():
        with path.open("wb") as f:
            write(f)
        return path
    made = missing_folders(path.parent)
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
    # The rename, and each folder made for it, is durable only once its folder is synced:
    # compaction deletes its sources, and the adoption of earlier files sets them aside,
    # as soon as this returns, and a power cut could keep that but lose the new file.
    for folder in dict.fromkeys([path.parent, *(made_one.parent for made_one in made)]):
        sync_folder(folder)
    return path


def sync_folder(folder: str | Path) -> None:
    """fsync ``folder``, which makes the names added to it (or removed) durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def missing_folders(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


#: This process's streams by name.
_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd|proc/(\d+)/fd)/(\d+)")


def _stream_fd(path: Path) -> int | None:
    """The file descriptor ``path`` names when it is one of this process's streams
    (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``), directly or through links."""
    for _ in range(40):  # the kernel's own bound on links
        text = str(path.absolute())
        if text in _STREAMS:
            return _STREAMS[text]
        named = _FD_PATH.fullmatch(text)
        if named and (named.group(1) is None or int(named.group(1)) == os.getpid()):
            return int(named.group(2))
        if not path.is_symlink():
            return None
        path = path.parent / os.readlink(path)
    return None


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's capture)
        return None
