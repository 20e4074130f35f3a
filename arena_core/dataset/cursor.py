"""How far a live shard has been pushed, followed when the shard changes under the log.

The uploader pushes the complete lines a shard gained since its last successful push. "Since"
was an offset in the shard's file, trusted as long as the file kept its inode, and dropped
when it did not. Neither holds when something else touches the shard while its process
runs, and the dataset then held a vote twice (``load_dataset`` counts every row) or never:

* replaced by a copy of itself (a restore from a backup, an editor's save through
  ``os.replace``): a new inode, so the copy was pushed again from its top;
* cut short in place (the same inode) below the offset: nothing was pushed until the file
  grew past the offset, and then from the middle of a line;
* deleted before its last votes were pushed: the next vote made a new file, and the
  deleted file's acknowledged votes were never pushed.

So :class:`ShardCursor` keeps a descriptor on the file it pushes, checks that the file still
ends its pushed bytes where it did (the last pushed line is still there), and remembers the
``vote_id`` of every vote pushed (and the damaged lines pushed as they are). When the
shard's name now leads to another file, the old file's last complete lines are pushed first
(read through the descriptor, even once deleted); a shard that no longer continues its
pushed bytes (another file, or one cut short) is read from its top, leaving out what was
pushed before. The ids cost about 40 bytes a vote pushed by this process.
"""

from __future__ import annotations

import codecs
import contextlib
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from arena_core.votes.jsonl import parse_jsonl
from arena_core.votes.lines import damaged_lines

#: Most bytes of the last pushed line kept to recognise the file that holds them: a vote's
#: line is a few hundred bytes, and its ``vote_id`` alone tells it from any other line.
TAIL_BYTES = 4096


@dataclass(frozen=True)
class Part:
    """Complete lines of one file, as a replay reads them (a leading byte-order mark dropped).
    ``from_top``: read from the file's top, so it may repeat lines pushed before (from a file
    it replaced, or before it was cut short): those are left out (:func:`fresh_rows`)."""

    data: bytes
    from_top: bool


@dataclass(frozen=True)
class Unpushed:
    """What a push sends, read under the votes lock, and where the cursor stands once it
    lands: ``fd`` on the shard's file (None: no shard), ``end`` and ``lines`` its pushed
    bytes and their lines, ``tail`` the last of those bytes."""

    parts: tuple[Part, ...]
    fd: int | None
    end: int
    lines: int
    tail: bytes


@dataclass
class Rows:
    """The votes and damaged lines a push holds (:func:`fresh_rows`)."""

    table: pa.Table
    damaged: list[bytes]
    skipped: Counter

    @property
    def empty(self) -> bool:
        """Nothing for the dataset: no file is pushed (lines all pushed before, or blank)."""
        return not (self.table.num_rows or self.damaged)


def fresh_rows(parts, pushed_ids: pa.Array, pushed_damaged: set[bytes]) -> Rows:
    """The rows of ``parts`` that the dataset does not hold yet.

    A part read from a file's top may repeat what was pushed (a copy of the shard): its
    votes already pushed (by ``vote_id``, as every reader dedupes) and its damaged lines
    already pushed (as they are) are left out, and so are those of an earlier part of the
    same push. Other parts are new bytes of an append-only file: every line goes."""
    tables, damaged, skipped = [], [], Counter()
    known, lines = pushed_ids, set(pushed_damaged)
    for part in parts:
        before = skipped.total()
        table = parse_jsonl(part.data, skipped)
        bad = damaged_lines(part.data) if skipped.total() > before else []  # rare: judged anew
        if part.from_top:
            table = table.filter(pc.invert(pc.is_in(table.column("vote_id"), known)))
            bad = [line for line in bad if line not in lines]
        tables.append(table)
        damaged += bad
        known = pa.concat_arrays([known, table.column("vote_id").combine_chunks()])
        lines.update(bad)
    return Rows(pa.concat_tables(tables), damaged, skipped)


def _whole_lines(fd: int, offset: int) -> bytes:
    """The complete lines of the file ``fd`` after ``offset``; a line still being written
    waits for a later push."""
    chunks, at = [], offset
    while chunk := os.pread(fd, 1 << 20, at):
        chunks.append(chunk)
        at += len(chunk)
    data = b"".join(chunks)
    return data[: data.rfind(b"\n") + 1]


def _as_read(data: bytes, offset: int) -> bytes:
    """A file's bytes from ``offset`` as a replay reads them: at the file's start a UTF-8
    byte-order mark (a Windows editor's) is no part of the first vote."""
    if offset == 0 and data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :]
    return data


def _last_line(data: bytes) -> bytes:
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    return data[max(start, len(data) - TAIL_BYTES) :]


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still leads to the file ``fd`` is open on."""
    try:
        now, held = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _open(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:  # created at the first vote
        return None


class ShardCursor:
    """Where the pushes of one shard stand. Read and moved under the votes lock."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.lines = 0  # lines of the current file pushed
        self._fd: int | None = None  # the file the pushed bytes are in
        self._offset = 0
        self._tail = b""
        self._ids = pa.array([], type=pa.string())
        self._damaged: set[bytes] = set()

    def unpushed(self) -> Unpushed | None:
        """The complete lines not pushed yet; None when there are none."""
        parts, fd = [], self._fd
        if fd is not None and not _names(self.path, fd):  # deleted or replaced since
            parts.append(Part(_as_read(_whole_lines(fd, self._offset), self._offset), False))
            fd = None
        if fd is None:
            fd = _open(self.path)
            offset = 0
        else:
            offset = self._offset if self._continues(fd) else 0
        data = _whole_lines(fd, offset) if fd is not None else b""
        if data:  # from the top: it may repeat pushed lines (nothing was pushed: no cost)
            parts.append(Part(_as_read(data, offset), offset == 0))
        if not any(part.data for part in parts):
            if fd is not None and fd != self._fd:
                os.close(fd)
            return None
        lines = (0 if offset == 0 else self.lines) + data.count(b"\n")
        tail = _last_line(data) if data else b""  # no data: only the old file's lines, offset 0
        return Unpushed(tuple(parts), fd, offset + len(data), lines, tail)

    def _continues(self, fd: int) -> bool:
        """Whether the file still holds the last pushed line where it was (not cut short)."""
        start = self._offset - len(self._tail)
        return os.pread(fd, len(self._tail), start) == self._tail

    def pushed(self, unpushed: Unpushed, rows: Rows) -> None:
        """Move past ``unpushed``, whose ``rows`` the dataset now holds."""
        if unpushed.fd != self._fd:
            self.close()
            self._fd = unpushed.fd
        self._offset, self.lines, self._tail = unpushed.end, unpushed.lines, unpushed.tail
        ids = rows.table.column("vote_id").combine_chunks()
        self._ids = pa.concat_arrays([self._ids, ids])
        self._damaged.update(rows.damaged)

    def dropped(self, unpushed: Unpushed) -> None:
        """Let go of what :meth:`unpushed` opened for a push that failed (the next one
        reads again)."""
        if unpushed.fd is not None and unpushed.fd != self._fd:
            os.close(unpushed.fd)

    def fresh(self, unpushed: Unpushed) -> Rows:
        """The rows of ``unpushed`` the dataset lacks (:func:`fresh_rows`)."""
        return fresh_rows(unpushed.parts, self._ids, self._damaged)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()
