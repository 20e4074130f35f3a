"""``arena_core.matchmaking.track.advance``: the votes since the fit folded into the snapshot
(an assumed-density-filtering step), close to a refit, and only when asked for."""

import numpy as np
import pytest

from arena_core.matchmaking import MatchParams, draw_pair, fit_snapshot
from arena_core.matchmaking.track import advance
from arena_core.simulation.arena import SimArena
from arena_core.simulation.matchmaking import Setup, run_arena

TRACK = MatchParams(track_votes=True)


def _scores(counts):
    return counts.wins + 0.5 * (counts.ties + counts.both_bad)


def _fit(arena):
    board = arena.setup.board
    return fit_snapshot(arena.counts, arena.prior, prior_weight=board.prior_weight, params=TRACK)[1]


@pytest.mark.parametrize(("before", "since"), [(200, 25), (1000, 100)])
def test_advancing_the_snapshot_comes_close_to_a_refit(before, since):
    arena = SimArena(Setup(votes=before + since), "uniform", 3)
    arena.play(before)
    old = _fit(arena)
    arena.play(since)
    new = _fit(arena)
    moved = advance(old, arena.counts.battles(), _scores(arena.counts), TRACK)

    def err(ratings):
        d = ratings - new.ratings
        return np.abs(d - d.mean()).mean()

    assert err(moved.ratings) < 0.15 * err(old.ratings)
    off = ~np.eye(len(new.s2), dtype=bool)
    assert np.abs(moved.s2 / new.s2 - 1)[off].mean() < 0.5 * np.abs(old.s2 / new.s2 - 1)[off].mean()
    assert np.array_equal(moved.battles, arena.counts.battles())


def test_no_vote_since_the_fit_leaves_the_snapshot_as_it_is():
    arena = SimArena(Setup(votes=100), "uniform", 0)
    arena.play(100)
    snap = _fit(arena)
    assert advance(snap, arena.counts.battles(), _scores(arena.counts), TRACK) is snap


def _played(seed: int):
    """The fit of a 20-model arena after 300 uniformly paired votes."""
    arena = SimArena(Setup(votes=300), "uniform", seed)
    arena.play(300)
    return _fit(arena)


def _wins(snap, winner: int, loser: int, times: int):
    """The snapshot's battle and score tables with ``winner`` beating ``loser`` ``times`` more."""
    battles, scores = snap.battles.copy(), snap.scores.copy()
    battles[winner, loser] += times
    battles[loser, winner] += times
    scores[winner, loser] += float(times)
    return battles, scores


def test_a_win_moves_the_winner_up_and_shrinks_the_pair_variance():
    snap = _played(1)
    battles, scores = _wins(snap, 2, 5, 3)
    moved = advance(snap, battles, scores, TRACK)
    assert moved.ratings[2] - moved.ratings[5] > snap.ratings[2] - snap.ratings[5]
    assert moved.s2[2, 5] < snap.s2[2, 5]
    assert np.allclose(moved.s2, moved.s2.T)


def test_the_draws_ignore_the_scores_unless_tracking_is_on():
    snap = _played(2)
    battles, scores = _wins(snap, 0, 1, 5)
    draws = [draw_pair(snap, battles, range(20), np.random.default_rng(s)) for s in range(30)]
    again = [draw_pair(snap, battles, range(20), np.random.default_rng(s), scores=scores)
             for s in range(30)]  # fmt: skip
    assert draws == again


def test_a_fresher_snapshot_in_the_simulation_keeps_the_board_measured_at_refits():
    setup = Setup(votes=200, report_at=(100,))
    plain = run_arena(setup, "matchmaking", 0)
    fresher = run_arena(Setup(votes=200, report_at=(100,), snapshot_votes=5), "matchmaking", 0)
    tracked = run_arena(Setup(votes=200, report_at=(100,), match=TRACK), "matchmaking", 0)
    for run in (plain, fresher, tracked):
        assert run["intervals"] == 20
    assert (plain["min_battles"], plain["max_battles"]) != (0, 0)


@pytest.mark.parametrize("exact", [False, True])
def test_the_advanced_values_are_the_samplers_own_formulas(exact):
    from arena_core.matchmaking.value import expected_spearman, rank_value, shortcut_spearman

    params = MatchParams(track_votes=True, exact_rho=exact)
    arena = SimArena(Setup(votes=400), "uniform", 4)
    arena.play(300)
    snap = _fit(arena)
    arena.play(100)
    moved = advance(snap, arena.counts.battles(), _scores(arena.counts), params)
    rank = rank_value(moved.gap, moved.s2, moved.h, 0, params.sharpness)
    np.fill_diagonal(rank, 0.0)
    assert np.allclose(moved.rank, rank)
    rho = (expected_spearman if exact else shortcut_spearman)(moved.ratings, moved.gap, moved.s2)
    unsettled = (1.0 - rho) / (1.0 - params.settled_rho)
    assert moved.interval_share == pytest.approx(float(np.clip(2.0 * (1.0 - unsettled), 0, 1)))
