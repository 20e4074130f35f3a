"""The style-controlled board and the judges' report from a vote log, in the CLI and the cache.

The log is simulated with known truth: voters who like long clips (a style effect)
and judges with a known position bias, written through the real VoteLog so the
whole path (schema 3 fields, reading, selection) is exercised.
"""

import csv
import io
import json
import textwrap
from datetime import UTC, datetime

import numpy as np
import pytest

from arena_core import cli
from arena_core.analysis.boards import ANALYSIS_COLUMNS, counted_frame, judges_report, style_board
from arena_core.leaderboard import board_from_votes
from arena_core.registry import load_registry
from arena_core.space.analyses import Analyses
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes
from arena_core.window import Window

REGISTRY = """
arenas:
  - id: tts
    title: TTS
    modality: audio
    prompts: [{id: p1, text: "Hello there."}]
    models:
      - {id: m0, name: Zero, backend: {type: espeak, voice: en-us}}
      - {id: m1, name: One, backend: {type: espeak, voice: en-us}}
      - {id: m2, name: Two, backend: {type: espeak, voice: en-us}}
      - {id: m3, name: Three, backend: {type: espeak, voice: en-us}}
judges:
  - {id: judge/first, name: First, kind: prosody, arenas: [tts]}
  - {id: judge/fair, name: Fair, kind: prosody, arenas: [tts]}
"""
TRUTH = np.array([90.0, 30.0, -30.0, -90.0])  # m0 best
SECONDS = np.array([2.0, 2.2, 2.4, 4.0])  # m3 speaks slowest: longest clips
LOG10 = np.log(10) / 400


#: The voters' taste for length: log-odds per unit of (da - db) / (da + db).
STYLE_GAIN = 8.0


def simulate(folder, *, humans=3000, battles=600, seed=0, style_gain=STYLE_GAIN):
    rng = np.random.default_rng(seed)
    log = VoteLog(folder)

    def style(a, b):
        # Durations vary by half a model's own length from clip to clip, so that length can be
        # told apart from the model; the rate varies on its own (not 1/duration).
        da, db = (SECONDS[[a, b]] * rng.uniform(0.6, 1.4, 2)).round(3)
        ra, rb = rng.uniform(2.0, 3.0, 2).round(3)
        return da, db, {"model_a_duration_s": da, "model_b_duration_s": db,
                        "model_a_speech_rate": ra, "model_b_speech_rate": rb,
                        "model_a_lufs": -23.0, "model_b_lufs": -23.0,
                        "model_a_sample_rate": 22050, "model_b_sample_rate": 22050}  # fmt: skip

    for k in range(humans):
        a, b = rng.choice(4, 2, replace=False)
        da, db, fields = style(a, b)
        logit = (TRUTH[a] - TRUTH[b]) * LOG10 + style_gain * (da - db) / (da + db)
        vote = "a" if rng.random() < 1 / (1 + np.exp(-logit)) else "b"
        log.append(arena="tts", model_a=f"m{a}", model_b=f"m{b}", vote=vote, prompt_id=f"p{k % 20}",
                   voter=f"h{k}", **fields)  # fmt: skip  # one vote per voter: none flagged by chance
    for k in range(battles):
        a, b = rng.choice(4, 2, replace=False)
        _, _, fields = style(a, b)
        for judge, bias in (("judge/first", 1.5), ("judge/fair", 0.0)):
            verdicts = []
            for first, second in ((a, b), (b, a)):
                logit = (TRUTH[first] - TRUTH[second]) * LOG10 + bias
                verdicts.append("a" if rng.random() < 1 / (1 + np.exp(-logit)) else "b")
            swapped = {f"model_{s}_{n}": fields[f"model_{o}_{n}"] for s, o in (("a", "b"), ("b", "a"))
                       for n in ("duration_s", "speech_rate", "lufs", "sample_rate")}  # fmt: skip
            log.append_all([
                dict(arena="tts", model_a=f"m{a}", model_b=f"m{b}", vote=verdicts[0], prompt_id="p1",
                     battle_id=f"b{k}", voter_kind="judge", judge=judge, **fields),
                dict(arena="tts", model_a=f"m{b}", model_b=f"m{a}", vote=verdicts[1], prompt_id="p1",
                     battle_id=f"b{k}", voter_kind="judge", judge=judge, **swapped),
            ])  # fmt: skip
    log.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("analysis")
    (root / "registry.yaml").write_text(textwrap.dedent(REGISTRY))
    simulate(root / "votes")
    return root, load_registry(root / "registry.yaml")


