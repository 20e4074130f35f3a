"""Which votes a board was computed from, and with which settings.

A board names its **revision**: the Hub commit of the vote dataset when the votes are
synced (with how many of the board's votes were not pushed yet: none means the commit
alone reproduces the board), and always the count of votes read and the last one in
replay order (``ts``, then ``vote_id``), which pin down a local log. Together with the
code version (:mod:`~arena_core.snapshots.version`) and :func:`board_settings`, that is
what ``python -m arena_core leaderboard --repo ID --revision SHA --read-at READ_AT`` needs
to print the same board to the last digit (:func:`~arena_core.snapshots.page.reproduce_command`).

The Space's boards change with every vote, so :class:`LiveRevisions` reads the revision
of its vote files between two looks at their sizes taken under the vote lock: when the
two agree, no vote arrived meanwhile and the board computed in between is exactly that
revision's (:meth:`LiveRevisions.around`).
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from arena_core.leaderboard import BoardParams
from arena_core.votes.clean import FUTURE_SLACK_US, VoteTable, clean
from arena_core.votes.jsonl import parse_jsonl
from arena_core.votes.lines import whole_last_line
from arena_core.votes.read import read_votes, vote_files
from arena_core.window import Window, format_us

log = logging.getLogger(__name__)

#: Attempts to compute a board with no vote arriving meanwhile before it is shown as
#: "moving" (votes keep arriving faster than the board is computed).
ATTEMPTS = 3


@dataclass(frozen=True)
class Revision:
    """The votes a board was computed from.

    ``repo`` and ``commit``: the Hub dataset and the commit its votes came from (None for a
    local log, or before the Hub answered); ``unpushed``: votes of the board not in that
    commit yet (0: the commit reproduces the board). ``votes_read`` and ``last_vote_id``:
    valid distinct votes read and the last in replay order. ``moving``: votes arrived
    while the board was computed, so it may hold some after this revision. ``read_at``: the
    reader's clock, which judged rows dated more than ten minutes after it to be from the
    future (skipped as ``future_ts``); ``leaderboard --read-at`` replays with the same
    clock, so rows a faster clock wrote count in neither or both. ``registry_published``:
    whether the commit holds the registry the board was rated with (False: ``leaderboard
    --repo --revision`` alone would replay other models or priors).
    """

    votes_read: int
    last_vote_id: str | None
    repo: str | None = None
    commit: str | None = None
    unpushed: int | None = None
    moving: bool = False
    #: Whether ``commit``'s ``registry/`` is the registry the board was rated with: False
    #: while the Space's publish of it has failed (retried before each push), or when the
    #: CLI replayed the commit with another registry; None without a commit or a registry file.
    registry_published: bool | None = None
    #: Not part of what the revision is: the same votes read later are the same revision.
    read_at: str | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def exact_commit(self) -> bool:
        """The Hub commit alone holds exactly this board's votes."""
        return self.commit is not None and self.unpushed == 0 and not self.moving

    @property
    def registry_missing(self) -> bool:
        """A commit is named, but its ``registry/`` is not the registry of the board."""
        return self.commit is not None and self.registry_published is False

    def label(self) -> str:
        """One line for the page, e.g. ``org/votes at commit 3bc0878 (1,234 votes, last 0f1e…)``."""
        last = f", the last {self.last_vote_id}" if self.last_vote_id else ""
        votes = f"{self.votes_read:,} votes{last}"
        if self.commit is not None:
            where = f"{self.repo} at commit {self.commit[:12]}"
            if self.registry_missing:
                where += " (which does not hold the registry the board was rated with)"
            if self.unpushed:
                where += f" plus {self.unpushed:,} votes not pushed yet"
        elif self.repo is not None:
            where = f"the local log (the Hub dataset {self.repo} has not answered yet)"
        else:
            where = "the local vote log"
        moving = "; votes arrived while it was computed: refresh for an exact revision"
        return f"{where}: {votes}{moving if self.moving else ''}"


