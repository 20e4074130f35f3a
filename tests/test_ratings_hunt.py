"""Statistical honesty of the boards a model author and a researcher read (a defect hunt).

Each test checks one claim of the README ("How ratings are computed", "Rating quality")
against numbers worked out here, independently of the code under test.
"""

import numpy as np

from arena_core.leaderboard import BoardParams, Entrant, standings
from arena_core.ratings.counts import count_pairs
from arena_core.ratings.elo import sequential_elo


def _elo_by_hand(n, votes):
    """Sequential Elo as the README states it: K = 12 + 36 * 15 / (15 + battles played)."""
    rating, played = [1000.0] * n, [0] * n
    for a, b, score in votes:
        expected = 1.0 / (1.0 + 10.0 ** ((rating[b] - rating[a]) / 400.0))
        ka, kb = (12.0 + 36.0 * 15.0 / (15.0 + played[m]) for m in (a, b))
        rating[a], rating[b] = (
            rating[a] + ka * (score - expected),
            rating[b] - kb * (score - expected),
        )
        played[a] += 1
        played[b] += 1
    return rating


def _board(n, a, b, outcome, params):
    entrants = [Entrant(f"m{i}", f"m{i}") for i in range(n)]
    a, b, outcome = (np.asarray(x) for x in (a, b, outcome))
    elo = sequential_elo(n, (a, b, outcome))
    return standings(entrants, elo, count_pairs(n, a, b, outcome), params)


def test_elo_board_ranks_an_unbeaten_model_by_its_elo_under_plain_maximum_likelihood():
    """``--method elo --prior-weight 0``: the board ranks by sequential Elo, which is finite
    for every model that played. It took "no finite rating" from the Bradley-Terry fit:
    m0, unbeaten in 5 battles and first by Elo (1086 against 973 and 936), had no rank and a
    note "no finite rating; ci_low is the lowest rating its votes allow" beside its Elo
    (and no ci_low), and m2 was ranked first; a warning said it was listed without a rating,
    and another spoke of intervals that an Elo board does not show."""
    a = [0] * 5 + [1] * 10
    b = [1] * 5 + [2] * 10
    outcome = [0] * 5 + [0, 1] * 5
    score = {0: 1.0, 1: 0.0}
    expected = _elo_by_hand(3, [(i, j, score[o]) for i, j, o in zip(a, b, outcome, strict=True)])
    order = sorted(range(3), key=lambda m: -expected[m])
    assert order == [0, 2, 1]
    params = BoardParams(method="elo", prior_weight=0, bootstrap_rounds=200)
    result = _board(3, a, b, outcome, params)
    rows = {r.model_id: r for r in result.rows}
    for rank, m in enumerate(order, start=1):
        row = rows[f"m{m}"]
        assert row.rating == row.elo
        assert abs(row.rating - expected[m]) < 1e-9
        assert (row.rank, row.rank_worst) == (rank, rank)
        assert row.note is None and not row.unbounded
    assert [r.model_id for r in result.rows] == [f"m{m}" for m in order]
    assert not any("finite" in w or "interval" in w for w in result.warnings)
    # The Bradley-Terry board of the same votes still lists m0 as unbounded, with its bound.
    bt = {r.model_id: r for r in _board(3, a, b, outcome, BoardParams(prior_weight=0)).rows}
    assert bt["m0"].rating is None and bt["m0"].rank is None and bt["m0"].ci_low is not None


def _mle_sd_by_hand(n, a, b, outcome):
    """Maximum-likelihood ratings (points) and the standard deviations of each rating on a
    scale centred on the mean, from the Fisher information, with scipy: no code of the
    arena's."""
    from scipy.optimize import minimize

    nat = np.log(10) / 400
    score = np.select([outcome == 0, outcome == 1], [1.0, 0.0], 0.5)

    def nll(theta):
        d = theta[a] - theta[b]
        return -np.sum(score * -np.logaddexp(0, -d) + (1 - score) * -np.logaddexp(0, d))

    theta = minimize(nll, np.zeros(n), method="BFGS").x
    theta -= theta.mean()
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    info = np.zeros((n, n))
    for i, j, h in zip(a, b, p * (1 - p), strict=True):
        info[i, i] += h
        info[j, j] += h
        info[i, j] -= h
        info[j, i] -= h
    cov = np.linalg.pinv(info, rcond=1e-9)  # generalised inverse: centred ratings
    return 1000 + theta / nat, np.sqrt(np.diag(cov)) / nat