def test_style_control_removes_the_taste_for_long_clips(world):
    root, registry = world
    votes = read_votes(root / "votes", columns=ANALYSIS_COLUMNS)
    raw = board_from_votes(votes, "tts")
    assert raw.votes_used == 3000  # the judges' 2,400 verdicts are not on the human board
    assert raw.rows[0].model_id == "m3"  # the slow speaker wins on length
    board = style_board(votes, registry.arena("tts"))
    assert [r.model for r in board.rows] == ["m0", "m1", "m2", "m3"]  # the truth, once held equal
    coefficients = {c.name: c for c in board.coefficients}
    duration = coefficients["duration_s"]  # points per standard deviation of the covariate
    assert duration.low < STYLE_GAIN * duration.unit_sd / LOG10 < duration.high
    rate = coefficients["speech_rate"]
    assert rate.low < 0 < rate.high  # voters did not care, and the fit says so
    assert board.votes_used == 3000 and board.left_out == 0
    assert {"lufs", "sample_rate"} <= set(board.not_fitted)  # constant here: nothing to fit


def test_the_judges_report_finds_the_position_bias(world):
    root, registry = world
    votes = read_votes(root / "votes", columns=ANALYSIS_COLUMNS)
    report = judges_report(votes, registry.arena("tts"), registry)
    by_id = {j.judge: j for j in report.judges}
    first, fair = by_id["judge/first"], by_id["judge/fair"]
    assert first.position.low > 0 and fair.position.low < 0 < fair.position.high
    assert first.flip_share > fair.flip_share
    assert first.a_share > 0.6 and 0.4 < fair.a_share < 0.6
    assert report.human_position is not None
    assert set(report.consensus) == {"m0", "m1", "m2", "m3"}
    assert len(counted_frame(votes, "tts")) == 3000 + 2400


