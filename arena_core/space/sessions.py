"""A vote's place in its session, and the listening times the browser reports.

**Session order.** Each human vote carries ``session_id`` (the salted hash of the
session key Gradio's client sends: the client makes it, so it groups a visit, never
identifies one) and ``session_order``, its 1-based rank among that
session's votes in replay order, the rank a researcher would compute by sorting
the dataset by ``ts`` within a session. The server counts it, and the count
survives a restart: :meth:`SessionCounter.restore` re-enters every session's votes
from the replayed log, as the rate limiter does with its window. A vote cast before
the earlier votes are known (during the start-up replay, or while the Hub's votes
have not been downloaded) is written with ``session_order`` null rather than a
rank that could be wrong; it still counts toward the later votes' ranks, since
the replay reads it from the log. Sessions idle for :data:`SESSION_MEMORY` are
forgotten; a session that votes again after that long would restart at 1 (a
Gradio session lives as long as its page, so this is a page left open a week).

**Listening times.** Only the browser knows how long each clip played. The page's
script sums the intervals played (media seconds, replays included, at any speed)
and sends them with the vote; :func:`listen_seconds` keeps a value only if it is a
finite number from 0 to :data:`LISTEN_BOUND` times the clip's length, else it is
recorded as unknown (null). These are the client's claims: the listening gate that
decides whether a vote is taken stays the server's own clock (``battles.py``).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from arena_core.votes.clean import VoteTable

#: Seconds a session is remembered after its last vote (a week).
SESSION_MEMORY = 7 * 24 * 3600.0
#: Largest listening time kept, as a multiple of the clip's length: ten full replays.
#: Beyond it the report is not a listen (a forged or broken client): recorded as null.
LISTEN_BOUND = 10.0
#: Decimals kept of a listening time (milliseconds).
LISTEN_DECIMALS = 3
#: Longest report accepted from the page (characters): three numbers and their keys.
MAX_REPORT_CHARS = 200


class SessionCounter:
    """Votes per session, thread-safe; see the module docstring.

    ``clock`` (seconds, monotonic) ages sessions; injected by tests.
    """

    def __init__(self, memory: float = SESSION_MEMORY,
                 clock: Callable[[], float] = time.monotonic):  # fmt: skip
        self.memory, self._clock = memory, clock
        self._counts: dict[str, tuple[int, float]] = {}  # session -> (votes, last vote)
        self._lock = threading.Lock()
        self._swept = clock()

    def next(self, session: str) -> int:
        """Count one more vote of ``session`` and return its rank."""
        now = self._clock()
        with self._lock:
            self._sweep(now)
            count = self._counts.get(session, (0, now))[0] + 1
            self._counts[session] = (count, now)
            return count

    def release(self, session: str, rank: int) -> None:
        """Take back :meth:`next`'s count of a vote that was not written (if still the last)."""
        with self._lock:
            count, last = self._counts.get(session, (0, 0.0))
            if count == rank:
                self._counts[session] = (count - 1, last)

    def restore(self, counts: dict[str, tuple[int, float]], *, add: bool = False) -> int:
        """Re-enter sessions from the log: ``session -> (votes in the log, seconds since its
        last vote)``. A session counted here already keeps the larger count (its votes being
        written now are not in the files yet); with ``add`` the two are added, for counts read
        from files that hold none of the votes counted here (the start-up replay reads every
        shard but this run's own: a session that voted during it was ranked by the larger
        count, short of the votes it cast meanwhile, for good). Returns the sessions remembered."""
        now = self._clock()
        with self._lock:
            for session, (votes, age) in counts.items():
                if age >= self.memory:
                    continue
                have, last = self._counts.get(session, (0, now - max(age, 0.0)))
                count = have + votes if add else max(have, votes)
                self._counts[session] = (count, max(last, now - max(age, 0.0)))
            return len(self._counts)

    def __len__(self) -> int:
        with self._lock:
            return len(self._counts)

    def _sweep(self, now: float) -> None:
        if now - self._swept < self.memory:
            return
        self._swept = now
        for session in [s for s, (_, last) in self._counts.items() if last <= now - self.memory]:
            del self._counts[session]


def session_counts(votes: VoteTable, now_us: int) -> dict[str, tuple[int, float]]:
    """Each session's votes in a replayed log and the seconds since its last one (for
    :meth:`SessionCounter.restore`); empty when the table has no ``session_id``."""
    if "session_id" not in votes.table.column_names or not len(votes):
        return {}
    table = pa.table({"s": votes.column("session_id"), "ts": pa.array(votes.ts_us)})
    table = table.filter(pc.is_valid(table.column("s")))
    grouped = table.group_by("s").aggregate([("ts", "count"), ("ts", "max")])
    ages = (now_us - grouped.column("ts_max").to_numpy()) / 1_000_000
    counts = grouped.column("ts_count").to_numpy()
    return {
        str(s): (int(n), float(age))
        for s, n, age in zip(grouped.column("s").to_pylist(), counts, ages, strict=True)
    }


def page_report(raw) -> dict:
    """The page's vote report, JSON text of one object (``a`` and ``b``: seconds played;
    ``battle``: the battle on screen, see ``page/visit.py``); {} for anything else (no
    report: an API vote, or junk)."""
    if not isinstance(raw, str) or not raw or len(raw) > MAX_REPORT_CHARS:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def listen_report(raw) -> tuple[object, object]:
    """The two listening times of the page's report; (None, None) without them."""
    data = page_report(raw)
    return data.get("a"), data.get("b")


def listen_seconds(value, clip_s: float | None) -> float | None:
    """A reported listening time if plausible for a clip of ``clip_s`` seconds, else None."""
    if clip_s is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    if not math.isfinite(value) or value < 0 or value > LISTEN_BOUND * clip_s:
        return None
    return round(value, LISTEN_DECIMALS)


def clip_lengths(outputs) -> dict:
    """``clip_a_s`` and ``clip_b_s``: each delivered audio clip's length (None otherwise)."""
    return {
        f"clip_{side}_s": (
            round(float(o.duration), LISTEN_DECIMALS) if o.modality == "audio" else None
        )
        for side, o in zip("ab", outputs, strict=True)
    }


__all__ = [
    "LISTEN_BOUND",
    "SESSION_MEMORY",
    "SessionCounter",
    "clip_lengths",
    "listen_report",
    "listen_seconds",
    "session_counts",
]
