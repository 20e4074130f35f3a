"""The array machinery of the anomalous-voter test: every path gives the same integers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.integrity.counting import (
    before_in_group,
    dense_codes,
    p_value_parts_in_order,
    running_totals,
    stable_order,
)
from arena_core.integrity.pvalue import N_OUTCOMES, p_value_parts


def plain_parts(pair, outcome, voter, counted, tie, tested):
    """The p-value parts with a loop over Python lists: the definition, one vote at a time."""
    totals, owned, nums, dens = {}, {}, [], []
    for i in range(len(pair)):
        p, o, v = int(pair[i]), int(outcome[i]), int(voter[i])
        if tested[i]:
            others = [
                t - w
                for t, w in zip(totals.get(p, [0] * 4), owned.get((v, p), [0] * 4), strict=True)
            ]
            num, den = p_value_parts([others], [o], [tie[i]])
            nums.append(int(num[0]))
            dens.append(int(den[0]))
        if counted[i]:
            totals.setdefault(p, [0] * 4)[o] += 1
            if v >= 0:
                owned.setdefault((v, p), [0] * 4)[o] += 1
    return nums, dens


logs = st.integers(1, 300).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 7), min_size=n, max_size=n),  # pair
        st.lists(st.integers(0, N_OUTCOMES - 1), min_size=n, max_size=n),  # outcome
        st.lists(st.integers(-1, 5), min_size=n, max_size=n),  # voter (-1: none)
        st.lists(st.booleans(), min_size=n, max_size=n),  # counted
        st.integers(0, 2**31),  # seed of the tie-breaks and of which voters are tested
    )
)


@settings(max_examples=60, deadline=None)
@given(log=logs)
def test_the_compiled_loop_the_sorted_counts_and_the_definition_agree(log):
    pair, outcome, voter, counted, seed = (np.array(x) if isinstance(x, list) else x for x in log)
    rng = np.random.default_rng(seed)
    tie = 2 * rng.integers(0, 2**25, len(pair)) + 1
    chosen = rng.random(7) < 0.7  # a voter's rows are tested all together, or not at all
    tested = (voter >= 0) & chosen[np.maximum(voter, 0)]
    expected = plain_parts(pair, outcome, voter, counted, tie, tested)
    for compiled in (False, True):
        num, den = p_value_parts_in_order(
            pair, outcome, voter, counted, tie, tested, compiled=compiled
        )
        assert (num.tolist(), den.tolist()) == expected


@given(st.lists(st.integers(0, 2**40), max_size=200))
def test_stable_order_is_numpys_stable_sort(keys):
    keys = np.array(keys, dtype=np.int64)
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))
    assert np.array_equal(dense_codes(keys), np.unique(keys, return_inverse=True)[1])


def test_before_in_group_sums_earlier_rows_of_the_same_key():
    keys = np.array([3, 1, 3, 3, 1, 7])
    values = np.array([[1, 10], [2, 20], [4, 40], [8, 80], [16, 160], [32, 320]])
    expected = [[0, 0], [0, 0], [1, 10], [5, 50], [2, 20], [0, 0]]  # by hand
    assert before_in_group(keys, values).tolist() == expected


@pytest.mark.parametrize("compiled", [False, True])
def test_nothing_tested_is_nothing_to_do(compiled):
    z = np.zeros(3, dtype=np.int64)
    num, den = p_value_parts_in_order(z, z, z - 1, z == 0, z + 1, z != 0, compiled=compiled)
    assert len(num) == len(den) == 0


@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2**40)), max_size=200))
def test_running_totals_per_voter(rows):
    who = np.array([v for v, _ in rows], dtype=np.int64)
    term = np.array([t for _, t in rows], dtype=np.int64)
    seen, summed, count, total = {}, {}, [], []
    for v, t in rows:
        seen[v] = seen.get(v, 0) + 1
        summed[v] = summed.get(v, 0) + t
        count.append(seen[v])
        total.append(summed[v])
    for compiled in (False, True):
        got = running_totals(who, term, compiled=compiled)
        assert (got[0].tolist(), got[1].tolist()) == (count, total)
