"""Which votes count: the gaps a hand-run mutation spot-check of votes/clean.py,
votes/columns.py and selection.py found, each pinned on rows written here.

The spot-check made 75 small mutants of the three modules (flipped comparisons,
dropped conditions, keep-last instead of keep-first, uncounted skips, windows applied
early, ...) and ran the tests that exercise them: 58 were killed, 17 survived. Of
those, 8 change nothing (e.g. ``~good_ts & (reason == 0)`` where ``mark`` already
keeps the first rule; a ``<`` at TS_MAX_US, which no millisecond timestamp reaches;
an unstable sort whose candidates ``np.unique`` sorts again; zero counts that every
consumer drops with ``Counter +``; one mutant that was a no-op as written). The other 9
are killed by the tests below (one, null slots holding bytes, is out of clean's reach:
null ids are dropped before dedup; it pins first_occurrences' own contract).
"""

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.leaderboard import BoardParams
from arena_core.selection import Entrant, counted_mask, select_votes
from arena_core.votes import reasons
from arena_core.votes.clean import clean
from arena_core.votes.columns import Encoded, canonical_layout, first_occurrences, some_repeat
from arena_core.votes.schema import ARROW_SCHEMA, TS_MAX_US, TS_MIN_US, parse_ts
from arena_core.window import Window

NOW = parse_ts("2026-10-01T12:00:00Z")
DAY = 20_727 * 86_400 * 10**6  # 2026-10-01, days after the epoch (hand-counted)


def vote_row(k, **over):
    row = {"schema_version": 2, "vote_id": f"00000000-0000-4000-8000-{k:012d}", "battle_id": None,
           "ts": f"2026-10-01T00:00:{k:02d}.250Z", "arena": "speech", "model_a": "m/a",
           "model_b": "m/b", "model_a_version": None, "model_b_version": None, "vote": "a",
           "prompt_id": None, "prompt": "Hi.", "category": None, "voter": f"h{k}",
           "voter_kind": "human", "judge": None, "flags": []}  # fmt: skip
    return row | over


def votes_of(rows, skipped=None, now_us=NOW):
    table = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
    return clean(table, Counter() if skipped is None else skipped, now_us=now_us)


# -- votes/clean.py ---------------------------------------------------------------------


def test_the_earliest_future_row_says_when_a_replay_counts_them():
    # future_from_us is the earliest skipped future ts, so the replay comes when the
    # first of them is due (not when the last is: the others would wait for it).
    rows = [vote_row(1), vote_row(2, ts="2026-10-01T13:00:00.000Z"),
            vote_row(3, ts="2026-10-01T12:30:00.000Z"), vote_row(4, ts="2026-10-01T14:00:00.000Z")]  # fmt: skip
    votes = votes_of(rows)
    assert len(votes) == 1 and votes.skipped == Counter({reasons.FUTURE_TS: 3})
    assert votes.future_from_us == parse_ts("2026-10-01T12:30:00Z")
    assert votes_of(rows[:1]).future_from_us is None


@pytest.mark.parametrize(
    ("ts", "us"),
    [("0001-01-01T00:00:00.000Z", TS_MIN_US), ("9999-12-31T23:59:59.999Z", TS_MAX_US - 999)],
)
def test_the_first_and_last_canonical_instants_are_kept(ts, us):
    # A column of canonical timestamps takes Arrow's path alone: its range check must
    # keep the very first instant (0001-01-01, TS_MIN_US itself) as the pattern's path does.
    rows = [vote_row(1, ts=ts), vote_row(2)]
    assert canonical_layout(pa.array([r["ts"] for r in rows]))
    votes = votes_of(rows, now_us=TS_MAX_US)
    assert not votes.skipped and us in votes.ts_us.tolist()


@pytest.mark.parametrize("position", [4, 7, 10, 13, 16, 19, 23])
@pytest.mark.parametrize("byte", [" ", "/", "_"])
def test_a_timestamp_without_the_canonical_separators_is_bad_ts(position, byte):
    # Arrow's parser takes "2026-10-01 00:00:01.250Z" (a space for the T): only the
    # separators' check keeps such columns off its path, where the pattern refuses them.
    ts = vote_row(1)["ts"]
    odd = ts[:position] + byte + ts[position + 1 :]
    assert not canonical_layout(pa.array([odd, odd]))
    votes = votes_of([vote_row(1, ts=odd), vote_row(2, ts=odd[:17] + "02" + odd[19:])])
    assert len(votes) == 0 and votes.skipped == Counter({reasons.BAD_TS: 2})


# -- votes/columns.py -------------------------------------------------------------------


