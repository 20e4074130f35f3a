"""Bradley-Terry: agreement with independent implementations, and its properties.

Expected values come from ``choix`` (Maystre's Luce-spectral-ranking MLE) for
the plain maximum likelihood, from ``scipy.optimize`` on the objective written
out here for the prior-weighted fit, and from hand-worked numbers: never from
the code under test.
"""

import math

import choix
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from arena_core.ratings.bt import (
    Bootstrap,
    BTParams,
    ConvergenceError,
    NotIdentifiableError,
    bootstrap_bradley_terry,
    bradley_terry,
)
from arena_core.ratings.counts import A_WINS, B_WINS, TIE, PairCounts, count_pairs

LN10_OVER_400 = math.log(10) / 400


@st.composite
def connected_counts(draw, max_models=7):
    """Random pair counts where every model both won and lost within a cycle."""
    n = draw(st.integers(2, max_models))
    wins = np.array(draw(st.lists(st.integers(0, 30), min_size=n * n, max_size=n * n))).reshape(
        n, n
    )
    np.fill_diagonal(wins, 0)
    ties = np.array(draw(st.lists(st.integers(0, 10), min_size=n * n, max_size=n * n))).reshape(
        n, n
    )
    ties = np.triu(ties, 1)
    ties = ties + ties.T
    for i in range(n):  # a ring of one win each way keeps the MLE finite
        wins[i, (i + 1) % n] += 1
        wins[(i + 1) % n, i] += 1
    return PairCounts(wins=wins, ties=ties, both_bad=np.zeros_like(ties))


def half_win_matrix(counts: PairCounts) -> np.ndarray:
    return counts.wins + 0.5 * (counts.ties + counts.both_bad)


@settings(max_examples=80, deadline=None)
@given(connected_counts())
def test_plain_mle_agrees_with_choix_within_a_hundredth_of_a_point(counts):
    n = counts.n_items
    ours = bradley_terry(n, counts, params=BTParams(prior_weight=0))
    strengths = choix.ilsr_pairwise_dense(
        half_win_matrix(counts), alpha=0.0, tol=1e-13, max_iter=100_000
    )
    theirs = 1000 + (strengths - strengths.mean()) / LN10_OVER_400
    np.testing.assert_allclose(ours, theirs, atol=0.01)
    assert ours.mean() == pytest.approx(1000.0, abs=1e-9)


def reference_with_prior(counts: PairCounts, prior, weight):
    """The prior-weighted objective, written independently and maximised by scipy.

    The prior is normal around each model's prior rating with the curvature of
    ``weight`` votes between equals: precision weight / 4 in log-odds units.
    """
    w = half_win_matrix(counts)
    p = (np.asarray(prior, float) - 1000) * LN10_OVER_400

    def negative_log_likelihood(theta):
        d = theta[:, None] - theta[None, :]
        ll = np.sum(w * -np.logaddexp(0, -d))
        ll -= weight / 4 * 0.5 * np.sum((theta - p) ** 2)
        return -ll

    res = minimize(negative_log_likelihood, p.copy(), method="BFGS", options={"gtol": 1e-10})
    return 1000 + res.x / LN10_OVER_400


@settings(max_examples=40, deadline=None)
@given(connected_counts(max_models=5), st.floats(0.5, 20), st.data())
def test_prior_weighted_fit_agrees_with_a_generic_optimiser(counts, weight, data):
    n = counts.n_items
    prior = data.draw(st.lists(st.floats(800, 1200), min_size=n, max_size=n))
    ours = bradley_terry(n, counts, prior, BTParams(prior_weight=weight))
    np.testing.assert_allclose(ours, reference_with_prior(counts, prior, weight), atol=0.01)


