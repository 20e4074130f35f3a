"""Reading one JSONL vote file: Arrow's parser a window at a time, damaged windows apart.

A file is cut into windows of about :data:`_SCAN_WINDOW` bytes, each ending after a
newline. A window with no line to keep from Arrow's parser goes to it whole
(:func:`~arena_core.votes.lines.parse_json`), which parses its blocks on every core; a
window Arrow refuses, or one holding such a line, is read by the damaged-file path
(:func:`~arena_core.votes.tolerant.read_damaged`), around its bad lines. Every rule of
both is about one line, so a window's rows and skips are those of the whole file's
lines in it: the file's are the windows' in order.

Why windows: one damaged line used to send the whole file, read into memory a second time,
down the damaged path, after Arrow had parsed it up to that line. Now it costs its window:
a 114 MB shard (250,000 votes) with one wrong-typed line took 2.2 s and 448 MB at peak for
the whole CLI, and takes 1.55 s and 318 MB (median of 3, fresh processes). A clean file
reads as fast as before: Arrow's streaming reader, used before, already parsed ahead on
both cores. In a file damaged throughout (0.2% of lines) every window holds damage: the
first windows are short (:data:`_FIRST_WINDOW`), so that Arrow's tries, each a window
parsed then refused, waste little before the file goes down the damaged path.
"""

from __future__ import annotations

import codecs
import logging
import mmap
from collections import Counter
from pathlib import Path

import pyarrow as pa

from arena_core.votes.arrow import empty_table
from arena_core.votes.lines import line_breaks, parse_json, special_lines_among, whole_last_line
from arena_core.votes.reasons import TRUNCATED
from arena_core.votes.schema import ARROW_SCHEMA, FIELDS
from arena_core.votes.tolerant import read_damaged

log = logging.getLogger(__name__)

#: Bytes per block of Arrow's parallel JSON parser (4 MiB measured fastest on 2 cores); a
#: window shorter than four of them (a file's first windows, :data:`_FIRST_WINDOW`) is cut
#: into quarters of at least :data:`_MIN_BLOCK`, so that from 2 MiB both cores share it.
_JSON_BLOCK = 4 << 20
_MIN_BLOCK = 1 << 20
#: Bytes of a JSONL file judged, then parsed, at a time (:func:`_windows`): four blocks,
#: so that two or more cores share each window.
_SCAN_WINDOW = 16 << 20
#: Bytes of a file's first window; each next one is twice as long, up to
#: :data:`_SCAN_WINDOW`. Arrow's tries of a file damaged throughout are wasted, and they
#: end after :data:`_DAMAGED_STREAK` windows: 3 MiB parsed in vain instead of 32. The
#: price: damage in both of the first two windows (the first 3 MiB, where it was the first
#: 32) sends the rest of the file down the damaged path, which reads it within 1.5 times
#: the clean time, rows and counts the same. A line longer than two blocks there (over
#: 2 MiB) is read by the damaged path too.
_FIRST_WINDOW = 1 << 20
#: Damaged windows in a row after which Arrow no longer tries the file's next windows.
_DAMAGED_STREAK = 2
#: Most windows of one damaged stretch read at once (each stretch is copied out of the
#: mapping: a file damaged throughout is held four windows at a time, not whole).
_STRETCH_WINDOWS = 4


