"""Reading vote logs: JSONL shards, Parquet files and FastChat exports.

Real logs are damaged in real ways: a process killed mid-write leaves half a
line, someone edits a file by hand, an old writer had a bug. Reading never
crashes on a row: each bad row is skipped and counted under a reason (the
constants of :mod:`~arena_core.votes.reasons`), and the rest is read. Whether a row is valid never
depends on which columns the caller asked for or on which path parsed it, so
every reader of the same files gets the same votes.

The fast path hands a whole JSONL file to Arrow's multithreaded JSON parser;
only a file that Arrow refuses (one bad line fails the whole file) is re-read
line by line. Valid rows are put in replay order, by ``ts`` then ``vote_id``,
and a repeated ``vote_id`` keeps its first (earliest) row.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from arena_core.votes import fastchat
from arena_core.votes.clean import CATEGORICAL, VoteTable, clean
from arena_core.votes.reasons import (
    INVALID_JSON,
    NOT_OBJECT,
    TRUNCATED,
    UNREADABLE,
    WRONG_TYPE,
)
from arena_core.votes.schema import (
    ARROW_SCHEMA,
    FIELDS,
    REQUIRED,
)

log = logging.getLogger(__name__)

_DICT = pa.dictionary(pa.int32(), pa.string())
#: Bytes per block of Arrow's parallel JSON parser (4 MiB measured fastest on 2 cores).
_JSON_BLOCK = 4 << 20
_PARSE = pj.ParseOptions(explicit_schema=ARROW_SCHEMA, unexpected_field_behavior="ignore")
_FIELD_TYPES = {f.name: f.type for f in FIELDS}
#: A line that is JSON ``null`` alone. Arrow's JSON reader (pyarrow 26.0.1) kills the process
#: with a segmentation fault when a block starts with one (a file holding just "null" is
#: enough: the start-up replay would crash the Space in a loop), and reads it as a row of
#: nulls elsewhere. A file with such a line is read line by line: the line is skipped and
#: counted as ``not_object``, like any JSON value that is not an object.
_BARE_NULL = re.compile(rb"(?:^|\n)[ \t\r]*null[ \t\r]*(?=\n|$)")


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
            elif kind == "fastchat":
                table = fastchat.read_export(
                    path, skipped, keep_all=fastchat_all, arena=fastchat_arena
                )
            else:
                table = _read_jsonl(path, skipped, wanted)
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
    table = pa.concat_tables(tables) if tables else schema.empty_table()
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
            table = table.set_column(k, name, pc.dictionary_encode(col).cast(_DICT))
    return table


def vote_files(paths) -> list[tuple[Path, str]]:
    """The vote files under ``paths``, with their detected format, in a stable order."""
    if isinstance(paths, str | Path):
        paths = [paths]
    found = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inner = sorted(
                p
                for p in path.rglob("*")
                if p.suffix in (".jsonl", ".parquet")
                and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            found.extend((p, _detect(p)) for p in inner)
        elif path.is_file():
            found.append((path, _detect(path)))
        else:
            raise FileNotFoundError(f"no vote file or folder at {path}")
    return found


def _detect(path: Path) -> str:
    if path.suffix == ".parquet":
        return "parquet"
    if path.suffix == ".json":
        with path.open("rb") as f:
            head = f.read(4096).lstrip()
        if head.startswith(b"["):
            return "fastchat"
    return "jsonl"


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


def _read_jsonl(path: Path, skipped: Counter, wanted: list[str]) -> pa.Table:
    """One JSONL file, streamed through Arrow; damaged files take the tolerant path.

    Streaming block by block and keeping only the wanted columns of each
    block holds peak memory to a few blocks instead of the whole file.
    """
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(0, size - 1))
        clean_end = f.read(1) in (b"\n", b"")
    if clean_end:
        lines, bare_null = _scan_lines(path)
        if not bare_null:
            try:
                return _parse_json(str(path), wanted, lines)
            except pa.ArrowInvalid:
                pass
        log.info("%s has damaged lines; reading it line by line", path)
        return _read_jsonl_tolerant(path.read_bytes(), skipped).select(wanted)
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    # No newline at the end: a crash mid-write, or a hand-edited file.
    try:
        complete = isinstance(json.loads(data[cut:]), dict)
    except (ValueError, UnicodeDecodeError, RecursionError):
        complete = False
    if complete:
        data += b"\n"
    else:
        skipped[TRUNCATED] += 1
        data = data[:cut]
    return parse_jsonl(data, skipped).select(wanted)


def parse_jsonl(data: bytes, skipped: Counter) -> pa.Table:
    """Complete JSONL lines held in memory, as a contract table (damaged lines counted)."""
    wanted = [f.name for f in FIELDS]
    if not data or data.isspace():
        return ARROW_SCHEMA.empty_table()
    if _BARE_NULL.search(data):
        return _read_jsonl_tolerant(data, skipped)
    try:
        return _parse_json(
            pa.BufferReader(data), wanted, data.count(b"\n") + (not data.endswith(b"\n"))
        )
    except pa.ArrowInvalid:
        return _read_jsonl_tolerant(data, skipped)


def _parse_json(source, wanted: list[str], lines: int) -> pa.Table:
    """Arrow's JSON parser over ``source``; raises ArrowInvalid wherever the line-by-line
    reader would skip a line, so that both always agree.

    Arrow refuses bad JSON and wrong types itself; we also refuse what it lets
    through: invalid UTF-8 in a known field, and a line holding two objects
    (caught as more or fewer rows than lines; blank lines also take the slow path).
    """
    schema = pa.schema([ARROW_SCHEMA.field(c) for c in wanted])
    try:
        reader = pj.open_json(source, read_options=pj.ReadOptions(block_size=_JSON_BLOCK),
                              parse_options=_PARSE)  # fmt: skip
    except pa.ArrowInvalid as exc:
        if "Empty JSON" in str(exc):  # nothing but whitespace
            return schema.empty_table()
        raise
    batches = []
    for batch in reader:
        batch.validate(full=True)  # every contract column, wanted or not: UTF-8 included
        batches.append(pa.Table.from_batches([batch]).select(wanted))
    rows = sum(b.num_rows for b in batches)
    if rows != lines:
        raise pa.ArrowInvalid(f"{rows} rows from {lines} lines")
    return pa.concat_tables(batches).combine_chunks() if batches else schema.empty_table()


def _scan_lines(path: Path) -> tuple[int, bool]:
    """The file's newlines, and whether a line is a bare ``null`` (:data:`_BARE_NULL`)."""
    count, tail, bare_null = 0, b"", False
    with path.open("rb") as f:
        while chunk := f.read(_JSON_BLOCK):
            count += chunk.count(b"\n")
            if not bare_null:  # complete lines only; a line cut by the chunk waits for its end
                window = tail + chunk
                cut = window.rfind(b"\n") + 1
                bare_null = _BARE_NULL.search(window, 0, cut) is not None
                tail = window[cut:]
    return count, bare_null or _BARE_NULL.search(tail) is not None