def random_log(seed, n=6, votes=80):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    return n, a, b, rng.integers(0, 4, votes)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_does_not_depend_on_vote_order(seed, shuffle_seed):
    n, a, b, o = random_log(seed)
    perm = np.random.default_rng(shuffle_seed).permutation(len(a))
    one = bradley_terry(n, count_pairs(n, a, b, o))
    two = bradley_terry(n, count_pairs(n, a[perm], b[perm], o[perm]))
    np.testing.assert_allclose(one, two, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_swapping_a_and_b_with_the_outcome_is_the_same_vote(seed):
    n, a, b, o = random_log(seed)
    flip = np.array([B_WINS, A_WINS, TIE, 3])[o]
    one = bradley_terry(n, count_pairs(n, a, b, o))
    two = bradley_terry(n, count_pairs(n, b, a, flip))
    np.testing.assert_allclose(one, two, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.data())
def test_an_extra_win_never_lowers_the_winner(seed, data):
    n, a, b, o = random_log(seed)
    w = data.draw(st.integers(0, n - 1))
    loser = (w + data.draw(st.integers(1, n - 1))) % n
    before = bradley_terry(n, count_pairs(n, a, b, o))
    after = bradley_terry(
        n, count_pairs(n, np.append(a, w), np.append(b, loser), np.append(o, A_WINS))
    )
    assert after[w] >= before[w] - 1e-9
    assert after[loser] <= before[loser] + 1e-9


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.floats(700, 1300), min_size=8, max_size=8))
def test_the_prior_keeps_unplayed_models_at_their_prior(seed, prior):
    _, a, b, o = random_log(seed, n=6)  # models 6 and 7 never play
    ratings = bradley_terry(8, count_pairs(8, a, b, o), prior)
    assert ratings[6] == pytest.approx(prior[6], abs=1e-6)
    assert ratings[7] == pytest.approx(prior[7], abs=1e-6)


def test_an_undefeated_model_stays_finite_with_a_prior():
    counts = count_pairs(2, np.zeros(50, int), np.ones(50, int), np.zeros(50, int))
    r = bradley_terry(2, counts)
    assert np.all(np.isfinite(r)) and r[0] > r[1]
    with pytest.raises(NotIdentifiableError) as err:
        bradley_terry(2, counts, params=BTParams(prior_weight=0))
    # Either model could be called unbounded; the tie between two equally busy groups goes to
    # the lowest index as the fitted one, so model 1 (never won) is named.
    assert err.value.items == [1]


def test_disconnected_groups_are_each_centred_without_a_prior():
    a = np.array([0, 1, 2, 3, 0, 2])
    b = np.array([1, 0, 3, 2, 1, 3])
    o = np.array([A_WINS, A_WINS, A_WINS, A_WINS, A_WINS, A_WINS])
    r = bradley_terry(4, count_pairs(4, a, b, o), params=BTParams(prior_weight=0))
    assert r[0] + r[1] == pytest.approx(2000)
    assert r[2] + r[3] == pytest.approx(2000)
    assert r[0] - r[1] == pytest.approx(400 * math.log10(2))  # 2 wins to 1


def test_a_model_that_never_won_has_no_finite_mle():
    # 0 and 1 beat each other; 2 lost to both: its MLE is -infinity.
    a, b = np.array([0, 1, 0, 1]), np.array([1, 0, 2, 2])
    counts = count_pairs(3, a, b, np.zeros(4, int))
    with pytest.raises(NotIdentifiableError) as err:
        bradley_terry(3, counts, params=BTParams(prior_weight=0))
    assert err.value.items == [2]


def test_weighted_votes_are_fractional_votes():
    # Model 0 won twice (weights 0.5 and 1), model 1 once: the MLE of 1.5 wins to 1.
    a, b, o = np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([A_WINS, A_WINS, A_WINS])
    weighted = count_pairs(2, a, b, o, weights=np.array([0.5, 1.0, 1.0]))
    np.testing.assert_allclose(weighted.wins, [[0, 1.5], [1.0, 0]])
    r = bradley_terry(2, weighted, params=BTParams(prior_weight=0))
    assert r[0] - r[1] == pytest.approx(400 * math.log10(1.5))


def test_no_votes_gives_the_priors():
    r = bradley_terry(3, PairCounts.zeros(3), [1000, 1100, 900])
    np.testing.assert_allclose(r, [1000, 1100, 900])
    boot = bootstrap_bradley_terry(3, PairCounts.zeros(3), [1000, 1100, 900], rounds=5)
    assert boot.samples.shape == (5, 3)


def test_non_convergence_raises_a_specific_error():
    n, a, b, o = random_log(1)
    with pytest.raises(ConvergenceError):
        bradley_terry(n, count_pairs(n, a, b, o), params=BTParams(max_iter=1))


