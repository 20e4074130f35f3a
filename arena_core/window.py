"""Time windows of a board ("last 30 days", ``--since`` / ``--until``) and board timestamps.

A window is a half-open interval of vote timestamps, ``since <= ts < until``,
either end open. Windows the Space offers start at a UTC midnight, so a board
of "the last 30 days" is the same all day long and the page can print the
exact ``--since`` that reproduces it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """Votes with ``since_us <= ts_us < until_us`` (microseconds since the epoch; None: open)."""

    since_us: int | None = None
    until_us: int | None = None

    def __post_init__(self):
        if (
            self.since_us is not None
            and self.until_us is not None
            and self.until_us <= self.since_us
        ):
            raise ValueError("the window's end must come after its start")

    @property
    def all_time(self) -> bool:
        return self.since_us is None and self.until_us is None

    def mask(self, ts_us: np.ndarray) -> np.ndarray:
        keep = np.ones(len(ts_us), dtype=bool)
        if self.since_us is not None:
            keep &= ts_us >= self.since_us
        if self.until_us is not None:
            keep &= ts_us < self.until_us
        return keep

    def to_json(self) -> dict:
        return {"since": format_us(self.since_us), "until": format_us(self.until_us)}

    @classmethod
    def parse(cls, since: str | None = None, until: str | None = None) -> Window:
        """From ISO-8601 dates or times (``2026-11-01``, ``2026-11-01T12:00:00Z``); UTC if no zone."""
        return cls(_parse(since), _parse(until))

    @classmethod
    def recent(cls, days: int, now: datetime) -> Window:
        """From the UTC midnight ``days`` days before ``now``'s date, open-ended."""
        start = datetime.combine((now.astimezone(UTC) - timedelta(days=days)).date(),
                                 datetime.min.time(), tzinfo=UTC)  # fmt: skip
        return cls(since_us=_to_us(start))


#: Every vote: the default window.
ALL_TIME = Window()


def parse_instant(text: str) -> int:
    """An ISO-8601 date or time (UTC if no zone) as microseconds since the epoch."""
    return _parse(text)


#: The fraction of a second in an ISO-8601 time.
_FRACTION = re.compile(r"\d:\d\d[.,](\d+)")


def _parse(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 date or time") from None
    fraction = _FRACTION.search(text)
    if fraction and len(fraction[1]) > 6:  # Python cut the rest: a vote a hair before was in
        raise ValueError(f"{text!r} is more precise than a vote's time: at most 6 digits "
                         "after the second (microseconds)")  # fmt: skip
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:  # e.g. 0001-01-01T00:00+01:00 is in year 0 in UTC, which no timestamp can name
        moment = moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text!r} is outside the years 1 to 9999 in UTC") from None
    return _to_us(moment)


def _to_us(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def format_us(ts_us: int | None) -> str | None:
    """Microseconds since the epoch as ISO-8601 UTC with microseconds (None stays None)."""
    if ts_us is None:
        return None
    # isoformat, not strftime("%Y"): the C library prints year 1 as "1", not "0001".
    moment = _EPOCH + timedelta(microseconds=int(ts_us))
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
