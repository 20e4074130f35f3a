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
from arena_core.leaderboard import BoardParams, Entrant, board_from_votes
from arena_core.page.analysis_html import style_html
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
                         (["--engine", "duckdb"], "--engine duckdb"),
                         (["--unavailable", "m3"], "--unavailable")):  # fmt: skip
        assert cli.main([*base, *extra]) == 2
        assert words in capsys.readouterr().err
    assert cli.main([*base[:3], "--arena", "tts", "--style-control"]) == 2  # no registry
    assert "needs --registry" in capsys.readouterr().err


SMALL = """
arenas:
  - id: ar
    title: Small
    modality: audio
    prior_mapping: {benchmark: index, center: 50, points_per_unit: 4}
    prompts: [{id: p1, text: "Hi."}]
    models:
      - {id: x, name: Model X, backend: {type: fake}}
      - {id: y, name: Model Y, prior: {value: 75, source: "https://example.org", accessed: 2026-03-01}, backend: {type: fake}}
      - {id: w, name: Model W, backend: {type: fake}}
judges:
  - {id: j, name: J, kind: llm, arenas: [ar], options: {type: fake}}
"""


def _style(da, db):
    """Each side's style a function of its duration alone, so swapping the sides negates
    every covariate."""
    return {f"model_{side}_{name}": value for side, d in (("a", da), ("b", db))
            for name, value in (("duration_s", d), ("speech_rate", 2.0 + d / 7),
                                ("lufs", -23.0 + d / 50), ("sample_rate", round(16000 + 1000 * d)))}  # fmt: skip


@pytest.fixture
def small(tmp_path):
    """Human votes on x and y with styles, old votes (no style) where w beats both, votes
    naming a model the registry does not list, and a judge's verdicts on x and y."""
    (tmp_path / "registry.yaml").write_text(textwrap.dedent(SMALL))
    log = VoteLog(tmp_path / "votes")
    for k in range(12):
        log.append(arena="ar", model_a="x", model_b="y", vote="ab"[k % 3 == 0], prompt_id="p1",
                   voter=f"h{k}", **_style(2.0 + k % 4 * 0.3, 2.5))  # fmt: skip
        log.append(arena="ar", model_a="y", model_b="x", vote="ab"[k % 3 != 0], prompt_id="p1",
                   voter=f"i{k}", **_style(2.5, 2.0 + k % 4 * 0.3))  # fmt: skip
    for k in range(10):
        log.append(arena="ar", model_a="w", model_b="xy"[k % 2], vote="a", prompt_id="p1",
                   voter=f"g{k}")  # fmt: skip
        log.append(arena="ar", model_a="ghost", model_b="x", vote="a", prompt_id="p1",
                   voter=f"u{k}")  # fmt: skip
    for k in range(4):
        log.append_all([dict(arena="ar", model_a=a, model_b=b, vote=v, prompt_id="p1",
                             battle_id=f"b{k}", voter_kind="judge", judge="j")
                        for a, b, v in (("x", "y", "a"), ("y", "x", "b"))])  # fmt: skip
    log.close()
    registry = load_registry(tmp_path / "registry.yaml")
    return tmp_path, registry, read_votes(tmp_path / "votes", columns=ANALYSIS_COLUMNS)


def test_the_judges_reports_humans_are_the_leaderboard(small):
    """Until session 27 the report's human board counted the votes naming 'ghost' (which
    the leaderboard skips as unknown_model) and ignored y's registry prior: x 882, y 922,
    ghost 1196 against the leaderboard's x 1025, y 1075."""
    _, registry, votes = small
    arena = registry.arena("ar")
    board = board_from_votes(votes, "ar", entrants=Entrant.from_arena(arena))
    report = judges_report(votes, arena, registry)
    rated = {r.model_id: r.rating for r in board.rows if r.battles}
    assert report.human == pytest.approx(rated) and set(rated) == {"x", "y", "w"}
    assert report.skipped["unknown_model"] == board.skipped["unknown_model"] == 10
    assert "ghost" not in report.consensus and set(report.consensus) == {"x", "y"}


