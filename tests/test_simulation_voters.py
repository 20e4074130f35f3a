"""The voters scenario: a seeded arena with a known campaign, and what the test makes of it."""

import json
from datetime import UTC, datetime, timedelta

import numpy as np

from arena_core.cli import main
from arena_core.integrity.anomaly import ANOMALOUS_FLAG, AnomalyParams
from arena_core.integrity.detector import AnomalyDetector
from arena_core.simulation.voters import Population, flag_voters, run_once, simulate_arena
from arena_core.votes.schema import OUTCOME_NAMES, Vote, format_ts

#: The scenario's default arena: 300 honest voters, 5 campaigners x 40 votes, 10 models.
DEFAULT = Population()


def test_a_small_campaign_for_the_weakest_model_is_caught_and_honest_voters_are_not():
    # Known truth: voters >= 300 are the campaign, for the weakest of 10 models. Three seeds.
    runs = [run_once(DEFAULT, 0, seed, AnomalyParams()) for seed in range(3)]
    caught = sum(r["true_positives"] for r in runs)
    false = sum(r["false_positives"] for r in runs)
    assert caught >= 10  # of 15 campaigners (the full scenario measures 0.77 on 20 seeds)
    assert false <= 0.01 * 3 * DEFAULT.honest  # alpha bounds the share of honest voters flagged
    for r in runs:
        # The campaign lifts its model; leaving the flagged voters out takes most of that back.
        assert r["counted"] - r["honest_only"] > 40
        assert r["detected"] - r["honest_only"] < 0.6 * (r["counted"] - r["honest_only"])


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
