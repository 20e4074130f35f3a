"""Hunt over the matchmaker and ``simulate``: odd arenas, odd options, honest figures.

Hunted: draws on degenerate arenas (two models, one allowed pair, every other model
unavailable, weights at the registry's bounds, extreme ratings and counts), determinism
(the same seed gives the same pairs, whatever the order the candidates come in), and the
``simulate`` command at the edges of its options: a newcomer that joins off the refit
grid or after the last vote, a target reached only at the last refit, and savings
computed over seeds one sampler missed. The figures a researcher reads must say what
happened: a measure never taken is not "never reached".
"""

import contextlib
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.cli import main
from arena_core.matchmaking import (
    NoPairError,
    Recent,
    Rules,
    draw_pair,
    fisher_covariance,
    snapshot,
)
from arena_core.simulation import matchmaking as mm
from arena_core.simulation.arena import SimArena
from arena_core.simulation.matchmaking import Setup, run_arena, run_newcomer


def _snap(ratings, battles):
    cov = fisher_covariance(ratings, battles, None, 4.0)
    return snapshot(ratings, cov, battles)


def _run_cli(argv, capsys):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["simulate", "--format", "json", "--seeds", "1", *argv])
    return code, out.getvalue(), capsys.readouterr().err


# -- the sampler on degenerate arenas ---------------------------------------------------


def test_one_allowed_pair_among_three_is_the_only_pair_drawn():
    battles = np.zeros((3, 3))
    snap = _snap([1000.0, 1000.0, 1000.0], battles)
    rules = Rules.build(3, None, [[0, 1], [0, 2]])  # model 0 may meet no one
    rng = np.random.default_rng(0)
    pairs = {frozenset(draw_pair(snap, battles, [0, 1, 2], rng, rules=rules)) for _ in range(50)}
    assert pairs == {frozenset({1, 2})}
    with pytest.raises(NoPairError):
        draw_pair(snap, battles, [0, 1], rng, rules=rules)
    with pytest.raises(NoPairError):  # every model but one unavailable
        draw_pair(snap, battles, [2], rng, rules=rules)


def test_weights_at_the_registrys_bounds_still_pair_the_others():
    """The registry allows a weight of 100 beside weight-1 models; with the heavy one away,
    the others still meet."""
    battles = np.full((4, 4), 30.0) - 30.0 * np.eye(4)
    snap = _snap([900.0, 1000.0, 1100.0, 1200.0], battles)
    rules = Rules.build(4, [100.0, 1.0, 1.0, 1.0])
    rng = np.random.default_rng(1)
    for _ in range(30):
        a, b = draw_pair(snap, battles, [1, 2, 3], rng, rules=rules)
        assert a != b and {a, b} <= {1, 2, 3}