def test_a_model_whose_votes_all_lack_style_is_not_rated_by_the_style_board(small, capsys):
    """w's ten votes predate style fields, so none enters the fit. Until session 27 the
    style-controlled board still listed and ranked it, at its prior (1000 [583, 1417])."""
    root, registry, votes = small
    board = style_board(votes, registry.arena("ar"))
    assert {r.model for r in board.rows} == {"x", "y"} and board.unrated == ("w",)
    assert board.votes_used == 24 and board.left_out == 10
    base = ["leaderboard", "--votes", str(root / "votes"), "--registry",
            str(root / "registry.yaml"), "--arena", "ar", "--style-control"]  # fmt: skip
    assert cli.main(base) == 0
    text = capsys.readouterr().out
    assert "Model W" in text and "not rated here" in text
    assert cli.main([*base, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in data["rows"]} == {"x", "y"} and data["unrated"] == ["w"]


def test_the_style_boards_side_a_term_of_one_sided_votes_is_unbounded(small, capsys):
    """Every styled vote goes to side A: the A-side term prints as +inf with the one-sided
    bound its votes support (until session 27: +2390 [-73245, +78026], 'not significant');
    an empty window prints no estimate (until then: +0.0 [-340481, +340481])."""
    root, _, _ = small
    log = VoteLog(root / "one-sided")
    for k in range(6):  # each battle in both orders, side A winning both: no style separates
        da, db = 2.0 + k % 4 * 0.3, 2.5
        log.append(arena="ar", model_a="x", model_b="y", vote="a", prompt_id="p1",
                   voter=f"s{k}", **_style(da, db))  # fmt: skip
        log.append(arena="ar", model_a="y", model_b="x", vote="a", prompt_id="p1",
                   voter=f"t{k}", **_style(db, da))  # fmt: skip
    log.close()
    base = ["leaderboard", "--votes", str(root / "one-sided"), "--registry",
            str(root / "registry.yaml"), "--arena", "ar", "--style-control"]  # fmt: skip
    assert cli.main([*base, "--format", "json"]) == 0
    coefficients = {c["name"]: c for c in json.loads(capsys.readouterr().out)["coefficients"]}
    a_side = coefficients["a_side"]
    assert a_side["points"] is None and a_side["low"] > 0 and a_side["high"] is None
    assert a_side["informative"] == 12 and "unbounded" in a_side["note"]
    assert cli.main(base) == 0
    assert "+inf" in capsys.readouterr().out
    one_sided = read_votes(root / "one-sided", columns=ANALYSIS_COLUMNS)
    html = style_html(style_board(one_sided, load_registry(root / "registry.yaml").arena("ar")), {})
    assert "not estimated" in html and "unbounded above" in html and "+inf" not in html
    assert cli.main([*base, "--since", "2100-01-01", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["votes_used"] == 0 and data["rows"] == []
    assert all(c["points"] is None and c["informative"] == 0 for c in data["coefficients"])


def _judge_log(folder, mirrored: bool, battles: int = 400) -> None:
    """A deterministic judge's verdicts: each battle once, or in both orders with the same
    decision (as the pitch and recogniser judges give them)."""
    rng = np.random.default_rng(7)
    log = VoteLog(folder)
    for k in range(battles):
        a, b = rng.choice(4, 2, replace=False)
        da, db = (SECONDS[[a, b]] * rng.uniform(0.6, 1.4, 2)).round(3)
        ra, rb = rng.uniform(2.0, 3.0, 2).round(3)
        first = rng.random() < 1 / (1 + np.exp(-(TRUTH[a] - TRUTH[b]) * LOG10))
        sides = [(a, b, da, db, ra, rb, "a" if first else "b")]
        if mirrored:
            sides.append((b, a, db, da, rb, ra, "b" if first else "a"))
        log.append_all([
            dict(arena="tts", model_a=f"m{x}", model_b=f"m{y}", vote=v, battle_id=f"b{k}",
                 voter_kind="judge", judge="judge/same", model_a_duration_s=dx,
                 model_b_duration_s=dy, model_a_speech_rate=rx, model_b_speech_rate=ry)
            for x, y, dx, dy, rx, ry, v in sides])  # fmt: skip
    log.close()


def test_a_judges_mirrored_verdicts_count_as_one_battle_on_the_style_board(world, tmp_path):
    """Counted as two votes, a deterministic judge's mirrored verdicts made the style
    board's intervals 1/sqrt(2) too narrow; weighted by battle they carry one battle."""
    _, registry = world
    params = BoardParams(voter_kind="judge", judge="judge/same")
    widths = {}
    for mirrored in (False, True):
        _judge_log(tmp_path / str(mirrored), mirrored)
        votes = read_votes(tmp_path / str(mirrored), columns=ANALYSIS_COLUMNS)
        board = style_board(votes, registry.arena("tts"), params=params)
        assert board.votes_used == 400 * (1 + mirrored)
        widths[mirrored] = {r.model: r.high - r.low for r in board.rows}
    for model, once in widths[False].items():
        assert widths[True][model] == pytest.approx(once, rel=0.02)
