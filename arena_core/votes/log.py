"""The embedded vote store: a folder of append-only JSONL shards.

Each process writes its own shard, ``votes-<uuid>.jsonl``, so replicas sharing a
folder (or a Hub dataset repo) never write the same file. A vote is one whole
line written with a single ``write`` under a lock, then flushed and fsynced;
only then does :meth:`VoteLog.append` return, which is when the server may tell
the visitor the vote is saved.

Timestamps are strictly increasing within a shard (a vote in the same
millisecond as the previous one gets the next millisecond), so replaying the
log by ``(ts, vote_id)`` applies this process's votes in exactly the order the
live app applied them.

**Group commit.** An fsync takes milliseconds; one per vote, in turn, would cap
the arena near a hundred votes a second and make fifty voters arriving together
wait for fifty fsyncs. So votes queue, and whichever caller gets the lock first
writes every vote queued by then as one batch: one ``write``, one ``fsync``,
then each vote's ``then`` in order. The others find their vote done when they
get the lock. Nothing changes for a caller: ``append`` returns only once its
vote is durable, and a failed batch is cut back whole, so no caller is told
"saved" for a vote that is not.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

from arena_core.votes.clean import FUTURE_SLACK_US
from arena_core.votes.hold import hold_file, names, same_file
from arena_core.votes.parquet import missing_folders, sync_folder
from arena_core.votes.schema import Vote, VoteError, format_ts, new_vote_id

log = logging.getLogger(__name__)

#: Shard file name pattern; the uuid is per process (per VoteLog).
SHARD_PATTERN = "votes-{}.jsonl"
#: Resolution of the written timestamps; consecutive votes differ by at least this.
_TICK = timedelta(milliseconds=1)
#: Furthest ahead of the clock a vote may be stamped: what readers accept (a second of grace
#: for the stamp's own milliseconds; a floor exactly at the readers' limit is followed).
_MOST_AHEAD = timedelta(microseconds=FUTURE_SLACK_US, seconds=1)

#: Most files the log keeps for a follower that has not taken them (a Hub that never
#: answers while the shard is deleted again and again): one descriptor each; past this the
#: oldest is closed, with an error logged (its unpushed votes stay only on the disk).
MAX_RETIRED = 16

T = TypeVar("T")


@dataclass
class _Request:
    """One caller's votes waiting for the next batch: written together or not at all."""

    records: list[dict]
    then: Callable[[Vote], object] | None
    done: bool = False
    result: object = None
    error: BaseException | None = None


class VoteWriteError(OSError):
    """A vote that could not be written.

    ``rolled_back`` says the shard was cut back to its length before the write,
    so nothing of this vote is in the log and it may be cast again; when False,
    part of it may have reached the file.
    """

    def __init__(self, message: str, *, rolled_back: bool):
        super().__init__(message)
        self.rolled_back = rolled_back


class ClockBehindError(VoteWriteError):
    """No vote can be stamped until the server's clock catches up with the log's last vote
    (see :meth:`VoteLog._next_ts`); ``wait`` says for how long, in seconds."""

    def __init__(self, message: str, *, wait: float):
        super().__init__(message, rolled_back=True)
        self.wait = wait


class LogClosedError(VoteWriteError):
    """The log takes no more votes (:meth:`VoteLog.refuse`): its shard has been read for the
    last time, so a vote written now would be acknowledged and never pushed. Nothing of the
    vote was written."""

    def __init__(self, message: str):
        super().__init__(message, rolled_back=True)


def new_shard_name() -> str:
    """A fresh shard file name, unique to this process."""
    return SHARD_PATTERN.format(uuid.uuid4())


def _utc_now() -> datetime:
    return datetime.now(UTC)


