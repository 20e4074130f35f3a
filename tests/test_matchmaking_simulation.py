"""The matchmaking simulation: its engine checked by hand, and fast seeded runs of the claim.

The full-size run (20 models, 60 seeds) is ``python -m arena_core simulate``; its table
is in the README. Here a 10-model arena over 1,500 votes (6 seeds) and a newcomer joining
after 300 votes run in a few seconds: uniform pairs in place of the matchmaker fail them.
"""

import contextlib
import io
import json
from dataclasses import replace

import numpy as np
import pytest

from arena_core.cli import main
from arena_core.matchmaking import MatchParams
from arena_core.ratings.counts import A_WINS, B_WINS, BOTH_BAD, TIE
from arena_core.simulation.arena import SimArena
from arena_core.simulation.matchmaking import (
    Setup,
    run_arena,
    run_newcomer,
    summarise,
    window_shares,
)

FAST = Setup(models=10, votes=1500, report_at=(1000,), window=500,
             match=replace(MatchParams(), refit_votes=50))  # fmt: skip
SEEDS = range(6)


@pytest.fixture(scope="module")
def fast_runs():
    return {s: [run_arena(FAST, s, seed) for seed in SEEDS] for s in ("uniform", "matchmaking")}


def test_matchmaking_orders_the_board_with_fewer_votes_and_starves_no_model(fast_runs):
    uniform, matched = fast_runs["uniform"], fast_runs["matchmaking"]
    # A run that never holds rho >= 0.98 counts as the whole run: that favours uniform pairs.
    u98 = [r["votes_to_spearman_98"] or FAST.votes for r in uniform]
    m98 = [r["votes_to_spearman_98"] for r in matched]
    assert None not in m98
    # Same seeds, same outcome of each pair's k-th meeting: only the pairs drawn differ.
    assert np.mean(m98) <= 0.8 * np.mean(u98)
    assert min(r["min_battles_share"] for r in matched) >= 0.5


def test_a_newcomer_gets_its_first_ten_battles_within_thirty_votes():
    setup = replace(FAST, votes=400, join=300)
    tenth = {s: [run_newcomer(setup, s, seed)["votes_newcomer_10"] for seed in SEEDS]
             for s in ("uniform", "matchmaking")}  # fmt: skip
    assert max(tenth["matchmaking"]) <= 30
    # Uniform pairs among 10 models meet a given one every 5 votes: 50 votes for 10.
    assert np.mean(tenth["uniform"]) > 30


#: Coverage needs more seeds than the fixture's six: a run's intervals miss together.
COVERAGE = replace(FAST, votes=1000, report_at=(200, 400, 600, 800))


def test_the_boards_intervals_under_matchmaking_hold_the_truth_95_percent_of_the_time():
    """The README's table: 95% interval coverage under matchmaking 0.942, target 0.93 to 0.97.
    The sampler chooses which pairs meet from the outcomes so far; the board's intervals must
    still hold the true ratings. 30 seeds, 10 models at 4 points each (1,200 checks; a run's
    coverage has a standard deviation of 0.075 across seeds, so the mean's is about 0.014).
    Measured: 0.953; with 90% intervals passed off as 95% ones, 0.915."""
    runs = [run_arena(COVERAGE, "matchmaking", seed) for seed in range(30)]
    block = summarise(runs)
    assert sum(r["intervals"] for r in runs) == 30 * 10 * 4
    assert 0.93 <= block["ci_coverage"] <= 0.97, block["ci_coverage"]


def test_summary_reports_the_issue_keys(fast_runs):
    block = summarise([r | {"votes_newcomer_10": 12, "votes_newcomer_established": None}
                       for r in fast_runs["matchmaking"]])  # fmt: skip
    for key in ("votes_to_spearman_95", "votes_to_spearman_98", "votes_to_ci_50",
                "mean_ci_width", "ci_coverage", "min_battles_share"):  # fmt: skip
        assert key in block
    assert set(block["mean_ci_width"]) == {"1000"} and block["seeds"] == 6
    assert block["votes_newcomer_10"] == 12 and block["votes_newcomer_established_missed"] == 6


def test_window_shares_by_hand():
    # Votes (0,1), (0,2), (1,2) among 3 models; windows of 2 votes, mean 2 * 2 / 3 battles.
    # First window: model 0 has 2, models 1 and 2 one each; second: 1, 1, 2.
    low, high = window_shares(np.array([0, 0, 1]), np.array([1, 2, 2]), 3, 2)
    assert (low, high) == pytest.approx((1 / (4 / 3), 2 / (4 / 3)))


def arena(sampler="uniform", seed=0):
    return SimArena(Setup(models=4, votes=40_000), sampler, seed)


def test_the_kth_meeting_of_a_pair_ends_the_same_way_whatever_came_before():
    one, two = arena(), arena()
    first = one._outcomes(np.array([0, 2, 0]), np.array([1, 3, 1]))
    second = two._outcomes(np.array([2, 1, 0]), np.array([3, 0, 1]))
    flip = {A_WINS: B_WINS, B_WINS: A_WINS, TIE: TIE, BOTH_BAD: BOTH_BAD}
    assert second[0] == first[1]  # the first meeting of 2 and 3
    assert flip[int(second[1])] == first[0]  # 0-1's first meeting, seen from the other side
    assert second[2] == first[2]  # its second meeting


def test_outcomes_follow_the_true_probabilities():
    # Models 0 and 3 are 400 points apart: p = 1 / (1 + 10^-1) = 10/11 that 3 wins, and a
    # draw with 0.1 * 4 p (1 - p); a wins by p - draw / 2.
    sim = arena()
    n = 30_000
    outcome = sim._outcomes(np.full(n, 3), np.zeros(n, dtype=int))
    p = 10 / 11
    draw = 0.1 * 4 * p * (1 - p)
    sd = np.sqrt(p * (1 - p) / n)
    assert np.mean(outcome == A_WINS) == pytest.approx(p - draw / 2, abs=4 * sd)
    assert np.mean(np.isin(outcome, [TIE, BOTH_BAD])) == pytest.approx(draw, abs=4 * sd)


def test_the_fixed_sampler_plays_its_shares_with_sides_at_random():
    shares = np.zeros((4, 4))
    shares[0, 1], shares[2, 3] = 3.0, 1.0
    sim = SimArena(Setup(models=4, votes=400), "fixed", 0, shares=shares)
    sim.play(250)
    sim.play(150)
    assert (sim.battles[0, 1], sim.battles[2, 3], sim.battles.sum()) == (300, 100, 800)
    assert sim.counts.battles().sum() == 800
    first = sim.a[(sim.a + sim.b) == 1]
    assert 100 < np.sum(first == 0) < 200  # model 0 shown as A about half the time
    for sampler, given in (("uniform", shares), ("fixed", None)):
        with pytest.raises(ValueError, match="fixed sampler"):
            SimArena(Setup(models=4), sampler, 0, shares=given)


def test_cli_prints_both_samplers_as_json():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["simulate", "--format", "json", "--seeds", "1", "--mm-models", "6",
                     "--mm-votes", "600", "--mm-join", "300",
                     "--mm-report-at", "300"])  # fmt: skip
    assert code == 0
    result = json.loads(out.getvalue())
    assert set(result) == {"uniform", "matchmaking"}
    assert result["matchmaking"]["setup"]["models"] == 6
    assert "votes_to_spearman_98" in result["matchmaking"]["savings"]
