"""Defects found by the analysis hunt: each test checks a printed statistic against an
independent computation or a seeded simulation with known truth."""

import numpy as np
import pytest

from arena_core.ratings.style import SideVotes, style_bradley_terry, style_covariates


def _three_models_one_rate_unknown(seed=0, n=300):
    """Three models; durations vary; every engine runs at 24 kHz, but model 2's rate is
    unknown (``native_rate`` is None until the model's own audio has been seen)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(1, 3, n)) % 3
    outcome = rng.integers(0, 2, n)
    columns = {
        "model_a_duration_s": rng.uniform(2, 4, n),
        "model_b_duration_s": rng.uniform(2, 4, n),
        "model_a_sample_rate": np.where(a == 2, np.nan, 24000.0),
        "model_b_sample_rate": np.where(b == 2, np.nan, 24000.0),
    }
    return a, b, outcome, columns


def test_a_feature_not_fitted_for_no_variation_leaves_no_vote_out():
    """A covariate the fit drops as "no variation" must not cost the votes where it is
    unknown: before the fix 202 of 300 votes were left out and model 2, all of whose votes
    lacked the (constant) sample rate, was not rated by the style-controlled board."""
    a, b, outcome, columns = _three_models_one_rate_unknown()
    votes = SideVotes.from_columns(a, b, outcome, columns)
    _, names, keep, _, missing, not_fitted = style_covariates(votes)
    assert not_fitted["sample_rate"] == "no variation" and "sample_rate" not in names
    # Independent count: only duration is fitted, and it is known on every vote.
    assert keep.all() and missing["sample_rate"] == int(((a == 2) | (b == 2)).sum())
    fit = style_bradley_terry(3, votes)
    assert fit.votes_used == len(a) and fit.left_out == 0
    assert fit.played.all()
    assert [c.name for c in fit.coefficients] == ["a_side", "duration_s"]


def test_a_feature_that_varies_only_where_another_is_unknown_is_still_not_fitted():
    """The variation is checked again on the votes kept: lufs varies on the votes whose
    duration is unknown and is constant on the rest, so it is not fitted."""
    nan = np.nan
    votes = SideVotes(
        np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2]), np.zeros(4, dtype=int),
        {"duration_s": (np.array([3.0, 1.0, 2.0, nan]), np.array([1.0, 3.0, 1.0, 2.0])),
         "lufs": (np.array([-23.0, -23.0, -23.0, -20.0]), np.full(4, -23.0))},
    )  # fmt: skip
    x, names, keep, _, _, not_fitted = style_covariates(votes)
    assert keep.tolist() == [True, True, True, False]
    assert names == ("duration_s",) and not_fitted == {
        "speech_rate": "no values", "sample_rate": "no values", "lufs": "no variation"}  # fmt: skip
    assert x.shape == (3, 1)


def test_a_vote_left_out_only_by_a_covariate_dropped_later_comes_back():
    """Review of session 32: lufs is unknown on vote 4 and varies only on vote 3, where the
    duration is unknown. Dropped on the second check, it had already left vote 4 out."""
    nan = np.nan
    votes = SideVotes(
        np.array([0, 1, 2, 0, 1]), np.array([1, 2, 0, 2, 0]), np.zeros(5, dtype=int),
        {"duration_s": (np.array([3.0, 1.0, 2.0, nan, 2.5]), np.array([1.0, 3.0, 1.0, 2.0, 1.0])),
         "lufs": (np.array([-23.0, -23.0, -23.0, -20.0, nan]), np.full(5, -23.0))},
    )  # fmt: skip
    x, names, keep, _, _, not_fitted = style_covariates(votes)
    assert names == ("duration_s",) and not_fitted["lufs"] == "no variation"
    assert keep.tolist() == [True, True, True, False, True] and x.shape == (4, 1)


def _null_flag_rate(voters: int, votes_each: int, pairs: int, runs: int, seed: int) -> float:
    """Share of voters the anomalous-voter test flags when every voter votes alike (the
    null): outcomes drawn from one law per arena, voters interleaved at random."""
    from arena_core.integrity.anomaly import sequential_test
    from arena_core.integrity.pvalue import tiebreak

    rng = np.random.default_rng(seed)
    law = np.array([0.7, 0.2, 0.07, 0.03])
    flagged = 0
    for _ in range(runs):
        n = voters * votes_each
        voter = rng.permutation(np.repeat(np.arange(voters), votes_each))
        pair = rng.integers(0, pairs, n)
        outcome = rng.choice(4, size=n, p=law)
        ts = rng.integers(0, 2**52, n)
        flagged += len(
            sequential_test(pair, outcome, voter, np.ones(n, bool), tiebreak(ts)).flagged_at
        )
    return flagged / (voters * runs)


def test_light_voters_are_flagged_at_most_alpha_under_the_null():
    """The regime the README measures (voters of tens of votes, a reference that keeps
    growing): the test holds its level (alpha 0.01; checkpoints 5, 10, 20, 40 at 0.001)."""
    rate = _null_flag_rate(voters=200, votes_each=40, pairs=3, runs=10, seed=5)
    assert rate <= 0.01


@pytest.mark.xfail(strict=True, reason="known limitation, documented in the README: a voter's "
                   "many votes on a pair are compared with the same few reference votes (one per "
                   "other voter), so their p-values are dependent and Fisher's sum overshoots")  # fmt: skip
def test_heavy_honest_voters_of_a_small_arena_are_flagged_at_most_alpha():
    """10 identical voters casting 320 votes each over 10 pairs: a pair's reference holds at
    most 9 votes (one per other voter), and every later vote of a voter is compared with
    those same 9. Measured: 3.3% of honest voters flagged on this seed (33 of 1000; 3.2-6.3%
    on seeds 0-13, mean 4.7%) against alpha = 1%
    (10 x 1280 votes: 8% and 16% on two seeds). Including a voter's own earlier votes in its reference makes
    the p-values independent (0.6%, 0.0%) but drops the TPR of a 5 x 160 campaign from 0.98
    to 0.19, so the rule is kept and the limit is stated instead."""
    rate = _null_flag_rate(voters=10, votes_each=320, pairs=10, runs=100, seed=2)
    assert rate <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / 1000)
