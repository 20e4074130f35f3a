"""Bradley-Terry with covariates: agreement with independent implementations, properties, coverage.

Expected values come from ``bradley_terry`` (no covariates), from ``scipy.optimize``
on the objective written out here, from a finite-difference Hessian of that
objective, and from a seeded simulation with known truth: never from the code
under test.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from arena_core.ratings.bt import BTParams, bradley_terry
from arena_core.ratings.counts import count_pairs
from arena_core.ratings.covariates import CovariateParams, VoteRows, covariate_bradley_terry
from arena_core.ratings.separation import (
    ABOVE,
    BELOW,
    BOUNDED,
    EITHER,
    SUBSET_ROWS,
    axis_separated,
    coefficient_support,
    one_sided_bound,
)
from arena_core.simulation.synthetic import Truth, normal_spread, uniform_pairs

NATURAL = math.log(10) / 400


@st.composite
def votes(draw, max_models=6, max_covariates=3):
    """Random votes (outcome codes) and covariates on a few models, every model both
    winning and losing (a ring of wins each way keeps the fit well inside its prior)."""
    n = draw(st.integers(2, max_models))
    k = draw(st.integers(0, max_covariates))
    m = draw(st.integers(1, 40))
    a = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    shift = np.array(draw(st.lists(st.integers(1, n - 1), min_size=m, max_size=m)))
    b = (a + shift) % n
    outcome = np.array(draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)))
    ring = np.arange(n)
    a, b = np.r_[a, ring, (ring + 1) % n], np.r_[b, (ring + 1) % n, ring]
    outcome = np.r_[outcome, np.zeros(2 * n, dtype=int)]
    values = st.floats(-2, 2, allow_nan=False, allow_subnormal=False)
    x = np.array(draw(st.lists(values, min_size=len(a) * k, max_size=len(a) * k))).reshape(
        len(a), k
    )
    return n, a, b, outcome, x


@settings(max_examples=60, deadline=None)
@given(votes(max_covariates=0), st.sampled_from([0.5, 4.0, 20.0]))
def test_without_covariates_it_is_the_bradley_terry_fit(data, weight):
    n, a, b, outcome, x = data
    ours = covariate_bradley_terry(n, VoteRows.from_outcomes(a, b, outcome, x),
                                   params=CovariateParams(prior_weight=weight))  # fmt: skip
    theirs = bradley_terry(n, count_pairs(n, a, b, outcome), params=BTParams(prior_weight=weight))
    np.testing.assert_allclose(ours.rating, theirs, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(votes())
def test_swapping_the_sides_and_negating_the_covariates_changes_nothing(data):
    n, a, b, outcome, x = data
    rows = VoteRows.from_outcomes(a, b, outcome, x)
    one, two = covariate_bradley_terry(n, rows), covariate_bradley_terry(n, rows.swapped())
    np.testing.assert_allclose(one.rating, two.rating, atol=1e-6)
    np.testing.assert_allclose(one.coef, two.coef, atol=1e-6)
    np.testing.assert_allclose(one.coef_sd, two.coef_sd, rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(votes(), st.integers(0, 2**32 - 1))
def test_merging_identical_rows_changes_nothing(data, seed):
    n, a, b, outcome, x = data
    # Repeat some votes so that there is something to merge, in a shuffled order.
    rng = np.random.default_rng(seed)
    take = np.r_[np.arange(len(a)), rng.integers(0, len(a), len(a))]
    rng.shuffle(take)
    rows = VoteRows.from_outcomes(a[take], b[take], outcome[take], x[take])
    merged = rows.aggregated()
    assert merged.n_rows <= len(set(zip(a, b, map(tuple, x), strict=True)))
    assert merged.weight.sum() == rows.n_rows
    one, two = covariate_bradley_terry(n, rows), covariate_bradley_terry(n, merged)
    np.testing.assert_allclose(one.rating, two.rating, atol=1e-6)
    np.testing.assert_allclose(one.coef, two.coef, atol=1e-6)
    np.testing.assert_allclose(one.coef_sd, two.coef_sd, rtol=1e-6)
    assert one.dispersion == pytest.approx(two.dispersion, rel=1e-9)


def test_merging_rows_with_many_distinct_covariates_keeps_them_apart():
    # Six continuous columns of 3000 distinct values: the combined key must be re-coded on
    # the way (3000**6 overflows 64 bits) without merging rows that differ.
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 3000)
    x = rng.normal(size=(3000, 6))
    rows = VoteRows.from_outcomes(np.r_[a, a], np.r_[a + 1, a + 1], np.zeros(6000, dtype=int),
                                  np.r_[x, x])  # fmt: skip
    merged = rows.aggregated()
    assert merged.n_rows == len({(i, *r) for i, r in zip(a, map(tuple, x), strict=True)})
    assert np.all(merged.weight == 2.0)


def _independent_objective(n, a, b, score, x, precision, coef_precision):
    """The negative log-posterior written out afresh: half-win log-likelihood plus the priors."""

    def f(z):
        theta, beta = z[:n], z[n:]
        eta = theta[a] - theta[b] + x @ beta
        ll = score * -np.logaddexp(0, -eta) + (1 - score) * -np.logaddexp(0, eta)
        return -(ll.sum() - precision / 2 * theta @ theta - coef_precision / 2 * beta @ beta)

    return f


def _simulated(seed, n=6, votes_=3000, beta=(0.3, -0.5, 0.2)):
    """Votes whose log-odds are the true gap plus x . beta, with draws as Truth draws them."""
    rng = np.random.default_rng(seed)
    truth = normal_spread(n, 100, rng)
    a, b = uniform_pairs(n, votes_, rng)
    x = np.column_stack([np.ones(votes_), rng.integers(0, 2, votes_) * 2.0 - 1,
                         rng.normal(0, 1, votes_)])[:, : len(beta)]  # fmt: skip
    lift = x @ np.asarray(beta) / NATURAL  # points added to side A
    outcome = Truth(np.r_[truth[a] - truth[b] + lift, 0.0]).sample(
        np.arange(votes_), np.full(votes_, votes_), rng
    )
    return n, truth, a, b, outcome, x


def test_mode_and_intervals_agree_with_scipy_and_a_finite_difference_hessian():
    n, _, a, b, outcome, x = _simulated(1, votes_=800)
    rows = VoteRows.from_outcomes(a, b, outcome, x)
    ours = covariate_bradley_terry(n, rows)
    score = np.array([1.0, 0.0, 0.5, 0.5])[outcome]
    f = _independent_objective(n, a, b, score, x, 1.0, 1e-6)  # prior_weight 4 -> precision 1
    best = minimize(f, np.zeros(n + 3), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(ours.rating, 1000 + best.x[:n] / NATURAL, atol=1e-3)
    np.testing.assert_allclose(ours.coef, best.x[n:] / NATURAL, atol=1e-3)
    # Curvature by central differences of the objective, the likelihood part divided by
    # Pearson's dispersion (shrunk with 20 pseudo-votes), then pinned and inverted.
    z, h = best.x, 1e-4
    eye = np.eye(len(z)) * h
    hess = np.array([[(f(z + eye[i] + eye[j]) - f(z + eye[i] - eye[j]) - f(z - eye[i] + eye[j])
                       + f(z - eye[i] - eye[j])) / (4 * h * h) for j in range(len(z))]
                     for i in range(len(z))])  # fmt: skip
    prior = np.r_[np.ones(n), np.full(3, 1e-6)]
    p = 1 / (1 + np.exp(-(z[a] - z[b] + x @ z[n:])))
    phi = (((score - p) ** 2 / (p * (1 - p))).sum() + 20) / (len(a) - (n - 1) - 3 + 20)
    cov = np.linalg.inv((hess - np.diag(prior)) / phi + np.diag(prior))
    pin = np.eye(len(z))
    pin[:n, :n] -= 1.0 / n
    cov = pin @ cov @ pin.T
    sd = np.sqrt(np.diag(cov)) / NATURAL
    np.testing.assert_allclose(ours.rating_sd, sd[:n], rtol=1e-3)
    np.testing.assert_allclose(ours.coef_sd, sd[n:], rtol=1e-3)
    assert ours.dispersion == pytest.approx(phi, rel=1e-4)


def test_95_percent_intervals_cover_the_truth_95_percent_of_the_time():
    beta = np.array([0.3, -0.5, 0.2])
    hits_theta, hits_beta, runs = 0, np.zeros(3), 200
    for seed in range(runs):
        n, truth, a, b, outcome, x = _simulated(seed, beta=beta)
        fit = covariate_bradley_terry(n, VoteRows.from_outcomes(a, b, outcome, x).aggregated())
        low, high = fit.interval()
        centred = truth - truth.mean() + 1000  # the board pins the mean (prior 1000) the same way
        hits_theta += ((low <= centred) & (centred <= high)).sum()
        c_low, c_high = fit.coef_interval()
        hits_beta += (c_low <= beta / NATURAL) & (beta / NATURAL <= c_high)
    # 200 replicates: a binomial standard error of 1.5 points per coefficient.
    assert hits_beta.min() / runs >= 0.91 and hits_beta.max() / runs <= 0.99
    assert 0.92 <= hits_theta / (runs * n) <= 0.98


def test_a_known_a_side_edge_is_recovered_and_leaves_the_ratings_unbiased():
    n, truth, a, b, outcome, x = _simulated(7, n=10, votes_=40_000, beta=(30 * NATURAL,))
    fit = covariate_bradley_terry(n, VoteRows.from_outcomes(a, b, outcome, x).aggregated())
    assert abs(fit.coef[0] - 30) < 3 * fit.coef_sd[0] and fit.coef_sd[0] < 3
    centred = truth - truth.mean() + 1000
    assert np.all(np.abs(fit.rating - centred) < 4 * fit.rating_sd)


def test_collinear_covariates_converge_and_leave_the_ratings_alone():
    # An A-side constant beside an indicator for every judge: the constant is their sum, so
    # only the coefficients' near-flat prior splits the edge between them.
    n, _, a, b, outcome, x = _simulated(5, beta=(0.2,))
    judge = np.random.default_rng(5).integers(0, 3, len(a))
    indicators = np.column_stack([judge == j for j in range(3)]).astype(float)
    full = covariate_bradley_terry(n, VoteRows.from_outcomes(a, b, outcome,
                                                             np.column_stack([x, indicators])))  # fmt: skip
    reduced = covariate_bradley_terry(n, VoteRows.from_outcomes(a, b, outcome, indicators))
    np.testing.assert_allclose(full.rating, reduced.rating, atol=1e-6)
    np.testing.assert_allclose(full.coef[0] + full.coef[1:], reduced.coef, atol=1e-6)


def test_bad_input_is_refused():
    a, b, outcome = np.array([0, 1]), np.array([1, 0]), np.array([0, 0])
    with pytest.raises(ValueError, match="prior_weight"):
        CovariateParams(prior_weight=0)
    with pytest.raises(ValueError, match="finite"):
        VoteRows.from_outcomes(a, b, outcome, np.array([[np.nan], [1.0]]))
    with pytest.raises(ValueError, match="different"):
        VoteRows.from_outcomes(a, a, outcome)
    with pytest.raises(ValueError, match="indices"):
        covariate_bradley_terry(1, VoteRows.from_outcomes(a, b, outcome))
    with pytest.raises(ValueError, match="names"):
        VoteRows.from_outcomes(a, b, outcome, np.ones((2, 1)), names=("x", "y"))


# --- Separation: whether the votes bound a coefficient (arena_core/ratings/separation.py).


def test_separation_along_a_mixed_direction_is_found_though_no_axis_alone_separates():
    """Decisive rows, sign-folded: (1, -1) and (-1, 2). A direction d keeps both >= 0 iff
    d1 >= d2 >= d1 / 2, so both coefficients run off upwards together (by hand), and
    neither alone separates, so neither gets a one-sided bound."""
    x = np.array([[1.0, -1.0], [-1.0, 2.0]])
    score = np.array([1.0, 1.0])
    informative, direction = coefficient_support(x, score, np.ones(2))
    assert informative.tolist() == [2.0, 2.0] and direction.tolist() == [ABOVE, ABOVE]
    assert not axis_separated(x[:, 0], score, np.ones(2), ABOVE)
    # A tie with x = (1, 0) forces d1 = 0, and then d2 = 0: bounded.
    x3, score3 = np.vstack([x, [1.0, 0.0]]), np.r_[score, 0.5]
    assert coefficient_support(x3, score3, np.ones(3))[1].tolist() == [BOUNDED, BOUNDED]
    # A zero-weight row counts for nothing; a column zero on every row is uninformed.
    x4 = np.column_stack([x3, np.zeros(3)])
    informative, direction = coefficient_support(x4, score3, np.array([1.0, 1.0, 0.0]))
    assert informative.tolist() == [2.0, 2.0, 0.0] and direction[:2].tolist() == [ABOVE, ABOVE]


def test_separation_of_a_large_log_is_decided_exactly_past_the_subset_pass():
    """Above SUBSET_ROWS decisive rows the first pass solves on a subset: a random log is
    bounded (the subset's larger cone is already empty), and one whose first column sides
    with every decisive vote is still found (the full pass), the other column free to
    move with it (EITHER)."""
    rng = np.random.default_rng(5)
    n = 3 * SUBSET_ROWS
    x = rng.normal(size=(n, 2))
    score = (rng.random(n) < 0.5).astype(float)
    assert coefficient_support(x, score, np.ones(n))[1].tolist() == [BOUNDED, BOUNDED]
    x[:, 0] = np.where(score == 1, 1.0, -1.0) * rng.uniform(0.5, 2.0, n)
    direction = coefficient_support(x, score, np.ones(n))[1]
    assert direction.tolist() == [ABOVE, EITHER]
    assert axis_separated(x[:, 0], score, np.ones(n), ABOVE)


def test_the_one_sided_bound_is_where_the_record_has_probability_two_and_a_half_percent():
    # Three wins of side A with offsets 0, 0.5 and -0.5 and a column of 1: solved by hand
    # with bisection on sum log sigma(o + b) = log 0.025.
    offset, column = np.array([0.0, 0.5, -0.5]), np.ones(3)
    bound = one_sided_bound(offset, column, np.ones(3), np.ones(3), ABOVE)
    record = np.prod(1 / (1 + np.exp(-(offset + bound))))
    assert record == pytest.approx(0.025, rel=1e-9)
    upper = one_sided_bound(offset, -column, np.ones(3), np.ones(3), BELOW)
    assert upper == pytest.approx(-bound)  # the same record, the column's sign flipped
