"""The per-voter rate limit: at most ``limit`` counted votes in any sliding window.

Only the votes the limiter lets through occupy the window: a vote over the
limit is still written (flagged ``rate_limited`` and left out of the ratings)
but does not extend the wait, so the guarantee is exactly "no voter has more
than ``limit`` counted votes in any ``window`` seconds".

The state is rebuilt at start-up from the log (:meth:`RateLimiter.restore`):
the votes each voter had counted in the last window, so a restart does not
hand everyone a fresh quota. That works across restarts only while voter
hashes are stable, i.e. with ``ARENA_VOTER_SALT`` set; with a random salt
every voter gets a new hash at each start and the restored state matches no one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

#: Seconds a vote waits for the start-up replay to restore the limiter (:meth:`RateLimiter.hold`).
RESTORE_WAIT = 60.0


class RateLimiter:
    """At most ``limit`` allowed votes per voter in any sliding ``window`` of seconds.

    Thread-safe. A voter idle for a whole window is forgotten (swept at most
    once per window), so memory stays bounded by the voters of the last two
    windows.
    """

    def __init__(self, limit: int, window: float, clock: Callable[[], float] = time.monotonic,
                 *, restore_wait: float = RESTORE_WAIT):  # fmt: skip
        if limit < 1 or window <= 0:
            raise ValueError("rate limit and window must be positive")
        self.limit, self.window, self._clock = limit, window, clock
        self.restore_wait = restore_wait
        self._seen: dict[str, deque] = {}
        self._lock = threading.Lock()
        self._swept = clock()
        self._known = threading.Event()  # the log's recent votes are in (see hold)
        self._known.set()

    def hold(self) -> None:
        """Make :meth:`allow` wait until :meth:`restore` (or :meth:`release`): while the
        start-up replay reads the log, a voter's recent votes are not known yet, and an
        answer then would hand every voter a fresh quota."""
        self._known.clear()

    def release(self) -> None:
        """Let :meth:`allow` answer from what it knows (the replay is done or failed)."""
        self._known.set()

    def allow(self, voter: str) -> bool:
        """Whether a vote by ``voter`` now counts; if so it takes a place in the window."""
        return self.take(voter) is not None

    def take(self, voter: str) -> float | None:
        """The place a vote by ``voter`` takes in the window (its time), or None if it does
        not count; :meth:`give_back` returns the place of a vote that was not written.

        While held (:meth:`hold`) it waits for the log's recent votes, at most
        ``restore_wait`` seconds; past that the vote does not count (it is written
        flagged, as over the limit): a quota nobody can check is not handed out.
        """
        if not self._known.wait(self.restore_wait):
            return None
        now = self._clock()
        with self._lock:
            self._sweep(now)
            times = self._seen.setdefault(voter, deque())
            while times and times[0] <= now - self.window:
                times.popleft()
            if len(times) >= self.limit:
                return None
            times.append(now)
            return now

    def give_back(self, voter: str, place: float) -> None:
        """Free the ``place`` :meth:`take` gave a vote whose write was rolled back: the
        visitor is asked to vote again, and that vote must not find its own quota spent."""
        with self._lock:
            times = self._seen.get(voter)
            if times is not None and place in times:
                times.remove(place)

    def restore(self, counted: Iterable[tuple[str, float]]) -> int:
        """Re-enter votes counted ``age`` seconds ago, as ``(voter, age)`` pairs.

        Used at start-up with the log's recent votes (those not flagged
        ``rate_limited``). Ages under 0 (a clock that was ahead) count as now;
        votes older than the window are ignored. Returns the votes re-entered.
        """
        now = self._clock()
        entered = 0
        with self._lock:
            self._known.set()
            for voter, age in counted:
                if age >= self.window:
                    continue
                self._seen.setdefault(voter, deque()).append(now - max(age, 0.0))
                entered += 1
            for voter, times in self._seen.items():  # keep each window in time order
                if list(times) != sorted(times):
                    self._seen[voter] = deque(sorted(times))
        return entered

    def __len__(self) -> int:
        """Voters currently remembered."""
        with self._lock:
            return len(self._seen)

    def _sweep(self, now: float) -> None:
        if now - self._swept < self.window:
            return
        self._swept = now
        idle = [v for v, t in self._seen.items() if not t or t[-1] <= now - self.window]
        for voter in idle:
            del self._seen[voter]
