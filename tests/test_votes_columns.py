"""Column helpers of the replay's fast paths, against plain counting in Python."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from arena_core.votes import columns
from arena_core.votes.columns import may_repeat

#: Short values of one width (fingerprinted) or of several (always answered True).
VALUES = st.lists(st.sampled_from(["aaaa", "abcd", "zzzz", "0000", "é€"]), max_size=40)


@given(values=VALUES, keep=st.lists(st.booleans(), max_size=40), limit=st.integers(1, 6))
def test_may_repeat_is_false_only_when_no_value_is_that_frequent(values, keep, limit):
    picked = np.array([k < len(keep) and keep[k] for k in range(len(values))], dtype=bool)
    column = pa.chunked_array(
        [pa.array(values[:3], pa.string()), pa.array(values[3:], pa.string())]
    )
    chosen = [v for v, p in zip(values, picked, strict=True) if p]
    most = max(Counter(chosen).values(), default=0)
    answer = may_repeat(column, limit, picked)
    if most >= limit:
        assert answer
    if len({len(v.encode()) for v in chosen}) <= 1:  # one width: the fingerprints answer exactly
        assert answer == (most >= limit)


@given(st.lists(st.binary(min_size=13, max_size=13), min_size=1, max_size=30), st.integers(1, 13))
def test_fingerprints_of_equal_rows_are_equal_whatever_the_width(rows, width):
    """Rows shorter than a word, whole words, and a last word overlapping the one before."""
    m = np.frombuffer(b"".join(r[:width] for r in rows), dtype=np.uint8).reshape(len(rows), width)
    prints = columns._fingerprints(m)
    for i in range(len(rows)):
        for j in range(len(rows)):
            if rows[i][:width] == rows[j][:width]:
                assert prints[i] == prints[j]
    assert len(set(prints.tolist())) == len({r[:width] for r in rows})  # no collision here


def test_may_repeat_answers_true_when_it_cannot_fingerprint():
    assert may_repeat(pa.array(["ab", None, "ab"]), 5)  # a null: not fingerprinted
    assert not may_repeat(pa.array(["ab", None, "cd"]), 2, np.array([True, False, True]))
    assert may_repeat(pa.array(["a", "bb"]), 5)  # two widths
    assert not may_repeat(pa.array([], pa.string()), 1)
    assert not may_repeat(pa.array(["ab", "ab"]), 3)


@given(
    values=st.lists(st.sampled_from("abcd"), min_size=0, max_size=4, unique=True),
    codes=st.lists(st.integers(-1, 3), max_size=30),
    table=st.dictionaries(st.sampled_from("abcdz"), st.integers(-3, 3)),
    missing=st.integers(-3, 3),
)
def test_map_answers_each_row_from_its_value(values, codes, table, missing):
    codes = np.array([c for c in codes if c < len(values)], dtype=np.int32)
    mapped = columns.Encoded(values, codes).map(table, missing=missing)
    expected = [missing if c < 0 else table.get(values[c], missing) for c in codes.tolist()]
    assert mapped.dtype == np.int64 and mapped.tolist() == expected
    allowed = [v for v in values if table.get(v, 0) > 0]
    assert columns.Encoded(values, codes).isin(allowed).tolist() == [
        c >= 0 and values[c] in allowed for c in codes.tolist()
    ]


CHUNK = st.lists(st.one_of(st.none(), st.sampled_from(["x", "y", "z", "é"])), max_size=12)


@given(a=st.lists(CHUNK, max_size=3), b=st.lists(CHUNK, max_size=3), encoded=st.booleans())
def test_encode_gives_each_row_its_own_value_over_one_shared_list(a, b, encoded):
    def column(chunks):
        arrays = [pa.array(c, pa.string()) for c in chunks]
        if encoded:
            arrays = [pc.dictionary_encode(x) for x in arrays]
        kind = pa.dictionary(pa.int32(), pa.string()) if encoded else pa.string()
        return pa.chunked_array(arrays, type=kind)

    first, second = columns.encode(column(a), column(b))
    assert first.values is second.values or first.values == second.values
    for got, chunks in ((first, a), (second, b)):
        rows = [v for c in chunks for v in c]
        assert [None if k < 0 else got.values[k] for k in got.codes.tolist()] == rows
    assert len(set(first.values)) == len(first.values)


@given(
    values=st.lists(st.integers(0, 2**64 - 1), max_size=60),
    repeats=st.lists(st.integers(0, 59), max_size=40),
    limit=st.integers(0, 6),
    bits=st.integers(1, 6),
)
def test_some_repeat_answers_as_counting_whatever_the_buckets(values, repeats, limit, bits):
    # Few buckets (bits) and values sharing top bits: crowded and uncrowded buckets alike.
    values = values + [values[r % len(values)] for r in repeats] if values else []
    prints = np.array(values, dtype=np.uint64)
    most = max(Counter(values).values(), default=0)
    expected = bool(values) and most >= max(limit, 1)
    assert columns.some_repeat(prints, limit, bits) == expected
    assert columns.some_repeat(prints, limit) == expected


def test_some_repeat_buckets_large_inputs_exactly():
    rng = np.random.default_rng(0)
    prints = rng.integers(0, 2**63, size=columns._SORT_FROM * 2, dtype=np.int64).astype(np.uint64)
    assert not columns.some_repeat(prints, 2)
    assert columns.some_repeat(np.concatenate([prints, prints[7:8]]), 2)
    assert not columns.some_repeat(np.concatenate([prints, prints[:3], prints[:3]]), 4)
    assert columns.some_repeat(np.concatenate([prints, *[prints[5:6]] * 4]), 5)
