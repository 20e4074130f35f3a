"""One board's fit in each mode; the bounds of unbounded models worked out by hand."""

import math

import numpy as np
import pytest

from arena_core.ratings import graph
from arena_core.ratings.counts import A_WINS, PairCounts, count_pairs
from arena_core.ratings.decay import DAY_US, decay_weights
from arena_core.ratings.fit import fit_board

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
