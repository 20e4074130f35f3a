"""Rank bands, on hand-worked intervals and as a property: overlapping intervals share a rank."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.ratings.ranks import rank_bands

NAN = float("nan")


def test_bands_by_hand():
    # Group 0: D [30, 40] is clear of everyone; A [10, 20] and B [15, 25] overlap each other and
    # sit clearly above C [0, 5]. Group 1: E alone. F is not ranked (no finite rating).
    rating = [15, 20, 2, 35, 1000, NAN]
    low, high = [10, 15, 0, 30, 990, NAN], [20, 25, 5, 40, 1010, NAN]
    best, worst = rank_bands(rating, low, high, [0, 0, 0, 0, 1, -1])
    assert best.tolist() == [2, 2, 4, 1, 1, 0]
    assert worst.tolist() == [3, 3, 4, 1, 1, 0]


def test_a_missing_bound_is_unbounded_on_that_side():
    # Model 1's interval has no upper end: model 0 is not clearly above it.
    best, worst = rank_bands([10, 5], [8, 4], [12, NAN], [0, 0])
    assert best.tolist() == [1, 1] and worst.tolist() == [2, 2]
    best, worst = rank_bands([10, 5], [8, 4], [12, 6], [0, 0])
    assert best.tolist() == [1, 2] and worst.tolist() == [1, 2]


def test_without_intervals_the_band_is_the_position():
    best, worst = rank_bands([5, 9, 9, 1], None, None, [0, 0, 0, 1])
    assert best.tolist() == [3, 1, 2, 1] and worst.tolist() == best.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(-100, 100), st.floats(0, 50), st.integers(0, 1)),
                min_size=1, max_size=12))  # fmt: skip
def test_overlapping_intervals_always_share_a_rank(models):
    mid = np.array([m[0] for m in models])
    half = np.array([m[1] for m in models])
    group = np.array([m[2] for m in models])
    best, worst = rank_bands(mid, mid - half, mid + half, group)
    assert np.all(best >= 1) and np.all(best <= worst)
    for i in range(len(mid)):
        for j in range(len(mid)):
            if group[i] == group[j] and abs(mid[i] - mid[j]) <= half[i] + half[j]:
                assert max(best[i], best[j]) <= min(worst[i], worst[j])
            if group[i] == group[j] and mid[i] - half[i] > mid[j] + half[j]:
                # Clearly above: every model clearly above i is clearly above j, and so is i.
                assert best[i] < best[j] and worst[i] < worst[j]
