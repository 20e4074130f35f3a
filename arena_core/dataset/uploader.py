"""The periodic push of one process's votes to the dataset repo.

:class:`VoteUploader` is a ``huggingface_hub.CommitScheduler`` whose push sends
the complete lines its shard gained since the last successful push as one new
Parquet file, ``data/<shard>-<n>.parquet``. A failed push is retried at the next
tick under the same name with the same and newer lines, so a commit that
reached the Hub although its answer was lost is overwritten, never doubled. What
"new" means when the shard is replaced, cut short or deleted under the live process
is :mod:`~arena_core.dataset.cursor`'s.

It is built only once the Hub has answered (``CommitScheduler``'s constructor
calls ``create_repo``): :class:`~arena_core.dataset.hub.HubSync` decides when.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import logging
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from huggingface_hub import CommitOperationAdd, CommitScheduler, HfApi

from arena_core.dataset.cursor import Rows, ShardCursor, Unpushed
from arena_core.votes.clean import VoteTable
from arena_core.votes.hold import ADOPTED_PREFIX, hold_file
from arena_core.votes.parquet import contract_table, parquet_bytes

log = logging.getLogger(__name__)

#: Repo folder of the vote files.
DATA_DIR = "data"
#: End of the name of a push's damaged lines, beside its Parquet file (see :func:`damaged_file`).
DAMAGED_SUFFIX = ".damaged.jsonl"


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class SyncStatus:
    """What the page shows about the Hub: last successful push, votes waiting, last error.

    ``unreachable_since`` is when the Hub first failed to answer (the start-up
    download or a push) in the current run of failures; None while it answers.
    """

    last_push: datetime | None = None
    pushed_votes: int = 0
    waiting: int = 0
    last_error: str | None = None
    pulled_files: int = 0
    unreachable_since: datetime | None = None


def complete_lines(shard: Path, offset: int) -> tuple[int, bytes] | None:
    """End offset and bytes of the complete lines of ``shard`` after ``offset``.

    A line without its newline is still being written (or was cut short by a
    crash): it is left for a later call, when it is whole.
    """
    if not shard.exists():  # created at the first vote
        return None
    with shard.open("rb") as f:
        f.seek(offset)
        data = f.read()
    cut = data.rfind(b"\n") + 1
    return (offset + cut, data[:cut]) if cut else None


def damaged_file(path_in_repo: str, lines: list[bytes], skipped: Counter) -> CommitOperationAdd:
    """The damaged ``lines`` of a push (say, the half line of a write the log could not cut
    back; :func:`~arena_core.votes.lines.damaged_lines`), as they are, in a JSONL file of
    their own.

    A bad row is skipped and counted by every reader: the Space's replay of its shard
    counts these lines, so the Hub's copy must hold them for a replay of the commit to
    count them alike. A line's verdict depends on that line alone, except at a file's
    start, where every reader drops a UTF-8 byte-order mark: a damaged line that begins
    with one (a vote that counts once the mark is gone) would count as the file's first
    line, so the file then starts with a mark of its own that readers drop instead. The
    Parquet file beside it holds the good lines, which the dataset's Parquet-only readers
    read; the compaction leaves a damaged file whole and reports it.

    The lines must not hold the byte-order mark of their shard's start, which is no part of
    the first line (the cursor drops it)."""
    log.warning("pushing %d damaged vote lines (%s) as they are in %s: every replay skips "
                "and counts them", len(lines), dict(skipped), path_in_repo)  # fmt: skip
    body = b"\n".join(lines) + b"\n"
    if body.startswith(codecs.BOM_UTF8):  # the line's own mark, kept behind the file's
        body = codecs.BOM_UTF8 + body
    return CommitOperationAdd(path_in_repo=path_in_repo, path_or_fileobj=body)


def adopted_file(table: pa.Table) -> tuple[str, bytes]:
    """The name and bytes of the file that pushes adopted votes (``table``, contract form):
    named by its own votes, so the same votes always make the same file (a retry rewrites
    the file that landed; :class:`~arena_core.dataset.earlier.EarlierFiles` keeps a local
    copy under the same name)."""
    ids = "\n".join(table.column("vote_id").to_pylist())
    digest = hashlib.sha256(ids.encode()).hexdigest()[:16]
    return f"{ADOPTED_PREFIX}{digest}.parquet", parquet_bytes(table)


def _lock(path: Path) -> int | None:
    """:func:`~arena_core.votes.hold.hold_file`, or None if the file is gone or held."""
    try:
        return hold_file(path)
    except OSError:
        return None


def _release(fds) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)  # closing lets go of the lock


class LineCount:
    """Complete lines of a growing shard, counted incrementally: each call reads only the
    bytes written since the last one, so the page can ask often even when hours of votes
    wait for the Hub. A file replaced, or cut short below what was counted, is counted
    again from its top."""

    def __init__(self, shard: Path):
        self.shard = shard
        self.lines = 0
        self._inode: int | None = None
        self._offset = 0

    def update(self) -> int:
        """The count now. Call under the votes lock."""
        if not self.shard.exists():
            return 0
        stat = self.shard.stat()
        if stat.st_ino != self._inode or stat.st_size < self._offset:  # replaced, or cut short
            self._inode, self._offset, self.lines = stat.st_ino, 0, 0
        new = complete_lines(self.shard, self._offset)
        if new is not None:
            self._offset = new[0]
            self.lines += new[1].count(b"\n")
        return self.lines


class VoteUploader(CommitScheduler):
    """A CommitScheduler that pushes this process's new lines as a new Parquet file.

    Only this process's shard (``shard_name``) is pushed, so processes sharing a
    folder never push each other's votes. ``lock`` is the lock the VoteLog holds
    while it appends; it is in force before the scheduler's thread starts, so no
    push, not even the first one, reads a line while it is being written. ``retired`` is
    the log's :meth:`~arena_core.votes.log.VoteLog.take_retired`: the files it stopped
    writing (the shard deleted or replaced) are pushed from the descriptors it hands over.
    """

    def __init__(self, *, repo_id: str, folder_path: Path, shard_name: str, every: float,
                 hf_api: HfApi, lock, clock: Callable[[], datetime] = utc_now,
                 token: str | None = None,
                 retired: Callable[[], list[int]] | None = None):  # fmt: skip
        self.shard_name = shard_name
        self._votes_lock = lock  # CommitScheduler makes a lock of its own: it is replaced below
        self._clock = clock
        self._cursor = ShardCursor(Path(folder_path) / shard_name, retired)  # what is pushed
        self._sequence = 0  # files pushed so far
        self._lines = LineCount(Path(folder_path) / shard_name)
        self._adopted: list[pa.Table] = []
        self._holds: list[list[int]] = []  # per adoption: fds of the files it locks (hold)
        self.status = SyncStatus()
        super().__init__(repo_id=repo_id, repo_type="dataset", folder_path=folder_path,
                         path_in_repo=DATA_DIR, every=every, hf_api=hf_api, token=token)  # fmt: skip
        self.lock = lock

    def adopt(self, votes: VoteTable, published_ids: set[str], hold=()) -> int:
        """Queue those of ``votes`` (read from earlier local vote files) that the Hub does
        not have yet. For a restart on a machine that kept its disk (shards and compacted
        files of earlier runs). Returns the number of votes queued.

        The files of ``hold`` (those the votes came from, still in the vote folder) are
        locked as a live shard is (``flock``) until the push that holds these votes lands
        or the uploader stops: a process starting meanwhile on the same disk takes them for
        a live neighbour's and leaves them (:mod:`~arena_core.dataset.earlier`). Unlocked,
        it adopted the same votes again, under another file name when other free files
        joined them, and the dataset held them twice."""
        known = pa.array(sorted(published_ids), type=pa.string())
        missing = votes.table.filter(pc.invert(pc.is_in(votes.column("vote_id"), known)))
        with self._votes_lock:
            if missing.num_rows:
                self._adopted.append(contract_table(missing))
                self._holds.append([fd for path in hold if (fd := _lock(path)) is not None])
            self.status.waiting = missing.num_rows + self._count_waiting()
            return missing.num_rows

    def stop(self) -> None:
        """Stop pushing, and let go of the files of the adoptions not pushed: another
        process may adopt them now (this one exits)."""
        super().stop()
        with self._votes_lock:
            _release(fd for fds in self._holds for fd in fds)
            self._holds = [[] for _ in self._holds]

    def push_to_hub(self):
        """Send the shard's complete new lines; advance only after the commit succeeded."""
        with self._votes_lock:  # the only time the shard is read: appends wait, uploads do not
            new, adopted = self._new_lines(), list(self._adopted)
        # Whatever fails from here on (even a BaseException), the files read stay the
        # cursor's, to be read again at the next push: nothing to let go.
        rows = self._cursor.fresh(new) if new is not None else None
        operations, votes = self._operations(rows, adopted)
        if not operations:
            if new is not None:  # lines all pushed before (a copy of the shard): move past them
                with self._votes_lock:
                    self._cursor.pushed(new, rows)
            return None
        try:
            info = self.api.create_commit(repo_id=self.repo_id, repo_type="dataset", operations=operations,
                                          commit_message=f"Add {votes} votes")  # fmt: skip
        except Exception as exc:
            with self._votes_lock:
                self.status.last_error = f"{type(exc).__name__}: {exc}"
                self.status.unreachable_since = self.status.unreachable_since or self._clock()
            log.error("push of %d votes failed; retrying at the next tick: %s", votes, exc)
            raise
        with self._votes_lock:
            if new is not None:
                self._cursor.pushed(new, rows)
                self._sequence += not rows.empty
            self._adopted = self._adopted[len(adopted) :]
            _release(fd for fds in self._holds[: len(adopted)] for fd in fds)
            self._holds = self._holds[len(adopted) :]
            self.status.last_push = self._clock()
            self.status.pushed_votes += votes
            self.status.last_error = self.status.unreachable_since = None
            self.status.waiting = self._count_waiting() + sum(t.num_rows for t in self._adopted)
        log.info("pushed %d votes to %s", votes, self.repo_id)
        return info

    def _operations(self, rows: Rows | None, adopted) -> tuple[list[CommitOperationAdd], int]:
        """The files of one push: the shard's new rows, and the adopted votes, if any."""
        operations, votes = [], 0
        if rows is not None and not rows.empty:
            name = f"{DATA_DIR}/{Path(self.shard_name).stem}-{self._sequence + 1:06d}"
            operations.append(CommitOperationAdd(path_in_repo=f"{name}.parquet",
                                                 path_or_fileobj=parquet_bytes(rows.table)))  # fmt: skip
            if rows.damaged:  # Parquet cannot hold them: the lines go as they are, beside it
                operations.append(damaged_file(f"{name}{DAMAGED_SUFFIX}", rows.damaged,
                                               rows.skipped))  # fmt: skip
            votes += rows.table.num_rows
        # One file per adoption, named by its own votes: a retry after a lost answer rewrites
        # the file that landed. Named by every queued vote, a retry that also carried a later
        # adoption (a neighbour's shard let go meanwhile) had a new name, and the landed
        # file's votes were in the dataset twice.
        for table in adopted:
            name, data = adopted_file(table)
            operations.append(CommitOperationAdd(path_in_repo=f"{DATA_DIR}/{name}",
                                                 path_or_fileobj=data))  # fmt: skip
            votes += table.num_rows
        return operations, votes

    def refresh_waiting(self) -> SyncStatus:
        """Recount the votes written locally but not pushed yet; a copy of the status."""
        with self._votes_lock:
            self.status.waiting = self._count_waiting() + sum(t.num_rows for t in self._adopted)
            return replace(self.status)

    def _new_lines(self) -> Unpushed | None:
        """The shard's complete lines not pushed yet (:class:`ShardCursor`). Call under the lock."""
        return self._cursor.unpushed()

    @property
    def _pushed_lines(self) -> int:
        """Lines of the shard's current file that the dataset holds."""
        return self._cursor.lines

    def _count_waiting(self) -> int:
        """Lines of the shard not pushed yet, without re-reading what was counted before."""
        return max(0, self._lines.update() - self._pushed_lines)


