"""``python -m arena_core analyze complementarity`` on a vote log: which votes count, the JSON
contract, the table; and on the real FastChat exports in tests/data.

The log is simulated with known truth (:mod:`arena_core.simulation.complementarity`: "left"
and "right" are each strong on a different half of the prompts) and written through the
real VoteLog, so the whole path (schema, reading, selection, prompt ids) is exercised.
"""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from arena_core.cli import main
from arena_core.ratings.counts import OUTCOME_NAMES
from arena_core.simulation.complementarity import MODELS, Setting, simulate_votes
from arena_core.votes.log import VoteLog

DATA = Path(__file__).parent / "data"
SETTING = replace(Setting(), prompts=30, votes=2400)
#: Rows that must not count: typed prompts (no id), flagged votes, judges, another arena.
TYPED, FLAGGED, JUDGED, ELSEWHERE = 30, 40, 40, 40


def write_log(folder: Path, *, junk: bool) -> None:
    votes = simulate_votes(SETTING, np.random.default_rng(7))
    rows = [dict(arena="tts", model_a=MODELS[a], model_b=MODELS[b], vote=OUTCOME_NAMES[o],
                 prompt_id=f"p{p}", voter=f"h{k}")
            for k, (a, b, o, p) in enumerate(zip(votes.a, votes.b, votes.outcome, votes.prompt, strict=True))]  # fmt: skip
    if junk:  # each against "left", the specialist, so that counting them would show
        rng = np.random.default_rng(1)
        extra = [dict(arena="tts", model_a="left", model_b="flat", vote="a", prompt_id=None,
                      prompt="typed", voter=f"t{k}") for k in range(TYPED)]  # fmt: skip
        extra += [dict(arena="tts", model_a="left", model_b="twin", vote="b",
                       prompt_id=f"p{rng.integers(15)}", voter=f"f{k}", flags=["rate_limited"])
                  for k in range(FLAGGED)]  # fmt: skip
        extra += [dict(arena="tts", model_a="left", model_b="strong", vote="b",
                       prompt_id=f"p{rng.integers(15)}", voter_kind="judge", judge="judge/x",
                       battle_id=f"b{k}") for k in range(JUDGED)]  # fmt: skip
        extra += [dict(arena="other", model_a="left", model_b="flat", vote="b",
                       prompt_id=f"p{rng.integers(15)}", voter=f"o{k}") for k in range(ELSEWHERE)]  # fmt: skip
        rows = rows[:1000] + extra + rows[1000:]
    log = VoteLog(folder)
    log.append_all(rows)
    log.close()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("complementarity")
    write_log(root / "clean", junk=False)
    write_log(root / "mixed", junk=True)
    return root


def run_json(capsys, *args) -> dict:
    assert main(["analyze", "complementarity", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_json_names_models_and_flags_the_complementary_pair(logs, capsys):
    out = run_json(capsys, "--votes", str(logs / "mixed"), "--arena", "tts", "--rounds", "199")
    assert out["votes_used"] == SETTING.votes and out["prompts"] == SETTING.prompts
    assert out["no_prompt_id"] == TYPED and out["seed"] == 0 and out["settings"]["rounds"] == 199
    assert {m["model"] for m in out["models"]} == set(MODELS)
    pairs = {(p["model_a"], p["model_b"]): p for p in out["pairs"]}
    assert len(pairs) == len(MODELS) * (len(MODELS) - 1) // 2  # ids sorted within a pair
    for pair in out["pairs"]:
        for key in ("model_a", "model_b", "overlap", "spearman", "oracle_gain", "gain_low",
                    "gain_high", "flagged", "naive_gain", "noise_gain", "p_value"):  # fmt: skip
            assert key in pair
        assert pair["model_a"] < pair["model_b"] and pair["gain_low"] <= pair["gain_high"]
    gains = [p["oracle_gain"] for p in out["pairs"]]
    assert gains == sorted(gains, reverse=True)
    left_right = pairs["left", "right"]
    assert left_right["flagged"] and left_right["spearman"] < -0.3 and left_right["overlap"] == 30
    top = out["pairs"][0]  # the two pairs of opposite specialists come first
    assert (top["model_a"], top["model_b"]) in {("left", "right"), ("left2", "right")}
    # (How often pairs with nothing to gain are flagged is measured over seeds in
    # test_analysis_complementarity.py, not on one log.)


def test_only_counted_human_votes_with_a_prompt_id_enter(logs, capsys):
    # The mixed log is the clean one plus typed, flagged, judged and other-arena votes: the
    # same votes count, in the same order, so the seeded results are the same to the digit.
    args = ("--arena", "tts", "--rounds", "99", "--seed", "3")
    clean = run_json(capsys, "--votes", str(logs / "clean"), *args)
    mixed = run_json(capsys, "--votes", str(logs / "mixed"), *args)
    assert clean["no_prompt_id"] == 0 and mixed["no_prompt_id"] == TYPED
    assert clean["pairs"] == mixed["pairs"] and clean["models"] == mixed["models"]
    other = run_json(capsys, "--votes", str(logs / "mixed"), "--arena", "other", "--rounds", "99")
    assert other["votes_used"] == ELSEWHERE and other["pairs"] == []  # one pair, one vote each
    assert other["too_few"] == 1


def test_the_table_and_the_options(logs, capsys):
    folder = str(logs / "clean")
    assert main(["analyze", "complementarity", "--votes", folder, "--arena", "tts", "--rounds", "99",
                 "--min-overlap", "31"]) == 0  # fmt: skip
    table = " ".join(capsys.readouterr().out.split())
    assert "no pair of models shares 31 prompts" in table and "21 pairs share fewer" in table
    assert (
        main(["analyze", "complementarity", "--votes", folder, "--arena", "tts", "--rounds", "99"])
        == 0
    )
    table = capsys.readouterr().out.splitlines()
    assert table[1].split()[:3] == ["model", "a", "model"]
    flagged = [line for line in table[2:] if line.rstrip().endswith("yes")]
    assert any(line.split()[:2] == ["left", "right"] for line in flagged)
    with pytest.raises(SystemExit):
        main(["analyze", "complementarity", "--votes", folder, "--arena", "tts", "--rounds", "5"])
    assert "at least 19" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "battles"), [("sts", 137), ("clustering", 124)])
def test_the_fastchat_exports_have_no_prompt_ids_and_say_so(capsys, name, battles):
    # MTEB Arena's clean_battle exports carry no question_id: nothing can be compared per prompt.
    path = str(DATA / f"fastchat_clean_battle_{name}.json")
    out = run_json(capsys, "--votes", path, "--arena", name, "--rounds", "19")
    assert out["pairs"] == [] and out["votes_used"] == 0
    assert out["no_prompt_id"] + sum(out["skipped"].values()) == battles
    assert main(["analyze", "complementarity", "--votes", path, "--arena", name]) == 0
    assert "no counted human vote carries a prompt id" in capsys.readouterr().out
