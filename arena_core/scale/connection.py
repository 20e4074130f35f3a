"""DuckDB connections as the engine opens them: the memory limit, a spill folder, httpfs.

Kept apart from :mod:`~arena_core.scale.duck` (the queries) so that what a connection is
allowed (memory, disk, extensions) is read in one place.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref

#: DuckDB's memory limit: it spills to disk beyond it (the 2 GB target, less Python's share).
MEMORY_LIMIT = "1500MB"


class EngineError(ValueError):
    """DuckDB could not read the votes (a corrupt file, an extension it cannot load)."""


def connect(temp_dir: str | None = None, threads: int | None = None):
    """A DuckDB connection with the memory limit and a spill folder.

    Without ``temp_dir`` the spill folder is a new one of this connection's own in the
    system's temporary folder (``TMPDIR``), removed with the connection: DuckDB's default,
    ``.tmp`` in the current folder, put up to tens of GB into whatever folder the command
    ran in (a Space's app folder, a checkout), shared by every process started there.
    """
    import duckdb  # imported here: the rest of the package runs without it

    con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "preserve_insertion_order": False,
                                 "autoinstall_known_extensions": False})  # fmt: skip
    if not temp_dir:
        temp_dir = tempfile.mkdtemp(prefix="arena-duckdb-spill-")
        # At garbage collection or exit, after DuckDB has let go of its spill files.
        weakref.finalize(con, shutil.rmtree, temp_dir, ignore_errors=True)
    con.execute("SET temp_directory = ?", [str(temp_dir)])
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con


def load_remote(con) -> None:
    """Load httpfs (hf://, s3://); it must be installed beforehand, nothing is downloaded here."""
    import duckdb

    try:
        con.execute("LOAD httpfs")
    except duckdb.Error as exc:
        raise EngineError(
            "DuckDB needs its httpfs extension to read hf:// and s3:// paths; install it once "
            "with network access (python -c \"import duckdb; duckdb.sql('INSTALL httpfs')\") "
            f"or download the files and pass the folder ({exc})"
        ) from None


__all__ = ["MEMORY_LIMIT", "EngineError", "connect", "load_remote"]