def revision_of(votes: VoteTable, **hub) -> Revision:
    """The revision of a vote table read with its ``vote_id`` column (``hub``: ``repo``,
    ``commit``, ``unpushed``), with the clock it was read by."""
    last = votes.column("vote_id")[-1].as_py() if len(votes) else None
    return Revision(votes_read=len(votes), last_vote_id=last, read_at=format_us(votes.read_at_us),
                    **hub)  # fmt: skip


def board_settings(params: BoardParams, *, arena: str, category: str | None = None,
                   window: Window | None = None, unavailable: Iterable[str] = (),
                   registry_sha256: str | None = None) -> dict:  # fmt: skip
    """Every setting that decides a board's numbers, as JSON: the same dict for the Space's
    board and for the CLI run that reproduces it."""
    window = window or Window()
    return {"arena": arena, "category": category, **window.to_json(),
            "params": asdict(params), "unavailable": sorted(unavailable),
            "registry_sha256": registry_sha256}  # fmt: skip


def file_sha256(path: Path | None) -> str | None:
    """SHA-256 of a file (the registry; a compacted vote file), read in chunks: hashlib
    lets go of the GIL meanwhile, so several files hash in parallel."""
    if path is None:
        return None
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _now_us() -> int:
    """The wall clock, microseconds since the epoch: the clock ``read_votes`` judges by."""
    return time.time_ns() // 1000


@dataclass
class _Seen:
    key: tuple
    #: The file's valid votes and each one's ``ts`` (microseconds), aligned; for a JSONL
    #: shard, those of its lines up to ``offset``.
    ids: list
    ts: list
    #: Bytes of a JSONL shard read so far (whole lines): a grown shard is read from there.
    offset: int = 0
    #: The votes of a shard's last line when it lacks its newline but is whole, which
    #: ``read_votes`` counts (:func:`~arena_core.votes.lines.whole_last_line`): read again,
    #: with what follows it, once the shard grows.
    tail_ids: list = field(default_factory=list)
    tail_ts: list = field(default_factory=list)
    #: The earliest ``ts`` of a row skipped as ``future_ts`` (None if none was): the file is
    #: read again once the clock passes it less the slack, when a replay counts the row.
    future_from_us: int | None = None

    def votes(self) -> tuple[list, list]:
        """Every vote the file holds and their ``ts``, aligned."""
        return self.ids + self.tail_ids, self.ts + self.tail_ts

    def due(self, now_us: int) -> bool:
        """Whether a row skipped as from the future counts at ``now_us``."""
        return self.future_from_us is not None and self.future_from_us - FUTURE_SLACK_US <= now_us


def _read_file(path: Path, size: int, now_us: int) -> _Seen:
    """A file read afresh at the clock ``now_us``: a shard up to ``size`` (its size when the
    position was taken, so lines written since wait for the next read), a Parquet file
    whole (never rewritten)."""
    if path.suffix == ".jsonl":
        return _read_tail(path, _Seen((), [], []), size, now_us)
    votes = read_votes(path, columns=["vote_id"], now_us=now_us)
    return _Seen((), votes.column("vote_id").to_pylist(), votes.ts_us.tolist(),
                 future_from_us=votes.future_from_us)  # fmt: skip


def _read_tail(path: Path, seen: _Seen, size: int, now_us: int) -> _Seen:
    """A grown shard: the lines after what was read, appended to ``seen``, judged as
    ``read_votes`` judges them at ``now_us``: a byte-order mark at the start of the file is
    no part of the first line, and a last line without its newline counts when it is whole.
    That line is kept apart (``tail_ids``): what is written next may complete it or spoil it.

    ``seen`` itself is brought up to date and returned, its lists extended in place once
    everything is read (a read that fails leaves it as it was): copied into new lists, the
    shard's votes so far made every board view cost time in proportion to them (50 ms at a
    million votes), however few had arrived since the last.
    """
    start = seen.offset
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(size - start)
    if start == 0 and data.startswith(codecs.BOM_UTF8):
        data, start = data[len(codecs.BOM_UTF8) :], len(codecs.BOM_UTF8)
    cut = data.rfind(b"\n") + 1
    lines = _votes(data[:cut], now_us)
    rest = data[cut:]
    tail = _votes(rest + b"\n" if rest and whole_last_line(rest) else b"", now_us)
    future = [t for t in (seen.future_from_us, lines.future_from_us, tail.future_from_us)
              if t is not None]  # fmt: skip
    ids, ts = lines.column("vote_id").to_pylist(), lines.ts_us.tolist()
    tail_ids, tail_ts = tail.column("vote_id").to_pylist(), tail.ts_us.tolist()
    seen.ids.extend(ids)
    seen.ts.extend(ts)
    seen.offset, seen.tail_ids, seen.tail_ts = start + cut, tail_ids, tail_ts
    seen.future_from_us = min(future, default=None)
    return seen