def test_a_sparse_group_that_never_met_the_rest_keeps_their_intervals():
    """``--prior-weight 0`` with two groups: a replicate whose ratings are infinite in one
    group was dropped whole, so two models that split two votes and never met the others
    (most resamples give one of them no win) took away the 95% intervals of four models
    with about 500 battles each: 615 of 1000 replicates dropped, every interval null, every rank
    band 1-4. The four models' intervals are the bootstrap's of their own group: about
    +-1.96 sd of the maximum-likelihood ratings (worked out here with scipy)."""
    rng = np.random.default_rng(0)
    true = np.array([0.0, 50.0, 100.0, -50.0])
    m = 1000
    a = rng.integers(0, 4, m)
    b = (a + rng.integers(1, 4, m)) % 4
    win = rng.random(m) < 1 / (1 + 10 ** ((true[b] - true[a]) / 400))
    outcome = np.where(win, 0, 1)
    rating, sd = _mle_sd_by_hand(4, a, b, outcome)
    both = (np.r_[a, 4, 4], np.r_[b, 5, 5], np.r_[outcome, 0, 1])  # 4 and 5 split two votes
    result = _board(6, *both, BoardParams(prior_weight=0, bootstrap_rounds=1000))
    rows = {r.model_id: r for r in result.rows}
    for m_ in range(4):
        row = rows[f"m{m_}"]
        assert abs(row.rating - rating[m_]) < 0.01
        assert row.ci_low is not None and row.ci_high is not None
        width = row.ci_high - row.ci_low
        assert 0.85 < width / (2 * 1.96 * sd[m_]) < 1.15
        assert row.ci_low < row.rating < row.ci_high
    # The sparse group has no interval (most of its replicates are infinite), and says so.
    assert rows["m4"].ci_low is None and rows["m5"].ci_low is None
    [group_2] = [w for w in result.warnings if "bootstrap replicates" in w]
    assert "in group 2" in group_2 and "none are given there" in group_2
    # The big group's bands are earned: m2 (true +100) is above m3 (true -50).
    assert rows["m2"].rank_worst < rows["m3"].rank


def test_ten_million_wins_to_one_loss_are_fitted_not_a_convergence_error():
    """A pair with millions of votes and one upset: Newton's gradient was ``wins - total *
    p``, whose rounding (1e-9 at 10^7 votes) exceeded the step tolerance (1e-10), so the
    default board of 5 million wins to one loss raised ConvergenceError, as did a fixed
    prior at 10^9. The posterior mode of W = 4 votes' worth is worked out with scipy: by
    symmetry ``theta = (d/2, -d/2)`` and ``n sigma(-d) - sigma(d) - (W/4) d/2 = 0``."""
    from scipy.optimize import brentq

    from arena_core.ratings.bt import BTParams, bradley_terry
    from arena_core.ratings.counts import PairCounts

    nat = np.log(10) / 400
    for big in (10**7, 10**9):
        wins = np.array([[0, big], [1, 0]], dtype=np.int64)
        counts = PairCounts(wins, np.zeros_like(wins), np.zeros_like(wins))

        def score(d, big=big):
            return big / (1 + np.exp(d)) - 1 / (1 + np.exp(-d)) - d / 2

        gap = brentq(score, 0.0, 100.0, xtol=1e-14) / nat
        fitted = bradley_terry(2, counts, params=BTParams(prior_weight=4))
        assert abs((fitted[0] - fitted[1]) - gap) < 1e-6
        # Every board is fitted; the maximum-likelihood gap is 400 log10(big / 1).
        for prior_weight in (None, 4, 0):
            params = BoardParams(prior_weight=prior_weight, bootstrap_rounds=100)
            entrants = [Entrant("m0", "m0"), Entrant("m1", "m1")]
            rows = {r.model_id: r for r in standings(entrants, None, counts, params).rows}
            assert rows["m0"].rating > rows["m1"].rating
            assert rows["m0"].ci_low is not None and rows["m1"].ci_high is not None
            if prior_weight == 0:
                assert abs(rows["m0"].rating - rows["m1"].rating - 400 * np.log10(big)) < 1e-6


