"""One board's fit in each mode; the bounds of unbounded models worked out by hand."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.leaderboard import BoardParams, check_prior_weight
from arena_core.ratings import graph
from arena_core.ratings.counts import A_WINS, BOTH_BAD, TIE, PairCounts, count_pairs
from arena_core.ratings.decay import DAY_US, decay_weights
from arena_core.ratings.fit import fit_board, unbounded_bound
from arena_core.ratings.posterior import PosteriorParams, posterior_bradley_terry

POINTS = 400 / math.log(10)  # rating points per natural log-odds unit


def votes(n, *triples):
    a, b, o = (np.array(x, dtype=int) for x in zip(*triples, strict=True))
    return count_pairs(n, a, b, o)


def logit(p):
    return math.log(p / (1 - p))


def test_plain_mle_board_rates_the_rest_and_bounds_the_unbounded():
    # x (0) and y (1) beat each other once: both at 1000. u (2) beat x three times and was
    # never beaten: above. l (3) lost to y twice and never won: below.
    counts = votes(4, (0, 1, A_WINS), (1, 0, A_WINS), (2, 0, A_WINS), (2, 0, A_WINS),
                   (2, 0, A_WINS), (1, 3, A_WINS), (1, 3, A_WINS))  # fmt: skip
    fit = fit_board(4, counts, prior_weight=0, rounds=200, rng=np.random.default_rng(0))
    np.testing.assert_allclose(fit.rating[:2], [1000, 1000], atol=1e-9)
    assert np.isnan(fit.rating[2]) and np.isnan(fit.rating[3])
    assert fit.side.tolist() == [graph.FITTED, graph.FITTED, graph.ABOVE, graph.BELOW]
    # Lower bound of u: three wins over a 1000 model have probability 2.5% when
    # sigma(R - 0)^3 = 0.025, i.e. R = logit(0.025^(1/3)) in natural units.
    assert fit.low[2] == pytest.approx(1000 + logit(0.025 ** (1 / 3)) * POINTS, abs=1e-6)
    assert np.isnan(fit.high[2])
    # Upper bound of l: two losses to a 1000 model, sigma(0 - R)^2 = 0.025.
    assert fit.high[3] == pytest.approx(1000 - logit(0.025**0.5) * POINTS, abs=1e-6)
    assert np.isnan(fit.low[3])
    assert fit.dropped is not None and fit.intervals


def test_a_model_alone_in_its_fitted_group_has_no_interval():
    counts = votes(2, (0, 1, A_WINS))
    fit = fit_board(2, counts, prior_weight=0, rounds=50, rng=np.random.default_rng(0))
    assert fit.rating[0] == pytest.approx(1000) and np.isnan(fit.low[0]) and np.isnan(fit.high[0])


def test_replicates_with_infinite_ratings_are_counted():
    # Model 2 lost once and won once: many resamples lose one of its two votes.
    counts = votes(3, (0, 1, A_WINS), (1, 0, A_WINS), (2, 0, A_WINS), (1, 2, A_WINS))
    fit = fit_board(3, counts, prior_weight=0, rounds=400, rng=np.random.default_rng(1))
    assert 0 < fit.dropped < 400 and fit.rounds == 400
    assert np.all(np.isfinite(fit.rating))


def test_no_rounds_means_no_intervals_but_bounds_stay():
    counts = votes(3, (0, 1, A_WINS), (1, 0, A_WINS), (2, 0, A_WINS))
    fit = fit_board(3, counts, prior_weight=0, rounds=0)
    assert not fit.intervals and fit.dropped is None
    assert np.isnan(fit.low[:2]).all() and np.isfinite(fit.low[2])


def test_posterior_modes_rate_everyone():
    counts = votes(3, (0, 1, A_WINS), (0, 2, A_WINS))
    for weight in (None, 4.0):
        fit = fit_board(3, counts, prior_weight=weight)
        assert np.all(np.isfinite(fit.rating)) and (fit.side == graph.FITTED).all()
        assert np.all(fit.low < fit.rating) and np.all(fit.rating < fit.high)
    # A fixed weight W is a normal prior of 2 / sqrt(W) natural units: 173.7 points at W = 4.
    assert fit_board(3, counts, prior_weight=4.0).spread == pytest.approx(2 / 2 * POINTS)


def test_decay_halves_a_vote_per_half_life():
    ts = np.array([0, DAY_US, 3 * DAY_US, 5 * DAY_US])
    np.testing.assert_allclose(decay_weights(ts, 2.0, 5 * DAY_US), [2**-2.5, 2**-2, 2**-1, 1])
    assert decay_weights(np.array([6 * DAY_US]), 2.0, 5 * DAY_US)[0] == 1.0  # never above 1
    with pytest.raises(ValueError, match="half_life"):
        decay_weights(ts, 0.0, 0)


def test_an_empty_board_fits():
    fit = fit_board(2, PairCounts.zeros(2), [1000, 1100])
    np.testing.assert_allclose(fit.rating, [1000, 1100])
    fit = fit_board(2, PairCounts.zeros(2), prior_weight=0, rounds=10)
    assert fit.component.tolist() == [-1, -1]


def test_unbounded_models_that_played_each_other_leave_the_fitted_group_alone():
    # x (0) beat y (1) 4-2: alone, maximum likelihood puts them ln(4/2) apart around 1000.
    # u1 (2) and u2 (3) beat each other, tied and were both bad once, and beat x, y (u1 x
    # twice, u2 y once) without ever losing to them: both above, their votes between
    # themselves as irrelevant to x and y as their wins over them. Bounds worked by hand:
    # u1's two wins over x have probability 2.5% at R = theta_x + logit(0.025 ** (1/2)).
    counts = votes(4, *[(0, 1, A_WINS)] * 4, *[(1, 0, A_WINS)] * 2, (2, 3, A_WINS),
                   (3, 2, A_WINS), (2, 3, TIE), (2, 3, BOTH_BAD), (2, 0, A_WINS), (2, 0, A_WINS),
                   (3, 1, A_WINS))  # fmt: skip
    fit = fit_board(4, counts, prior_weight=0, rounds=200, rng=np.random.default_rng(3))
    half = math.log(2) / 2
    np.testing.assert_allclose(fit.rating[:2], [1000 + half * POINTS, 1000 - half * POINTS],
                               atol=1e-6)  # fmt: skip
    assert fit.side.tolist() == [graph.FITTED, graph.FITTED, graph.ABOVE, graph.ABOVE]
    assert fit.low[2] == pytest.approx(1000 + (half + logit(0.025**0.5)) * POINTS, abs=1e-6)
    assert fit.low[3] == pytest.approx(1000 + (-half + logit(0.025)) * POINTS, abs=1e-6)
    # A fitted group of two has intervals around its ratings.
    assert np.all(fit.low[:2] < fit.rating[:2]) and np.all(fit.rating[:2] < fit.high[:2])


def test_models_with_no_direct_vote_against_the_fitted_group_get_no_bound():
    # x (0), y (1) beat each other twice; u (2) beat x once; v (3) beat only u (above, but
    # never met x or y); w (4) only lost to u (neither above nor below x and y: apart).
    counts = votes(5, (0, 1, A_WINS), (0, 1, A_WINS), (1, 0, A_WINS), (1, 0, A_WINS),
                   (2, 0, A_WINS), (3, 2, A_WINS), (2, 4, A_WINS))  # fmt: skip
    fit = fit_board(5, counts, prior_weight=0, rounds=0)
    assert fit.side.tolist() == [graph.FITTED, graph.FITTED, graph.ABOVE, graph.ABOVE,
                                 graph.APART]  # fmt: skip
    assert fit.low[2] == pytest.approx(1000 + logit(0.025) * POINTS, abs=1e-6)
    assert np.isnan(fit.low[3:]).all() and np.isnan(fit.high[2:]).all()
    assert np.isnan(unbounded_bound(counts, fit.rating, 4, graph.APART, 0.025))


def test_when_every_replicate_is_dropped_the_fitted_models_have_no_interval():
    # Two decayed votes of weight 0.3, one each way: each replicate redraws round(0.6) = 1
    # vote, which can never make the pair beat each other both ways: all are dropped.
    a, b, o = np.array([0, 1]), np.array([1, 0]), np.array([A_WINS, A_WINS])
    counts = count_pairs(2, a, b, o, weights=np.array([0.3, 0.3]))
    fit = fit_board(2, counts, prior_weight=0, rounds=20, rng=np.random.default_rng(0))
    np.testing.assert_allclose(fit.rating, [1000, 1000], atol=1e-9)
    assert fit.dropped == 20 and fit.intervals
    assert np.isnan(fit.low).all() and np.isnan(fit.high).all()


def test_a_model_without_battles_does_not_make_a_lone_fitted_model_a_group():
    # 0 beat 1 once (1 is below, 0 fitted alone); 2 never played.
    fit = fit_board(3, votes(3, (0, 1, A_WINS)), prior_weight=0, rounds=20,
                    rng=np.random.default_rng(0))  # fmt: skip
    assert fit.component.tolist() == [0, 0, -1]
    assert fit.rating[0] == pytest.approx(1000)
    assert np.isnan(fit.low[0]) and np.isnan(fit.high[0])


def test_the_bootstrap_draws_from_the_generator_it_is_given():
    counts = votes(3, *[(0, 1, A_WINS)] * 5, *[(1, 0, A_WINS)] * 3, *[(1, 2, A_WINS)] * 4,
                   *[(2, 1, A_WINS)] * 2, (2, 0, A_WINS), (0, 2, A_WINS))  # fmt: skip

    def fit(seed):
        return fit_board(3, counts, prior_weight=0, rounds=50, rng=np.random.default_rng(seed))

    np.testing.assert_array_equal(fit(7).low, fit(7).low)
    assert not np.array_equal(fit(7).low, fit(8).low)


def test_a_half_life_under_a_day_is_allowed():
    # Twelve hours old with a half-life of half a day: half a vote.
    assert decay_weights(np.array([0]), 0.5, DAY_US // 2)[0] == pytest.approx(0.5)


def test_fit_board_passes_its_settings_through():
    counts = votes(3, (0, 1, A_WINS), (1, 2, A_WINS), (2, 0, A_WINS), (0, 1, A_WINS))
    plain = fit_board(3, counts, prior_weight=0, rng=np.random.default_rng(0))
    assert plain.rounds == 1000  # the default bootstrap
    # A prior worth half a vote is still a prior: the posterior, not maximum likelihood.
    half = fit_board(3, counts, prior_weight=0.5)
    assert half.spread == pytest.approx(2 / math.sqrt(0.5) * POINTS) and half.rounds == 0
    # The posterior's settings reach it: a spread grid pinned between 100 and 101 points.
    narrow = fit_board(3, counts, posterior=PosteriorParams(spread_range=(100.0, 101.0)))
    assert 100.0 <= narrow.spread <= 101.0
    assert (
        narrow.dispersion
        == posterior_bradley_terry(
            3, counts, params=PosteriorParams(spread_range=(100.0, 101.0))
        ).dispersion
    )


@settings(max_examples=40, deadline=None)
@given(
    exponent=st.floats(min_value=-3, max_value=9),
    unbeaten=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_every_accepted_prior_weight_gives_a_finite_board(exponent, unbeaten, seed):
    """Any weight the CLI accepts (PRIOR_WEIGHT_RANGE) fits, even with a model that never
    lost, whose rating only the prior keeps finite; the extremes pin or free the ratings."""
    weight = 10.0**exponent
    check_prior_weight(weight)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 300)
    b = (a + rng.integers(1, 4, 300)) % 4
    outcome = rng.integers(0, 2, 300)
    if unbeaten:  # model 0 wins every battle it is in
        outcome = np.where(a == 0, A_WINS, np.where(b == 0, 1, outcome))
    fit = fit_board(4, count_pairs(4, a, b, outcome), [1000.0] * 4, prior_weight=weight)
    assert (
        np.isfinite(fit.rating).all() and np.isfinite(fit.low).all() and np.isfinite(fit.high).all()
    )
    assert (fit.low <= fit.rating + 1e-6).all() and (fit.rating <= fit.high + 1e-6).all()


@pytest.mark.parametrize("weight", [math.inf, -math.inf, math.nan, -1.0, 1e-300, 1e-4, 2e9])
def test_prior_weights_no_fit_can_use_are_refused(weight):
    with pytest.raises(ValueError, match="prior weight"):
        check_prior_weight(weight)
    with pytest.raises(ValueError, match="prior weight"):
        BoardParams(prior_weight=weight)
