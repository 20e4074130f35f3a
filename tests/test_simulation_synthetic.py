"""The synthetic arenas every simulation relies on: outcomes follow the model the fit assumes."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from arena_core.ratings.counts import A_WINS, B_WINS, BOTH_BAD, TIE
from arena_core.simulation.synthetic import (
    Truth,
    evenly_spread,
    first_sustained,
    normal_spread,
    quota_pairs,
    spearman,
    uniform_pairs,
)


def test_expected_score_is_the_true_win_probability():
    # The property that makes coverage measurable: a's mean score (draws counting half)
    # equals 1 / (1 + 10^((Rb - Ra) / 400)) computed here by hand, not by the module.
    truth = Truth(np.array([1000.0, 1100.0, 1350.0]), draw_rate=0.2, both_bad_share=0.4)
    rng = np.random.default_rng(7)
    n = 400_000
    for a, b in [(0, 1), (2, 0), (1, 2)]:
        outcome = truth.sample(np.full(n, a), np.full(n, b), rng)
        score = np.select([outcome == A_WINS, outcome == B_WINS], [1.0, 0.0], 0.5)
        p = 1.0 / (1.0 + 10.0 ** ((truth.ratings[b] - truth.ratings[a]) / 400.0))
        assert abs(score.mean() - p) < 4 * score.std() / np.sqrt(n)
        draws = np.isin(outcome, [TIE, BOTH_BAD]).mean()
        assert draws == pytest.approx(0.2 * 4 * p * (1 - p), abs=0.005)
        assert (outcome == BOTH_BAD).sum() / max(draws * n, 1) == pytest.approx(0.4, abs=0.01)


def test_equal_models_draw_at_the_draw_rate():
    truth = Truth(np.array([1000.0, 1000.0]), draw_rate=0.1)
    outcome = truth.sample(np.zeros(200_000, int), np.ones(200_000, int), np.random.default_rng(1))
    assert np.isin(outcome, [TIE, BOTH_BAD]).mean() == pytest.approx(0.1, abs=0.004)


def test_same_seed_same_votes():
    truth = Truth(evenly_spread(6, 400))
    a, b = uniform_pairs(6, 1000, np.random.default_rng(3))
    first = truth.sample(a, b, np.random.default_rng(5))
    assert np.array_equal(first, truth.sample(a, b, np.random.default_rng(5)))


def test_uniform_pairs_are_distinct_and_cover_every_pair():
    a, b = uniform_pairs(5, 20_000, np.random.default_rng(0), candidates=[0, 2, 3, 4, 1])
    assert not np.any(a == b)
    pairs = np.unique(np.sort(np.stack([a, b]), axis=0), axis=1)
    assert pairs.shape[1] == 10
    counts = np.bincount(np.concatenate([a, b]), minlength=5)
    assert counts.min() > 0.95 * counts.max()
    with pytest.raises(ValueError, match="two models"):
        uniform_pairs(5, 3, np.random.default_rng(0), candidates=[1])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=6, max_size=6), st.integers(1, 120))
@example(weights=[1, 1, 1, 1, 7, 7], votes=31)  # the greedy "furthest behind" rule misses here
@example(weights=[6, 8, 8, 3, 3, 6], votes=85)  # a quota of exactly 15 computed as 15.000...2
def test_quota_pairs_keep_every_pair_within_one_vote_of_its_share(weights, votes):
    # Weights of the six pairs of four models, some zero; the lower triangle is ignored.
    weights[0] += sum(weights) == 0
    upper = np.triu_indices(4, 1)
    shares = np.zeros((4, 4))
    shares[upper] = weights
    shares[3, 0] = 50.0
    a, b = quota_pairs(shares, votes)
    assert np.all(a < b)
    met = np.zeros((4, 4))
    for t in range(votes):
        met[a[t], b[t]] += 1
        assert np.all(np.abs(met[upper] - np.array(weights) * (t + 1) / sum(weights)) < 1.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 12))
def test_quota_pairs_keep_every_pair_within_one_vote_on_many_pairs_of_uneven_shares(seed, n):
    # Real-valued shares over every pair of n models (up to 66 pairs), some tiny: the
    # windows of the earliest-deadline rule, not the greedy deficit, hold the promise.
    rng = np.random.default_rng(seed)
    shares = np.triu(rng.lognormal(0.0, 1.5, (n, n)), 1)
    votes = 400
    a, b = quota_pairs(shares, votes)
    share = shares / shares.sum()
    met = np.zeros((n, n))
    for t in range(votes):
        met[a[t], b[t]] += 1
        assert np.abs(met - share * (t + 1)).max() < 1.0


def test_quota_pairs_refuse_shares_without_a_pair_or_below_zero():
    for shares in ([[0.0, -1.0], [1.0, 0.0]], [[0.0, 1.0, -1.0], [0.0, 0.0, 1.0], [0.0] * 3]):
        with pytest.raises(ValueError, match="non-negative"):
            quota_pairs(np.array(shares), 5)


def test_spreads():
    assert evenly_spread(20, 400)[[0, -1]].tolist() == [800.0, 1200.0]
    r = normal_spread(50, 100, np.random.default_rng(0))
    assert r.mean() == pytest.approx(1000.0) and 60 < r.std() < 140


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=3, max_size=30), st.integers(0, 2**31))
def test_spearman_matches_scipy(values, seed):
    other = np.random.default_rng(seed).permutation(values)
    expected = stats.spearmanr(values, other).statistic
    got = spearman(values, other)
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_first_sustained_counts_from_the_last_dip():
    steps = [100, 200, 300, 400, 500]
    assert first_sustained([0.5, 0.96, 0.94, 0.97, 0.99], 0.95, steps) == 400
    assert first_sustained([0.96, 0.97, 0.99, 0.99, 0.99], 0.95, steps) == 100
    assert first_sustained([0.96, 0.97, 0.99, 0.99, 0.90], 0.95, steps) is None
    assert first_sustained([0.96, np.nan, 0.99, 0.99, 0.99], 0.95, steps) == 300


def test_truth_refuses_impossible_rates():
    with pytest.raises(ValueError, match="draw_rate"):
        Truth(np.zeros(2), draw_rate=0.6)
    with pytest.raises(ValueError, match="both_bad_share"):
        Truth(np.zeros(2), both_bad_share=1.5)
