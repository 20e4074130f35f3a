"""Time windows from ``--since``/``--until``: any ISO date or time is read or refused in one line."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena_core.window import Window, format_us

OFFSETS = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


@given(moment=st.datetimes(timezones=OFFSETS | st.none()))
def test_any_iso_time_is_read_exactly_or_refused_with_a_reason(moment):
    """Every datetime Python can write, at any offset (or none: UTC), either names a
    microsecond that prints back as itself in UTC, or is refused because in UTC it falls
    outside the years 1 to 9999 (it once raised OverflowError when printed)."""
    text = moment.isoformat()
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    try:
        aware.astimezone(UTC)
    except OverflowError:
        with pytest.raises(ValueError, match="outside the years 1 to 9999"):
            Window.parse(text)
        return
    window = Window.parse(text)
    printed = window.to_json()["since"]
    assert len(printed) == 27 and printed.endswith("Z")  # zero-padded: 0001-01-01T...
    assert Window.parse(printed) == window
    assert datetime.fromisoformat(printed) == aware


def test_the_first_and_last_microseconds_print_with_four_digit_years():
    assert format_us(Window.parse("0001-01-01").since_us) == "0001-01-01T00:00:00.000000Z"
    last = Window.parse(until="9999-12-31T23:59:59.999999Z").until_us
    assert format_us(last) == "9999-12-31T23:59:59.999999Z"