@settings(max_examples=40, deadline=None)
@given(st.permutations(list(range(6))), st.integers(0, 2**32 - 1))
def test_the_same_seed_draws_the_same_pair_whatever_the_candidates_order(order, seed):
    rng = np.random.default_rng(3)
    battles = np.triu(rng.integers(0, 40, (6, 6)), 1).astype(float)
    battles += battles.T
    snap = _snap(np.linspace(800, 1200, 6), battles)
    recent = Recent(battles.sum(axis=1).astype(int) // 4, 250)
    first = draw_pair(snap, battles, sorted(order), np.random.default_rng(seed), recent=recent)
    again = draw_pair(snap, battles, order, np.random.default_rng(seed), recent=recent)
    assert first == again


# -- simulate: the newcomer run ---------------------------------------------------------


@pytest.mark.parametrize("join", [110, 135])
def test_a_newcomer_joining_off_the_refit_grid_is_still_checked_for_established(join):
    """The check ran when the vote count was a multiple of 100: after a join at 110 with
    refits every 25 votes that never happens, and every seed read "never established"."""
    setup = Setup(models=3, votes=1500, join=join)
    aligned = run_newcomer(Setup(models=3, votes=1500, join=100), "uniform", 0)
    assert aligned["votes_newcomer_established"] is not None
    for sampler in ("uniform", "matchmaking"):
        got = run_newcomer(setup, sampler, 0)["votes_newcomer_established"]
        # Checked every 100 votes from its arrival, as on the grid.
        assert got is not None and got % 100 == 0, (sampler, got)


def test_a_short_run_places_the_default_newcomer_halfway(capsys):
    """The default join (2,500 votes) past the last vote of a short run left the newcomer
    out of it: every figure of the newcomer read "never" although it never joined."""
    code, out, err = _run_cli(["--mm-models", "4", "--mm-votes", "400"], capsys)
    assert code == 0, err
    result = json.loads(out)
    for sampler in ("uniform", "matchmaking"):
        assert result[sampler]["setup"]["join"] == 200
        assert result[sampler]["votes_newcomer_10"] is not None


@pytest.mark.parametrize("join", ["300", "500"])
def test_a_newcomer_asked_to_join_after_the_last_vote_is_refused(join, capsys):
    code, out, err = _run_cli(["--mm-models", "4", "--mm-votes", "300", "--mm-join", join],
                              capsys)  # fmt: skip
    assert code == 2 and out == ""
    assert "--mm-join" in err and "Traceback" not in err and len(err.splitlines()) == 1


# -- simulate: honest figures -----------------------------------------------------------


def test_every_model_established_at_the_last_refit_is_reported_not_missed(monkeypatch):
    """The board was checked before each block of votes, never after the last one, so a
    board established only at the end of the run was counted as a miss."""
    monkeypatch.setattr(SimArena, "settled", lambda self, models: self.t >= self.setup.votes)
    result = run_arena(Setup(models=4, votes=100, report_at=()), "uniform", 0)
    assert result["votes_to_ci_50"] == 100


def test_savings_compare_the_samplers_on_the_same_seeds(monkeypatch):
    """A sampler that missed its hardest seeds averages over the easy ones only: against
    the other's mean over every seed that read as a saving it did not make."""
    needed = {("uniform", 0): 1000, ("uniform", 1): 3000,
              ("matchmaking", 0): 900, ("matchmaking", 1): None}  # fmt: skip

    def fake_seed(setup, sampler, seed):
        votes = needed[sampler, seed]
        return {"votes_to_spearman_95": votes, "votes_to_spearman_98": votes,
                "votes_to_ci_50": votes, "mean_ci_width": {}, "max_ci_width": {},
                "covered": 0, "intervals": 0, "min_battles_share": 1.0,
                "max_battles_share": 1.0, "min_battles": 1, "max_battles": 1,
                "votes_newcomer_10": None, "votes_newcomer_established": None}  # fmt: skip

    monkeypatch.setattr(mm, "run_seed", fake_seed)
    result = mm.simulate(Setup(models=4, votes=100), range(2))
    # Seed 0 is the only one both reached: 900 against 1000 votes, 10% saved (the means over
    # whatever each reached, 900 against 2000, claimed 55%).
    assert result["matchmaking"]["savings"]["votes_to_spearman_95"] == pytest.approx(0.1)
    assert result["matchmaking"]["votes_to_spearman_95_missed"] == 1


@pytest.mark.parametrize(("votes", "join"), [(1000, 900), (1000, 950), (150, 75)])
def test_a_newcomer_joining_near_the_end_is_checked_at_the_last_vote(monkeypatch, votes, join):
    """Checks come every NEWCOMER_CHECK_VOTES votes from the newcomer's arrival; a newcomer
    that joined within that many votes of the end (the command's own halfway default for
    runs under 200 votes among them) was never checked and read "never established"."""
    monkeypatch.setattr(SimArena, "settled", lambda self, models: True)
    result = mm.run_newcomer(Setup(models=3, votes=votes, join=join), "uniform", 0)
    assert result["votes_newcomer_established"] == votes - join
