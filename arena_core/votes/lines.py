"""One JSONL line at a time: Arrow's parser, the lines it must never see, and the reference.

:func:`read_lines` is the line-by-line reader every faster path must agree with: it
accepts exactly the lines Arrow's parser would accept alone, with the same values, and
counts the others under their reason. :func:`parse_json` is Arrow's parser with the
checks that make it refuse whatever :func:`read_lines` would skip.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from arena_core.votes.arrow import rows_table
from arena_core.votes.reasons import INVALID_JSON, NOT_OBJECT, WRONG_TYPE
from arena_core.votes.schema import ARROW_SCHEMA, FIELDS

PARSE_OPTIONS = pj.ParseOptions(explicit_schema=ARROW_SCHEMA, unexpected_field_behavior="ignore")
_FIELD_TYPES = {f.name: f.type for f in FIELDS}
#: Lines that must never start a block of Arrow's parser (pyarrow 26.0.1): one beginning
#: with ``null`` (after spaces, tabs or carriage returns) kills the process with a
#: segmentation fault, whatever follows (``null``, ``null,``, ``nullx``: a shard holding
#: just "null" crashed the start-up replay, and the Space in a loop); one beginning with a
#: byte of the UTF-8 byte-order mark loses those bytes there (a line of just "\xbf" gives
#: no row, a line "\xbf{...}" a row), and is refused anywhere else. A file holding such a
#: line takes the damaged-file path, which never hands one to Arrow: :func:`read_lines`
#: judges it. Two patterns, the line at the start of the searched range and the lines
#: after a newline: one starting ``(?:^|\n)`` is tried at every byte, thirty times slower.
_HAZARD_FIRST = re.compile(rb"[ \t\r]*(?:null|[\xef\xbb\xbf])")
_HAZARD_AFTER = re.compile(rb"\n[ \t\r]*(?:null|[\xef\xbb\xbf])")
#: Lines kept away from Arrow in a damaged file: those above, and blank lines (which Arrow
#: reads as no row, so a piece holding one is refused for its row count, naming no row).
#: Whitespace is that of ``bytes.strip``, which is how :func:`read_lines` finds blank lines.
#: Matched at a line's start (:func:`special_lines_among` finds the starts).
_SPECIAL_FIRST = re.compile(rb"[ \t\r\x0b\x0c]*(?:null|[\xef\xbb\xbf]|(?=\n|$))")
#: The newline and carriage return bytes.
_NEWLINE, _RETURN = ord("\n"), ord("\r")
#: First bytes a line matching ``_SPECIAL_FIRST`` can have: the whitespace it skips, a
#: newline (a blank line), ``n`` (``null``) and the byte-order mark's bytes.
_MAY_BEGIN_SPECIAL = np.zeros(256, dtype=bool)
_MAY_BEGIN_SPECIAL[list(b" \t\r\x0b\x0c\nn\xef\xbb\xbf")] = True


def has_hazard_line(data: bytes, start: int = 0, end: int | None = None) -> bool:
    """Whether a line of ``data[start:end]`` (``start`` at a line start) must never start
    a block of Arrow's parser: it begins with ``null`` or a byte-order-mark byte."""
    end = len(data) if end is None else end
    return bool(_HAZARD_FIRST.match(data, start, end) or _HAZARD_AFTER.search(data, start, end))


def special_lines(data: bytes, start: int = 0, end: int | None = None) -> list[int]:
    """Start offsets of the blank and hazard lines of ``data[start:end]`` (``start``
    at a line start; the empty remainder after a final newline is not a line)."""
    end = len(data) if end is None else min(end, len(data))
    return special_lines_among(data, start, end, line_breaks(data, start, end)[0])


def line_breaks(data, start: int, end: int) -> tuple[np.ndarray, bool]:
    """Offsets from ``start`` of the newlines of ``data[start:end]`` (bytes, or a mapping:
    no copy of the bytes is made), and whether a carriage return in it is followed by a
    byte other than a newline.

    Arrow's parser ends a row at a carriage return as at a newline, and may start a block
    right after one: a line ``{...}\rnull`` then kills the process as a line beginning
    with ``null`` does (pyarrow 26.0.1). No log the app writes holds a lone ``\r`` (JSON
    escapes it), so the callers send a file with one to the damaged-file path, which never
    hands Arrow such a line (:func:`~arena_core.votes.prescan.lines_apart`).
    """
    view = np.frombuffer(data, dtype=np.uint8, count=max(end - start, 0), offset=start)
    try:
        low = np.flatnonzero(view <= _RETURN)  # the breaks, and the rarer tab, \x0b, \x0c
        kind = view[low]
        after = low[kind == _RETURN] + 1
        # A return ending the range has no byte after it here: the end of a file (nothing
        # can follow it), or of a window that the caller cuts back and scans again.
        lone = bool((view[after[after < len(view)]] != _NEWLINE).any())
        return low[kind == _NEWLINE], lone
    finally:
        del view  # a mapping cannot close while numpy holds its buffer


def special_lines_among(data, start: int, end: int, newlines: np.ndarray) -> list[int]:
    """:func:`special_lines` of ``data[start:end]``, given the newlines of :func:`line_breaks`.

    Every line's first byte is looked at at once; the pattern runs only on the lines whose
    first byte can begin a blank or hazard line (:data:`_MAY_BEGIN_SPECIAL`), none in a
    clean log, where every line begins with ``{``. Running the pattern over the whole
    range instead cost a clean million-vote log about a third of a second.
    """
    if end <= start:
        return []
    view = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
    try:
        starts = np.concatenate((np.zeros(1, np.int64), newlines + 1))
        starts = starts[starts < end - start]
        maybe = starts[_MAY_BEGIN_SPECIAL[view[starts]]]
    finally:
        del view
    return [start + s for s in maybe.tolist() if _SPECIAL_FIRST.match(data, start + s, end)]


