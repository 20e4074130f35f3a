"""The sampler: valid pairs, random sides, and each of its weighings checked on its own."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.matchmaking import (
    MatchParams,
    NoPairError,
    Recent,
    Rules,
    draw_pair,
    fisher_covariance,
    interval_widths,
    snapshot,
)

#: Natural log-odds per rating point, written out here rather than imported.
PER_POINT = math.log(10) / 400


def fit(ratings, battles, params=None, prior_weight=4.0):
    ratings = np.asarray(ratings, dtype=float)
    battles = np.asarray(battles, dtype=float)
    cov = fisher_covariance(ratings, battles, None, prior_weight)
    return snapshot(ratings, cov, battles, params), battles


def even_battles(n, each):
    b = np.full((n, n), float(each))
    np.fill_diagonal(b, 0)
    return b


def test_fisher_covariance_of_two_equal_models_by_hand():
    # 100 battles at p = 1/2 carry 100 * 1/4 = 25; 4 virtual draws at the prior add 4 * 1/4 = 1
    # per model. Information [[26, -25], [-25, 26]], determinant 51: variance 26/51, covariance
    # 25/51, so the gap has variance 2/51.
    cov = fisher_covariance([1000.0, 1000.0], [[0, 100], [100, 0]])
    np.testing.assert_allclose(cov, np.array([[26, 25], [25, 26]]) / 51, rtol=1e-12)


def test_fisher_covariance_without_prior_pins_the_mean():
    # p = 1/(1 + 10^(-100/400)) for a 100-point gap; 50 battles carry 50 p (1 - p); the mean is
    # pinned, so each strength is half the gap: variance 1 / (4 * 50 p (1 - p)).
    p = 1 / (1 + 10 ** (-100 / 400))
    cov = fisher_covariance([1050.0, 950.0], [[0, 50], [50, 0]], prior_weight=0.0)
    assert cov[0, 0] == pytest.approx(1 / (4 * 50 * p * (1 - p)), rel=1e-9)
    assert cov[0, 0] + cov[1, 1] - 2 * cov[0, 1] == pytest.approx(1 / (50 * p * (1 - p)), rel=1e-9)


def test_interval_widths_by_hand():
    # Two independent strengths of variance v: theta_1 - mean = (theta_1 - theta_2) / 2 has
    # variance v / 2; the 95% width is 2 * 1.96 * sqrt(v / 2) log-odds, in points / PER_POINT.
    v = 0.01
    widths = interval_widths(np.eye(2) * v)
    assert widths == pytest.approx([2 * 1.959964 * math.sqrt(v / 2) / PER_POINT] * 2, rel=1e-6)


def test_draws_are_distinct_candidates_with_either_side_first_and_seeded():
    snap, battles = fit([1000, 1010, 1020, 1030, 1040], even_battles(5, 30))
    draws = [draw_pair(snap, battles, [0, 1, 2, 3], np.random.default_rng(s)) for s in range(600)]
    assert all(a != b and {a, b} <= {0, 1, 2, 3} for a, b in draws)
    first = Counter(a < b for a, b in draws)
    assert 240 < first[True] < 360  # the side is a coin flip: 300 +- 5 sd
    again = [draw_pair(snap, battles, [0, 1, 2, 3], np.random.default_rng(s)) for s in range(600)]
    assert again == draws
    with pytest.raises(NoPairError):
        draw_pair(snap, battles, [2], np.random.default_rng(0))


def test_drawing_leaves_its_inputs_untouched():
    snap, battles = fit([1000, 1100, 1200], even_battles(3, 40))
    before = {k: np.copy(v) for k, v in vars(snap).items() if isinstance(v, np.ndarray)}
    later = battles + np.array([[0, 9, 0], [9, 0, 0], [0, 0, 0]])
    kept = later.copy()
    recent = Recent(np.array([0, 50, 50]), 50)
    for s in range(50):
        draw_pair(snap, later, range(3), np.random.default_rng(s), recent=recent)
    assert all(np.array_equal(before[k], getattr(snap, k)) for k in before)
    assert np.array_equal(later, kept)


def test_close_calls_get_the_votes_while_the_order_is_unsettled():
    # Models 0 and 1 are 10 points apart with overlapping intervals; 2 and 3 sit far away.
    snap, battles = fit([1000, 1010, 1300, 1600], even_battles(4, 20))
    assert snap.interval_share == 0.0  # the ranking is not settled yet: all draws chase it
    rng = np.random.default_rng(1)
    pairs = Counter(frozenset(draw_pair(snap, battles, range(4), rng)) for _ in range(1000))
    assert pairs[frozenset((0, 1))] > 0.8 * 1000
    assert pairs[frozenset((2, 3))] < 0.02 * 1000


def test_battles_since_the_fit_move_votes_off_the_pair_that_had_them():
    snap, battles = fit([1000, 1010, 1020, 1300], even_battles(4, 20))
    rng = np.random.default_rng(2)
    fresh = Counter(frozenset(draw_pair(snap, battles, range(4), rng)) for _ in range(1000))
    later = battles.copy()
    later[0, 1] = later[1, 0] = battles[0, 1] + 400
    after = Counter(frozenset(draw_pair(snap, later, range(4), rng)) for _ in range(1000))
    assert after[frozenset((0, 1))] < 0.5 * fresh[frozenset((0, 1))]


def test_a_settled_order_turns_the_votes_to_the_widest_interval():
    # Far apart and well measured, except model 3, which has few battles: once the order
    # is settled the interval draws go to the model whose interval is widest.
    battles = even_battles(4, 400)
    battles[3, :3] = battles[:3, 3] = 30
    snap, battles = fit([700, 1000, 1300, 1600], battles)
    assert snap.interval_share == 1.0
    rng = np.random.default_rng(3)
    draws = [draw_pair(snap, battles, range(4), rng) for _ in range(1000)]
    assert np.mean([3 in d for d in draws]) > 0.9


def test_the_exact_expected_rho_keeps_the_votes_on_the_order_longer():
    # Twenty models 20 points apart with 10 battles each pair: the shortcut 2 sum P counts
    # half the displacement, so it calls the order nearly settled and turns half the draws to
    # the intervals; the exact E[sum d^2] keeps them all on the order.
    ratings = np.linspace(800, 1180, 20)
    shortcut, _ = fit(ratings, even_battles(20, 10))
    exact, _ = fit(ratings, even_battles(20, 10), MatchParams(exact_rho=True))
    assert exact.interval_share == 0.0 and shortcut.interval_share > 0.4


def newcomer_battles(params=None):
    """Votes until model 7 (no battles among 19 models with 25 each) has 10, and its opponents."""
    n = 20
    battles = even_battles(n, 25)
    battles[7, :] = battles[:, 7] = 0
    snap, battles = fit(np.linspace(800, 1200, n), battles, params)
    rng = np.random.default_rng(4)
    opponents, votes = [], 0
    while len(opponents) < 10:
        a, b = draw_pair(snap, battles, range(n), rng, params=params)
        votes += 1
        if 7 in (a, b):
            other = b if a == 7 else a
            opponents.append(other)
            battles[7, other] += 1
            battles[other, 7] += 1
    return votes, opponents


def test_a_newcomer_is_explored_first_against_opponents_across_the_board():
    votes, opponents = newcomer_battles()
    assert votes <= 30
    assert min(opponents) < 5 and max(opponents) > 14
    # The newcomer's own draws (every draw here) meet a new opponent each time; the
    # information draws it also wins (its interval is the widest) may repeat one.
    votes, opponents = newcomer_battles(MatchParams(newcomer_share=1.0))
    assert votes == 10 and len(set(opponents)) == 10


def test_the_model_the_draw_is_about_is_shown_on_either_side_half_the_time():
    """Which side is "A" is a coin flip, whoever the draw picked first: a newcomer (always
    drawn first here) showing up as "A" more often would tell a visitor which voice is new.
    Counting ``a < b`` missed a sampler that always put its first pick on side A."""
    battles = even_battles(5, 15)
    battles[4] = battles[:, 4] = 0  # model 4 is new: every draw is its (newcomer_share=1)
    snap, _ = fit([1000] * 5, battles)
    params = MatchParams(newcomer_share=1.0)
    draws = [draw_pair(snap, battles, range(5), np.random.default_rng(s), params=params)
             for s in range(600)]  # fmt: skip
    assert all(4 in d for d in draws)
    on_a = sum(a == 4 for a, _ in draws)
    assert 240 < on_a < 360  # 300 +- 5 sd


def test_a_starved_model_is_lifted_to_its_share_and_a_crowded_one_held_back():
    snap, battles = fit([1000, 1005, 1010, 1400, 1800], even_battles(5, 40))
    rng = np.random.default_rng(5)
    plain = [draw_pair(snap, battles, range(5), rng) for _ in range(2000)]
    # Model 4 is far from everyone, so the ranking hardly needs it; the window says it is
    # starved (2 battles in 100 votes, its due is 2 * 100 / 5 = 40).
    recent = Recent(np.array([60, 60, 60, 18, 2]), 100)
    lifted = [draw_pair(snap, battles, range(5), rng, recent=recent) for _ in range(2000)]
    assert np.mean([4 in d for d in plain]) < 0.1
    assert np.mean([4 in d for d in lifted]) >= 0.4 * 0.95  # drawn first with its due, 2/5
    crowded = Recent(np.array([150, 10, 10, 10, 20]), 100)  # model 0: 1.5 battles per vote
    held = [draw_pair(snap, battles, range(5), rng, recent=crowded) for _ in range(2000)]
    assert np.mean([0 in d for d in held]) < np.mean([0 in d for d in plain]) - 0.1


def test_a_starved_model_climbs_back_at_lift_times_its_share():
    # Ten models, model 9 far above the rest: the ranking hardly needs it. The window
    # (200 votes) saw it in 10 battles where it is due 2 * 200 / 10 = 40, under the floor.
    ratings = [1000 + 5 * k for k in range(9)] + [1600]
    snap, battles = fit(ratings, even_battles(10, 40))
    recent = Recent(np.array([43] * 9 + [10]), 200)
    share = {}
    for lift in (1.0, 2.0):
        params = MatchParams(floor=0.6, lift=lift)
        rng = np.random.default_rng(11)
        draws = [draw_pair(snap, battles, range(10), rng, recent=recent, params=params)
                 for _ in range(3000)]  # fmt: skip
        share[lift] = np.mean([9 in d for d in draws])
    # The order is unsettled (no interval draws), and a quarter of the ranking draws sample
    # the posterior, which leaves model 9 alone; the rest draw it first with lift * 2/10.
    # Uniform pairs would give it 2/10 of the draws either way.
    assert share[1.0] == pytest.approx(0.75 * 0.2, abs=0.03)
    assert share[2.0] == pytest.approx(0.75 * 0.4, abs=0.03)


def test_match_params_are_validated():
    with pytest.raises(ValueError, match="floor must be in"):
        MatchParams(floor=1.5)
    with pytest.raises(ValueError, match="lift must be >= 1"):
        MatchParams(lift=0.5)
    with pytest.raises(ValueError, match="cap must be >= 1"):
        MatchParams(cap=0.5)
    with pytest.raises(ValueError, match="window and refit_votes >= 1"):
        MatchParams(window=0)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 9).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(600, 1400), min_size=n, max_size=n),
            st.lists(st.integers(0, 60), min_size=n * n, max_size=n * n),
            st.sets(st.integers(0, n - 1), min_size=2),
            st.lists(st.floats(0.1, 10), min_size=n, max_size=n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3),
            st.lists(st.integers(0, 40), min_size=n, max_size=n),
        )
    ),
    st.integers(0, 2**32 - 1),
)
def test_any_state_gives_two_allowed_candidates_or_says_there_is_none(case, seed):
    ratings, flat, candidates, weights, never, recent = case
    n = len(ratings)
    battles = np.asarray(flat, dtype=float).reshape(n, n)
    battles = np.triu(battles, 1) + np.triu(battles, 1).T
    snap, _ = fit(ratings, battles)
    rules = Rules.build(n, weights, [g for g in never if g[0] != g[1]])
    rng = np.random.default_rng(seed)
    window = Recent(np.asarray(recent), max(1, sum(recent) // 2))
    allowed = [(a, b) for a in candidates for b in candidates if not rules.blocked[a, b]]
    if not allowed:
        with pytest.raises(NoPairError):
            draw_pair(snap, battles, sorted(candidates), rng, recent=window, rules=rules)
        return
    a, b = draw_pair(snap, battles + 3, sorted(candidates), rng, recent=window, rules=rules)
    assert a != b and {a, b} <= candidates and not rules.blocked[a, b]
