"""Timestamps of a column laid out canonically: Arrow's cast alone gives what the pattern
and the cast together give, for any bytes in the digits' places (pyarrow's parser is
strict about digits and field ranges; these tests pin it, so an upgrade that loosened it
would fail here)."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.votes import clean
from arena_core.votes.columns import canonical_layout

#: Mostly digits, sometimes anything else a byte of the layout could hold.
SLOT = st.one_of(st.sampled_from("0123456789"), st.sampled_from("0123456789"),
                 st.sampled_from("0123456789"), st.sampled_from("a +-:.TZ/\x7f"))  # fmt: skip
EDGES = ["2026-11-29T24:00:00.000Z", "2026-11-29T23:60:00.000Z", "2026-11-29T23:59:60.000Z",
         "2026-00-10T00:00:00.000Z", "2026-13-10T00:00:00.000Z", "2026-01-00T00:00:00.000Z",
         "2026-01-32T00:00:00.000Z", "2026-02-29T00:00:00.000Z", "2024-02-29T23:59:59.999Z",
         "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-1a-10T00:00:00.000Z",
         "+026-01-10T00:00:00.000Z", "2026-01-10T00:00:00.00aZ", "2026-01-10T 0:00:00.000Z",
         "1970-01-01T00:00:00.000Z"]  # fmt: skip


def old_path(ts, candidates, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(clean, "canonical_layout", lambda column: False)
        return clean._parse_timestamps(ts, candidates.copy())


def both(values, picked, monkeypatch):
    ts = pa.chunked_array([pa.array(values[:2], pa.string()), pa.array(values[2:], pa.string())])
    assert canonical_layout(ts)
    candidates = np.array(picked[: len(values)] + [True] * (len(values) - len(picked)))
    fast = clean._parse_timestamps(ts, candidates.copy())
    slow = old_path(ts, candidates, monkeypatch)
    assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist()


@settings(max_examples=300)
@given(
    slots=st.lists(st.lists(SLOT, min_size=17, max_size=17), min_size=1, max_size=8),
    picked=st.lists(st.booleans(), max_size=8),
)
def test_any_bytes_in_the_digits_places_give_the_same_verdict_and_instant(slots, picked):
    values = []
    for chars in slots:
        it = iter(chars)
        values.append("".join(next(it) if c == "d" else c for c in "dddd-dd-ddTdd:dd:dd.dddZ"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        both(values, picked, monkeypatch)


@pytest.mark.parametrize("edge", EDGES)
def test_each_field_at_its_edge_gives_the_same_verdict(edge, monkeypatch):
    both(["2026-11-29T17:34:36.123Z", edge, "2026-11-29T17:34:36.124Z"], [True] * 3, monkeypatch)
    both([edge], [True], monkeypatch)
