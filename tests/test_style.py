"""Style control for speech and the A-side term: hand-worked covariates and seeded simulations."""

import math

import numpy as np
import pytest

from arena_core.ratings.bt import bradley_terry
from arena_core.ratings.counts import count_pairs
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


def test_no_votes_leave_the_a_side_term_unknown_rather_than_fail():
    term = position_term(3, SideVotes(np.array([], int), np.array([], int), np.array([], int)))
    assert term.points == 0.0 and term.low < -10_000 and term.high > 10_000