def test_bootstrap_is_seeded_and_brackets_the_fit():
    n, a, b, o = random_log(3, votes=400)
    counts = count_pairs(n, a, b, o)
    fit = bradley_terry(n, counts)
    one = bootstrap_bradley_terry(n, counts, rounds=300, rng=np.random.default_rng(7))
    two = bootstrap_bradley_terry(n, counts, rounds=300, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(one.samples, two.samples)
    low, high = one.interval()
    assert np.all(low < fit) and np.all(fit < high)


def test_percentile_interval_takes_the_two_tails_of_the_level():
    # 1001 replicates 0, 1, ..., 1000: the 2.5% and 97.5% percentiles are 25 and 975 exactly
    # (linear interpolation lands on sample points); 90% would give 50 and 950.
    boot = Bootstrap(np.arange(1001.0)[:, None] * np.ones((1, 2)), dropped=0)
    low, high = boot.interval()
    np.testing.assert_allclose(low, [25.0, 25.0], atol=1e-9)
    np.testing.assert_allclose(high, [975.0, 975.0], atol=1e-9)
    low, high = boot.interval(0.9)
    np.testing.assert_allclose([low[0], high[0]], [50.0, 950.0], atol=1e-9)


def test_bootstrap_intervals_cover_the_true_ratings():
    # 400 seeded arenas of 10 models and 1000 votes, plain MLE, 100 rounds each: the percentile
    # interval covers the (centred) truth 93.2% of the time at 95% (mean of 2000 arenas; 100
    # rounds add Monte Carlo noise). A 93% interval covers 91.1%, a 90% one 88.0%, and one
    # drawn at the percentiles [tail + 1, 100 - tail - 1] is a 93% one. This seed gives 0.9335
    # at 95% and 0.9135 at 93% (standard error 0.004 over 4000 checks): the band sits between.
    rng = np.random.default_rng(11)
    covered = total = 0
    for _ in range(400):
        truth = rng.normal(1000, 80, 10)
        a = rng.integers(0, 10, 1000)
        b = (a + rng.integers(1, 10, 1000)) % 10
        p = 1 / (1 + 10 ** ((truth[b] - truth[a]) / 400))
        o = np.where(rng.random(1000) < p, A_WINS, B_WINS)
        counts = count_pairs(10, a, b, o)
        low, high = bootstrap_bradley_terry(
            10, counts, params=BTParams(prior_weight=0), rounds=100, rng=rng
        ).interval()
        centred = truth - truth.mean() + 1000
        covered += int(np.sum((low <= centred) & (centred <= high)))
        total += 10
    assert 0.923 <= covered / total <= 0.96


def test_bootstrap_without_prior_drops_infinite_replicates():
    # Model 2 lost once only: some resamples make it never lose or never win.
    a = np.array([0, 1, 0, 1, 2, 0])
    b = np.array([1, 0, 1, 0, 0, 2])
    o = np.array([A_WINS, A_WINS, A_WINS, A_WINS, A_WINS, A_WINS])
    counts = count_pairs(3, a, b, o)
    boot = bootstrap_bradley_terry(3, counts, params=BTParams(prior_weight=0), rounds=200)
    assert 0 < boot.dropped < 200
    assert boot.samples.shape == (200 - boot.dropped, 3)
    assert np.all(np.isfinite(boot.samples))


def test_invalid_arguments():
    with pytest.raises(ValueError, match="prior_weight"):
        BTParams(prior_weight=-1)
    with pytest.raises(ValueError, match="counts are for 2 models"):
        bradley_terry(3, PairCounts.zeros(2))
    with pytest.raises(ValueError, match="finite"):
        bradley_terry(2, PairCounts.zeros(2), [1000, float("nan")])
    with pytest.raises(ValueError, match="rounds"):
        bootstrap_bradley_terry(2, PairCounts.zeros(2), rounds=0)


def test_argument_errors_say_exactly_what_is_wrong():
    with pytest.raises(ValueError, match=r"^prior_weight must be >= 0, got -1$"):
        BTParams(prior_weight=-1)
    with pytest.raises(ValueError, match=r"^prior_weight must be >= 0, got nan$"):
        BTParams(prior_weight=float("nan"))
    with pytest.raises(ValueError, match=r"^rounds must be at least 1$"):
        bootstrap_bradley_terry(2, PairCounts.zeros(2), rounds=0)
    with pytest.raises(ValueError, match=r"^prior must be 2 finite ratings$"):
        bradley_terry(2, PairCounts.zeros(2), [1000.0])
    counts = count_pairs(2, np.zeros(3, int), np.ones(3, int), np.zeros(3, int))
    with pytest.raises(NotIdentifiableError, match=r"^with prior_weight 0 the maximum-likelihood "
                       r"ratings are infinite: models at index \[1\] were never beaten \(or never "
                       r"won\), directly or through others, against the rest of their group "
                       r"\(use prior_weight > 0\)$"):  # fmt: skip
        bradley_terry(2, counts, params=BTParams(prior_weight=0))


def test_bootstrap_defaults_are_a_thousand_rounds_from_seed_zero():
    counts = count_pairs(2, np.array([0, 1, 0]), np.array([1, 0, 1]), np.zeros(3, int))
    boot = bootstrap_bradley_terry(2, counts)
    assert boot.samples.shape == (1000, 2) and boot.dropped == 0
    seeded = bootstrap_bradley_terry(2, counts, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(boot.samples, seeded.samples)
    assert bootstrap_bradley_terry(2, counts, rounds=1).samples.shape == (1, 2)


def test_bootstrap_with_a_prior_centres_on_the_fit_with_that_prior():
    # One vote each way: the prior decides where the pair sits. Prior 1100 / 900 at weight 4
    # keeps the fit near the prior; the replicates scatter around that fit, not around 1000.
    counts = count_pairs(2, np.array([0, 1]), np.array([1, 0]), np.zeros(2, int))
    prior = [1100.0, 900.0]
    fit = bradley_terry(2, counts, prior)
    assert fit[0] > 1050 and fit[1] < 950
    boot = bootstrap_bradley_terry(2, counts, prior, rounds=400, rng=np.random.default_rng(2))
    assert np.all(np.abs(np.median(boot.samples, axis=0) - fit) < 30)


def test_a_bootstrap_of_no_votes_repeats_the_fit():
    prior = [1100.0, 900.0]
    with_prior = bootstrap_bradley_terry(2, PairCounts.zeros(2), prior, rounds=5)
    np.testing.assert_allclose(with_prior.samples, [prior] * 5)  # the posterior is the prior
    plain = bootstrap_bradley_terry(2, PairCounts.zeros(2), prior, BTParams(prior_weight=0),
                                    rounds=5)  # fmt: skip
    np.testing.assert_allclose(plain.samples, [[1000.0, 1000.0]] * 5)  # no prior, no votes
    assert plain.dropped == 0


def test_plain_replicates_are_centred_per_component_whatever_the_warm_start():
    # Two components, of three models (0-1-2) and two (3-4), every pair won both ways. A warm
    # start far off the anchor (all at 1300) must not shift them: each component of each
    # replicate has mean 1000, as bradley_terry reports it.
    pairs = [(0, 1), (1, 0), (1, 2), (2, 1), (0, 1), (3, 4), (4, 3), (3, 4)]
    a, b = (np.array(x) for x in zip(*pairs, strict=True))
    counts = count_pairs(5, a, b, np.zeros(len(pairs), int))
    boot = bootstrap_bradley_terry(5, counts, params=BTParams(prior_weight=0), rounds=50,
                                   rng=np.random.default_rng(4), initial=[1300.0] * 5)  # fmt: skip
    assert len(boot.samples) > 0
    # A replicate infinite in one component rates only the other (NaN in that one's columns).
    for group in (slice(0, 3), slice(3, 5)):
        rated = np.isfinite(boot.samples[:, group]).all(axis=1)
        assert rated.any() and not np.isfinite(boot.samples[~rated, group]).any()
        np.testing.assert_allclose(boot.samples[rated, group].mean(axis=1), 1000.0, atol=1e-6)


def test_non_convergence_says_how_many_fits_still_move():
    # Three models, one fit: one Newton step from the prior cannot reach the tolerance.
    counts = count_pairs(3, np.array([0, 1, 2, 0]), np.array([1, 2, 0, 1]), np.zeros(4, int))
    with pytest.raises(ConvergenceError, match=r"^Bradley-Terry did not converge to 1e-10 in 1 "
                       r"steps \(1 of 1 fits still moving\)$"):  # fmt: skip
        bradley_terry(3, counts, params=BTParams(max_iter=1))
