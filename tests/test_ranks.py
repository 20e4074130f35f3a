"""Rank bands, on hand-worked intervals and as a property: overlapping intervals share a rank."""

import numpy as np
from hypothesis import example, given, settings
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
@example(models=[(1.0, 1.0, 0), (-9.371624408298146e-26, 0.0, 0)])
def test_overlapping_intervals_always_share_a_rank(models):
    mid = np.array([m[0] for m in models])
    half = np.array([m[1] for m in models])
    group = np.array([m[2] for m in models])
    low, high = mid - half, mid + half
    best, worst = rank_bands(mid, low, high, group)
    assert np.all(best >= 1) and np.all(best <= worst)
    for i in range(len(mid)):
        for j in range(len(mid)):
            # Overlap judged on the bounds passed, not on |mid_i - mid_j| <= half_i + half_j:
            # the two round differently (hypothesis found [0, 2] against [-9e-26, -9e-26]).
            if group[i] == group[j] and low[i] <= high[j] and low[j] <= high[i]:
                assert max(best[i], best[j]) <= min(worst[i], worst[j])
            if group[i] == group[j] and low[i] > high[j]:
                # Clearly above: every model clearly above i is clearly above j, and so is i.
                assert best[i] < best[j] and worst[i] < worst[j]


def test_an_unrated_model_takes_no_rank_and_pushes_no_one_down():
    # Ordinal ranks; model 1 has no finite rating, model 3 is in no component.
    best, worst = rank_bands([1100.0, np.nan, 1000.0, 1200.0], None, None, [0, 0, 0, -1])
    assert best.tolist() == [1, 0, 2, 0] and worst.tolist() == [1, 0, 2, 0]
    # Intervals given on one side only are no intervals: ordinal ranks again.
    best, _ = rank_bands([1100.0, 1000.0], [1050.0, 950.0], None, [0, 0])
    assert best.tolist() == [1, 2]


def test_a_model_without_a_lower_bound_overlaps_everyone_below_its_upper_bound():
    # Model 0 is unbounded below (low NaN) with its upper bound at 1100: it cannot be
    # ranked above model 1 (1050..1150), nor model 1 above it.
    nan = np.nan
    best, worst = rank_bands([1000.0, 1100.0], [nan, 1050.0], [1100.0, 1150.0], [0, 0])
    assert best.tolist() == [1, 1] and worst.tolist() == [2, 2]


def test_a_model_unbounded_above_or_below_is_compared_by_its_bound_but_not_ranked():
    inf = np.inf
    # u: never beaten, bound 1300 above everyone's interval; d: never won, bound 900 below.
    best, worst = rank_bands([1100.0, 1000.0, inf, -inf], [1050.0, 950.0, 1300.0, NAN],
                             [1150.0, 1060.0, NAN, 900.0], [0, 0, 0, 0])  # fmt: skip
    assert best.tolist() == [2, 2, 0, 0] and worst.tolist() == [3, 3, 0, 0]
    # Without intervals: by position, above and below.
    best, worst = rank_bands([1100.0, 1000.0, inf, -inf], None, None, [0, 0, 0, 0])
    assert best.tolist() == [2, 3, 0, 0] and worst.tolist() == [2, 3, 0, 0]