class VoteLog:
    """Append votes to this process's shard in ``folder``.

    Parameters
    ----------
    folder : path
        Created if missing.
    lock : lock, optional
        Held while a line is written; pass the Hub uploader's lock so a push
        never sees half a line.
    clock : callable, optional
        Returns the current UTC datetime (injected by tests).
    shard_name : str, optional
        File name of the shard (default ``votes-<uuid4>.jsonl``).

    Examples
    --------
    >>> import tempfile
    >>> store = VoteLog(tempfile.mkdtemp())
    >>> vote = store.append(arena="tts-en", model_a="x", model_b="y", vote="a")
    >>> vote.vote, store.written
    ('a', 1)
    """

    def __init__(self, folder, *, lock=None, clock: Callable[[], datetime] | None = None,
                 shard_name: str | None = None):  # fmt: skip
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / (shard_name or new_shard_name())
        # Reentrant: a replay holds it while it reads the files and then moves the log's
        # clock (advance_to takes it again); a plain lock deadlocked every later vote when
        # a row dated in the future came due on a Space without the Hub (HubSync's is an
        # RLock already).
        self.lock = lock if lock is not None else threading.RLock()
        self._clock = clock or _utc_now
        self._last: datetime | None = None
        self._held: int | None = None  # fd whose flock marks the shard as in use
        self._followed = False  # set by follow(): files it stops writing go to _retired
        self._retired: list[int] = []  # their descriptors, oldest first (take_retired)
        #: The shard's directory entry was fsynced after a write that succeeded. Not merely
        #: "this write created the file": a failed first write (a full disk, the folder's
        #: fsync failing) leaves the file behind, empty, and the next vote, finding it, was
        #: acknowledged with the entry never synced (a power cut could take the shard).
        self._entry_durable = False
        #: Folders whose entries for the folders made again (:meth:`_open_shard`) are not
        #: synced yet: synced before the next vote is acknowledged, kept until they are.
        self._unsynced: dict[Path, None] = {}
        self._queue: list[_Request] = []  # votes waiting for the next batch
        self._queue_lock = threading.Lock()
        self.written = 0
        self._refusal: str | None = None  # set by refuse(): every later vote is refused
        #: Ids of votes of the batch being applied that are on disk but not yet passed to
        #: their ``then``: a rebuild from the files inside a ``then`` must leave them out,
        #: or they would be counted by the rebuild and again when applied.
        self.unapplied: frozenset[str] = frozenset()

    def append(self, *, then: Callable[[Vote], T] | None = None, **fields) -> Vote | T:
        """Write one vote and return it (or what ``then(vote)`` returns).

        ``fields`` are the :class:`~arena_core.votes.schema.Vote` fields except
        ``vote_id``, ``ts`` and ``schema_version``, which the log assigns. The
        record is validated before anything is written (:class:`VoteError`).
        ``then`` runs under the same lock, after the fsync: the live app applies
        the vote to its ratings there, so ratings follow the log's order.
        Concurrent calls share one write and one fsync (see the module docstring).
        """
        return self.append_all([fields], then=then)[0]

    def append_all(self, records: list[dict], *,
                   then: Callable[[Vote], T] | None = None) -> list[Vote | T]:  # fmt: skip
        """Write several votes in one write, all or none (a judge's two verdicts on a battle),
        and return each (or what ``then`` returns for each), as :meth:`append` does one."""
        records = [dict(r) for r in records]
        for fields in records:
            for assigned in ("vote_id", "ts", "schema_version"):
                if assigned in fields:
                    raise TypeError(f"{assigned} is assigned by the log")
            if "flags" in fields:
                fields["flags"] = tuple(fields["flags"])
        request = _Request(records, then)
        with self._queue_lock:
            self._queue.append(request)
        with self.lock:
            if not request.done:  # no earlier batch took it: lead one now
                self._commit_batch()
        if request.error is not None:
            raise request.error
        return request.result

    def _commit_batch(self) -> None:
        """Write, fsync and apply every queued vote; the caller holds :attr:`lock`."""
        with self._queue_lock:
            batch, self._queue = self._queue, []
        if self._refusal is not None:
            for request in batch:
                request.error, request.done = LogClosedError(self._refusal), True
            return
        taken, lines = [], []
        for request in batch:
            try:
                votes = [Vote(vote_id=new_vote_id(), ts=format_ts(self._next_ts()), **fields)
                         for fields in request.records]  # fmt: skip
                encoded = [vote.to_json_line() for vote in votes]  # a lone surrogate fails here
            except (VoteError, VoteWriteError, TypeError, ValueError) as exc:  # this caller's only
                request.error, request.done = exc, True
                continue
            taken.append((request, votes))
            lines.extend(encoded)
        if taken:
            try:
                self._write(b"".join(lines))
            except Exception as exc:  # every caller of the batch hears of it, not just its leader
                if not isinstance(exc, VoteWriteError):
                    log.exception("unexpected failure writing %d votes", len(lines))
                    exc = VoteWriteError(f"could not write the vote: {exc}", rolled_back=False)
                for request, _ in taken:
                    request.error, request.done = exc, True
                return
            self.written += len(lines)
        order = [(request, vote) for request, votes in taken for vote in votes]
        results = {id(request): [] for request, _ in taken}
        for k, (request, vote) in enumerate(order):  # in log order: the live ratings follow it
            self.unapplied = frozenset(v.vote_id for _, v in order[k + 1 :])
            try:
                results[id(request)].append(request.then(vote) if request.then else vote)
            except Exception as exc:  # the vote is saved; only this caller hears of the failure
                request.error = exc
        for request, _ in taken:
            request.result, request.done = results[id(request)], True
        self.unapplied = frozenset()

    def advance_to(self, ts_us: int) -> None:
        """Never stamp a vote earlier than ``ts_us`` (the latest vote replayed at start-up),
        so a clock that is behind the previous run cannot reorder votes in a replay.

        A floor further ahead of this clock than readers accept (they skip such rows
        as ``future_ts``) is ignored with a warning: followed, it would date every later
        vote there, and at year 9999 the next vote would not fit in a timestamp at all.
        """
        floor = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ts_us)
        if floor > self._clock().astimezone(UTC) + timedelta(microseconds=FUTURE_SLACK_US):
            log.warning("not moving the vote clock to %s: that is in the future", floor.isoformat())
            return
        with self.lock:
            if self._last is None or floor > self._last:
                self._last = floor

    def refuse(self, reason: str) -> None:
        """Write no more votes: each later one raises :class:`LogClosedError` with ``reason``,
        nothing written. For the final push before the process exits: a vote written after
        that push read the shard would be acknowledged and then lost with the process's
        disk, so it is refused instead and the visitor asked to vote again. Takes the lock,
        so a batch being written finishes first (and is in the shard that push reads)."""
        with self.lock:
            self._refusal = reason

    def follow(self) -> None:
        """Keep each file the log stops writing (:meth:`_hold`) for :meth:`take_retired`,
        instead of closing it. For the uploader: a shard deleted before the uploader read
        its last votes (or before it ever opened it) is then read through that descriptor.
        A log nobody follows (no Hub) closes such a file at once."""
        with self.lock:
            self._followed = True

    def take_retired(self) -> list[int]:
        """The descriptors (read-only, unlocked) of the files the log stopped writing since
        the last call, oldest first; the caller owns and closes them. Call under :attr:`lock`.

        The file held is among them once the shard's name no longer leads to it (deleted or
        replaced), before the next vote makes the log move on: a shard deleted after the
        last vote of a process (or of a quiet hour) has its last votes pushed from it."""
        if self._held is not None and not names(self.path, self._held):
            self._retire()
        taken, self._retired = self._retired, []
        return taken

    def close(self) -> None:
        """Release the shard (:func:`~arena_core.votes.hold.shard_in_use`), close the files
        retired and not taken."""
        if self._held is not None:
            os.close(self._held)
            self._held = None
        while self._retired:
            os.close(self._retired.pop())

    def __del__(self) -> None:
        self.close()

    def _next_ts(self) -> datetime:
        """The next vote's time: the clock's, or just after the last vote's when the clock
        is behind it (the log's clock never runs backwards: replays follow its order).

        Raises :class:`VoteWriteError` when the clock is so far behind (it stepped back by
        more than readers allow for, :data:`~arena_core.votes.clean.FUTURE_SLACK_US`) that
        the vote would be dated where every replay skips it as ``future_ts``: refused, not
        acknowledged, until the clock catches up; acknowledged, it would be a lost vote.
        """
        now = self._clock().astimezone(UTC)
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        if self._last is not None and now <= self._last:
            ahead = self._last + _TICK - now
            if ahead > _MOST_AHEAD:
                log.error("the server clock is %s behind the vote log's last vote: votes are "
                          "refused until it catches up", ahead)  # fmt: skip
                raise ClockBehindError(
                    f"the server's clock went back {ahead.total_seconds():.0f} s behind the "
                    "last vote it recorded; votes are refused until it catches up",
                    wait=(ahead - _MOST_AHEAD).total_seconds())  # fmt: skip
            now = self._last + _TICK
        self._last = now
        return now

    def _write(self, line: bytes) -> None:
        """Append one line and fsync it; on failure, cut the shard back and raise VoteWriteError.

        Every failure (a full disk, a folder made read-only, too many open files, an
        I/O error at fsync) becomes a :class:`VoteWriteError`, so the caller never
        acknowledges a vote that is not durably in the file.
        """
        # os.path, not Path.exists: that raised on an I/O error (or a folder it may not
        # search), and a batch whose write raised anything but VoteWriteError left its other
        # votes without an answer. In doubt, the folder is synced again.
        if not os.path.exists(self.path):  # created now (or again, if something removed it)
            self._entry_durable = False
        try:
            fd = self._open_shard()
        except OSError as exc:
            raise VoteWriteError(f"could not open the vote shard: {exc}", rolled_back=True) from exc
        size = None
        try:
            # Held before the size is read: a refused second writer has written nothing, so
            # it cuts nothing back (it cut the live writer's vote made since its fstat).
            self._hold(fd)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                # Half a line: a failed write that could not be cut back, or a shard cut
                # short or replaced under the log. End it, so it is one damaged row (skipped
                # and counted) and this vote a whole line after it; only the first case was
                # looked for, and a vote after the others was glued onto the half line.
                line = b"\n" + line
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            if not self._entry_durable:  # make the shard's directory entry durable too
                sync_folder(self.folder)
            for folder in list(self._unsynced):  # and those of the folders made again
                sync_folder(folder)
                del self._unsynced[folder]
        except OSError as exc:
            rolled_back = size is None or _cut(fd, size)  # no size: nothing was written
            raise VoteWriteError(
                f"could not write the vote: {exc}", rolled_back=rolled_back
            ) from exc
        else:
            self._entry_durable = True
        finally:
            os.close(fd)

    def _open_shard(self) -> int:
        """The shard's descriptor, for appending; the folder made again (and its entry synced)
        if a clean-up deleted it: every later vote was refused until a restart. The deleted
        shard's votes still reach the Hub through the descriptors kept on it (:meth:`_hold`)."""
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
        try:
            return os.open(self.path, flags, 0o644)
        except FileNotFoundError:
            if self.folder.exists():
                raise
        log.error("the vote folder %s was deleted while the log ran: making it again",
                  self.folder)  # fmt: skip
        made = missing_folders(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        # Each folder made is in its parent only once that is synced: after the write, with
        # the shard's entry, and again at each vote until it succeeds (:meth:`_write`).
        self._unsynced.update(dict.fromkeys(folder.parent for folder in made))
        return os.open(self.path, flags, 0o644)

    def _hold(self, fd: int) -> None:
        """Hold the file ``fd`` is open on, the shard, by its ``flock``
        (:func:`~arena_core.votes.hold.shard_in_use`).

        A ``flock`` marks a file, not a name: when the shard was deleted or replaced under
        the log, the old file's lock is let go and the new one's taken. Before, the shard
        made again was held by nobody, and a compaction or a neighbour's start-up took it
        from this process while it went on writing and pushing it. The old file's
        descriptor goes to the follower, if any (:meth:`follow`)."""
        if self._held is not None:
            if same_file(os.fstat(self._held), os.fstat(fd)):
                return
            self._retire()
        self._held = hold_file(self.path)

    def _retire(self) -> None:
        """Hand the file held over to the follower, still locked, or close it when nobody
        follows the shard.

        Locked until the follower lets it go (its votes landed): a shard renamed in its
        folder, unlocked, was an earlier file like any other, and a compaction rolled it
        up (or a neighbour's start-up adopted it) while this process still pushed its
        votes, which were then in the dataset twice."""
        retired, self._held = self._held, None
        self._entry_durable = False  # the next vote writes another file: its entry is unsynced
        if not self._followed:
            os.close(retired)
            return
        self._retired.append(retired)
        if len(self._retired) > MAX_RETIRED:
            log.error("%d files of the deleted vote shard wait for the Hub: closing the oldest, "
                      "its unpushed votes stay only on the disk", len(self._retired))  # fmt: skip
            os.close(self._retired.pop(0))


def _cut(fd: int, size: int) -> bool:
    """Truncate back to ``size`` after a failed write, so no half line is left behind."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        log.exception("could not cut the shard back after a failed write")
        return False
    return True
