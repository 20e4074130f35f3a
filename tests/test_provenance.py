"""The provenance ladder: its rules, the weights it compares, and what they mean on a board."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.leaderboard import BoardParams, Entrant, standings
from arena_core.provenance import (
    ARENA,
    ARENA_THIN,
    BLENDED,
    LADDER,
    PRIOR,
    UNRATED_NOTE,
    prior_precision,
    rung,
    votes_information,
    votes_share,
)
from arena_core.ratings.counts import PairCounts, count_pairs
from arena_core.ratings.elo import sequential_elo
from arena_core.simulation.synthetic import Truth, evenly_spread, uniform_pairs

SOURCE = "test fixture"
#: ln(10) / 400: natural log-odds per rating point, written out for the hand computations.
PER_POINT = math.log(10) / 400


def half_win_log_likelihood(counts: PairCounts, theta: np.ndarray) -> float:
    """Bradley-Terry with draws as half wins, written afresh with loops."""
    total = 0.0
    n = len(theta)
    for i in range(n):
        for j in range(n):
            w = counts.wins[i, j] + 0.5 * (counts.ties[i, j] + counts.both_bad[i, j])
            if w:
                total += w * -math.log1p(math.exp(-(theta[i] - theta[j])))
    return total


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 5), phi=st.floats(0.5, 2.0))
def test_information_is_the_curvature_of_the_likelihood(seed, n, phi):
    """Each model's information is minus the second derivative of the log-likelihood in its
    own strength (finite differences of an independent likelihood), over the dispersion."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, 30)
    b = (a + rng.integers(1, n, 30)) % n
    counts = count_pairs(n, a, b, rng.integers(0, 4, 30))
    ratings = rng.normal(1000, 150, n)
    info = votes_information(counts, ratings, phi)
    theta, h = (ratings - 1000) * PER_POINT, 1e-4
    for i in range(n):
        step = np.eye(n)[i] * h
        second = (half_win_log_likelihood(counts, theta + step) - 2 * half_win_log_likelihood(
            counts, theta) + half_win_log_likelihood(counts, theta - step)) / h**2  # fmt: skip
        assert info[i] == pytest.approx(-second / phi, rel=1e-4, abs=1e-6)


def test_information_of_hand_worked_votes():
    counts = PairCounts.zeros(3)
    counts.wins[0, 1], counts.ties[0, 2], counts.ties[2, 0] = 4, 2, 2
    # Model 0: 4 votes against an equal (1/4 each) and 2 against one 400 points below
    # (p = 10/11, p (1 - p) = 10/121): 1 + 20/121.
    info = votes_information(counts, np.array([1000.0, 1000.0, 600.0]))
    assert info == pytest.approx([1 + 20 / 121, 1.0, 20 / 121])
    assert np.isnan(votes_information(counts, np.array([np.nan, 1000.0, 600.0]))[0])


def test_the_priors_precision_in_each_mode():
    assert prior_precision(4.0, None) == 1.0  # W / 4
    assert prior_precision(0.0, 55.0) == 0.0  # maximum likelihood: no prior in the fit
    # Fitted spread of 100 points: 100 x ln 10 / 400 = 0.575646 log-odds; 1 / 0.331369 = 3.01778.
    assert prior_precision(None, 100.0) == pytest.approx(3.01778, rel=1e-5)
    assert prior_precision(None, None) == math.inf  # nothing fitted: the prior is all there is


def test_votes_share():
    assert votes_share(1.0, 3.0) == 0.25 and votes_share(2.0, 0.0) == 1.0
    assert votes_share(2.0, math.inf) == 0.0
    assert votes_share(float("nan"), 1.0) is None and votes_share(0.0, 0.0) is None


flags = st.booleans()
amounts = st.floats(0, 1e4, allow_nan=False)


@given(published=flags, battles=st.integers(0, 10**6), information=amounts, precision=amounts,
       established=flags)  # fmt: skip
def test_the_ladders_rules(published, battles, information, precision, established):
    got = rung(published=published, battles=battles, information=information,
               precision=precision, established=established)  # fmt: skip
    assert got in (*LADDER, None)
    if not battles:  # no votes: a published figure or nothing
        assert got == (PRIOR if published else None)
    elif not published or precision == 0:  # votes alone make the rating
        assert got == (ARENA if established else ARENA_THIN)
    else:  # both: blended exactly when the votes weigh at least half
        assert got in (PRIOR, BLENDED)
        assert (got == BLENDED) == (votes_share(information, precision) >= 0.5)


@given(precision=st.floats(1e-3, 1e3), a=amounts, b=amounts)
def test_more_information_never_climbs_back_down(precision, a, b):
    low, high = sorted((a, b))
    ladder = [rung(published=True, battles=1, information=x, precision=precision,
                   established=False) for x in (low, high)]  # fmt: skip
    assert ladder != [BLENDED, PRIOR]


def board(entrants, a, b, o, params):
    n = len(entrants)
    counts = count_pairs(n, np.asarray(a), np.asarray(b), np.asarray(o))
    return standings(entrants, sequential_elo(n, (np.asarray(a), np.asarray(b), np.asarray(o))),
                     counts, params)  # fmt: skip


