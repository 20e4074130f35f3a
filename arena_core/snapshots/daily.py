"""Daily snapshots of every board, written to the dataset, so rank history is public and citable.

Once a day (``ARENA_SNAPSHOT_EVERY_HOURS``, default 24) the Space writes, for each arena,
``leaderboards/<arena>/<YYYY-MM-DD>.json`` (the UTC date): the arena's board and one per
prompt category, each with its ratings, intervals, counts and settings, and the revision
and code version they were computed from. One file per arena and UTC date: a restart the
same day does not write it again, and with a period shorter than a day each later run of
the day overwrites the file with the latest boards.

The boards are computed from exactly the votes the revision names, by the same function
as the command line: with the Hub, the waiting votes are pushed first and the commit is
downloaded and replayed, so ``python -m arena_core leaderboard --repo ID --revision SHA
--arena A [--category C] [--unavailable M ...] --read-at READ_AT --format json`` prints the
snapshot's board to the last digit (``SHA`` and ``READ_AT``: the revision's ``commit`` and
``read_at``; the category and unavailable models: the board's ``settings``). Without
``--read-at`` the replay judges future-dated rows by its own clock: a row dated ahead of
the snapshot's (a replica whose clock ran fast) comes due and counts. Without the Hub,
from the local vote files, whose last vote and count the revision names.

It all runs in a background thread with an injected clock: never under the vote lock but
for the push, which takes it as every push does. A failure is logged and retried at the
next check (:data:`CHECK_SECONDS`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.registry import Arena, Registry
from arena_core.registry.fields import valid_id
from arena_core.selection import Entrant
from arena_core.snapshots.revision import board_settings, file_sha256, revision_of
from arena_core.snapshots.version import CodeVersion, code_version
from arena_core.votes.clean import VoteTable
from arena_core.votes.read import read_votes

log = logging.getLogger(__name__)

#: Folder of the snapshots, in the dataset repo and in the local data folder.
SNAPSHOT_DIR = "leaderboards"
#: Seconds between two looks at whether a snapshot is due; also the retry delay after a
#: failure. Ten minutes: a day's snapshot is at most that late, and a Hub outage costs
#: one attempt per ten minutes.
CHECK_SECONDS = 600.0
#: Seconds the push of waiting votes may take before a snapshot.
PUSH_TIMEOUT = 120.0


class SnapshotError(RuntimeError):
    """A snapshot cannot be computed now (e.g. the Hub has not answered yet); retried later."""


def snapshot_path(arena_id: str, day: date) -> str:
    """``leaderboards/<arena>/<YYYY-MM-DD>.json``, the same in the repo and the data folder.

    The registry refuses an arena id that would leave that folder (``x/../..``); checked
    again here, where the id becomes a path.
    """
    if not valid_id(arena_id):
        raise ValueError(f"arena id {arena_id!r} cannot name a snapshot file")
    return f"{SNAPSHOT_DIR}/{arena_id}/{day.isoformat()}.json"


def snapshot_document(votes: VoteTable, arena: Arena, *, params: BoardParams, hub: dict,
                      unavailable: list[str], registry_sha256: str | None, day: date,
                      written: datetime, code: CodeVersion) -> dict:  # fmt: skip
    """An arena's snapshot: its board and one per category, computed from ``votes`` (read
    with their ``vote_id``) as ``leaderboard --format json`` computes them."""
    entrants = Entrant.from_arena(arena)
    available = dict.fromkeys(unavailable, False)
    boards = []
    for category in (None, *arena.categories):
        board = board_from_votes(votes, arena.id, category=category, entrants=entrants,
                                 params=params, available=available)  # fmt: skip
        settings = board_settings(params, arena=arena.id, category=category,
                                  unavailable=unavailable, registry_sha256=registry_sha256)  # fmt: skip
        boards.append({**board.to_json(), "settings": settings})
    return {"arena": arena.id, "date": day.isoformat(),
            "written": written.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "revision": revision_of(votes, **hub).to_json(), "code_version": code.to_json(),
            "boards": boards}  # fmt: skip


def local_votes(folders: list[Path]) -> Callable[[], tuple[VoteTable, dict]]:
    """The votes of a local folder (no Hub): the revision is their last vote and count."""

    def source() -> tuple[VoteTable, dict]:
        return read_votes(folders), {}

    return source


def hub_votes(sync, push_timeout: float = PUSH_TIMEOUT) -> Callable[[], tuple[VoteTable, dict]]:
    """The votes of the dataset's latest commit of this Space's votes, after pushing those
    waiting (``sync``: the :class:`~arena_core.dataset.hub.HubSync`)."""
    from arena_core.dataset.repo import download_revision
    from arena_core.dataset.uploader import DATA_DIR

    def source() -> tuple[VoteTable, dict]:
        if sync.uploader is None:
            raise SnapshotError(f"{sync.repo_id} has not answered yet")
        sync.uploader.trigger().result(timeout=push_timeout)
        with sync.lock:
            hub = sync.revision()
        with tempfile.TemporaryDirectory(prefix="arena-snapshot-") as tmp:
            folder, sha = download_revision(sync.api, sync.repo_id, hub["commit"], Path(tmp))
            (folder / DATA_DIR).mkdir(parents=True, exist_ok=True)
            votes = read_votes(folder / DATA_DIR)
        return votes, {"repo": sync.repo_id, "commit": sha, "unpushed": 0,
                       "registry_published": hub.get("registry_published")}  # fmt: skip

    return source


class SnapshotStore:
    """Where snapshots go: the data folder always, and the dataset repo with ``sync``."""

    def __init__(self, folder: Path, sync=None):
        self.folder, self.sync = Path(folder), sync

    def has(self, path: str) -> bool:
        return (self.folder / path).is_file()

    def newest_day(self) -> date | None:
        """The latest UTC date of a snapshot file here (any arena), None without one."""
        days = []
        for path in (self.folder / "leaderboards").glob("*/*.json"):
            with contextlib.suppress(ValueError):  # a file not named by a date: not ours
                days.append(date.fromisoformat(path.stem))
        return max(days, default=None)

    def write(self, files: dict[str, bytes], message: str) -> None:
        """The repo first (one commit; a failure raises and nothing is marked written), then
        the local copies, each replaced whole."""
        if self.sync is not None:
            self.sync.upload(files, message)
        for path, data in files.items():
            target = self.folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".json.partial")
            partial.write_bytes(data)
            os.replace(partial, target)


class DailySnapshots:
    """Writes every arena's snapshot when one is due, from a background thread.

    Parameters
    ----------
    registry, params : the Space's arenas and board settings.
    source : callable returning the votes (with ``vote_id``) and the revision's Hub fields
        (:func:`local_votes` or :func:`hub_votes`).
    store : SnapshotStore
    unavailable : callable, arena id -> ids of models that cannot run here (as the board
        marks them).
    every_hours : hours between snapshots; one file per arena and UTC date.
    clock : current UTC datetime (injected by tests).
    """

    def __init__(self, registry: Registry, params: BoardParams, *,
                 source: Callable[[], tuple[VoteTable, dict]], store: SnapshotStore,
                 unavailable: Callable[[str], list[str]] = lambda arena_id: [],
                 every_hours: float = 24.0, clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 check_seconds: float = CHECK_SECONDS,
                 code: Callable[[], CodeVersion] = code_version):  # fmt: skip
        if not every_hours > 0:
            raise ValueError(f"every_hours must be > 0, got {every_hours}")
        self.registry, self.params, self.source, self.store = registry, params, source, store
        self.unavailable, self.every = unavailable, timedelta(hours=every_hours)
        self.clock, self.check_seconds, self.code = clock, check_seconds, code
        self.last_written: datetime | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def due(self, now: datetime) -> bool:
        """The last snapshot this run wrote is ``every_hours`` old, or a snapshot of today is
        missing and the period is at most a day (or this run wrote none yet). A longer period
        (a week, 168) was ignored: each new UTC day's file was missing, so one was written
        every day. A run that wrote none yet counts a longer period from the newest file's
        day (:meth:`SnapshotStore.newest_day`)."""
        day = now.astimezone(UTC).date()
        missing = any(not self.store.has(snapshot_path(a.id, day)) for a in self.registry.arenas)
        last = self.last_written
        if last is None and self.every > timedelta(days=1):
            # A run restarted within the period (a Space restarts often): from the day of the
            # newest snapshot file, so that "weekly" does not become "each day a run starts".
            newest = self.store.newest_day()
            last = None if newest is None else datetime.combine(newest, time(), tzinfo=UTC)
        if last is None:
            return missing
        fresh = now - last < self.every
        return not fresh or (missing and self.every <= timedelta(days=1))

    def tick(self) -> bool:
        """Write the snapshots if due; True if written. Never raises: a failure is logged
        and the next tick tries again."""
        now = self.clock()
        try:
            if not self.due(now):
                return False
            self.write(now)
        except Exception as exc:  # the Hub, the disk, a bad file: all mean "next tick"
            log.error("daily snapshot failed, retrying in %g s: %s: %s", self.check_seconds,
                      type(exc).__name__, exc)  # fmt: skip
            return False
        self.last_written = now
        return True

    def write(self, now: datetime) -> dict[str, bytes]:
        """Compute and store every arena's snapshot of ``now``'s UTC date; the files."""
        votes, hub = self.source()
        day, digest = now.astimezone(UTC).date(), file_sha256(self.registry.path)
        files = {}
        for arena in self.registry.arenas:
            document = snapshot_document(votes, arena, params=self.params, hub=hub,
                                         unavailable=sorted(self.unavailable(arena.id)),
                                         registry_sha256=digest, day=day, written=now,
                                         code=self.code())  # fmt: skip
            files[snapshot_path(arena.id, day)] = (
                json.dumps(document, indent=1, allow_nan=False) + "\n"
            ).encode()
        self.store.write(files, f"Leaderboard snapshots of {day.isoformat()} ({len(votes)} votes)")
        log.info("wrote the leaderboard snapshots of %s from %d votes", day, len(votes))
        return files

    def start(self) -> threading.Thread:
        """Check now, then every ``check_seconds``, in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="daily-snapshots", daemon=True)
        self._thread.start()
        return self._thread

    def _run(self) -> None:
        self.tick()
        while not self._stop.wait(self.check_seconds):
            self.tick()

    def stop(self) -> None:
        self._stop.set()
