"""Damaged JSONL: Arrow reads the good lines on every core, the line-by-line reader the rest.

One bad line makes Arrow refuse a whole file, and reading a refused file line by line
in Python cost about seven times Arrow's time per vote. Instead the file is cut into
blocks of whole lines (:data:`TASK_BYTES`), read on a thread pool (Arrow and numpy let
go of the GIL, so a damaged file is parsed on every core, as a clean one is). In each
block a vectorised look at the bytes (:func:`~arena_core.votes.prescan.lines_apart`)
sets apart the lines that are plainly not one JSON object (and those Arrow could read
as two rows), and the block is streamed through Arrow with those emptied (Arrow skips
empty lines); a bad line only Arrow can see (a wrong type, say) is emptied once Arrow
names it ("... in row N"), the stream restarting at the Arrow block that held it. The
lines set apart are judged by :func:`~arena_core.votes.lines.judge_line`, the reference
reader.
Where the stream could lose track of which line a row came from (Arrow refusing a
block without naming a row), the block is read in pieces instead: Arrow on runs of
lines, a refused run split at the row Arrow names, or halved, down to single lines.

Either way every line ends up read by Arrow as exactly one row (rows = lines, every
contract column valid UTF-8) or judged by the reference reader, which accepts exactly
the lines Arrow would accept alone, with the same values. So the rows read and the skip
counts are the reference reader's (the tests compare the two on random damaged files).
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from arena_core.votes.arrow import empty_table, numeric, rows_table, to_numpy
from arena_core.votes.kernels import pc
from arena_core.votes.lines import PARSE_OPTIONS, judge_line, parse_json, read_lines, special_lines
from arena_core.votes.prescan import line_bounds, lines_apart
from arena_core.votes.schema import ARROW_SCHEMA

#: Bytes of a damaged file read by one task of the thread pool (whole lines). Each task
#: opens its own Arrow stream (about 0.3 ms), and the last task to finish leaves the
#: other cores idle: a few MiB is long enough for the first, short enough for the second.
TASK_BYTES = 4 << 20
#: Bytes per block of a task's Arrow stream. After a bad line the stream restarts at the
#: block that held it, so a smaller block parses less twice, and a larger one pays
#: Arrow's per-block cost (a ``read_json`` call each) less often: on a damaged shard of
#: 250,000 votes, 1.40 s at 128 KiB, 1.21 s at 256, 1.08 s at 512, 1.12 s at 1 MiB.
STREAM_BLOCK = 512 << 10
#: Bytes handed to Arrow at a time where a block is read in pieces. A refused piece is
#: parsed again up to its bad line, so smaller pieces waste less per bad line, and larger
#: ones pay Arrow's per-call cost less often.
PIECE_BYTES = 64 << 10
#: Where Arrow's JSON errors say the bad row is, counted from the start of the block.
_ERROR_ROW = re.compile(r" in row (\d+)$")


def read_damaged(data: bytes, skipped: Counter, wanted: list[str]) -> pa.Table:
    """The lines of ``data`` (split at ``\\n``) as a contract table of the ``wanted``
    columns, in file order, with what :func:`read_lines` would read and skip.

    The blocks of :func:`_task_bounds` are read on a thread pool (:func:`_read_task`)
    and put back in order.
    """
    tasks = list(pairwise(_task_bounds(data)))
    if len(tasks) > 1:
        with ThreadPoolExecutor(max_workers=min(pa.cpu_count(), len(tasks))) as pool:
            done = list(pool.map(lambda task: _read_task(data, *task, wanted), tasks))
    else:
        done = [_read_task(data, lo, hi, wanted) for lo, hi in tasks]
    for _, counts in done:
        skipped.update(counts)
    tables = [table for table, _ in done if table.num_rows]
    return pa.concat_tables(tables) if tables else _empty(wanted)


def _task_bounds(data: bytes) -> list[int]:
    """Offsets cutting ``data`` into blocks of whole lines of about :data:`TASK_BYTES`."""
    cuts = [0]
    while cuts[-1] < len(data):
        newline = data.find(b"\n", cuts[-1] + TASK_BYTES - 1)
        cuts.append(len(data) if newline < 0 else newline + 1)
    return cuts


def _read_task(data: bytes, lo: int, hi: int, wanted) -> tuple[pa.Table, Counter]:
    """The lines of ``data[lo:hi]`` as a table, and what was skipped: streamed
    (:func:`_read_streamed`), or in pieces (:func:`_read_in_pieces`) if the stream lost
    track of its lines."""
    starts, ends = line_bounds(data, lo, hi)
    counts: Counter = Counter()
    table = _read_streamed(data, starts, ends, counts, wanted)
    if table is None:
        counts = Counter()
        table = _read_in_pieces(data, starts, ends, counts, wanted)
    return table, counts


def _read_streamed(data: bytes, starts, ends, skipped: Counter, wanted) -> pa.Table | None:
    """The lines through one Arrow stream of blocks of :data:`STREAM_BLOCK`, or None if
    the rows and the lines stopped matching.

    The lines of :func:`lines_apart` are judged apart first, and blanked (turned into
    empty lines, which Arrow skips, and which, unlike a run of spaces, never make a
    line longer than its blocks): every line left gives Arrow one row or an error. When
    Arrow names a bad row, its line (and the one before: Arrow may name the row after a
    line holding an object and then something else) is judged apart and blanked, and the
    stream restarts where the failing block began. A batch with bytes that are not UTF-8
    (those :func:`lines_apart` missed) keeps its other rows. Rows map to the lines not
    blanked, in order. A line longer than a block is a block of its own.
    """
    stream = _Stream(data, starts, ends, skipped)
    stream.set_aside(np.flatnonzero(lines_apart(data, starts, ends)))
    tables, table_lines = [], []
    while len(stream.next_lines(1)):  # each pass ends the stream, or judges a line apart
        first = int(starts[stream.at])
        source = stream.buffer.slice(first - int(starts[0]))
        try:
            for batch in _blocks(source, starts[stream.at + 1 :] - first, STREAM_BLOCK):
                lines = stream.next_lines(batch.num_rows)
                if len(lines) < batch.num_rows:
                    return None
                table = pa.Table.from_batches([batch])
                bad = _not_utf8(batch)
                if bad is not None:
                    stream.set_aside(lines[bad])
                    table, lines = table.filter(numeric(~bad)), lines[~bad]
                tables.append(table.select(wanted))
                table_lines.append(lines)
                stream.at = int(lines[-1]) + 1 if len(lines) else stream.at
            break
        except pa.ArrowInvalid as exc:
            named = _ERROR_ROW.search(str(exc))
            lines = stream.next_lines(int(named.group(1)) + 1) if named else []
            if not named or len(lines) <= int(named.group(1)):
                return None
            stream.set_aside(lines[-2:])
    if len(stream.next_lines(1)):
        return None
    return stream.in_line_order(tables, table_lines, wanted)


def _blocks(source: pa.Buffer, cuts: np.ndarray, block: int):
    """Arrow's rows of ``source`` (whole lines), a block of about ``block`` bytes at a time,
    as record batches: what ``pyarrow.json.open_json`` yields, without its streaming reader.
    A block ends at the first of ``cuts`` (the offsets in ``source`` where its lines after
    the first start, ascending) at least ``block`` bytes on, so a line longer than a block
    is a block of its own. The streaming reader reads ahead on a thread of Arrow's, which
    could still be running when the interpreter ended: the process then aborted
    ("terminate called without an active exception", status 134) after writing its output,
    in about 1 run in 100 of a command reading a file with a damaged line, under load
    (``tests/test_votes_tolerant.py``). ``read_json`` on one block, on this thread, leaves
    nothing running. An error names its row from the block's start, as the stream's did."""
    size, start = source.size, 0
    while start < size:
        k = int(np.searchsorted(cuts, start + block))
        end = int(cuts[k]) if k < len(cuts) else size
        piece = source.slice(start, end - start)
        options = pj.ReadOptions(block_size=piece.size, use_threads=False)
        yield from pj.read_json(pa.BufferReader(piece), read_options=options,
                                parse_options=PARSE_OPTIONS).to_batches()  # fmt: skip
        start = end


class _Stream:
    """Lines of a damaged file being streamed: their text with the lines judged apart
    blanked (copied on the first), the first line not read yet (``at``, an index into
    ``starts``), and the rows :func:`judge_line` gave the lines judged apart."""

    def __init__(self, data: bytes, starts, ends, skipped: Counter):
        self.data, self.starts, self.ends, self.skipped = data, starts, ends, skipped
        self.lo = int(starts[0]) if len(starts) else 0
        self.hi = min(int(ends[-1]) + 1, len(data)) if len(starts) else 0
        self.text: bytearray | None = None
        self.buffer = pa.py_buffer(data).slice(self.lo, self.hi - self.lo)
        self.blank = np.zeros(len(starts), dtype=bool)
        self.at = 0
        self.rows: list[dict] = []
        self.row_lines: list[int] = []

    def next_lines(self, n: int) -> np.ndarray:
        """The next ``n`` lines not blanked, from ``at`` (fewer at the end)."""
        width = max(n, 1)
        while True:
            lines = np.flatnonzero(~self.blank[self.at : self.at + width])[:n] + self.at
            if len(lines) == n or self.at + width >= len(self.blank):
                return lines
            width *= 2

    def set_aside(self, lines) -> None:
        """Judge ``lines`` with the reference reader, and blank them out of the stream."""
        for line in np.asarray(lines, dtype=np.int64).tolist():
            if self.blank[line]:
                continue
            begin, end = int(self.starts[line]), int(self.ends[line])
            row = judge_line(self.data[begin:end], self.skipped)
            if row is not None:
                self.rows.append(row)
                self.row_lines.append(line)
            if self.text is None:
                self.text = bytearray(memoryview(self.data)[self.lo : self.hi])
                self.buffer = pa.py_buffer(self.text)
            self.text[begin - self.lo : end - self.lo] = b"\n" * (end - begin)
            self.blank[line] = True

    def in_line_order(self, tables, table_lines, wanted) -> pa.Table:
        """Arrow's rows and the reference reader's, merged in the order of their lines."""
        streamed = pa.concat_tables(tables) if tables else _empty(wanted)
        keys = np.concatenate(table_lines) if table_lines else np.zeros(0, dtype=np.int64)
        order = np.argsort(np.array(self.row_lines, dtype=np.int64), kind="stable")
        apart = rows_table([self.rows[k] for k in order], ARROW_SCHEMA)
        apart = apart.select(wanted)
        where = np.searchsorted(keys, np.array(self.row_lines, dtype=np.int64)[order])
        parts, done = [], 0
        for k, at in enumerate(where.tolist()):
            parts += [streamed.slice(done, at - done), apart.slice(k, 1)]
            done = at
        parts.append(streamed.slice(done))
        return pa.concat_tables(parts).combine_chunks()


def _empty(wanted) -> pa.Table:
    return empty_table(pa.schema([ARROW_SCHEMA.field(c) for c in wanted]))


def _not_utf8(batch: pa.RecordBatch) -> np.ndarray | None:
    """Rows of a parsed batch with bytes that are not UTF-8 in a string field (Arrow's
    parser lets them through; :func:`parse_json`'s validation refuses them), or None."""
    try:
        batch.validate(full=True)
        return None
    except pa.ArrowInvalid:
        pass
    bad = np.zeros(batch.num_rows, dtype=bool)
    for column in batch.columns:
        try:
            column.validate(full=True)
            continue  # only the refused columns are looked at value by value
        except pa.ArrowInvalid:
            pass
        if pa.types.is_list(column.type):
            values, owner = column.flatten(), to_numpy(pc.list_parent_indices(column))
        elif pa.types.is_string(column.type):
            values, owner = column, np.arange(batch.num_rows)
        else:
            continue
        for k, raw in enumerate(values.view(pa.binary()).to_pylist()):
            try:
                raw is None or raw.decode("utf-8")
            except UnicodeDecodeError:
                bad[owner[k]] = True
    if not bad.any():
        raise pa.ArrowInvalid("a batch failed validation with every string UTF-8")
    return bad


def _read_in_pieces(data: bytes, starts, ends, skipped: Counter, wanted) -> pa.Table:
    """Arrow on pieces of lines between the blank and ``null`` ones (:func:`_read_run`)."""
    buffer = pa.py_buffer(data)
    pieces: list[pa.Table] = []
    done = 0
    if not len(starts):
        return _empty(wanted)
    special = special_lines(data, int(starts[0]), min(int(ends[-1]) + 1, len(data)))
    for line in np.searchsorted(starts, np.array(special, dtype=np.int64)).tolist():
        _read_run(buffer, starts, ends, done, line, wanted, skipped, pieces)
        pieces.append(read_lines(data[starts[line] : ends[line]], skipped))
        done = line + 1
    _read_run(buffer, starts, ends, done, len(starts), wanted, skipped, pieces)
    pieces = [p.select(wanted) for p in pieces if p.num_rows]
    return pa.concat_tables(pieces).combine_chunks() if pieces else _empty(wanted)


def _read_run(buffer, starts, ends, first: int, stop: int, wanted, skipped, pieces) -> None:
    """Lines ``first .. stop - 1`` (none blank or beginning with ``null``): Arrow on pieces
    of about :data:`PIECE_BYTES`; a refused piece is split at the line Arrow names, which
    goes to :func:`read_lines` (were the name wrong, a good line would only be read more
    slowly), or halved when Arrow names none, down to single lines."""
    todo = []  # (first line, stop line, whether Arrow reads it), popped from the end
    line = first
    while line < stop:  # pieces of whole lines, at least one line each
        end = int(np.searchsorted(starts, starts[line] + PIECE_BYTES, side="left"))
        todo.append((line, min(max(end, line + 1), stop), True))
        line = todo[-1][1]
    todo.reverse()
    while todo:
        i, j, by_arrow = todo.pop()
        if i >= j:
            continue
        begin, finish = int(starts[i]), min(int(ends[j - 1]) + 1, len(buffer))
        chunk = buffer.slice(begin, finish - begin)
        if not by_arrow:
            pieces.append(read_lines(chunk.to_pybytes(), skipped))
            continue
        try:
            pieces.append(parse_json(pa.BufferReader(chunk), wanted, j - i, max(len(chunk), 1)))
            continue
        except pa.ArrowInvalid as exc:
            named = _ERROR_ROW.search(str(exc))
        bad = i + int(named.group(1)) if named else -1
        if j - i == 1:
            todo.append((i, j, False))
        elif i <= bad < j:
            todo += [(bad + 1, j, True), (bad, bad + 1, False), (i, bad, True)]
        else:
            middle = (i + j) // 2
            todo += [(middle, j, True), (i, middle, True)]
