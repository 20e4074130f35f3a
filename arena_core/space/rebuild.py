"""The boards rebuilt after a voter is flagged, off the vote path.

When the anomalous-voter test flags a voter, their earlier votes leave the ratings, as a
replay of the log leaves them out. Sequential Elo depends on the order of every vote after
the first one removed, so the boards are rebuilt from the log. Done under the vote lock,
that rebuild held every vote for as long as it took to read and replay the whole log: with
a million votes replayed, 3 s per flagged voter, and random voters in the load benchmark
pushed ``/vote``'s 99th percentile to 19 s. A vote's cost must not grow with the log.

So the rebuild runs in a thread of its own, and votes keep being applied meanwhile:

1. Under the vote lock, the flagging vote starts a rebuild: the vote files are listed, and
   from then on every applied vote is also recorded (the *catch-up*).
2. Outside the lock, the files are read. Reading takes time and the log grows: a vote read
   here may also have been recorded for catch-up, so every recorded vote is left out of
   the table (under the lock every vote on disk has been applied, so the record is complete
   for what was read). The boards of that table are computed.
3. Under the lock, they are swapped in and the recorded votes applied on top, in log order,
   those of voters flagged by now left out as the replay leaves them.

The boards then equal a replay of the log again. Until then they still count the flagged
voter's earlier votes, for the seconds the rebuild takes; :meth:`BackgroundRebuild.wait`
waits for that (the tests, the load benchmark through ``/status``). A voter flagged while a
rebuild runs asks for another once it is done. A full rebuild under the lock (the Hub's
votes arriving late) makes a rebuild in flight obsolete: :meth:`cancel`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from arena_core.space.live import LiveArena
from arena_core.votes.read import read_votes
from arena_core.votes.schema import Vote

log = logging.getLogger(__name__)


class BackgroundRebuild:
    """Rebuilds of the live boards in a thread, with the votes applied meanwhile caught up.

    ``lock`` is the vote log's lock: :meth:`record`, :meth:`request` and :meth:`cancel`
    are called with it held, as the votes are applied.
    """

    def __init__(self, live: Mapping[str, LiveArena], lock, files: Callable[[], list],
                 is_flagged: Callable[[str | None], bool], *,
                 clock: Callable[[], int | None] = lambda: None):  # fmt: skip
        self.live, self.lock, self.files, self.is_flagged = live, lock, files, is_flagged
        #: The reader's clock (microseconds; None: the wall clock): the boards' own, so a
        #: rebuild counts no row from the future that the last full replay skipped.
        self.clock = clock
        self._catchup: list[Vote] | None = None
        self._again = False
        self._generation = 0
        self._settled = threading.Event()
        self._settled.set()

    @property
    def running(self) -> bool:
        return not self._settled.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no rebuild is running or asked for; False if ``timeout`` ran out."""
        return self._settled.wait(timeout)

    def record(self, vote: Vote) -> None:
        """An applied vote (lock held): kept for the catch-up if a rebuild runs."""
        if self._catchup is not None:
            self._catchup.append(vote)

    def request(self) -> None:
        """A voter was just flagged (lock held): rebuild now, or again after the running one."""
        if self._catchup is not None:
            self._again = True
            return
        self._catchup = []
        self._settled.clear()
        thread = threading.Thread(target=self._run, args=(self.files(), self._generation),
                                  name="board-rebuild", daemon=True)  # fmt: skip
        thread.start()

    def cancel(self) -> None:
        """The boards were just rebuilt in full under the lock: drop any rebuild in flight."""
        self._generation += 1
        self._catchup, self._again = None, False
        self._settled.set()

    def _run(self, files: list, generation: int) -> None:
        start = time.perf_counter()
        try:
            votes = read_votes(files, now_us=self.clock())
            with self.lock:
                if generation != self._generation:
                    return
                recorded = [v.vote_id for v in self._catchup]
            votes = votes.without(recorded)
            boards = {arena_id: live.rebuilt(votes) for arena_id, live in self.live.items()}
        except Exception:  # the boards keep the flagged voter's votes until a later rebuild
            log.exception("rebuilding the boards after a flagged voter failed")
            with self.lock:
                if generation == self._generation:
                    self.cancel()
            return
        with self.lock:
            if generation != self._generation:
                return
            self._swap(boards)
            log.info("boards rebuilt from %d votes in %.2f s (%d caught up)",
                     len(votes), time.perf_counter() - start, len(self._catchup))  # fmt: skip
            self._catchup = None
            if self._again:
                self._again = False
                self.request()
            else:
                self._settled.set()

    def _swap(self, boards: dict) -> None:
        for arena_id, tracks in boards.items():
            self.live[arena_id].adopt(tracks)
        for vote in self._catchup:
            self.live[vote.arena].apply(vote, excluded=self.is_flagged(vote.voter))
