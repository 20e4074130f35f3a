"""``bench/matchmaking_screen.py``: variants parsed by their fields' types, and a tiny screen run
end to end (its paired differences against the default are checked by hand)."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "bench" / "matchmaking_screen.py"
_SPEC = importlib.util.spec_from_file_location("matchmaking_screen", _PATH)
screen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(screen)


def test_a_variant_is_typed_by_its_field_and_checked():
    assert screen.parse_variant("exact_rho=true,settled_rho=0.975,window=300") == {
        "exact_rho": True,
        "settled_rho": 0.975,
        "window": 300,
    }
    with pytest.raises(SystemExit, match="unknown MatchParams field"):
        screen.parse_variant("sharp=3")
    with pytest.raises(ValueError, match="floor must be in"):
        screen.parse_variant("floor=2")


def test_paired_differences_are_over_the_seeds_both_reached():
    runs = [{"x": 10}, {"x": None}, {"x": 14}, {"x": 20}]
    default = [{"x": 8}, {"x": 9}, {"x": None}, {"x": 16}]
    mean, error = screen._paired(runs, default, "x")
    assert mean == pytest.approx(3.0)  # (2 + 4) / 2: seeds 1 and 2 are left out
    assert error == pytest.approx(1.0)  # sd 1.414 over sqrt(2)


def test_a_small_screen_prints_every_sampler(capsys):
    assert (
        screen.main(["--seeds", "2", "--votes", "300", "--jobs", "1", "--variant", "sharpness=2"])
        == 0
    )
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r.split(" | ")[0] for r in rows] == [
        "| sampler",
        "| uniform",
        "| default",
        "| sharpness=2.0",
    ]
    assert "± " in rows[-1]  # the variant's paired difference from the default


def test_a_fresher_snapshot_is_a_setup_variant_not_a_sampler_setting():
    variant = screen.parse_variant("snapshot_votes=5,sharpness=3")
    assert variant == {"snapshot_votes": 5, "sharpness": 3.0}
    setup = screen._setup(screen.Setup(votes=100), variant)
    assert setup.snapshot_votes == 5 and setup.match.sharpness == 3.0
    assert setup.match.refit_votes == 25  # the board is still measured at its refits
