"""The complementarity scenario, small and fast: a truly complementary pair is flagged, pairs
with nothing to gain are not (the full study is ``python -m arena_core simulate --scenario
complementarity`` and ``bench/complementarity.py``)."""

import json
from dataclasses import replace

from arena_core.cli import main
from arena_core.simulation.complementarity import MODELS, Setting, summarise

#: A small version of the scenario: 20 votes per model and prompt, 20 seeds.
FAST = replace(Setting(), prompts=40, votes=2400, rounds=199)


def test_the_complementary_pair_is_flagged_and_pairs_with_nothing_to_gain_are_not():
    result = summarise(FAST, range(20))
    # Null pairs (one model at least as strong on every prompt; 6 per arena): ~5% or fewer,
    # while a null centred on the pair's own gap flags "tiered" pairs ~17% of the time.
    assert result["null_flag_rate"]["n"] == 120
    assert result["null_flag_rate"]["rate"] <= 0.06
    assert result["complementary_flag_rate"]["rate"] >= 0.95
    rows = {r["pair"]: r for r in result["pairs"]}
    # Identical models: never flagged beyond the rate, no gain once the floor is taken off.
    assert rows["flat/twin"]["flag_rate"] <= 0.10
    assert abs(rows["flat/twin"]["oracle_gain"]) < 0.01 < rows["flat/twin"]["naive_gain"]
    # The truly complementary pair: opposite per-prompt scores, a gain bracketed by the interval.
    left_right = rows["left/right"]
    assert left_right["spearman"] < -0.5 and left_right["coverage"] >= 0.9
    assert left_right["oracle_gain"] < left_right["true_gain"] < left_right["naive_gain"] + 0.02
    # Models that agree on which prompts are hard: positively correlated, not flagged.
    assert rows["left/left2"]["spearman"] > 0.5 and rows["left/left2"]["flag_rate"] == 0


#: Models that tie on half the prompts and differ on the rest ("tiered" is 200 points above
#: "flat" on half of them, level on the others): no gain, but a difference that is not constant.
TIERED = replace(Setting(), prompts=30, votes=6000, gap=100.0, rounds=99)


def test_a_pair_that_ties_on_some_prompts_and_differs_on_others_is_not_flagged():
    result = summarise(TIERED, range(10))
    rows = {r["pair"]: r for r in result["pairs"]}
    for pair in ("flat/tiered", "twin/tiered"):
        assert rows[pair]["true_gain"] == 0 and rows[pair]["naive_gain"] > 0.01
        # A null centred on the pair's fitted gap instead of on zero flags these 95% of the time.
        assert rows[pair]["flag_rate"] <= 0.1, pair
    assert rows["strong/tiered"]["flag_rate"] >= 0.9  # a true gain of 0.06 at this size


def test_the_scenario_runs_from_the_command_line(capsys):
    args = ["simulate", "--scenario", "complementarity", "--seeds", "2", "--comp-prompts", "20",
            "--comp-votes", "800", "--comp-rounds", "19", "--format", "json"]  # fmt: skip
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["seeds"] == 2 and result["setting"]["prompts"] == 20
    assert len(result["pairs"]) == len(MODELS) * (len(MODELS) - 1) // 2
    assert {"null_flag_rate", "complementary_flag_rate"} <= result.keys()
    assert main(args[:-2]) == 0  # the table
    table = capsys.readouterr().out
    assert "| pair |" in table and "| left/right |" in table and "Null pairs flagged" in table
