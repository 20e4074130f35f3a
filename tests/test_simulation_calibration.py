"""The calibration scenario, small and fast: the full study is
``python -m arena_core simulate --scenario calibration`` (README, "Rating quality")."""

import argparse
import json
import subprocess
import sys

from conftest import ROOT

from arena_core.simulation import calibration


def small_args(**over):
    parser = argparse.ArgumentParser()
    calibration.add_arguments(parser)
    args = parser.parse_args(["--calibration-models", "6", "--calibration-votes", "1500",
                              "--calibration-battles", "3,10", "--calibration-true", "1000,1400",
                              "--calibration-sizes", "300,3000"])  # fmt: skip
    args.seeds, args.seed = 40, 7
    for key, value in over.items():
        setattr(args, key, value)
    return args


def test_small_study_shows_every_claim():
    result = calibration.run(small_args())
    rows = {(r["model"], r["battles"]): r for r in result["newcomers"]["rows"]}
    assert 0.9 <= rows["established", 500]["coverage"] <= 0.99  # 240 checks
    newcomers = [rows["newcomer", k]["coverage"] for k in (3, 10)]
    assert sum(newcomers) / 2 >= 0.85  # 80 checks; the full study measures 0.95
    assert (
        rows["newcomer", 3]["width"]
        > rows["newcomer", 10]["width"]
        > rows["established", 500]["width"]
    )
    far = {(c["true"], c["battles"]): c["coverage"] for c in result["far_from_prior"]["cells"]}
    assert far[1000, 3] > far[1400, 3]  # the prior holds back a model it does not expect
    sizes = result["accuracy"]["rows"]
    assert sizes[1]["mean_abs_error"] < sizes[0]["mean_abs_error"] and sizes[1]["spearman"] > 0.9
    for label in ("fitted", "none"):
        assert result["disconnected"][label]["warned"] == 1.0
        assert result["disconnected"][label]["groups_found"] == 1.0
    strong, sparse = result["unbounded"]["rows"]
    assert strong["boards"] > 0 and strong["with_unbounded"] == 1.0 and strong["bound_holds"] == 1.0
    assert sparse["boards"] == 40 and sparse["dropped"] > 0
    table = calibration.format_table(result)
    assert table.count("**") == 10 and "| newcomer | 3 |" in table
    json.dumps(result, allow_nan=False)


def test_the_command_runs_the_scenario_with_its_own_options():
    proc = subprocess.run(
        [sys.executable, "-m", "arena_core", "simulate", "--scenario", "calibration", "--seeds", "2",
         "--format", "json", "--calibration-models", "4", "--calibration-votes", "300",
         "--calibration-battles", "3", "--calibration-true", "1000", "--calibration-sizes", "200"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=True,
    )  # fmt: skip
    data = json.loads(proc.stdout)
    assert data["settings"]["models"] == 4 and len(data["newcomers"]["rows"]) == 2
