"""Who is voting: salted voter hashes and the per-voter rate limit.

The published dataset must never hold a raw address or user name, so a voter
is an HMAC of their identity under a secret salt: stable while the salt is,
unlinkable to the person without it. A logged-in visitor (OAuth on the Space)
is identified by user name, everyone else by the client address, taken from
the first ``X-Forwarded-For`` hop behind the Spaces proxy.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

#: Hex characters kept of the HMAC: 80 bits, ample to tell voters apart.
VOTER_HASH_CHARS = 20


def voter_identity(*, username: str | None, headers: Mapping[str, str] | None,
                   client_host: str | None) -> str:  # fmt: skip
    """The raw identity to hash: ``user:<name>`` when logged in, else ``ip:<address>``."""
    if username:
        return f"user:{username}"
    forwarded = (headers or {}).get("x-forwarded-for", "")
    address = forwarded.split(",")[0].strip() or client_host or "unknown"
    return f"ip:{address}"


def voter_hash(salt: str, identity: str) -> str:
    """Salted, keyed hash of an identity; the only form in which a voter is stored."""
    digest = hmac.new(salt.encode(), identity.encode(), hashlib.sha256).hexdigest()
    return digest[:VOTER_HASH_CHARS]


class RateLimiter:
    """At most ``limit`` votes per voter in any sliding ``window`` of seconds.

    Thread-safe. Voters idle for a whole window are forgotten, so memory stays
    bounded by the voters active in the last window.
    """

    def __init__(self, limit: int, window: float, clock: Callable[[], float] = time.monotonic):
        if limit < 1 or window <= 0:
            raise ValueError("rate limit and window must be positive")
        self.limit, self.window, self._clock = limit, window, clock
        self._seen: dict[str, deque] = {}
        self._lock = threading.Lock()

    def allow(self, voter: str) -> bool:
        """Record a vote by ``voter``; False when it goes over the limit."""
        now = self._clock()
        with self._lock:
            self._forget_idle(now)
            times = self._seen.setdefault(voter, deque())
            while times and times[0] <= now - self.window:
                times.popleft()
            times.append(now)
            return len(times) <= self.limit

    def _forget_idle(self, now: float) -> None:
        idle = [v for v, t in self._seen.items() if not t or t[-1] <= now - self.window]
        for voter in idle:
            del self._seen[voter]