def _read_jsonl_tolerant(data: bytes, skipped: Counter) -> pa.Table:
    """Line-by-line reading with the same acceptance rules as Arrow's parser."""
    rows = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            # Undecodable bytes are kept as surrogates, so that only the known fields
            # are judged (as Arrow does); _type_ok refuses them there.
            obj = json.loads(
                raw.decode("utf-8", "surrogateescape"),
                object_pairs_hook=_no_repeated_keys,
                parse_float=_double,
            )
        except (ValueError, RecursionError):
            # Python refuses it, or nests too deep for Python's parser: Arrow judges the
            # line alone, as it would have in a clean file (it also takes the literals
            # Inf, -Inf and -NaN, which Python's parser does not).
            row = _arrow_row(raw)
            if row is None:
                skipped[INVALID_JSON] += 1
            else:
                rows.append(row)
            continue
        if not isinstance(obj, dict):
            skipped[NOT_OBJECT] += 1
        elif not all(_utf8(obj.get(name)) for name in _FIELD_TYPES):
            skipped[INVALID_JSON] += 1
        elif all(_type_ok(name, obj.get(name)) for name in _FIELD_TYPES):
            rows.append({name: _value(name, obj.get(name)) for name in _FIELD_TYPES})
        else:
            skipped[WRONG_TYPE] += 1
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