def test_the_cli_prints_both_views(world, capsys):
    root, _ = world
    reg, votes = str(root / "registry.yaml"), str(root / "votes")
    assert cli.main(["leaderboard", "--votes", votes, "--registry", reg, "--arena", "tts",
                     "--style-control", "--format", "json"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in data["rows"]] == ["m0", "m1", "m2", "m3"]
    assert cli.main(["judges", "--votes", votes, "--registry", reg, "--arena", "tts",
                     "--format", "json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert {j["judge"] for j in report["judges"]} == {"judge/first", "judge/fair"}
    assert cli.main(["judges", "--votes", votes, "--registry", reg, "--arena", "tts"]) == 0
    text = capsys.readouterr().out
    assert "judge/first" in text and "Humans' side-A term" in text
    assert cli.main(["leaderboard", "--votes", votes, "--registry", reg, "--arena", "tts",
                     "--judge", "judge/fair", "--format", "json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["votes_used"] == 1200
    assert cli.main(["leaderboard", "--votes", votes, "--arena", "tts", "--voter-kind", "all",
                     "--format", "json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["votes_used"] == 5400


def test_the_space_caches_an_analysis_for_its_ttl(world):
    root, registry = world
    now = [0.0]
    reads = []
    analyses = Analyses(registry, lambda: reads.append(1) or [root / "votes", root / "missing"],
                        ttl=60, clock=lambda: now[0])  # fmt: skip
    first = analyses.style("tts")
    assert analyses.style("tts") is first and len(reads) == 1
    now[0] = 61.0
    assert analyses.style("tts") is not first and len(reads) == 2
    assert analyses.judges("tts").judges and len(reads) == 3


def _style_json(capsys, root, *extra) -> dict:
    assert cli.main(["leaderboard", "--votes", str(root / "votes"), "--registry",
                     str(root / "registry.yaml"), "--arena", "tts", "--style-control",
                     "--format", "json", *extra]) == 0  # fmt: skip
    return json.loads(capsys.readouterr().out)


def test_style_control_counts_what_the_default_board_counts(world, capsys):
    """Every selection option of ``leaderboard`` reaches the style-controlled board: the
    same votes are counted as on the default board with those options."""
    root, _ = world
    votes = read_votes(root / "votes", columns=ANALYSIS_COLUMNS)
    assert _style_json(capsys, root, "--voter-kind", "all")["votes_used"] == 5400
    fair = _style_json(capsys, root, "--judge", "judge/fair")
    assert fair["votes_used"] == 1200 and fair["judge"] == "judge/fair"
    # A window from the median human vote's time on: about half the human votes.
    human = votes.encoded["voter_kind"].isin(["human"]) | (votes.encoded["voter_kind"].codes < 0)
    ts = np.sort(votes.ts_us[human])
    since = datetime.fromtimestamp(ts[len(ts) // 2] / 1e6, UTC).isoformat()
    windowed = _style_json(capsys, root, "--since", since)
    default = board_from_votes(votes, "tts", window=Window.parse(since))
    assert windowed["votes_used"] == default.votes_used == int((ts >= ts[len(ts) // 2]).sum())
    assert windowed["since"] == default.to_json()["since"]
    # Decay: a half-life of a million days is no decay; one of a millisecond changes the fit.
    plain = _style_json(capsys, root)
    slow = _style_json(capsys, root, "--half-life", "1e6")
    assert np.allclose([r["rating"] for r in slow["rows"]], [r["rating"] for r in plain["rows"]],
                       atol=1e-3)  # fmt: skip
    fast = _style_json(capsys, root, "--half-life", "1e-8")
    assert fast["half_life_days"] == 1e-8
    assert not np.allclose(
        [r["rating"] for r in fast["rows"]], [r["rating"] for r in plain["rows"]]
    )
    # A stronger prior pulls every rating towards the registry's (all at the anchor here).
    strong = _style_json(capsys, root, "--prior-weight", "5000")
    assert strong["prior_weight"] == 5000 and plain["prior_weight"] == 4
    spread = np.ptp([r["rating"] for r in strong["rows"]])
    assert spread < np.ptp([r["rating"] for r in plain["rows"]])
    assert _style_json(capsys, root, "--include-flagged")["include_flagged"] is True


def test_style_control_writes_csv_and_refuses_what_it_cannot_honour(world, capsys):
    root, _ = world
    base = ["leaderboard", "--votes", str(root / "votes"), "--registry", str(root / "registry.yaml"),
            "--arena", "tts", "--style-control"]  # fmt: skip
    assert cli.main([*base, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    board = _style_json(capsys, root)
    assert [r["model_id"] for r in rows] == [r["model"] for r in board["rows"]]
    assert float(rows[0]["ci_low"]) == pytest.approx(board["rows"][0]["low"], abs=0.01)
    for extra, words in ((["--method", "elo"], "--method elo"),
                         (["--prior-weight", "0"], "needs a prior"),
                         (["--counts", str(root / "counts.parquet")], "--counts"),
                         (["--engine", "duckdb"], "--engine duckdb")):  # fmt: skip
        assert cli.main([*base, *extra]) == 2
        assert words in capsys.readouterr().err
    assert cli.main([*base[:3], "--arena", "tts", "--style-control"]) == 2  # no registry
    assert "needs --registry" in capsys.readouterr().err
