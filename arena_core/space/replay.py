"""The live boards kept equal to a replay of the vote files.

Whatever happened since the process started, the Space's boards must be what a replay
of every vote file would give, each acknowledged vote counted once. :class:`VoteReplay`
holds the rules that keep it so, all under the vote log's lock:

* **Start-up.** The votes already on disk (earlier shards, the Hub download) are
  replayed in the background while visitors battle; votes cast meanwhile are queued and
  applied once it is done. The rate limiter and the sessions' vote order are restored
  from the same votes.
* **Late votes.** When the Hub answers after start-up, every file is replayed again
  (:meth:`VoteReplay.reload`), with votes waiting meanwhile.
* **Flagged voters.** A vote that flags its voter takes their earlier votes out of the
  boards: by a rebuild in the background (:mod:`arena_core.space.rebuild`), or by a full
  one under the lock when the vote was queued during the start-up replay.
* **Rows from the future.** A row dated more than ten minutes after the replay's clock (a
  replica whose clock runs fast) is skipped; when it comes due, every file is replayed
  again (:meth:`VoteReplay.reload`), so the boards stay those of a replay run now.

It also holds the anomalous-voter test, which each full replay recomputes. Kept apart
from :class:`~arena_core.space.service.ArenaService` because these rules share their
state (the queue, the detector, the progress) with each other and with nothing else:
the battles, the desks that take votes and the boards reach it only through
:meth:`VoteReplay.apply`, :meth:`VoteReplay.sessions_ready`, ``detector`` and ``progress``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from arena_core.integrity.anomaly import ANOMALOUS_FLAG, detection_of
from arena_core.integrity.detector import AnomalyDetector
from arena_core.integrity.limiter import RateLimiter
from arena_core.ratings.elo import EloStep
from arena_core.space.live import LiveArena
from arena_core.space.rebuild import BackgroundRebuild
from arena_core.space.sessions import SessionCounter, session_counts
from arena_core.space.views import LoadProgress
from arena_core.space.voting import RATE_LIMITED
from arena_core.votes.clean import FUTURE_SLACK_US, VoteTable
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_listed, read_votes, vote_files
from arena_core.votes.schema import Vote

log = logging.getLogger(__name__)

#: The longest a timer waits before it looks again (a row dated years ahead).
_DAY_S = 86_400.0
#: Seconds before a failed replay of rows come due is tried again.
_RETRY_S = 60.0
#: How long past a row's due time the boards' clock is held short of it at most (the
#: replay that counts it normally runs a second after; 5 minutes, half the reader's slack).
_HOLD_MAX_US = FUTURE_SLACK_US // 2


class VoteReplay:
    """Replays of the vote files into a service's live boards, and each vote applied after.

    Parameters
    ----------
    live : dict of arena id to LiveArena
        The service's live boards.
    vote_log : VoteLog
        This process's shard; its lock (reentrant, as ``HubSync.lock``) orders the
        replays and the votes.
    replay_sources : list of paths
        The service's list of more vote folders (the Hub download), read at each replay.
    limiter, sessions : RateLimiter, SessionCounter
        The service's, restored from the replayed votes.
    sync : HubSync, optional
        Until it has the Hub's votes, a session's place in its order is unknown.
    wall_clock : callable returning the current UTC datetime; ages the log's recent votes
        when the rate limiter is restored (injected for tests).
    """

    def __init__(self, live: Mapping[str, LiveArena], vote_log: VoteLog, replay_sources: list,
                 limiter: RateLimiter, sessions: SessionCounter, *, sync=None,
                 wall_clock: Callable[[], datetime] | None = None):  # fmt: skip
        self.live, self.vote_log, self.replay_sources = live, vote_log, replay_sources
        self.limiter, self.sessions, self.sync = limiter, sessions, sync
        self.detector = AnomalyDetector()
        self.rebuilds = BackgroundRebuild(self.live, vote_log.lock, self._vote_files,
                                          lambda voter: self.detector.is_flagged(voter),
                                          clock=self.boards_clock_us)  # fmt: skip
        self._wall_clock = wall_clock or (lambda: datetime.now(UTC))
        self.progress = LoadProgress()
        self._pending: list[Vote] = []
        self._replaying = threading.Lock()  # one replay at a time: load, then any reload
        self._future_timer: threading.Timer | None = None
        #: Ids of the replayed votes the rate limiter was given (:meth:`_restore_limiter`).
        self._restored: set[str] = set()
        #: When the earliest row the last full replay skipped as from the future counts
        #: (microseconds; None: it skipped none): until the next full replay, the boards
        #: are a replay run at any clock before it (:meth:`boards_clock_us`).
        self._due_us: int | None = None
        #: Full replays of the boards so far (the revision of a board computed across one
        #: is read again: ``LiveRevisions.epoch``). Changed under the vote log's lock.
        self.epoch = 0

    def load(self) -> LoadProgress:
        """Replay the votes already in the log folder (all shards but this process's own)."""
        with self._replaying:
            return self._load()

    def _load(self) -> LoadProgress:
        start = time.perf_counter()
        self.limiter.hold()  # votes wait for the voters' recent votes (restored below)
        try:
            files, votes = read_listed(lambda: [
                p for p in self._vote_files() if p != self.vote_log.path])  # fmt: skip
            # Before any vote can pass (they wait for the limiter, restored next): a vote
            # stamped by a clock behind the last run's would sort before the replayed votes,
            # while the live boards and the detector take it after them.
            if len(votes):
                self.vote_log.advance_to(int(votes.ts_us.max()))
            self._restore_limiter(votes)  # votes cast meanwhile are waiting for it
            self.detector = AnomalyDetector.from_detection(detection_of(votes, every_voter=True))
            used = {arena_id: live.replay(votes) for arena_id, live in self.live.items()}
            self._restore_sessions(votes, add=True)  # this run's own shard was not read
            self._replay_when_due(votes.future_from_us)
        except Exception as exc:  # the app must come up, showing what went wrong
            log.exception("vote replay failed")
            self.progress.error = f"{type(exc).__name__}: {exc}"
            files, used, votes = [], {}, None
        finally:
            self.limiter.release()  # restored, or the replay failed: votes wait no longer
        with self.vote_log.lock:  # votes cast during the replay were queued: apply them now
            rebuild = False
            for vote in self._pending:
                rebuild |= self._newly_flagged(vote)
                self.live[vote.arena].apply(vote)
            self._pending.clear()
            if rebuild:
                self._rebuild()
            self.progress.files = len(files)
            self.progress.votes_used = used
            self.progress.skipped = Counter(votes.skipped) if votes is not None else Counter()
            self.progress.seconds = time.perf_counter() - start
            self.progress.done = True
            self.epoch += 1
        log.info("replayed %d vote files in %.2f s: used %s, skipped %s; anomalous voters: %d",
                 len(files), self.progress.seconds, used, dict(self.progress.skipped),
                 len(self.detector.flagged))  # fmt: skip
        return self.progress

    def reload(self) -> LoadProgress | None:
        """Replay every vote file again, this process's shard included, when votes arrive
        after start-up (the Hub answered late). None if the start-up replay has not run yet:
        it will read them.

        Runs under the log's lock (which must be reentrant, as ``HubSync.lock`` is): votes
        wait meanwhile, so none is counted twice or missed and the live board stays equal
        to a replay of the files.
        """
        with self._replaying:
            if not self.progress.done:
                return None
            start = time.perf_counter()
            with self.vote_log.lock:
                files, votes, used = self._rebuild()
                self._restore_sessions(votes)
                # The Hub's votes of a run before a restart during an outage arrive only now:
                # without them a voter who had spent the quota just before the restart got
                # a fresh one. This process's own votes took their places as they were cast.
                own = self.vote_log.path
                mine = read_votes(own, columns=["vote_id"]) if own.exists() else None
                known = set(mine.column("vote_id").to_pylist()) if mine is not None else set()
                self._restore_limiter(votes, known=known | self._restored)
                if len(votes):  # later votes are stamped after the newest one replayed
                    self.vote_log.advance_to(int(votes.ts_us.max()))
                self.progress.files, self.progress.votes_used = len(files), used
                self.progress.error = None
                self.progress.seconds = time.perf_counter() - start
        log.info("replayed %d vote files again in %.2f s: used %s", len(files),
                 self.progress.seconds, used)  # fmt: skip
        return self.progress

    def _restore_limiter(self, votes: VoteTable, known: set[str] = frozenset()) -> None:
        """Give the rate limiter the votes each voter had counted in the last window, but
        those of ``known`` (votes it has already: restored before, or cast in this run)."""
        if "voter" not in votes.table.column_names or not len(votes):
            self.limiter.release()
            return
        now_us = int(self._wall_clock().timestamp() * 1_000_000)
        recent = np.flatnonzero(votes.ts_us > now_us - int(self.limiter.window * 1_000_000))
        rows = votes.table.take(pa.array(recent)).select(["vote_id", "voter", "flags",
                                                          "voter_kind"])  # fmt: skip
        counted, ids = [], []
        for row, ts in zip(rows.to_pylist(), votes.ts_us[recent], strict=True):
            if (row["voter"] and row["vote_id"] not in known
                    and (row["voter_kind"] or "human") == "human"
                    and RATE_LIMITED not in (row["flags"] or ())):  # fmt: skip
                counted.append((row["voter"], (now_us - int(ts)) / 1_000_000))
                ids.append(row["vote_id"])
        self._restored.update(ids)
        log.info("rate limiter restored with %d recent votes", self.limiter.restore(counted))

    def _restore_sessions(self, votes: VoteTable, *, add: bool = False) -> None:
        """Give the session counter every session's votes in the log (``sessions.py``);
        ``add``: ``votes`` hold none of this run's (see :meth:`SessionCounter.restore`)."""
        now_us = int(self._wall_clock().timestamp() * 1_000_000)
        log.info("session order restored for %d sessions",
                 self.sessions.restore(session_counts(votes, now_us), add=add))  # fmt: skip

    def sessions_ready(self) -> bool:
        """Whether every earlier vote has been replayed: the start-up replay is done, and the
        Hub's votes, when there is a Hub, were downloaded and replayed too."""
        return self.progress.done and (self.sync is None or self.sync.uploader is not None)

    def _rebuild(self) -> tuple[list, VoteTable, dict[str, int]]:
        """Replay every board, and the anomalous-voter test, from every vote file, this
        process's shard included; returns the files, the votes and the votes used per arena.

        The caller holds the log's lock: when a voter has just been flagged (their earlier
        votes leave the ratings, exactly as a replay of the log leaves them out), and when
        the Hub's votes arrive late (:meth:`reload`).
        """
        start = time.perf_counter()
        files, votes = read_listed(self._vote_files)  # again if a compaction moves them
        # Inside a group commit, the batch's later votes are on disk already but not yet
        # applied; they are applied (and counted) after this rebuild, so it leaves them out.
        votes = votes.without(self.vote_log.unapplied)
        self._replay_when_due(votes.future_from_us)
        self.detector = AnomalyDetector.from_detection(detection_of(votes, every_voter=True))
        used = {arena_id: live.replay(votes) for arena_id, live in self.live.items()}
        self.progress.skipped = Counter(votes.skipped)
        self.epoch += 1
        self.rebuilds.cancel()  # this one is newer than any running in the background
        log.info("anomalous voters now %d; boards rebuilt from %d votes in %.2f s",
                 len(self.detector.flagged), len(votes), time.perf_counter() - start)  # fmt: skip
        return files, votes, used

    def _replay_when_due(self, future_from_us: int | None) -> None:
        """Replay every file again once the earliest row skipped as from the future comes
        due (its time less the reader's slack): until then a replay skips it as this one
        did, from then on it counts it. Checked at least daily, so a row dated in year
        9999 costs a timer, never a replay."""
        if self._future_timer is not None:
            self._future_timer.cancel()
            self._future_timer = None
        self._due_us = None if future_from_us is None else future_from_us - FUTURE_SLACK_US
        if future_from_us is None:
            return
        now_us = int(self._wall_clock().timestamp() * 1_000_000)
        wait = (future_from_us - FUTURE_SLACK_US - now_us) / 1_000_000
        self._schedule(min(max(wait, 0.0) + 1.0, _DAY_S), future_from_us)

    def _schedule(self, delay_s: float, future_from_us: int) -> None:
        timer = threading.Timer(delay_s, self._future_due, args=(future_from_us,))
        timer.daemon = True
        self._future_timer = timer
        timer.start()

    def boards_clock_us(self) -> int:
        """The clock the live boards are a replay at (microseconds since the epoch): the
        wall clock, but short of the moment a row the last full replay skipped as from the
        future counts. That row counts from then on, and the boards count it once every
        file is replayed again, a second later or more (:meth:`_future_due`): until then,
        a revision read by the wall clock named a clock at which ``leaderboard --read-at``
        counted a row the board did not. Background rebuilds read by it too."""
        now_us = time.time_ns() // 1000
        due = self._due_us
        if due is None or now_us > due + _HOLD_MAX_US:
            # Held no longer than that: a replay that keeps failing (retried every minute)
            # must not freeze the clock, or every vote cast since would look as if from the
            # future to the revisions and the background rebuilds, which then left them out.
            return now_us
        return min(now_us, due - 1)

    def _future_due(self, future_from_us: int) -> None:
        now_us = int(self._wall_clock().timestamp() * 1_000_000)
        if future_from_us - FUTURE_SLACK_US > now_us:
            self._replay_when_due(future_from_us)  # not yet: look again later
        else:
            log.info("a vote row skipped as from the future is due now: replaying again")
            try:
                done = self.reload()
            except Exception:  # an I/O error, memory: the timer's thread would end silently
                log.exception("replaying the rows now due failed; trying again in %g s",
                              _RETRY_S)  # fmt: skip
                self._schedule(_RETRY_S, future_from_us)
                return
            if done is None:  # the start-up replay is still running: once it is done
                self._replay_when_due(future_from_us)

    def _vote_files(self) -> list:
        return [p for source in (self.vote_log.folder, *self.replay_sources)
                for p, _ in vote_files(source)]  # fmt: skip

    def start_loading(self) -> threading.Thread:
        """Replay in the background so visitors can battle while it runs."""
        thread = threading.Thread(target=self.load, name="vote-replay", daemon=True)
        thread.start()
        return thread

    def apply(self, vote: Vote) -> tuple[Vote, EloStep | None]:
        """The live update of a vote (the desks' ``apply``): runs under the log's lock, right
        after the vote is on disk. Queued while the start-up replay runs."""
        if not self.progress.done:
            self._pending.append(vote)
            return vote, None
        self.rebuilds.record(vote)
        if self._newly_flagged(vote):
            self.rebuilds.request()  # their earlier votes leave the boards (rebuild.py)
            return vote, None
        return vote, self.live[vote.arena].apply(vote)

    def _newly_flagged(self, vote: Vote) -> bool:
        """Take ``vote`` into the anomalous-voter test; whether it flagged its voter just now.

        A vote written after its voter was flagged carries the flag; one without it whose
        voter is flagged after it flagged them, whatever other flag it carries (a
        rate-limited vote can be the one that tips the test: it once left the voter's
        earlier votes on the board).
        """
        return self.detector.observe(vote) and ANOMALOUS_FLAG not in (vote.flags or ())
