"""Reading vote logs: JSONL shards, Parquet files and FastChat exports.

Real logs are damaged in real ways: a process killed mid-write leaves half a
line, someone edits a file by hand, an old writer had a bug. Reading never
crashes on a row: each bad row is skipped and counted under a reason (the
constants of :mod:`~arena_core.votes.reasons`), and the rest is read. Whether a row is valid never
depends on which columns the caller asked for or on which path parsed it, so
every reader of the same files gets the same votes.

The fast path hands a JSONL file to Arrow's multithreaded JSON parser, a window at a time;
a file that Arrow refuses (one bad line fails the whole file) is read again in
pieces, Arrow taking the good stretches and Python judging the bad lines one by
one (:mod:`~arena_core.votes.tolerant`). Valid rows are put in replay order, by ``ts`` then ``vote_id``,
and a repeated ``vote_id`` keeps its first (earliest) row.
"""

from __future__ import annotations

import codecs
import glob
import logging
import mmap
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pyarrow as pa

from arena_core.votes import fastchat
from arena_core.votes.arrow import empty_table
from arena_core.votes.clean import CATEGORICAL, VoteTable, clean
from arena_core.votes.jsonl import read_jsonl
from arena_core.votes.kernels import cast, dictionary_encode
from arena_core.votes.parquet_verdict import open_checked, read_checked
from arena_core.votes.reasons import UNREADABLE
from arena_core.votes.schema import ARROW_SCHEMA, FIELDS, REQUIRED

log = logging.getLogger(__name__)

_DICT = pa.dictionary(pa.int32(), pa.string())
_FIELD_TYPES = {f.name: f.type for f in FIELDS}


def read_votes(
    paths: str | Path | Iterable[str | Path],
    *,
    columns: Sequence[str] | None = None,
    fastchat_all: bool = False,
    fastchat_arena: str = fastchat.DEFAULT_ARENA,
    now_us: int | None = None,
) -> VoteTable:
    """Read every vote under ``paths`` (files or folders, format detected).

    Parameters
    ----------
    paths : path or paths
        JSONL files, Parquet files, FastChat ``clean_battle`` JSON exports, or
        folders searched recursively for ``*.jsonl`` and ``*.parquet``.
    columns : sequence of str, optional
        Contract columns to return (default: all). The required ones are
        always read, to check every row, but returned only if asked for.
    fastchat_all : bool
        Keep FastChat battles with ``anony: false`` (by default they are
        skipped, as FastChat's own leaderboard does).
    fastchat_arena : str
        Arena id given to FastChat battles, which carry none.
    now_us : int, optional
        The reader's clock, microseconds since the epoch (default: now). Rows
        dated later than this plus :data:`~arena_core.votes.clean.FUTURE_SLACK_US`
        are skipped as ``future_ts``: no server writes them.
    """
    wanted = _wanted_columns(columns)
    files = vote_files(paths)
    skipped: Counter = Counter()
    tables = []
    for path, kind in files:
        try:
            if kind == "parquet":
                table = _read_parquet(path, wanted)
            elif kind == "compressed":
                raise ValueError("a compressed file (gzip, zstd, bzip2 or xz): decompress it "
                                 "and read the .jsonl or .parquet file inside")  # fmt: skip
            elif kind == "fastchat":
                table = fastchat.read_export(
                    path, skipped, keep_all=fastchat_all, arena=fastchat_arena
                )
            else:
                table = read_jsonl(path, skipped, wanted)
            tables.append(_categorical(table.select(wanted)))
            del table
            # Arrow's allocator keeps freed pages for reuse; hand back the parsed
            # columns we just dropped, so peak memory stays near what we keep.
            pa.default_memory_pool().release_unused()
        except (OSError, pa.ArrowException, ValueError, RecursionError) as exc:
            log.error("skipping unreadable vote file %s: %s", path, type(exc).__name__ if
                      isinstance(exc, RecursionError) else exc)  # fmt: skip
            skipped[UNREADABLE] += 1
    schema = _categorical_schema(wanted)
    table = pa.concat_tables(tables) if tables else empty_table(schema)
    votes = clean(table, skipped, _asked(columns), now_us=now_us)
    votes.files = len(files)
    if skipped:
        log.warning("skipped %d vote rows: %s", sum(skipped.values()), dict(skipped))
    return votes


def _categorical_schema(names) -> pa.Schema:
    return pa.schema(
        pa.field(n, _DICT if n in CATEGORICAL else ARROW_SCHEMA.field(n).type) for n in names
    )


