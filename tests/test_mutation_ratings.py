"""Small pieces of the rating math that mutation testing found untested, worked by hand.

The scale (points to log-odds and back), the pair counts' own arithmetic (totals,
copies, tallies), each checked against numbers written out here.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena_core.ratings import ANCHOR, SCALE, expected_score
from arena_core.ratings.counts import (
    A_WINS,
    B_WINS,
    BOTH_BAD,
    TIE,
    PairCounts,
    PairData,
    count_pairs,
)
from arena_core.ratings.scale import NATURAL, to_rating, to_theta


def test_a_gap_of_one_scale_is_odds_of_ten_to_one():
    assert expected_score(1400.0, 1000.0) == pytest.approx(10 / 11, rel=1e-12)
    assert expected_score(1000.0, 1400.0) == pytest.approx(1 / 11, rel=1e-12)
    assert expected_score(1234.0, 1234.0) == 0.5
    # 200 points: odds sqrt(10) to 1.
    assert expected_score(1200.0, 1000.0) == pytest.approx(math.sqrt(10) / (1 + math.sqrt(10)))


def test_points_and_log_odds_convert_both_ways_around_the_anchor():
    assert (ANCHOR, SCALE) == (1000.0, 400.0)
    assert math.isclose(NATURAL, math.log(10) / 400)
    assert to_theta(1000.0) == 0.0
    assert to_theta(1400.0) == pytest.approx(math.log(10))
    assert to_rating(math.log(10)) == pytest.approx(1400.0)
    assert to_rating(-math.log(10) / 2) == pytest.approx(800.0)
    np.testing.assert_allclose(to_rating(to_theta(np.array([612.5, 1000, 1765]))),
                               [612.5, 1000, 1765])  # fmt: skip


def test_the_total_counts_each_vote_once_ties_included():
    counts = PairCounts.zeros(3)
    for a, b, outcome in [(0, 1, A_WINS), (1, 0, A_WINS), (2, 1, B_WINS), (0, 2, TIE),
                          (1, 2, BOTH_BAD), (1, 2, BOTH_BAD)]:  # fmt: skip
        counts.add(a, b, outcome)
    total = counts.total()
    assert total == 6 and isinstance(total, int)
    weighted = count_pairs(2, np.array([0, 0, 1]), np.array([1, 1, 0]),
                           np.array([A_WINS, TIE, BOTH_BAD]), weights=np.array([0.5, 0.25, 2.0]))  # fmt: skip
    assert weighted.total() == pytest.approx(2.75) and isinstance(weighted.total(), float)


def test_a_copy_does_not_share_its_tallies():
    counts = PairCounts.zeros(2)
    counts.add(0, 1, A_WINS)
    counts.add(0, 1, TIE)
    counts.add(0, 1, BOTH_BAD)
    copy = counts.copy()
    copy.add(0, 1, A_WINS)
    copy.add(1, 0, TIE)
    copy.add(1, 0, BOTH_BAD)
    assert (counts.wins[0, 1], counts.ties[0, 1], counts.both_bad[0, 1]) == (1, 1, 1)
    assert (copy.wins[0, 1], copy.ties[0, 1], copy.both_bad[0, 1]) == (2, 2, 2)


def test_tallies_per_model():
    # 0 beat 1 twice, 1 beat 0 once, 0 and 2 tied, 1 and 2 were both bad.
    counts = PairCounts.zeros(3)
    for a, b, outcome in [(0, 1, A_WINS), (1, 0, B_WINS), (1, 0, A_WINS), (2, 0, TIE),
                          (1, 2, BOTH_BAD)]:  # fmt: skip
        counts.add(a, b, outcome)
    t = counts.tallies()
    assert t["battles"].tolist() == [4, 4, 2]
    assert t["wins"].tolist() == [2, 1, 0]
    assert t["losses"].tolist() == [1, 2, 0]
    assert t["ties"].tolist() == [1, 0, 1]
    assert t["both_bad"].tolist() == [0, 1, 1]


def test_pair_data_lists_each_met_pair_once_with_draws_pooled():
    counts = PairCounts.zeros(4)
    for a, b, outcome in [(2, 0, A_WINS), (0, 2, A_WINS), (0, 2, A_WINS), (2, 0, TIE),
                          (3, 2, BOTH_BAD)]:  # fmt: skip
        counts.add(a, b, outcome)
    pairs = PairData.from_counts(counts)
    assert pairs.n_pairs == 2
    assert list(zip(pairs.i.tolist(), pairs.j.tolist(), strict=True)) == [(0, 2), (2, 3)]
    assert pairs.win_i.tolist() == [2, 0] and pairs.win_j.tolist() == [1, 0]
    assert pairs.draws.tolist() == [1, 1]


@given(
    votes=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), max_size=40)
)
def test_count_pairs_tallies_each_vote_in_its_cell(votes):
    """Against a plain loop over the votes (codes: a wins, b wins, tie, both bad)."""
    votes = [(a, b, o) for a, b, o in votes if a != b]
    wins, ties, both = (np.zeros((4, 4), dtype=np.int64) for _ in range(3))
    for a, b, o in votes:
        if o == 0:
            wins[a, b] += 1
        elif o == 1:
            wins[b, a] += 1
        else:
            drawn = ties if o == 2 else both
            drawn[a, b] += 1
            drawn[b, a] += 1
    arrays = [np.array([v[k] for v in votes], dtype=np.int64) for k in range(3)]
    counts = count_pairs(4, *arrays)
    assert counts.wins.dtype.kind == "i"
    for got, want in ((counts.wins, wins), (counts.ties, ties), (counts.both_bad, both)):
        assert got.tolist() == want.tolist()
