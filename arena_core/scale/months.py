"""Calendar months of DuckDB's Elo stream, and the string prefilter on ``ts`` of each.

The stream reads a board's votes one calendar month (UTC) at a time, in bounded
memory. Each month's query first compares ``ts`` as a string, which Parquet
statistics can prune row groups with, then the parsed time exactly.
"""

from __future__ import annotations

import numpy as np

from arena_core.votes.schema import TS_MAX_US, TS_MIN_US

#: Slack of the string prefilter on ``ts`` around a window: a local time written with an
#: offset is within a day of its UTC time, and the fraction moves order within a second.
PREFILTER_SLACK_US = 2 * 86_400 * 1_000_000
#: The start of the last second of year 9999: a prefix clamped there names that second.
_LAST_SECOND_US = TS_MAX_US - 999_999
#: Below and above every accepted timestamp as a string (the lowest local year is 0000, as
#: in 0000-12-31T23:00:00-01:00; no accepted one has hour 24).
_BEFORE_ALL, _AFTER_ALL = "0000", "9999-12-31T24"


def month_windows(first_us: int, last_us: int) -> list[tuple[int, int]]:
    """Calendar months (UTC) covering ``first_us .. last_us``, as ``[lo, hi)`` microseconds."""
    first = np.datetime64(int(first_us), "us").astype("datetime64[M]")
    last = np.datetime64(int(last_us), "us").astype("datetime64[M]")
    edges = np.arange(first, last + 2).astype("datetime64[us]").astype(np.int64)
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def prefilter(lo: int, hi: int) -> tuple[str, str]:
    """Strings ``ts`` of every accepted timestamp dated in ``[lo, hi)`` lies between
    (``>=`` the first, ``<`` the second). A bound clamped to the first or last second of the
    years 1-9999 left out the votes beyond it (``0000-12-31T23:00:00-01:00`` and
    ``9999-12-31T23:59:59.5Z`` are in range): there it is a string below or above them all."""
    lower, upper = lo - PREFILTER_SLACK_US, hi + PREFILTER_SLACK_US
    return (_prefix(lower) if lower > TS_MIN_US else _BEFORE_ALL,
            _prefix(upper) if upper < _LAST_SECOND_US else _AFTER_ALL)  # fmt: skip


def _prefix(ts_us: int) -> str:
    """A time as the leading ``YYYY-MM-DDTHH:MM:SS`` of an accepted timestamp (clamped to years
    1-9999)."""
    moment = np.datetime64(min(max(int(ts_us), TS_MIN_US), _LAST_SECOND_US), "us")
    return str(moment.astype("datetime64[s]"))