def _categorical(table: pa.Table) -> pa.Table:
    """Dictionary-encode the low-cardinality columns (Parquet already delivers them so)."""
    for k, name in enumerate(table.column_names):
        col = table.column(k)
        if name in CATEGORICAL and not pa.types.is_dictionary(col.type):
            table = table.set_column(k, name, cast(dictionary_encode(col), _DICT))
    return table


#: Times :func:`read_listed` lists and reads while a compaction moves the files.
READ_ATTEMPTS = 5


def read_listed(
    listing: Callable[[], list], attempts: int = READ_ATTEMPTS
) -> tuple[list, VoteTable]:
    """The files ``listing()`` names and their votes, listed and read again when one vanished
    meanwhile: a compaction rolls shards into a monthly part, which it writes before it
    deletes them, so a new listing holds every vote once. A vanished file either stops
    :func:`read_votes` (it was gone before its turn) or is counted unreadable (gone while
    read); either way its votes would be missed. The last attempt's error is raised."""
    for _ in range(attempts - 1):
        try:
            files = listing()
            votes = read_votes(files)
        except FileNotFoundError:
            continue
        if all(os.path.lexists(f) for f in files):  # a dangling link is not a vanished file
            return files, votes
    files = listing()
    return files, read_votes(files)


def fastchat_arena_of(paths, arena: str | None) -> str:
    """The arena FastChat battles under ``paths`` are read into, for a command given
    ``--arena``: that arena when every file is a FastChat export (an export rated as one of
    the registry's arenas), else :data:`~arena_core.votes.fastchat.DEFAULT_ARENA`, as
    without ``--arena``. Beside an arena's own votes, relabelling the battles merged
    another arena's models into that arena's board, which then differed from the one the
    same files give without ``--arena``, and made any ``--arena`` name, a typo's too, look
    known."""
    if not arena or not paths:
        return fastchat.DEFAULT_ARENA
    kinds = {kind for _, kind in vote_files(paths)}
    return arena if kinds == {"fastchat"} else fastchat.DEFAULT_ARENA


def vote_files(paths) -> list[tuple[Path, str]]:
    """The vote files under ``paths`` (files, folders searched recursively, or glob
    patterns such as ``votes/**/*.parquet``), with their detected format, in a stable
    order: a folder's files and a pattern's matches sorted by path."""
    if isinstance(paths, str | Path):
        paths = [paths]
    found = []
    for raw in paths:
        if str(raw) == "":
            # Path("") is the current folder: an unset variable (--votes "$VOTES") would
            # read whatever vote files happen to be below it.
            raise FileNotFoundError("an empty path names no vote file or folder")
        path = Path(raw)
        if path.is_dir():
            inner = sorted(p for p in _visible_files(path) if p.suffix in _FOLDER_SUFFIXES)
            found.extend((p, _detect(p)) for p in inner)
        elif path.is_file() or _dangling(path):
            found.append((path, _detect(path)))
        elif _GLOB.search(str(raw)):
            # A pattern, as the counts engines take one: its files in a folder's order.
            files = sorted(
                Path(f) for f in glob.glob(str(raw), recursive=True) if Path(f).is_file()
            )
            if not files:
                raise FileNotFoundError(f"no vote file matches {raw}")
            found.extend((f, _detect(f)) for f in files)
        elif "://" in str(raw):  # Path() would also print it as "hf:/datasets/..."
            raise FileNotFoundError(
                f"{raw}: this reader reads local files and folders; for a Hub dataset give "
                "--repo <owner>/<repo> (every file) or --engine duckdb (its Parquet files), "
                "or download it and pass the folder"
            )
        else:
            raise FileNotFoundError(f"no vote file or folder at {path}")
    return found


#: The files a folder is read for (any other is named on the command line, by itself).
_FOLDER_SUFFIXES = (".jsonl", ".parquet")


def unread_in_folder(folder: Path) -> list[Path]:
    """The files under ``folder`` that reading it leaves out (hidden ones aside), sorted: a
    folder of FastChat exports, say, whose reading found no vote."""
    return sorted(p for p in _visible_files(folder) if p.suffix not in _FOLDER_SUFFIXES)


def _visible_files(folder: Path):
    """Every file under ``folder`` (a symbolic link to nothing included, see :func:`_dangling`)
    outside hidden folders and not hidden itself."""
    for p in folder.rglob("*"):
        if (p.is_file() or _dangling(p)) and not any(
            part.startswith(".") for part in p.relative_to(folder).parts
        ):
            yield p