POOL = [int(x) for x in np.random.default_rng(7).integers(0, 2**64 - 1, 6, dtype=np.uint64)]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(prints=st.lists(st.sampled_from(POOL), max_size=30), limit=st.integers(1, 7),
       bits=st.one_of(st.none(), st.integers(1, 6)))  # fmt: skip
def test_some_repeat_answers_as_counting_does(prints, limit, bits):
    # Bucketing is a shortcut: a value repeated exactly `limit` times alone in its bucket
    # must still be found.
    expected = max(Counter(prints).values(), default=0) >= limit
    assert some_repeat(np.array(prints, dtype=np.uint64), limit, bits) == expected


def test_a_bucket_holding_exactly_limit_values_is_searched():
    prints = np.array([5 << 60] * 3 + [1], dtype=np.uint64)  # bucket 5 (of 16) holds three
    assert some_repeat(prints, 3, bits=4)
    assert not some_repeat(prints, 4, bits=4)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    data=st.data(),
    values=st.lists(st.sampled_from(["en", "de", "fr", "judge"]), min_size=1, unique=True),
)
def test_an_encoded_column_maps_each_row_as_a_lookup_does(data, values):
    # The one-answer shortcut (a log of one arena) must still give nulls their `missing`.
    codes = np.array(data.draw(st.lists(st.integers(-1, len(values) - 1), max_size=12)))
    table = data.draw(st.dictionaries(st.sampled_from(values), st.integers(0, 3)))
    e = Encoded(values, codes.astype(np.int32))
    assert e.map(table).tolist() == [table.get(values[c], -1) if c >= 0 else -1 for c in codes]
    allowed = list(table)
    assert e.isin(allowed).tolist() == [c >= 0 and values[c] in allowed for c in codes]


def test_a_category_board_leaves_out_votes_without_a_category():
    rows = [vote_row(1, category="en"), vote_row(2), vote_row(3, category="en")]
    votes = votes_of(rows)
    assert Encoded(["en"], np.array([0, -1, 0])).isin(["en"]).tolist() == [True, False, True]
    assert len(select_votes(votes, "speech", category="en").a) == 2


def test_nulls_are_one_value_whatever_bytes_their_slots_hold():
    # A null's slot may hold bytes as wide as the values (some Arrow kernels leave them):
    # it is still null, not a string, so the column is not a byte matrix.
    data = pa.py_buffer(b"abcdef")
    offsets = pa.py_buffer(np.array([0, 2, 4, 6], dtype=np.int32).tobytes())
    validity = pa.py_buffer(bytes([0b001]))
    column = pa.Array.from_buffers(pa.string(), 3, [validity, offsets, data], null_count=2)
    assert column.to_pylist() == ["ab", None, None]
    assert first_occurrences(column).tolist() == [True, True, False]
    assert first_occurrences(pa.array(["ab", None, None])).tolist() == [True, True, False]


# -- selection.py -----------------------------------------------------------------------


def mixed_rows():
    return [vote_row(1), vote_row(2, voter_kind="judge", judge="j1"), vote_row(3, voter_kind=None),
            vote_row(4, flags=["rate_limited"]), vote_row(5, model_b="m/z"),
            vote_row(6, arena="other"), vote_row(7, vote="b")]  # fmt: skip


def test_no_params_is_the_default_boards_params():
    votes = votes_of(mixed_rows())
    default = select_votes(votes, "speech")
    explicit = select_votes(votes, "speech", params=BoardParams())
    for name in ("a", "b", "outcome", "ts_us"):
        assert getattr(default, name).tolist() == getattr(explicit, name).tolist(), name
    assert default.skipped == explicit.skipped == Counter({reasons.FLAGGED: 1})
    # Humans' votes (a row without a kind is a human's), flagged ones left out and counted.
    assert default.ts_us.tolist() == [DAY + k * 10**6 + 250_000 for k in (1, 3, 5, 7)]
    keep, skipped = counted_mask(votes, "speech")
    assert keep.tolist() == counted_mask(votes, "speech", params=BoardParams())[0].tolist()
    assert np.flatnonzero(keep).tolist() == [0, 2, 4, 6] and skipped == default.skipped


def test_unknown_models_are_counted_over_the_whole_log_not_the_window():
    # The window is applied last: votes outside it are out of the board, yet a vote naming
    # an unlisted model is counted as unknown_model wherever it falls.
    votes = votes_of(mixed_rows())
    entrants = [Entrant("m/a", "A"), Entrant("m/b", "B")]
    window = Window(since_us=DAY + 6 * 10**6)
    sel = select_votes(votes, "speech", entrants=entrants, window=window)
    assert sel.ts_us.tolist() == [DAY + 7_250_000]
    assert sel.skipped == Counter({reasons.FLAGGED: 1, reasons.UNKNOWN_MODEL: 1})
    assert select_votes(votes, "speech", entrants=entrants).skipped == sel.skipped