def _arrow_row(raw: bytes) -> dict | None:
    """One line parsed by Arrow alone (which has no nesting limit), or None if it refuses.

    Arrow's verdict is the fast path's, so a deeply nested line (say, 1,000 levels
    in an unknown field) is judged the same whichever path reads its file.
    """
    if _BARE_NULL.search(raw):
        return None
    try:
        table = _parse_json(pa.BufferReader(raw + b"\n"), list(_FIELD_TYPES), 1)
    except pa.ArrowInvalid:
        return None
    return table.to_pylist()[0] if table.num_rows == 1 else None


def _utf8(value) -> bool:
    """False if a string (or a list's string) holds surrogates: bytes that were not UTF-8."""
    if isinstance(value, list):
        return all(_utf8(v) for v in value)
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _double(text: str) -> float:
    """A JSON fraction or exponent literal as Arrow reads it: one beyond a double is refused."""
    value = float(text)
    if math.isinf(value):
        raise ValueError("number too big to be stored in a double")
    return value


def _no_repeated_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key appears twice")
    return dict(pairs)


def _type_ok(name: str, value) -> bool:
    """Whether Arrow's parser would accept ``value`` for the field ``name``."""
    if value is None:
        return True
    kind = _FIELD_TYPES[name]
    if pa.types.is_string(kind):
        return isinstance(value, str)
    if pa.types.is_integer(kind):
        return type(value) is int and -(2**63) <= value < 2**63
    if pa.types.is_floating(kind):
        return type(value) in (int, float)  # not bool, as Arrow
    return isinstance(value, list) and all(v is None or isinstance(v, str) for v in value)


def _read_parquet(path: Path, wanted: list[str]) -> pa.Table:
    schema = pq.read_schema(path)
    present = [c for c in _FIELD_TYPES if c in schema.names]
    for name in present:  # refuse the whole file if any contract column is mistyped
        if not _castable(schema.field(name).type, _FIELD_TYPES[name]):
            raise ValueError(f"column {name!r} has type {schema.field(name).type}")
    # One file through ParquetFile, not pq.read_table: the latter imports pyarrow.dataset
    # (and with it pandas), a tenth of a second of a fresh CLI run for nothing.
    parquet = pq.ParquetFile(
        path, read_dictionary=[c for c in wanted if c in CATEGORICAL and c in present]
    )
    table = parquet.read(columns=[c for c in wanted if c in present])
    table.validate(full=True)  # e.g. invalid UTF-8: the whole file is refused
    schema = _categorical_schema(wanted)
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(len(table), field.type))
    return pa.table(columns, schema=schema)


def _value(name: str, value):
    """A field's value as Arrow's parser reads it: a float field takes any JSON integer,
    one too large for a double becoming an infinity."""
    if type(value) is int and pa.types.is_floating(_FIELD_TYPES[name]):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def _castable(have: pa.DataType, want: pa.DataType) -> bool:
    if pa.types.is_dictionary(have):
        have = have.value_type
    if pa.types.is_string(want):
        return (
            pa.types.is_string(have)
            or pa.types.is_large_string(have)
            or pa.types.is_string_view(have)
        )
    if pa.types.is_integer(want):
        return pa.types.is_integer(have)
    if pa.types.is_floating(want):
        return pa.types.is_floating(have) or pa.types.is_integer(have)
    return (pa.types.is_list(have) or pa.types.is_large_list(have)) and _castable(
        have.value_type, pa.string()
    )