def _dangling(path: Path) -> bool:
    """A symbolic link to nothing (a git-annex or datalad file whose content was not fetched,
    a Hub cache whose blob was removed): listed, so that reading it counts an unreadable
    file instead of leaving its votes out unsaid."""
    return path.is_symlink() and not path.exists()


#: Characters that make a path a glob pattern (when no file or folder has that name).
_GLOB = re.compile(r"[*?\[]")


#: The first bytes of a Parquet file, and of the compressed files a log may be shipped in
#: (gzip, zstd, bzip2, xz): none of these starts a JSON line.
#: A byte other than whitespace (found without copying what follows a file's first line).
_TEXT = re.compile(rb"\S")
_PARQUET_MAGIC = b"PAR1"
_COMPRESSED_MAGIC = (b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"BZh", b"\xfd7zXZ\x00")


def _detect(path: Path) -> str:
    """``parquet``, ``fastchat``, ``compressed`` or ``jsonl``. A ``.parquet`` or ``.jsonl``
    name is believed (a folder's files, every shard the Space lists); any other file, named
    on the command line, is told by its first bytes: a Parquet file named ``votes.pq`` or
    ``VOTES.PARQUET`` is read as Parquet, and a ``.jsonl.gz`` is refused as compressed,
    where both were read as JSONL, every line counted ``invalid_json``.

    A FastChat export is a JSON list: one named ``*.json`` is told by its first byte, ``[``;
    one under any other name (``--votes -`` is copied to a file named ``stdin``, ``<(...)``,
    ``STS.JSON``), which was read as JSONL, every line of it ``invalid_json`` and the board
    refused, by its shape (:func:`_one_document`): a damaged first line ``[1, 2]`` of a
    vote log must not turn the log's good lines into one broken export."""
    if path.suffix == ".parquet":
        return "parquet"
    if path.suffix == ".jsonl":
        return "jsonl"
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return "jsonl"  # the reader counts it unreadable, with the reason
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    if head.startswith(_COMPRESSED_MAGIC):
        return "compressed"
    if head.removeprefix(codecs.BOM_UTF8).lstrip().startswith(b"[") and (
        path.suffix.lower() == ".json" or _one_document(path)
    ):
        return "fastchat"
    return "jsonl"


def _one_document(path: Path) -> bool:
    """Whether a file beginning with ``[`` is one JSON document, not lines: its first line is
    ``[`` alone (``json.dump`` with an indent, as FastChat writes), or it has one line (a
    compact dump). A vote log whose first line is a damaged ``[...]`` has more lines."""
    try:
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            first = _TEXT.search(data, 3 if data[:3] == codecs.BOM_UTF8 else 0)
            start = first.start() if first else 0  # blank lines before the "[" aside
            end = data.find(b"\n", start)
            return end < 0 or data[start:end].strip() == b"[" or not _TEXT.search(data, end)
    except (OSError, ValueError):  # unreadable (the reader says so), or empty
        return False


def _asked(columns) -> list[str] | None:
    """The columns to return, in contract order (None: all)."""
    return None if columns is None else [f.name for f in FIELDS if f.name in set(columns)]


def _wanted_columns(columns) -> list[str]:
    if columns is None:
        return [f.name for f in FIELDS]
    unknown = set(columns) - set(_FIELD_TYPES)
    if unknown:
        raise ValueError(f"unknown vote columns: {sorted(unknown)}")
    keep = set(columns) | set(REQUIRED) | {"voter_kind"}  # every column a row is judged on
    return [f.name for f in FIELDS if f.name in keep]


def _read_parquet(path: Path, wanted: list[str]) -> pa.Table:
    """The ``wanted`` columns of one Parquet file; ValueError when the file is refused, a
    verdict reached from all its contract columns (:mod:`~arena_core.votes.parquet_verdict`)."""
    # One open file for the metadata, the read and the check beside it: opening the path
    # again judged whatever it named by then (a file replaced meanwhile, or none).
    with pa.OSFile(str(path)) as source:
        parquet, schema = open_checked(source)
        table = read_checked(parquet, schema, wanted, source=source)
    schema = _categorical_schema(wanted)
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            columns.append(column if column.type == field.type else cast(column, field.type))
        else:
            columns.append(pa.nulls(len(table), field.type))
    return pa.table(columns, schema=schema)