def read_jsonl(path: Path, skipped: Counter, wanted: list[str]) -> pa.Table:
    """The ``wanted`` columns of one JSONL file's valid rows, in file order; its damaged
    lines counted in ``skipped`` (a byte-order mark, a last line cut short: as
    :func:`parse_jsonl` judges them)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        # A byte-order mark (a Windows editor's) is not part of the first vote.
        bom = f.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8
        f.seek(max(0, size - 1))
        clean_end = f.read(1) in (b"\n", b"")
    if clean_end and not bom:
        return _read_windows(path, size, skipped, wanted)
    data = path.read_bytes()[len(codecs.BOM_UTF8) if bom else 0 :]
    if clean_end:
        return parse_jsonl(data, skipped).select(wanted)
    cut = data.rfind(b"\n") + 1
    # No newline at the end: a crash mid-write, or a hand-edited file.
    if whole_last_line(data[cut:]):
        data += b"\n"
    else:
        skipped[TRUNCATED] += 1
        data = data[:cut]
    return parse_jsonl(data, skipped).select(wanted)


def parse_jsonl(data: bytes, skipped: Counter) -> pa.Table:
    """Complete JSONL lines held in memory, as a contract table (damaged lines counted)."""
    wanted = [f.name for f in FIELDS]
    if not data or data.isspace():
        return empty_table(ARROW_SCHEMA)
    newlines, lone_return = line_breaks(data, 0, len(data))
    lines = len(newlines) + (not data.endswith(b"\n"))
    table = _clean_window(data, 0, len(data), newlines, lone_return, lines, wanted)
    return table if table is not None else read_damaged(data, skipped, wanted)


def _read_windows(path: Path, size: int, skipped: Counter, wanted: list[str]) -> pa.Table:
    """The first ``size`` bytes of a file (those judged to end with a newline) read window
    by window (:func:`_windows`), as one table.

    Consecutive damaged windows go down the damaged path together, as one stretch: that path
    spreads its work over every core, and window by window it waited at each window's end
    for its slowest block; a stretch is read :data:`_STRETCH_WINDOWS` windows at a time at
    most. After :data:`_DAMAGED_STREAK` damaged windows in a row, Arrow no longer tries the
    file's next windows: the rest goes down the damaged path, stretch by stretch (in a file
    damaged throughout, those tries, each a whole window parsed then refused, cost a fifth
    more time).
    """
    tables, damaged, streak = [], 0, 0
    run_from, run = None, 0  # where the damaged windows not yet read begin, and how many
    for start, end, mapped, newlines, lone_return in _windows(path, size):
        table = None
        if streak < _DAMAGED_STREAK:
            table = _clean_window(mapped, start, end, newlines, lone_return, len(newlines),
                                  wanted)  # fmt: skip
        if table is None:
            damaged, streak, run = damaged + 1, streak + 1, run + 1
            run_from = start if run_from is None else run_from
            if run >= _STRETCH_WINDOWS or end == size:  # one copy of a few windows at most
                tables.append(read_damaged(mapped[run_from:end], skipped, wanted))
                run_from, run = None, 0
            continue
        streak = 0
        if run_from is not None:
            tables.append(read_damaged(mapped[run_from:start], skipped, wanted))
            run_from, run = None, 0
        tables.append(table)
    if damaged:
        log.info("%s has damaged lines; read around them", path)
    if not tables:
        return empty_table(pa.schema([ARROW_SCHEMA.field(c) for c in wanted]))
    # One chunk: a table of hundreds of pieces made each later gather several times slower.
    return pa.concat_tables(tables).combine_chunks()


def _clean_window(data, start: int, end: int, newlines, lone_return: bool, lines: int,
                  wanted: list[str]) -> pa.Table | None:  # fmt: skip
    """The rows of ``data[start:end]`` (whole lines; ``lines`` of them) by Arrow's parser, or
    None when a line must be kept from it or it refuses one (the damaged path's, then)."""
    if lone_return or special_lines_among(data, start, end, newlines):
        return None
    try:  # bytes: a copy of a mapped window, which is let go after
        block = min(_JSON_BLOCK, max((end - start) // 4, _MIN_BLOCK))
        return parse_json(pa.BufferReader(data[start:end]), wanted, lines, block)
    except pa.ArrowInvalid:
        return None


def _windows(path: Path, size: int | None = None):
    """The windows of the file's first ``size`` bytes (default: all; a line a writer appends
    meanwhile is left to the next read, not judged half-written) of about
    :data:`_FIRST_WINDOW` bytes, doubling up to :data:`_SCAN_WINDOW`, each ending after a newline
    (so every line is judged whole, from its start; a line longer than a window is one
    window), as ``(start, end, mapping, newlines, lone_return)``: the newlines' offsets
    from ``start`` and whether a carriage return is followed by a byte other than a newline
    (:func:`~arena_core.votes.lines.line_breaks`).

    The file is mapped, not read: numpy finds the newlines (once, for the count and for the
    lines' starts), and each window's pages leave the process's memory once the caller is
    done with it, so a mapped shard never adds its size to peak memory.
    """
    size = min(path.stat().st_size, size if size is not None else path.stat().st_size)
    if size == 0:
        return
    with path.open("rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mapped:
        start, window = 0, min(_FIRST_WINDOW, _SCAN_WINDOW)
        while start < size:
            end = min(start + window, size)
            window = min(2 * window, _SCAN_WINDOW)
            newlines, lone_return = line_breaks(mapped, start, end)
            if end < size and len(newlines):  # the window ends after its last newline
                end = start + int(newlines[-1]) + 1
                if lone_return:  # judged on the window as cut: what was cut off is the next's
                    _, lone_return = line_breaks(mapped, start, end)
            elif end < size:  # a line longer than the window: the window takes it whole
                end = mapped.find(b"\n", end) + 1 or size
                newlines, lone_return = line_breaks(mapped, start, end)
            yield start, end, mapped, newlines, lone_return
            _forget(mapped, start, end)
            start = end


def _forget(mapped: mmap.mmap, start: int, end: int) -> None:
    """Drop the mapped pages of ``[start, end)`` from the process (the file's pages stay in
    the page cache), so a mapped shard never adds its size to peak memory."""
    if hasattr(mmap, "MADV_DONTNEED"):
        first = start - start % mmap.PAGESIZE
        mapped.madvise(mmap.MADV_DONTNEED, first, end - first)
