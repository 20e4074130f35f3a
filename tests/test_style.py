"""Style control for speech and the A-side term: hand-worked covariates and seeded simulations."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.ratings.bt import bradley_terry
from arena_core.ratings.counts import count_pairs
from arena_core.ratings.covariates import CovariateParams, VoteRows, covariate_bradley_terry
from arena_core.ratings.style import (
    A_SIDE,
    Coefficient,
    SideVotes,
    position_term,
    style_bradley_terry,
    style_covariates,
)
from arena_core.simulation.synthetic import Truth, normal_spread, uniform_pairs

NATURAL = math.log(10) / 400


def _votes(features, n=3):
    a = np.array([0, 1, 2][:n])
    b = np.array([1, 2, 0][:n])
    return SideVotes(a, b, np.zeros(n, dtype=int), features)


def test_covariates_are_normalised_differences_or_lu_differences_scaled_by_their_rms():
    nan = float("nan")
    votes = _votes({
        "duration_s": (np.array([3.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0])),
        "lufs": (np.array([-20.0, -23.0, -23.0]), np.array([-23.0, -20.0, -23.0])),
        "sample_rate": (np.full(3, 24000.0), np.full(3, 24000.0)),
        "speech_rate": (np.full(3, nan), np.full(3, nan)),
    })  # fmt: skip
    x, names, keep, unit_sd, missing, not_fitted = style_covariates(votes)
    assert names == ("duration_s", "lufs")
    assert keep.all() and missing == {
        "duration_s": 0,
        "speech_rate": 3,
        "lufs": 0,
        "sample_rate": 0,
    }
    assert not_fitted == {"speech_rate": "no values", "sample_rate": "no variation"}
    # duration: (3-1)/(3+1) = 0.5, -0.5, 0; rms sqrt(1/6). lufs: 3, -3, 0; rms sqrt(6).
    assert unit_sd == pytest.approx([math.sqrt(1 / 6), math.sqrt(6)])
    assert x[:, 0] == pytest.approx([0.5 * math.sqrt(6), -0.5 * math.sqrt(6), 0.0])
    assert x[:, 1] == pytest.approx([3 / math.sqrt(6), -3 / math.sqrt(6), 0.0])


def test_votes_with_a_missing_or_invalid_feature_are_left_out_and_counted():
    votes = _votes({
        "duration_s": (np.array([3.0, np.nan, 0.0]), np.array([1.0, 3.0, 2.0])),
        "lufs": (np.array([-20.0, -23.0, -23.0]), np.array([-23.0, -20.0, np.nan])),
    })  # fmt: skip
    x, names, keep, _, missing, _ = style_covariates(votes)
    assert keep.tolist() == [True, False, False] and x.shape == (1, 2)
    assert names == ("duration_s", "lufs")
    assert missing["duration_s"] == 2 and missing["lufs"] == 1  # a zero duration has no ratio


def test_a_difference_too_large_for_a_float_leaves_its_vote_out_and_counts_it():
    # -20 - -23 = 3 and -23 - -20 = -3; 1.7e308 - (-1.7e308) overflows to inf. That vote
    # is left out and counted: the other two still vary (3 and -3, rms 3).
    votes = _votes(
        {"lufs": (np.array([-20.0, -23.0, 1.7e308]), np.array([-23.0, -20.0, -1.7e308]))}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        x, names, keep, unit_sd, missing, not_fitted = style_covariates(votes)
    assert names == ("lufs",) and "lufs" not in not_fitted
    assert keep.tolist() == [True, True, False] and missing["lufs"] == 1
    assert unit_sd == pytest.approx([3.0]) and x[:, 0] == pytest.approx([1.0, -1.0])


def test_from_columns_reads_the_vote_record_names_and_nulls():
    votes = SideVotes.from_columns([0], [1], [0], {"model_a_duration_s": [2.0],
                                                   "model_b_duration_s": [None]})  # fmt: skip
    assert votes.features["duration_s"][0].tolist() == [2.0]
    assert np.isnan(votes.features["duration_s"][1][0])
    assert np.isnan(votes.features["lufs"][0][0])


def test_a_win_probability_is_the_logistic_of_the_points():
    # ln 3 natural units is odds 3:1 (0.75); 0 points is a coin.
    c = Coefficient.from_fit("x", math.log(3) / NATURAL, 10.0)
    assert c.win_probability == pytest.approx(0.75)
    assert c.low == pytest.approx(c.points - 1.959964 * 10, abs=1e-4)
    assert Coefficient.from_fit("x", 0.0, 1.0).win_probability == 0.5


def _arena(seed, n=10, count=30_000, a_side=0.0, per_unit=0.0):
    """Votes whose side A gets ``a_side`` points plus ``per_unit`` per unit of the
    normalised duration difference; durations depend on the model, not its quality."""
    rng = np.random.default_rng(seed)
    truth = normal_spread(n, 100, rng)
    typical = 4.0 * np.exp(rng.normal(0, 0.4, n))
    a, b = uniform_pairs(n, count, rng)
    da = typical[a] * np.exp(rng.normal(0, 0.2, count))
    db = typical[b] * np.exp(rng.normal(0, 0.2, count))
    lift = a_side + per_unit * (da - db) / (da + db)
    outcome = Truth(np.r_[truth[a] - truth[b] + lift, 0.0]).sample(
        np.arange(count), np.full(count, count), rng)  # fmt: skip
    return n, truth, SideVotes(a, b, outcome, {"duration_s": (da, db)})


def test_a_known_duration_preference_is_recovered_and_taken_out_of_the_board():
    n, truth, votes = _arena(11, per_unit=300.0)
    fit = style_bradley_terry(n, votes)
    a_side, duration = fit.coefficients
    assert a_side.name == A_SIDE and abs(a_side.points) < 3 * (a_side.high - a_side.points) / 1.96
    per_unit = duration.points / duration.unit_sd
    assert duration.low / duration.unit_sd < 300.0 < duration.high / duration.unit_sd
    assert per_unit == pytest.approx(300.0, rel=0.15)
    plain = bradley_terry(n, count_pairs(n, votes.a, votes.b, votes.outcome))
    centred = truth - truth.mean() + 1000
    assert np.abs(fit.rating - centred).mean() < 0.5 * np.abs(plain - centred).mean()
    assert fit.votes_used == len(votes.a) and fit.left_out == 0


def test_the_a_side_term_of_human_votes_is_recovered_with_an_interval_that_holds():
    hits = 0
    for seed in range(20):
        n, _, votes = _arena(seed, count=5000, a_side=20.0)
        term = position_term(n, votes)
        hits += term.low <= 20.0 <= term.high
        assert term.win_probability == pytest.approx(1 / (1 + math.exp(-term.points * NATURAL)))
    assert hits >= 17  # 95% intervals: 19 expected out of 20


def test_no_votes_leave_the_a_side_term_unestimated_rather_than_fail():
    # Until session 27 this was +0.0 [-340481, +340481]: the coefficient's near-flat prior.
    term = position_term(3, SideVotes(np.array([], int), np.array([], int), np.array([], int)))
    assert (term.points, term.low, term.high, term.win_probability) == (None, None, None, None)
    assert term.informative == 0 and not term.estimated
    assert "no informative vote" in term.note


def _both_orders(pairs, outcome):
    """Each pair shown in both orders with the same outcome code for side A."""
    a = np.array([p for s, t in pairs for p in (s, t)])
    b = np.array([p for s, t in pairs for p in (t, s)])
    return SideVotes(a, b, np.full(len(a), outcome))


@pytest.mark.parametrize(("outcome", "sign"), [(0, 1), (1, -1)])
def test_a_side_term_of_one_sided_votes_is_unbounded_with_a_hand_worked_bound(outcome, sign):
    """Every decisive vote for side A (or B), each pair in both orders: the maximum-likelihood
    term is infinite. Until session 27 it printed +2377 [-73458, +78212], a finite estimate
    whose interval called a certain effect insignificant. By symmetry the models are equal,
    so the one-sided bound b solves sigma(b)^12 = 0.025: b = logit(0.025^(1/12))."""
    pairs = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 0), (1, 3)]
    term = position_term(4, _both_orders(pairs, outcome))
    assert term.points is None and term.win_probability is None and not term.estimated
    p = 0.025 ** (1 / 12)
    expected = math.log(p / (1 - p)) / NATURAL  # 177.4 points
    bound, wp = (term.low, term.wp_low) if sign > 0 else (term.high, term.wp_high)
    assert bound == pytest.approx(sign * expected, abs=0.01)
    assert wp == pytest.approx(p if sign > 0 else 1 - p, abs=1e-6)
    assert (term.high if sign > 0 else term.low) is None
    assert term.informative == 12 and "unbounded" in term.note


def test_a_single_tie_bounds_the_a_side_term_again():
    """One tie among the one-sided votes: the likelihood now falls far out, so there is a
    finite estimate with a two-sided interval (and it is the fit's, unchanged)."""
    votes = _both_orders([(0, 1), (1, 2), (0, 2)], 0)
    votes = SideVotes(np.r_[votes.a, 0], np.r_[votes.b, 2], np.r_[votes.outcome, 2])
    term = position_term(3, votes)
    assert term.points is not None and term.low < term.points < term.high


def _real(name):
    from pathlib import Path

    from arena_core.analysis.boards import counted_frame
    from arena_core.judges.bias import measure_judges
    from arena_core.votes.read import read_votes

    data = Path(__file__).parent / "data" / f"fastchat_clean_battle_{name}.json"
    votes = read_votes([data], fastchat_arena="fc")
    return measure_judges(counted_frame(votes, "fc"), {}, {}).human_position


@pytest.mark.parametrize(("name", "points", "low", "high"),
                         [("clustering", -2.65, -58.08, 52.77), ("sts", -3.84, -54.49, 46.81)])  # fmt: skip
def test_a_bounded_term_keeps_its_numbers_on_the_real_exports(name, points, low, high):
    """The README's humans' side-A terms on the two Chatbot Arena exports (values before
    the separation check): a bounded coefficient's estimate and interval do not move."""
    term = _real(name)
    assert (term.points, term.low, term.high) == pytest.approx((points, low, high), abs=0.005)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 2), st.sampled_from([0, 1, 2])),
                min_size=1, max_size=8))  # fmt: skip
def test_unbounded_exactly_when_a_weaker_coefficient_prior_moves_the_estimate(votes):
    """An independent check of the separation test: the fitted term under two near-flat
    coefficient priors (precision 1e-6 and 1e-12). A bounded maximum-likelihood value
    barely moves; an infinite one runs off with the prior (it grows like log 1/precision)."""
    a = np.array([v[0] for v in votes])
    b = (a + np.array([v[1] for v in votes])) % 3
    side = SideVotes(a, b, np.array([v[2] for v in votes]))
    moved = _raw_term(side, 1e-12) - _raw_term(side, 1e-6)
    if position_term(3, side).points is not None:
        assert abs(moved) < 0.5
    else:
        assert abs(moved) > 100


def _raw_term(side, precision):
    rows = VoteRows.from_outcomes(side.a, side.b, side.outcome, np.ones((len(side.a), 1)))
    fit = covariate_bradley_terry(3, rows, None, CovariateParams(coef_precision=precision,
                                                                  max_iter=400))  # fmt: skip
    return float(fit.coef[0])