def test_plain_maximum_likelihood_rates_a_group_whose_votes_all_decayed():
    """``--prior-weight 0 --half-life``: a group of models that last played 60 half-lives
    before the newest vote (a pair retired long ago; 7-day half-life, 14 months) has votes
    worth 2^-60 each. Its block of Newton's matrix was the gauge's 1/2 plus curvatures of
    1e-19, which round away: the board failed with LinAlgError ("Singular matrix"). Decay
    by one common factor leaves a group's maximum likelihood as it was: m2, 2-1 up on m3,
    is 400 log10(2) / 2 points above the group's centre (1000), as worked out by hand."""
    from arena_core.ratings.counts import PairCounts

    tiny = 2.0**-60
    wins = np.zeros((4, 4))
    wins[0, 1], wins[1, 0] = 30.0, 20.0  # the recent group: m0 30-20 up on m1
    wins[2, 3], wins[3, 2] = 2 * tiny, tiny  # the old group
    fitted = PairCounts(wins, np.zeros((4, 4)), np.zeros((4, 4)))
    whole = PairCounts(np.round(wins / np.where(wins >= 1, 1, tiny)).astype(np.int64),
                       np.zeros((4, 4), np.int64), np.zeros((4, 4), np.int64))  # fmt: skip
    entrants = [Entrant(f"m{i}", f"m{i}") for i in range(4)]
    params = BoardParams(prior_weight=0, half_life_days=7.0, bootstrap_rounds=200)
    result = standings(entrants, None, whole, params, fit_counts=fitted)
    rows = {r.model_id: r for r in result.rows}
    half = 200 * np.log10(2)
    assert abs(rows["m2"].rating - (1000 + half)) < 1e-6
    assert abs(rows["m3"].rating - (1000 - half)) < 1e-6
    assert abs(rows["m0"].rating - (1000 + 200 * np.log10(1.5))) < 1e-6
    assert rows["m0"].ci_low is not None and rows["m2"].ci_low is None


def test_a_bootstrap_that_cannot_vary_gives_no_interval_and_says_why():
    """``--prior-weight 0`` on one tie (or a hundred ties): every resample is the same votes,
    so every replicate rates both models 1000 and the percentile interval was
    "1000 [1000, 1000]", a certainty no vote gives. Now no interval, with a warning naming
    the models; a board whose resamples vary keeps its intervals (session 32)."""
    params = BoardParams(prior_weight=0, bootstrap_rounds=200)
    for ties in (1, 100):
        result = _board(2, [0] * ties, [1] * ties, [2] * ties, params)
        assert all(r.ci_low is None and r.ci_high is None for r in result.rows)
        assert all(r.rating == 1000.0 for r in result.rows)
        assert any("no interval" in w and "m0, m1" in w for w in result.warnings)
    mixed = _board(2, [0] * 30, [1] * 30, [0, 1, 2] * 10, params)
    assert all(r.ci_low < r.rating < r.ci_high for r in mixed.rows)
    assert not any("no interval" in w for w in mixed.warnings)
    # An unbeaten model is outside the replicates' fits (its bound is its interval): it is
    # "no finite rating", never also "no interval" (review of session 32).
    unbeaten = _board(3, [0] * 10 + [1] * 20, [1] * 10 + [2] * 20, [0] * 10 + [0, 1] * 10, params)
    assert any("no finite" in w for w in unbeaten.warnings)
    assert not any("no interval" in w for w in unbeaten.warnings)
