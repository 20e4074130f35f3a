"""Leaderboard rows: ranking, tallies, statuses, intervals, filters."""

import json

import numpy as np
import pytest

from arena_core.leaderboard import (
    BoardParams,
    Entrant,
    board_from_votes,
    compute_board,
)
from arena_core.ratings.counts import PairCounts, count_pairs
from arena_core.ratings.elo import EloState, sequential_elo
from arena_core.votes import reasons
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes


def make_log(tmp_path, votes):
    store = VoteLog(tmp_path)
    for v in votes:
        store.append(**v)
    return read_votes(tmp_path)


def v(a, b, vote, arena="ar", **extra):
    return {"arena": arena, "model_a": a, "model_b": b, "vote": vote, **extra}


def test_tallies_win_rate_and_order(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a"), v("x", "y", "a"), v("y", "x", "tie"),
                                v("x", "z", "both_bad"), v("z", "y", "b")])  # fmt: skip
    board = board_from_votes(votes, "ar", params=BoardParams(bootstrap_rounds=50))
    rows = {r.model_id: r for r in board.rows}
    x = rows["x"]
    assert (x.battles, x.wins, x.losses, x.ties, x.both_bad) == (4, 2, 0, 1, 1)
    assert x.win_rate == 1.0
    assert rows["y"].win_rate == pytest.approx(1 / 3)
    assert rows["z"].win_rate == 0.0
    assert [r.model_id for r in board.rows] == ["x", "y", "z"]
    assert [r.rank for r in board.rows] == [1, 2, 3]
    assert board.votes_used == 5 and board.last_vote.endswith("Z")


def test_rank_upper_bound_counts_models_clearly_above():
    entrants = [Entrant(f"m{k}", f"M{k}") for k in range(3)]
    rng = np.random.default_rng(0)
    # m0 >> m1 ~ m2: m1 and m2 overlap, both sit clearly below m0.
    a = np.repeat([0, 0, 1], 300)
    b = np.repeat([1, 2, 2], 300)
    p = np.repeat([0.95, 0.95, 0.5], 300)
    o = np.where(rng.random(900) < p, 0, 1)
    counts = count_pairs(3, a, b, o)
    rows = compute_board(entrants, sequential_elo(3, (a, b, o)), counts, BoardParams())
    by_id = {r.model_id: r for r in rows}
    assert by_id["m0"].rank_ub == 1
    assert by_id["m1"].rank_ub == 2 and by_id["m2"].rank_ub == 2
    assert all(r.ci_low < r.rating < r.ci_high for r in rows)


def test_statuses_and_elo_per_million_params():
    entrants = [
        Entrant("a", "A", "5M", 5.0),
        Entrant("b", "B"),
        Entrant("c", "C", prior_rating=1100),
    ]
    a = np.zeros(400, dtype=int)
    b = np.ones(400, dtype=int)
    o = np.tile([0, 1], 200)
    counts = count_pairs(3, a, b, o)
    elo = sequential_elo(3, (a, b, o))
    rows = {r.model_id: r for r in compute_board(entrants, elo, counts, BoardParams())}
    assert rows["a"].status == rows["b"].status == "established"
    assert rows["c"].status == "prior" and rows["c"].rating == pytest.approx(1100)
    assert rows["c"].ci_low is None and rows["c"].rank_ub is None
    assert rows["a"].elo_per_m_params == pytest.approx(rows["a"].rating / 5.0)
    assert rows["b"].elo_per_m_params is None
    strict = BoardParams(established_min_battles=1000)
    rows = {r.model_id: r for r in compute_board(entrants, elo, counts, strict)}
    assert rows["a"].status == "provisional"


def test_equal_ratings_break_ties_by_battles_then_id():
    entrants = [Entrant(i, i) for i in ("b", "a", "c")]
    counts = PairCounts.zeros(3)
    counts.add(0, 1, 2)  # b and a tie once: both at 1000 with one battle
    rows = compute_board(entrants, EloState.start(3), counts, BoardParams(bootstrap_rounds=0))
    assert [r.model_id for r in rows] == ["a", "b", "c"]  # c has no battles


def test_flagged_votes_are_kept_out_unless_asked(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a"), v("x", "y", "b", flags=["rate_limited"])])
    board = board_from_votes(votes, "ar", params=BoardParams(bootstrap_rounds=0))
    assert board.votes_used == 1 and board.skipped == {reasons.FLAGGED: 1}
    with_flagged = board_from_votes(
        votes, "ar", params=BoardParams(bootstrap_rounds=0, include_flagged=True)
    )
    assert with_flagged.votes_used == 2


def test_registry_entrants_skip_unknown_models_and_use_priors(tmp_path):
    votes = make_log(
        tmp_path, [v("x", "y", "a"), v("x", "ghost", "a"), v("x", "y", "a", arena="other")]
    )
    entrants = [Entrant("x", "X"), Entrant("y", "Y", prior_rating=1200), Entrant("w", "W")]
    board = board_from_votes(votes, "ar", entrants=entrants, params=BoardParams(bootstrap_rounds=0))
    assert board.votes_used == 1
    assert board.skipped == {reasons.UNKNOWN_MODEL: 1}
    rows = {r.model_id: r for r in board.rows}
    assert rows["w"].status == "prior" and rows["w"].rating == pytest.approx(1000)
    assert rows["y"].elo == pytest.approx(1200 - 48 * (1 - 1 / (1 + 10 ** ((1200 - 1000) / 400))))


def test_category_boards_and_voter_kinds(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a", category="de"), v("x", "y", "b", category="fr"),
                                v("x", "y", "b", category="fr", voter_kind="judge", judge="gpt")])  # fmt: skip
    de = board_from_votes(votes, "ar", category="de", params=BoardParams(bootstrap_rounds=0))
    assert de.votes_used == 1 and de.rows[0].model_id == "x"
    humans = board_from_votes(
        votes, "ar", params=BoardParams(bootstrap_rounds=0, voter_kind="human")
    )
    assert humans.votes_used == 2


def test_elo_method_orders_by_sequential_elo_without_intervals(tmp_path):
    votes = make_log(
        tmp_path, [v("x", "y", "b"), v("x", "y", "a"), v("x", "y", "a"), v("y", "x", "a")]
    )
    board = board_from_votes(votes, "ar", params=BoardParams(method="elo"))
    assert all(r.rating == r.elo and r.ci_low is None for r in board.rows)
    with pytest.raises(ValueError, match="method"):
        BoardParams(method="glicko")


def test_board_json_is_plain_json(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a"), v("y", "x", "tie")])
    data = json.loads(
        json.dumps(board_from_votes(votes, "ar", params=BoardParams(bootstrap_rounds=20)).to_json())
    )
    assert data["arena"] == "ar" and data["votes_used"] == 2
    assert data["rows"][0]["rating"] == round(data["rows"][0]["rating"], 1)
