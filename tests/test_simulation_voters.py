"""The voters scenario: a seeded arena with a known campaign, and what the test makes of it."""

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from arena_core.cli import main
from arena_core.integrity.anomaly import ANOMALOUS_FLAG, AnomalyParams
from arena_core.integrity.detector import AnomalyDetector
from arena_core.ratings.counts import BOTH_BAD
from arena_core.simulation.synthetic import uniform_pairs
from arena_core.simulation.voters import (
    START_US,
    Arena,
    Population,
    flag_voters,
    run_once,
    simulate_arena,
)
from arena_core.votes.schema import OUTCOME_NAMES, Vote, format_ts

#: The scenario's default arena: 300 honest voters, 5 campaigners x 40 votes, 10 models.
DEFAULT = Population()


def test_a_small_campaign_for_the_weakest_model_is_caught_and_honest_voters_are_not():
    # Known truth: voters >= 300 are the campaign, for the weakest of 10 models. Three seeds.
    runs = [run_once(DEFAULT, 0, seed, AnomalyParams()) for seed in range(3)]
    caught = sum(r["true_positives"] for r in runs)
    false = sum(r["false_positives"] for r in runs)
    assert caught >= 10  # of 15 campaigners (the full scenario: 0.72 on 20 seeds, 0.602 on 100)
    assert false <= 0.01 * 3 * DEFAULT.honest  # alpha bounds the share of honest voters flagged
    # The campaign lifts its model; leaving the flagged voters out takes most of that back
    # (on average: in a seed where 1 of 5 campaigners is caught, not most).
    assert all(r["counted"] - r["honest_only"] > 40 for r in runs)
    counted = np.mean([r["counted"] - r["honest_only"] for r in runs])
    assert np.mean([r["detected"] - r["honest_only"] for r in runs]) < 0.6 * counted


@pytest.mark.parametrize("taste", [0.0, 100.0])
def test_honest_voters_are_flagged_at_the_rate_the_readme_measures_not_at_alpha(taste):
    """The README: honest voters flagged at 0.0015-0.0019 (at most 0.0021 in every setting),
    the weakest model's campaign caught at 0.602 (0.492 with tastes of 100 points). The test
    above allows 0.01 of 900 honest voters, which the test run without its split of alpha over
    the checkpoints passes (9 of 900). 20 seeds, 6,000 honest voters: measured 6 and 7
    flagged (0.0010, 0.0012), TPR 0.72 and 0.56; at alpha 0.1 (or no split), 71 flagged.
    (At alpha 0.03, 15-16 flagged: that, test_analysis_hunt's null catches.)"""
    pop = replace(DEFAULT, taste=taste)
    runs = [run_once(pop, 0, seed, AnomalyParams()) for seed in range(20)]
    honest = sum(r["false_positives"] for r in runs) / (20 * pop.honest)
    caught = sum(r["true_positives"] for r in runs) / (20 * pop.campaigners)
    assert honest <= 0.0025, honest
    assert caught >= 0.45, caught


def test_a_flood_of_identities_under_the_first_checkpoint_gets_no_honest_voter_flagged():
    # 2,000 identities casting 4 both_bad votes each, in the first third of the period, among
    # the scenario's 300 honest voters (bench/anomaly_poisoning.py, one seed). When their
    # votes made the reference, 192 honest voters were flagged in this seed; alpha allows 3.
    arena = _flooded(DEFAULT, sybils=2000, per_sybil=4, rng=np.random.default_rng(0))
    det, _ = flag_voters(arena)
    assert sum(1 for v in det.flagged_at if v < arena.honest) <= 0.01 * arena.honest


def _flooded(pop: Population, sybils: int, per_sybil: int, rng: np.random.Generator) -> Arena:
    """The scenario's honest votes, and ``sybils`` identities voting both_bad early."""
    honest = simulate_arena(replace(pop, campaigners=0), 0, rng)
    voter = pop.honest + np.repeat(np.arange(sybils), per_sybil)
    a, b = uniform_pairs(pop.n_models, len(voter), rng)
    when = np.concatenate([rng.random(len(honest.a)), rng.random(len(voter)) / 3])
    order = np.argsort(when, kind="stable")
    ts_us = START_US + np.cumsum(rng.integers(1, 5000, len(order))) * 1000
    outcome = np.concatenate([honest.outcome, np.full(len(voter), BOTH_BAD)])
    return Arena(np.concatenate([honest.a, a])[order], np.concatenate([honest.b, b])[order],
                 outcome[order], np.concatenate([honest.voter, voter])[order], ts_us,
                 pop.honest, honest.truth)  # fmt: skip


def test_the_log_as_written_matches_the_live_detector():
    # flag_voters works out which votes the live app would have written flagged; here the
    # live detector writes them one by one, and both must agree on every vote.
    arena = simulate_arena(DEFAULT, 0, np.random.default_rng(5))
    det, written = flag_voters(arena)
    live = AnomalyDetector()
    start = datetime(1970, 1, 1, tzinfo=UTC)
    flags = []
    for a, b, outcome, voter, ts in zip(
        arena.a, arena.b, arena.outcome, arena.voter, arena.ts_us, strict=True
    ):
        flag = live.is_flagged(f"v{voter}")
        flags.append(flag)
        live.observe(Vote(vote_id=f"{ts}", ts=format_ts(start + timedelta(microseconds=int(ts))),
                          arena="sim", model_a=f"m{a}", model_b=f"m{b}", vote=OUTCOME_NAMES[outcome],
                          voter=f"v{voter}", flags=(ANOMALOUS_FLAG,) if flag else ()))  # fmt: skip
    assert det.flagged_at and flags == written.tolist()
    assert live.flagged == {f"v{v}": j for v, j in det.flagged_at.items()}


def test_the_scenario_runs_from_the_command_line(capsys):
    args = ["simulate", "--scenario", "voters", "--seeds", "1", "--voters-honest", "60",
            "--voters-campaigners", "2", "--format", "json"]  # fmt: skip
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["target"] for r in result["rows"]] == ["weakest", "middle", "strongest"]
    assert result["population"]["honest"] == 60 and result["seeds"] == 1
    assert all(0 <= r["tpr"] <= 1 and 0 <= r["fpr"] <= 1 for r in result["rows"])