def test_rows_carry_the_ladder_the_prior_and_the_shift():
    entrants = [Entrant("p", "P", prior_rating=1100, prior_source=SOURCE), Entrant("x", "X"),
                Entrant("y", "Y"), Entrant("idle", "Idle"),
                Entrant("idle-prior", "Idle prior", prior_rating=950, prior_source=SOURCE)]  # fmt: skip
    rng = np.random.default_rng(3)
    a, b = uniform_pairs(3, 60, rng)
    o = rng.integers(0, 4, 60)
    params = BoardParams(prior_weight=8.0)  # precision 2: blended from 8 votes between equals
    few = {r.model_id: r for r in board(entrants, a[:4], b[:4], o[:4], params).rows}
    many = board(entrants, a, b, o, params)
    rows = {r.model_id: r for r in many.rows}
    assert few["p"].provenance == PRIOR and 0 < few["p"].votes_share < 0.5
    assert rows["p"].provenance == BLENDED and rows["p"].votes_share > 0.5
    assert rows["p"].prior_rating == 1100 and rows["p"].prior_source == SOURCE
    assert rows["p"].prior_shift == pytest.approx(rows["p"].rating - 1100)
    # The share is I / (I + P), I from the rows' own ratings and the fitted dispersion.
    ratings = np.array([rows[e.id].rating for e in entrants[:3]] + [1000.0, 950.0])
    counts = count_pairs(5, a, b, o)
    info = sum(counts.battles()[0, j] * _pq(ratings[0] - ratings[j]) for j in (1, 2))
    info /= many.fit.dispersion
    assert rows["p"].votes_share == pytest.approx(info / (info + 2.0), rel=1e-9)
    assert rows["x"].provenance == ARENA_THIN and rows["x"].prior_rating is None
    idle, idle_prior = rows["idle"], rows["idle-prior"]
    assert (idle.provenance, idle.rating, idle.note) == (None, None, UNRATED_NOTE)
    assert (idle_prior.provenance, idle_prior.rating, idle_prior.votes_share) == (PRIOR, 950, 0.0)
    loose = BoardParams(prior_weight=8.0, established_ci_width=1000.0, established_min_battles=10)
    settled = {r.model_id: r for r in board(entrants, a, b, o, loose).rows}
    assert settled["x"].provenance == ARENA and settled["p"].provenance == BLENDED
    mle = {r.model_id: r for r in board(entrants, a, b, o, BoardParams(prior_weight=0)).rows}
    assert mle["p"].provenance == ARENA_THIN and mle["p"].votes_share == 1.0
    assert mle["p"].prior_shift == pytest.approx(mle["p"].rating - 1100)
    assert mle["idle-prior"].provenance == PRIOR and mle["idle-prior"].rating == 950


def _pq(diff_points: float) -> float:
    p = 1.0 / (1.0 + 10 ** (-diff_points / 400))
    return p * (1.0 - p)


@pytest.mark.parametrize("prior_weight", [None, 20.0])
def test_blended_means_the_votes_moved_the_rating_most_of_the_way(prior_weight):
    """Known truth: a model whose published prior is 300 points too high, five honest
    opponents without one. When the ladder first says blended, the rating has moved from the
    prior towards the truth by about the votes' share (half the way or more), measured
    against the opponents so the board's pinning does not matter; one step earlier, while it
    still said prior, the rating was nearer its prior. Seeded: 40 arenas per setting."""
    n, gap = 6, 300.0
    truth = Truth(evenly_spread(n, 300))
    moved, shares, before = [], [], []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        entrants = [Entrant("m0", "m0", prior_rating=truth.ratings[0] + gap, prior_source=SOURCE)]
        entrants += [Entrant(f"m{i}", f"m{i}") for i in range(1, n)]
        a, b = uniform_pairs(n, 400, rng)
        o = truth.sample(a, b, rng)
        last = None
        for k in range(5, 401, 5):
            rows = {r.model_id: r for r in board(entrants, a[:k], b[:k], o[:k],
                                                 BoardParams(prior_weight=prior_weight)).rows}  # fmt: skip
            if any(r.rating is None for r in rows.values()):
                continue
            drift = np.mean([rows[f"m{i}"].rating - truth.ratings[i] for i in range(1, n)])
            fraction = (entrants[0].prior_rating - (rows["m0"].rating - drift)) / gap
            if rows["m0"].provenance == BLENDED:
                moved.append(fraction)
                shares.append(rows["m0"].votes_share)
                before += [last] if last is not None else []
                break
            last = fraction
    assert len(moved) == 40  # every arena reaches blended within 400 votes
    # Half the way, give or take the noise of 40 arenas (their fractions have a standard
    # deviation of 0.13 with W = 20 and 0.40 fitted: the mean's standard error is 0.02 to
    # 0.06); the share predicts it, and one step before it fell short.
    assert np.mean(moved) >= 0.45 and abs(np.mean(moved) - np.mean(shares)) < 0.15
    assert np.mean(before) < 0.5