def parse_json(source, wanted: list[str], lines: int, block_size: int) -> pa.Table:
    """Arrow's JSON parser over ``source`` (its blocks parsed on every core); raises
    ArrowInvalid wherever the line-by-line reader would skip a line, so that both always
    agree.

    Arrow refuses bad JSON and wrong types itself; we also refuse what it lets
    through: invalid UTF-8 in a known field, and a line holding two objects
    (caught as more rows than lines: callers keep blank lines, Arrow's row fewer, away
    from it with :func:`special_lines`, else one could hide the other).
    """
    # "Empty JSON" is refused too: Arrow says it of blank data, but also of a line of stray
    # bytes of a UTF-8 byte-order mark ("\xbf"), which the line-by-line reader counts.
    table = pj.read_json(source, read_options=pj.ReadOptions(block_size=block_size),
                         parse_options=PARSE_OPTIONS)  # fmt: skip
    table.validate(full=True)  # every contract column, wanted or not: UTF-8 included
    if table.num_rows != lines:
        raise pa.ArrowInvalid(f"{table.num_rows} rows from {lines} lines")
    return table.select(wanted)


def read_lines(data: bytes, skipped: Counter) -> pa.Table:
    """Line-by-line reading with the same acceptance rules as Arrow's parser: the reference
    that :func:`~arena_core.votes.tolerant.read_damaged` agrees with."""
    rows = [row for raw in data.split(b"\n") if (row := judge_line(raw, skipped)) is not None]
    return rows_table(rows, ARROW_SCHEMA)


def judge_line(raw: bytes, skipped: Counter) -> dict | None:
    """One line's row (all contract fields), or None: blank, or skipped and counted."""
    if not raw.strip():
        return None
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
        return row
    if not isinstance(obj, dict):
        skipped[NOT_OBJECT] += 1
    elif not all(encodable(obj.get(name)) for name in _FIELD_TYPES):
        skipped[INVALID_JSON] += 1
    elif all(_type_ok(name, obj.get(name)) for name in _FIELD_TYPES):
        return {name: field_value(name, obj.get(name)) for name in _FIELD_TYPES}
    else:
        skipped[WRONG_TYPE] += 1
    return None


def damaged_lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` (complete JSONL lines) that every reader skips and counts, each
    as it is, newline excluded. A line's verdict depends on that line alone, except when it
    is its file's first line: readers drop a UTF-8 byte-order mark at a file's start, so a
    line skipped for the mark it begins with counts there. Written to a file of their own,
    these lines are skipped and counted for the same reasons only if a line beginning with
    a mark is not the file's first (the caller puts a mark of the file's own before it:
    :func:`~arena_core.dataset.uploader.damaged_file`)."""
    out = []
    for raw in data.split(b"\n"):
        verdict: Counter = Counter()
        judge_line(raw, verdict)
        if verdict:
            out.append(raw)
    return out


def _arrow_row(raw: bytes) -> dict | None:
    """One line parsed by Arrow alone (which has no nesting limit), or None if it refuses.

    Arrow's verdict is the fast path's, so a deeply nested line (say, 1,000 levels
    in an unknown field) is judged the same whichever path reads its file.
    """
    if has_hazard_line(raw):
        return None
    try:
        table = parse_json(pa.BufferReader(raw + b"\n"), list(_FIELD_TYPES), 1, len(raw) + 1)
    except pa.ArrowInvalid:
        return None
    return table.to_pylist()[0] if table.num_rows == 1 else None


def encodable(value) -> bool:
    """False if a string (or a list's string) holds surrogates: bytes that were not UTF-8,
    or a lone surrogate escape (``"\\ud800"``, valid JSON), which no UTF-8 writer (Arrow,
    Parquet, a JSONL line) can hold."""
    if isinstance(value, list):
        return all(encodable(v) for v in value)
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
    if pa.types.is_boolean(kind):
        return type(value) is bool  # Arrow takes true and false only, not 0, 1 or "true"
    return isinstance(value, list) and all(v is None or isinstance(v, str) for v in value)


def readable(name: str, value) -> bool:
    """Whether a JSON value is one the field ``name`` takes from a JSONL line (the type
    Arrow's parser accepts, strings without surrogates): for other JSON sources of
    contract fields (our FastChat exports' extra fields), judged by the same rule."""
    return encodable(value) and _type_ok(name, value)


def field_value(name: str, value):
    """A field's value as Arrow's parser reads it: a float field takes any JSON integer,
    one too large for a double becoming an infinity."""
    if type(value) is int and pa.types.is_floating(_FIELD_TYPES[name]):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def whole_last_line(rest: bytes) -> bool:
    """Whether ``rest``, what follows a file's last newline, is a whole line that only lacks
    its newline (a hand-edited file; a crash after the object was written), not half a line
    (a crash, or a write in progress): it is whole when it parses as one JSON object. This
    is ``read_votes``'s test (``jsonl.read_jsonl``); a board's live revision asks here, so
    both count the same votes."""
    try:
        return isinstance(json.loads(rest), dict)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
