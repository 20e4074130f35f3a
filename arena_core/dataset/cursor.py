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

So :class:`ShardCursor` keeps, in the order it met them, every file of the shard whose
complete lines have not all landed, each with a descriptor, the offset pushed up to and the
last pushed line: a file is read through its descriptor, deleted or not, and let go only
once the shard's name leads elsewhere and all its lines landed (a failed push keeps it). A
file the log wrote and stopped writing before the cursor ever opened it (deleted, then a
new file made by the next vote) comes from the log itself: it hands the file's descriptor
over (:meth:`~arena_core.votes.log.VoteLog.take_retired`), and the cursor reads it from its
top. A file that no longer holds its last pushed line where it was (cut short) is read from
its top too. What is read from a file's top may repeat what was pushed (a copy), so the
cursor remembers the ``vote_id`` of every vote pushed (about 40 bytes each, for the life of
the process) and the damaged lines pushed, and leaves those out; an append-only file's new
lines cost no id work.

Holes left: lines of a file someone else appends to after the log stopped writing it, once
its lines landed (it was let go), are not pushed; and a log followed while the Hub never
answers keeps at most :data:`~arena_core.votes.log.MAX_RETIRED` retired files.
"""

from __future__ import annotations

import codecs
import contextlib
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from arena_core.votes.hold import names
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


@dataclass(eq=False)
class _File:
    """One file of the shard the cursor follows: ``fd`` open on it, ``key`` its device and
    inode (one file, however many descriptors), ``offset`` and ``lines`` its pushed bytes and
    their lines, ``tail`` the last of those bytes."""

    fd: int
    key: tuple[int, int]
    offset: int = 0
    lines: int = 0
    tail: bytes = b""


@dataclass(frozen=True)
class _Read:
    """What a push read of one file, and where the file stands once the push lands.
    ``named``: the shard's name led to the file (it may grow; one that is not named is let
    go once the push lands: the log writes only through the name)."""

    file: _File
    end: int
    lines: int
    tail: bytes
    named: bool


@dataclass(frozen=True)
class Unpushed:
    """What a push sends, read under the votes lock, and where each file read stands once
    the push lands (:meth:`ShardCursor.pushed`)."""

    parts: tuple[Part, ...]
    reads: tuple[_Read, ...]


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


def fresh_rows(parts, pushed_ids: list[pa.Array], pushed_damaged: set[bytes]) -> Rows:
    """The rows of ``parts`` that the dataset does not hold yet.

    A part read from a file's top may repeat what was pushed (a copy of the shard): its
    votes already pushed (``pushed_ids``, chunks of ``vote_id``: by id, as every reader
    dedupes) and its damaged lines already pushed (as they are) are left out, and so are
    those of an earlier part of the same push. Other parts are new bytes of an append-only
    file: every line goes, and no id is looked at (the ids grow with every vote of the
    process; combined for each push, they made each push slower than the one before)."""
    tables, damaged, skipped = [], [], Counter()
    known = list(pushed_ids)
    for part in parts:
        before = skipped.total()
        table = parse_jsonl(part.data, skipped)
        bad = damaged_lines(part.data) if skipped.total() > before else []  # rare: judged anew
        if part.from_top:
            if known:  # combined only here: a file read from its top is rare
                known = [pa.concat_arrays(known)]
                table = table.filter(pc.invert(pc.is_in(table.column("vote_id"), known[0])))
            seen = set(damaged)
            bad = [line for line in bad if line not in pushed_damaged and line not in seen]
        tables.append(table)
        damaged += bad
        known += table.column("vote_id").chunks
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


def _key(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_dev, stat.st_ino


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


class ShardCursor:
    """Where the pushes of one shard stand. Read and moved under the votes lock.

    ``retired`` returns the descriptors of files the log stopped writing (their name led to
    another file), which the cursor then owns (:meth:`VoteLog.take_retired
    <arena_core.votes.log.VoteLog.take_retired>`)."""

    def __init__(self, path: Path, retired: Callable[[], list[int]] | None = None):
        self.path = Path(path)
        self._retired = retired or list  # none handed over: an empty list each time
        self._files: list[_File] = []  # files with lines to push, then the named one, in order
        #: Lines pushed of the file the shard's name led to at the last push that read it
        #: (the waiting count is the current file's lines less these: off by what a copy or
        #: a cut changed, until the next push reads it).
        self.lines = 0
        self._ids: list[pa.Array] = []  # vote_id of the votes pushed, a chunk a push
        self._damaged: set[bytes] = set()

    def unpushed(self) -> Unpushed | None:
        """The complete lines not pushed yet, in every file followed; None when there are none.
        Every descriptor opened here is the cursor's at once: nothing leaks if a push fails."""
        self._take_retired()
        named = self._named(open_it=True)
        parts, reads = [], []
        for file in list(self._files):
            offset = file.offset if self._continues(file) else 0
            data = _whole_lines(file.fd, offset)
            if not data:
                if file is not named:  # every line landed, and the log writes it no more
                    self._forget(file)
                continue
            parts.append(Part(_as_read(data, offset), offset == 0))
            lines = (0 if offset == 0 else file.lines) + data.count(b"\n")
            reads.append(_Read(file, offset + len(data), lines, _last_line(data), file is named))
        return Unpushed(tuple(parts), tuple(reads)) if parts else None

    def _take_retired(self) -> None:
        """Follow the files the log handed over, before the one the name leads to (they are
        older); one already followed is closed (the cursor has it open)."""
        for fd in self._retired():
            try:
                key = _key(os.fstat(fd))
            except OSError:
                _close(fd)
                continue
            if any(file.key == key for file in self._files):
                _close(fd)
                continue
            at = len(self._files)
            if at and names(self.path, self._files[-1].fd):
                at -= 1
            self._files.insert(at, _File(fd, key))

    def _named(self, *, open_it: bool = False) -> _File | None:
        """The followed file the shard's name leads to; opened and followed if ``open_it``."""
        try:
            key = _key(os.stat(self.path))
        except FileNotFoundError:
            return None
        for file in self._files:
            if file.key == key:
                return file
        if not open_it:
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:  # deleted since the stat
            return None
        try:
            file = _File(fd, _key(os.fstat(fd)))
        except BaseException:
            _close(fd)
            raise
        self._files.append(file)
        return file

    def _continues(self, file: _File) -> bool:
        """Whether the file still holds its last pushed line where it was (not cut short)."""
        start = file.offset - len(file.tail)
        return os.pread(file.fd, len(file.tail), start) == file.tail

    def pushed(self, unpushed: Unpushed, rows: Rows) -> None:
        """Move past ``unpushed``, whose ``rows`` the dataset now holds: no id is combined
        here (it ran under the votes lock, longer at every push)."""
        for read in unpushed.reads:
            file = read.file
            file.offset, file.lines, file.tail = read.end, read.lines, read.tail
            if read.named:
                self.lines = read.lines
            else:  # the log writes it no more: every line it will hold landed
                self._forget(file)
        self._ids += rows.table.column("vote_id").chunks
        self._damaged.update(rows.damaged)

    def fresh(self, unpushed: Unpushed) -> Rows:
        """The rows of ``unpushed`` the dataset lacks (:func:`fresh_rows`)."""
        ids = list(self._ids)
        if len(ids) > 1 and any(part.from_top for part in unpushed.parts):
            self._ids[: len(ids)] = [pa.concat_arrays(ids)]  # once, for this and later reads
        return fresh_rows(unpushed.parts, self._ids, self._damaged)

    def _forget(self, file: _File) -> None:
        if file in self._files:
            self._files.remove(file)
            _close(file.fd)

    def close(self) -> None:
        """Let go of every file followed."""
        for file in self._files:
            _close(file.fd)
        self._files = []

    def __del__(self) -> None:
        self.close()
