"""The app's pure parts: settings, matchmaking, page text and charts."""

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest
from conftest import ROOT

from arena_core.dataset.hub import SyncStatus
from arena_core.leaderboard import (
    Board,
    BoardParams,
    Entrant,
    LeaderboardRow,
    Window,
    compute_board,
)
from arena_core.matchmaking import NoPairError, draw_pair
from arena_core.page import plots, presenters, ui_text
from arena_core.ratings.counts import count_pairs
from arena_core.ratings.elo import sequential_elo
from arena_core.registry import load_registry
from arena_core.space.config import ConfigError, Settings
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


def test_matchmaking_draws_distinct_candidates_both_ways_favouring_rare_pairs():
    rng = np.random.default_rng(0)
    battles = np.zeros((5, 5))
    battles[0, 1] = battles[1, 0] = 400  # a pair that met very often
    draws = Counter(draw_pair([0, 1, 2, 3], battles, rng) for _ in range(4000))
    assert all(a != b and {a, b} <= {0, 1, 2, 3} for a, b in draws)
    assert draws[(0, 1)] + draws[(1, 0)] < 0.25 * (draws[(2, 3)] + draws[(3, 2)])
    assert draws[(2, 3)] > 0 and draws[(3, 2)] > 0  # either side can be "A"
    with pytest.raises(NoPairError):
        draw_pair([2], battles, rng)


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


def test_board_table_marks_and_hides_provisional_models():
    board, _ = small_board()
    table = presenters.board_table(board, {"x": 0.52}, show_provisional=True)
    assert list(table.columns) == presenters.TABLE_COLUMNS
    assert len(table) == 3
    names = table["Model"].tolist()
    assert names[-1] == "*Model Z*"  # no battles: in italics, last, not ranked
    assert table["Rank"].tolist()[-1] == "not yet rated" == table["Status"].tolist()[-1]
    x = table[table["Model"].str.contains("Model X")].iloc[0]
    assert x["Latency (s)"] == 0.52 and x["Params"] == "1M" and x["95% CI"].startswith("+")
    assert presenters.board_table(board, {}, show_provisional=False).empty  # nothing settled yet


def test_rank_and_interval_cells_say_what_the_board_knows():
    row = LeaderboardRow(rank=2, rank_worst=4, component=2, model="M", model_id="m", params=None,
                         params_m=None, rating=1010.0, ci_low=990.0, ci_high=1040.0, elo=1000.0,
                         elo_per_m_params=None, battles=30, wins=10, losses=10, ties=5,
                         both_bad=5, win_rate=0.5, status="provisional", available=False,
                         note=None)  # fmt: skip
    assert presenters.rank_text(row) == "2–4" and presenters.rank_text(row, True) == "2–4 (group 2)"
    assert presenters.interval_text(row) == "+30 / -20"
    above = replace(row, rating=None, ci_low=1234.4, ci_high=None, rank=None, rank_worst=None)
    assert presenters.interval_text(above) == "≥ 1234 (never beaten)"
    assert presenters.rank_text(above) == "–"
    below = replace(above, ci_low=None, ci_high=876.0)
    assert presenters.interval_text(below) == "≤ 876 (never won)"
    board = Board("ar", None, "bt", (row, replace(row, rank=1, rank_worst=1, component=1)), 30, {})
    table = presenters.board_table(board, {})
    assert table["Status"].tolist()[0] == "provisional · unavailable here"
    assert table["Rank"].tolist() == ["2–4 (group 2)", "1 (group 1)"]  # two groups: named
    one_group = replace(board, rows=(row,))
    assert presenters.board_table(one_group, {})["Rank"].tolist() == ["2–4"]


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


def test_summary_says_what_is_counted_and_what_is_loading():
    board, _ = small_board()
    done = LoadProgress(done=True)
    assert "80 votes counted" in presenters.board_summary(board, done)
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


def test_charts_follow_the_board_order():
    board, counts = small_board()
    ids = ["x", "y", "z"]
    fig = plots.rating_chart(board)
    assert list(fig.data[0].x) == [r.model for r in board.rows if r.battles]  # Z: no battles
    heat = plots.win_rate_heatmap(board, ids, counts)
    order = [ids.index(r.model_id) for r in board.rows]
    expected = presenters.win_fraction(counts.wins)[np.ix_(order, order)]
    np.testing.assert_array_equal(np.asarray(heat.data[0].z, dtype=float), expected)
    assert (
        np.asarray(plots.battle_count_heatmap(board, ids, counts).data[0].z).sum()
        == 2 * board.votes_used
    )


def test_about_lists_every_model_with_its_licence():
    registry = load_registry(ROOT / "registry.yaml")
    text = ui_text.about(registry, BoardParams(), {"chat/openai/gpt-oss-20b": "HF_TOKEN not set"})
    assert "| HF_TOKEN not set |" in text
    for arena in registry.arenas:
        for model in arena.models:
            assert f"`{model.id}`" in text and (model.license or "not stated") in text
    assert "python -m arena_core leaderboard" in text and "learnt from the arena" in text
    assert "1000 bootstrap" in ui_text.about(registry, BoardParams(prior_weight=0))


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