def _votes(data: bytes, now_us: int) -> VoteTable:
    """The valid votes of whole JSONL lines, judged at the clock ``now_us``."""
    return clean(parse_jsonl(data, Counter()), Counter(), ["vote_id"], now_us=now_us)


class _Firsts:
    """Each vote's earliest ``ts`` over every file, and the last vote in replay order.

    The replay keeps a repeated ``vote_id``'s earliest row, wherever it is, and orders by
    ``(ts, vote_id)``: the last vote is the greatest ``(earliest ts, id)``. A file's own
    last row is not enough: its vote may have an earlier row in another file.
    """

    def __init__(self):
        self.ts: dict[str, int] = {}
        self.last: tuple[int, str] | None = None

    def add(self, ids: list, ts: list) -> None:
        """Take a file's (or new lines') votes and their ``ts``, aligned."""
        batch = dict(zip(ids, ts, strict=True))
        if len(batch) == len(ids) and not batch.keys() & self.ts.keys():
            # All new, the common case (a whole log at start-up): at dict speed.
            self.ts.update(batch)
            if ids:
                moments = np.asarray(ts)
                latest = int(moments.max())
                top = (latest, max(ids[k] for k in np.flatnonzero(moments == latest)))
                self.last = top if self.last is None else max(self.last, top)
            return
        stale = False  # the last vote's key moved earlier: look for the new last
        for vote_id, moment in zip(ids, ts, strict=True):
            known = self.ts.get(vote_id)
            if known is None:
                self.ts[vote_id] = moment
                if self.last is None or (moment, vote_id) > self.last:
                    self.last = (moment, vote_id)
            elif moment < known:
                self.ts[vote_id] = moment
                stale |= self.last == (known, vote_id)
        if stale:
            self.last = max(((t, i) for i, t in self.ts.items()), default=None)