class CommitTracking(VoteUploader):
    """A VoteUploader that remembers its last commit together with what it held.

    ``before_push(uploader)`` runs first at each push (HubSync adopts the shards a
    neighbour let go, and retries a failed publish of the registry). ``pushed_commit`` is
    ``(commit, shard lines pushed, adopted votes still queued, registry published)``,
    replaced in one assignment after each successful push, so a reader never pairs a new
    commit with an old count: between the push and the assignment it sees the previous
    commit with more votes unpushed, which is also true. A push keeps the registry flag: a
    commit holds the registry its parent held.
    """

    def __init__(self, *, base: str | None, registry_published: bool | None = None,
                 before_push: Callable[[VoteUploader], None], **kwargs):  # fmt: skip
        self.pushed_commit: tuple[str | None, int, int, bool | None]
        self.pushed_commit = (base, 0, 0, registry_published)
        self.before_push = before_push  # set first: the scheduler's thread pushes at once
        super().__init__(**kwargs)

    def renamed(self, commit: str | None, *, registry_published: bool | None = None) -> None:
        """Name ``commit`` as the one the boards stand on, with the registry flag when given:
        a commit later than the last push, which holds every vote pushed so far (the card's,
        or the one a neighbour's pushes were fetched at)."""
        with self._votes_lock:
            old, pushed, adopted, published = self.pushed_commit
            published = published if registry_published is None else registry_published
            self.pushed_commit = (commit or old, pushed, adopted, published)

    def adopt(self, votes, published_ids: set[str], hold=()) -> int:
        queued = super().adopt(votes, published_ids, hold)
        with self._votes_lock:
            commit, pushed, adopted, published = self.pushed_commit
            self.pushed_commit = (commit, pushed, adopted + queued, published)
        return queued

    def push_to_hub(self):
        self.before_push(self)
        info = super().push_to_hub()
        if info is not None:
            with self._votes_lock:
                queued = sum(t.num_rows for t in self._adopted)
                published = self.pushed_commit[3]
                self.pushed_commit = (info.oid, self._pushed_lines, queued, published)
        return info