class LiveRevisions:
    """The revision of a live vote folder, re-reading only the files that changed.

    ``files`` lists the vote files (the Space's own folder and the Hub's copy); ``lock`` is
    the vote log's lock (votes are written and applied under it); ``hub`` returns the Hub
    fields of :class:`Revision` (``repo``, ``commit``, ``unpushed``), read under that lock;
    ``clock`` the reader's clock in microseconds since the epoch (default: the wall clock);
    ``epoch`` names the boards' last full replay (a board computed across one is computed
    again, as when a vote arrives meanwhile).

    Each read counts exactly the votes ``read_votes`` finds in the same files with its
    ``now_us`` at the revision's ``read_at``, which is what ``leaderboard --read-at``
    replays: a file holding a row skipped as from the future is read again once that row
    comes due, though no byte of it changed, and everything is read again if the clock
    went back (rows it judged by a later clock may be from the future now).
    """

    def __init__(self, files: Callable[[], list[Path]], lock,
                 hub: Callable[[], dict] | None = None, *,
                 clock: Callable[[], int] = _now_us,
                 epoch: Callable[[], object] = lambda: None):  # fmt: skip
        self.files, self.lock, self.hub, self.clock = files, lock, hub or dict, clock
        self.epoch = epoch
        self._seen: dict[Path, _Seen] = {}
        self._firsts = _Firsts()
        self._judged_at: int | None = None  # the latest clock a file was read by
        self._mutex = threading.Lock()

    def position(self) -> tuple:
        """Every vote file's size and identity, the Hub fields and the boards' epoch, read
        under the vote lock."""
        with self.lock:
            stats = []
            for path in self.files():
                try:
                    st = path.stat()
                except FileNotFoundError:  # compacted away meanwhile
                    continue
                stats.append((path, st.st_ino, st.st_size, st.st_mtime_ns))
            return tuple(stats), tuple(sorted(self.hub().items())), self.epoch()

    def read(self, position: tuple) -> Revision:
        """The revision of the files as listed in ``position`` (those changed since, or
        holding a row from the future that has come due, are re-read)."""
        stats, hub = position[:2]
        with self._mutex:
            now_us = self.clock()
            if self._judged_at is not None and now_us < self._judged_at:
                self._seen, self._firsts = {}, _Firsts()  # the clock went back
            self._judged_at = now_us
            rebuild = set(self._seen) - {s[0] for s in stats}
            for path, *key in stats:
                rebuild |= self._update(path, tuple(key), now_us)
            for path in rebuild - {s[0] for s in stats}:
                del self._seen[path]
            # A file shrank, was replaced or removed, a counted last line was spoilt or a
            # row from the future came due: count afresh.
            if rebuild:
                self._firsts = _Firsts()
                for seen in self._seen.values():
                    self._firsts.add(*seen.votes())
            last = self._firsts.last
            return Revision(votes_read=len(self._firsts.ts),
                            last_vote_id=last[1] if last else None,
                            read_at=format_us(now_us), **dict(hub))  # fmt: skip

    def _update(self, path: Path, key: tuple, now_us: int) -> set[Path]:
        """Read ``path`` (identity and size ``key``) as far as it changed; returns ``{path}``
        when the votes counted so far must be counted afresh (some of its votes are gone)."""
        seen = self._seen.get(path)
        due = seen is not None and seen.due(now_us)
        if seen is not None and seen.key == key and not due:
            return set()
        grown = seen is not None and not due and key[0] == seen.key[0] and key[1] >= seen.key[1]
        if grown and path.suffix == ".jsonl":
            known, tail = len(seen.ids), set(zip(seen.tail_ids, seen.tail_ts, strict=True))
            fresh = _read_tail(path, seen, key[1], now_us)  # ``seen``, extended
            new = list(zip(fresh.ids[known:], fresh.ts[known:], strict=True))
            new += zip(fresh.tail_ids, fresh.tail_ts, strict=True)
            # The last line read without its newline (counted) may have been spoilt since.
            spoilt = not tail <= set(new)
            self._firsts.add([i for i, _ in new], [t for _, t in new])
        else:
            fresh = _read_file(path, key[1], now_us)
            spoilt = seen is not None
            self._firsts.add(*fresh.votes())
        fresh.key = key
        self._seen[path] = fresh
        return {path} if spoilt else set()

    def around(self, compute: Callable[[], object]) -> tuple[object, Revision]:
        """``compute()`` (a board) and the revision it was computed from.

        The files are looked at before and after; if a vote arrived in between, it is
        computed again, up to :data:`ATTEMPTS` times, then returned marked ``moving``.
        """
        for _ in range(ATTEMPTS):
            before = self.position()
            result = compute()
            revision = self.read(before)
            if self.position() == before:
                return result, revision
        return result, replace(revision, moving=True)


def service_revisions(service) -> LiveRevisions:
    """A :class:`LiveRevisions` over an :class:`~arena_core.space.service.ArenaService`'s vote
    files (its public ``vote_log``, ``replay_sources`` and ``sync``)."""
    folders = [service.vote_log.folder, *service.replay_sources]
    sync = service.sync

    def files() -> list[Path]:
        return [p for folder in folders for p, _ in vote_files(folder)]

    # The boards' clock, not the wall clock: a row from the future that has come due since
    # the boards' last full replay counts only once they are replayed again (VoteReplay).
    replay = service.replay
    return LiveRevisions(files, service.vote_log.lock, sync.revision if sync is not None else None,
                         clock=replay.boards_clock_us, epoch=lambda: replay.epoch)  # fmt: skip
