"""Leaderboard rows: ranking, tallies, statuses, intervals, groups, windows, filters.

Two boards are checked against values computed independently: plain maximum likelihood
against choix, and the default posterior against the reference written with scipy in
test_posterior.py; tallies and ranks are worked out by hand.
"""

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import choix
import numpy as np
import pytest
from scipy import stats
from test_posterior import reference

from arena_core.leaderboard import (
    NO_VOTE_ORDER,
    BoardParams,
    Entrant,
    Window,
    board_from_votes,
    compute_board,
    standings,
)
from arena_core.ratings.counts import PairCounts, count_pairs
from arena_core.ratings.elo import EloState, sequential_elo
from arena_core.votes import reasons
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes

START = datetime(2026, 11, 1, tzinfo=UTC)
#: Where a test's prior "was published": a board needs a source for any prior but 1000.
SOURCE = "test fixture"


def make_log(tmp_path, votes, days=None):
    """Votes written through the log; ``days[k]`` puts vote k that many days after START."""
    moments = iter(START + timedelta(days=d) for d in (days or [0] * len(votes)))
    store = VoteLog(tmp_path, clock=lambda: next(moments))
    for v in votes:
        store.append(**v)
    # Read as of a fixed day after the last vote, not today: these votes are dated around
    # November 2026, and rows later than the reader's clock are skipped as future_ts.
    now = START + timedelta(days=max(days or [0]) + 1)
    return read_votes(tmp_path, now_us=int(now.timestamp() * 1_000_000))


def v(a, b, vote, arena="ar", **extra):
    return {"arena": arena, "model_a": a, "model_b": b, "vote": vote, **extra}


def test_tallies_win_rate_and_order(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a"), v("x", "y", "a"), v("y", "x", "tie"),
                                v("x", "z", "both_bad"), v("z", "y", "b")])  # fmt: skip
    board = board_from_votes(votes, "ar")
    rows = {r.model_id: r for r in board.rows}
    x = rows["x"]
    assert (x.battles, x.wins, x.losses, x.ties, x.both_bad) == (4, 2, 0, 1, 1)
    assert x.win_rate == 1.0
    assert rows["y"].win_rate == pytest.approx(1 / 3)
    assert rows["z"].win_rate == 0.0
    assert [r.model_id for r in board.rows] == ["x", "y", "z"]
    # Five votes prove nothing: every interval overlaps the others, so all share ranks 1-3.
    assert [(r.rank, r.rank_worst) for r in board.rows] == [(1, 3)] * 3
    assert board.votes_used == 5 and board.last_vote.endswith("Z")
    assert board.warnings == () and {r.component for r in board.rows} == {1}


def three_models(rng_seed=0):
    """m0 >> m1 ~ m2, 300 battles per pair."""
    rng = np.random.default_rng(rng_seed)
    a = np.repeat([0, 0, 1], 300)
    b = np.repeat([1, 2, 2], 300)
    p = np.repeat([0.95, 0.95, 0.5], 300)
    o = np.where(rng.random(900) < p, 0, 1)
    return a, b, o


def test_rank_bands_separate_only_what_the_intervals_separate():
    entrants = [Entrant(f"m{k}", f"M{k}") for k in range(3)]
    a, b, o = three_models()
    rows = compute_board(entrants, sequential_elo(3, (a, b, o)), count_pairs(3, a, b, o),
                         BoardParams())  # fmt: skip
    by_id = {r.model_id: r for r in rows}
    assert (by_id["m0"].rank, by_id["m0"].rank_worst) == (1, 1)
    assert (by_id["m1"].rank, by_id["m1"].rank_worst) == (2, 3)
    assert (by_id["m2"].rank, by_id["m2"].rank_worst) == (2, 3)
    assert all(r.ci_low < r.rating < r.ci_high for r in rows)


def test_statuses_and_elo_per_million_params():
    entrants = [
        Entrant("a", "A", "5M", 5.0),
        Entrant("b", "B"),
        Entrant("c", "C", prior_rating=1100, prior_source=SOURCE),
    ]
    a = np.zeros(4000, dtype=int)
    b = np.ones(4000, dtype=int)
    o = np.tile([0, 1], 2000)
    counts = count_pairs(3, a, b, o)
    elo = sequential_elo(3, (a, b, o))
    rows = {r.model_id: r for r in compute_board(entrants, elo, counts, BoardParams())}
    assert rows["a"].status == rows["b"].status == "established"
    assert rows["c"].status == "prior" and rows["c"].rating == pytest.approx(1100)
    assert rows["c"].ci_low is None and rows["c"].rank is None and rows["c"].component is None
    assert rows["a"].elo_per_m_params == pytest.approx(rows["a"].rating / 5.0)
    assert rows["b"].elo_per_m_params is None
    strict = BoardParams(established_min_battles=10_000)
    rows = {r.model_id: r for r in compute_board(entrants, elo, counts, strict)}
    assert rows["a"].status == "provisional"


def test_models_without_battles_are_not_ranked_and_come_last():
    # "top" has a prior of 1300 and no votes: it sits below the models that played and lost.
    entrants = [
        Entrant("top", "Top", prior_rating=1300, prior_source=SOURCE),
        Entrant("x", "X"),
        Entrant("y", "Y"),
    ]
    counts = PairCounts.zeros(3)
    for _ in range(5):
        counts.add(1, 2, 0)
    rows = compute_board(entrants, EloState.start(3), counts, BoardParams())
    assert [r.model_id for r in rows] == ["x", "y", "top"]
    assert rows[-1].rank is None and rows[-1].status == "prior" and rows[-1].rating == 1300


def test_equal_ratings_break_ties_by_battles_then_id():
    entrants = [Entrant(i, i) for i in ("b", "a", "c")]
    counts = PairCounts.zeros(3)
    counts.add(0, 1, 2)  # b and a tie once: both at 1000 with one battle
    rows = compute_board(entrants, EloState.start(3), counts, BoardParams())
    assert [r.model_id for r in rows] == ["a", "b", "c"]  # c has no battles


def test_unavailable_models_leave_the_board_unless_they_have_votes():
    entrants = [Entrant(i, i) for i in ("x", "y", "gone", "idle")]
    counts = PairCounts.zeros(4)
    counts.add(0, 2, 0)
    counts.add(1, 2, 1)
    result = standings(entrants, EloState.start(4), counts, BoardParams(),
                       available={"gone": False, "idle": False, "x": True})  # fmt: skip
    rows = {r.model_id: r for r in result.rows}
    assert set(rows) == {"x", "y", "gone"}
    assert rows["gone"].available is False and rows["x"].available and rows["y"].available


def test_without_a_vote_order_the_elo_column_is_empty_and_the_rest_unchanged():
    entrants = [Entrant(i, i) for i in ("x", "y", "z")]
    counts = PairCounts.zeros(3)
    for a, b, outcome in [(0, 1, 0), (1, 2, 0), (0, 2, 1), (0, 1, 2), (2, 0, 1)]:
        counts.add(a, b, outcome)
    elo = EloState.start(3)
    for a, b, outcome in [(0, 1, 0), (1, 2, 0), (0, 2, 1), (0, 1, 2), (2, 0, 1)]:
        elo.step(a, b, outcome)
    full = standings(entrants, elo, counts, BoardParams())
    alone = standings(entrants, None, counts, BoardParams())
    assert all(r.elo is not None for r in full.rows)
    assert list(alone.rows) == [replace(r, elo=None) for r in full.rows]
    assert alone.warnings == (*full.warnings, NO_VOTE_ORDER)
    with pytest.raises(ValueError, match="time order"):
        standings(entrants, None, counts, BoardParams(method="elo"))


def test_groups_that_never_met_are_ranked_apart_and_said_so(tmp_path):
    votes = make_log(tmp_path, [v("a", "b", "a"), v("b", "a", "a"), v("a", "b", "a"),
                                v("c", "d", "a"), v("d", "c", "tie")])  # fmt: skip
    for weight in (None, 0.0):
        board = board_from_votes(votes, "ar", params=BoardParams(prior_weight=weight))
        rows = {r.model_id: r for r in board.rows}
        assert rows["a"].component == rows["b"].component == 1  # three votes: the larger group
        assert rows["c"].component == rows["d"].component == 2
        assert rows["a"].rank == 1 and rows["c"].rank == 1  # each group has its own first
        assert "2 groups of models that never met" in board.warnings[0]
        assert not any("no finite" in w for w in board.warnings)
        data = json.loads(json.dumps(board.to_json()))
        assert data["warnings"] == list(board.warnings)
        assert [r["component"] for r in data["rows"]] == [1, 1, 2, 2]


def test_plain_mle_never_stops_the_board(tmp_path):
    # x beat y once and never lost: with prior weight 0 its rating is infinite.
    votes = make_log(tmp_path, [v("x", "y", "a")])
    board = board_from_votes(votes, "ar", params=BoardParams(prior_weight=0.0))
    rows = {r.model_id: r for r in board.rows}
    assert rows["y"].rating is None and rows["y"].note.startswith("never beat")
    assert rows["y"].ci_high == pytest.approx(1000 - math.log(0.025 / 0.975) * 400 / math.log(10))
    assert rows["x"].rating == pytest.approx(1000) and rows["x"].rank == 1
    data = json.loads(json.dumps(board.to_json(), allow_nan=False))
    assert data["rows"][1]["rating"] is None
    assert data["fit"]["bootstrap_rounds"] == 1000 and data["fit"]["bootstrap_dropped"] == 0
    assert any("no finite maximum-likelihood rating" in w for w in data["warnings"])


def test_plain_mle_board_agrees_with_choix_and_hand_worked_ranks(tmp_path):
    # Four models in a cycle of wins with some draws: finite MLE. choix fits the same half-win
    # matrix (a tie is half a win each way); ranks follow from the printed intervals by hand.
    log = [("a", "b", "a")] * 6 + [("b", "a", "a")] * 2 + [("b", "c", "a")] * 5 + \
          [("c", "b", "a")] * 3 + [("c", "d", "a")] * 7 + [("d", "c", "a")] * 1 + \
          [("d", "a", "a")] * 2 + [("a", "d", "a")] * 8 + [("a", "c", "tie")] * 2  # fmt: skip
    votes = make_log(tmp_path, [v(*x) for x in log])
    board = board_from_votes(
        votes, "ar", params=BoardParams(prior_weight=0.0, bootstrap_rounds=400)
    )
    ids = ["a", "b", "c", "d"]
    wins = np.zeros((4, 4))
    for x, y, vote in log:
        i, j = ids.index(x), ids.index(y)
        if vote == "a":
            wins[i, j] += 1
        else:
            wins[i, j] += 0.5
            wins[j, i] += 0.5
    strengths = choix.ilsr_pairwise_dense(wins, alpha=0.0, tol=1e-13, max_iter=100_000)
    expected = 1000 + (strengths - strengths.mean()) * 400 / math.log(10)
    rows = {r.model_id: r for r in board.rows}
    for k, m in enumerate(ids):
        assert rows[m].rating == pytest.approx(expected[k], abs=0.01)
    assert (rows["a"].battles, rows["a"].wins, rows["a"].losses, rows["a"].ties) == (20, 14, 4, 2)
    for r in board.rows:  # best rank: 1 + models whose interval lies wholly above
        above = sum(q.ci_low > r.ci_high for q in board.rows)
        below = sum(q.ci_high < r.ci_low for q in board.rows)
        assert (r.rank, r.rank_worst) == (1 + above, 4 - below)


def test_default_board_agrees_with_an_independent_posterior(tmp_path):
    log = [("a", "b", "a"), ("b", "c", "a"), ("c", "a", "tie"), ("a", "c", "a"), ("b", "a", "b"),
           ("c", "b", "both_bad"), ("a", "b", "a")]  # fmt: skip
    votes = make_log(tmp_path, [v(*x) for x in log])
    entrants = [
        Entrant("a", "A"),
        Entrant("b", "B", prior_rating=1050, prior_source=SOURCE),
        Entrant("c", "C"),
    ]
    board = board_from_votes(votes, "ar", entrants=entrants)
    counts = count_pairs(3, *(np.array(x) for x in ([0, 1, 2, 0, 1, 2, 0], [1, 2, 0, 2, 0, 1, 1],
                                                    [0, 0, 2, 0, 1, 3, 0])))  # fmt: skip
    k = math.log(10) / 400
    taus = np.geomspace(2 * k, 800 * k, 41)
    log_hyper = -0.5 * (taus / (200 * k)) ** 2 + np.log(taus)
    mean, _, _ = reference(counts, [1000, 1050, 1000], taus, log_hyper)
    wts, mus, sds = reference(counts, [1000, 1050, 1000], taus, log_hyper, parts=True)
    rows = {r.model_id: r for r in board.rows}
    for i, m in enumerate("abc"):
        assert rows[m].rating == pytest.approx(mean[i], abs=0.01)
        # The 95% interval: the 2.5% and 97.5% quantiles of the reference mixture.
        for bound, q in ((rows[m].ci_low, 0.025), (rows[m].ci_high, 0.975)):
            cdf = stats.norm.cdf((bound - mus[:, i]) / sds[:, i])
            assert float(wts @ cdf) == pytest.approx(q, abs=1e-4)


def test_flagged_votes_are_kept_out_unless_asked(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a"), v("x", "y", "b", flags=["rate_limited"])])
    board = board_from_votes(votes, "ar")
    assert board.votes_used == 1 and board.skipped == {reasons.FLAGGED: 1}
    with_flagged = board_from_votes(votes, "ar", params=BoardParams(include_flagged=True))
    assert with_flagged.votes_used == 2


def test_registry_entrants_skip_unknown_models_and_use_priors(tmp_path):
    votes = make_log(
        tmp_path, [v("x", "y", "a"), v("x", "ghost", "a"), v("x", "y", "a", arena="other")]
    )
    entrants = [
        Entrant("x", "X"),
        Entrant("y", "Y", prior_rating=1200, prior_source=SOURCE),
        Entrant("w", "W"),
    ]
    board = board_from_votes(votes, "ar", entrants=entrants)
    assert board.votes_used == 1
    assert board.skipped == {reasons.UNKNOWN_MODEL: 1}
    rows = {r.model_id: r for r in board.rows}
    # Neither a published prior nor votes: no rating, and the row says why.
    assert rows["w"].status == "prior" and rows["w"].rating is None
    assert rows["w"].provenance is None and rows["w"].note.startswith("not yet rated")
    assert rows["y"].prior_rating == 1200 and rows["y"].prior_source == SOURCE
    assert rows["y"].elo == pytest.approx(1200 - 48 * (1 - 1 / (1 + 10 ** ((1200 - 1000) / 400))))


def test_category_boards_and_voter_kinds(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a", category="de"), v("x", "y", "b", category="fr"),
                                v("x", "y", "b", category="fr", voter_kind="judge", judge="gpt")])  # fmt: skip
    de = board_from_votes(votes, "ar", category="de")
    assert de.votes_used == 1 and de.rows[0].model_id == "x"
    humans = board_from_votes(votes, "ar", params=BoardParams(voter_kind="human"))
    assert humans.votes_used == 2


def test_time_windows_pick_their_votes(tmp_path):
    # Votes on days 0, 10, 20 and 30 after 1 November 2026.
    votes = make_log(tmp_path, [v("x", "y", "a"), v("x", "y", "a"), v("y", "x", "a"),
                                v("x", "y", "b", flags=["rate_limited"])], days=[0, 10, 20, 30])  # fmt: skip
    window = Window.parse("2026-11-05", "2026-11-21T12:00:00Z")
    board = board_from_votes(votes, "ar", window=window)
    assert board.votes_used == 2 and board.last_vote.startswith("2026-11-21")
    assert board.skipped == {reasons.FLAGGED: 1}  # skips count the whole log
    data = board.to_json()
    assert data["since"] == "2026-11-05T00:00:00.000000Z"
    assert data["until"] == "2026-11-21T12:00:00.000000Z"
    # Votes stamped exactly at midnight: since is inclusive, until exclusive.
    edges = board_from_votes(votes, "ar", window=Window.parse("2026-11-11", "2026-11-21"))
    assert edges.votes_used == 1 and edges.last_vote.startswith("2026-11-11T00:00:00.000")
    recent = Window.recent(15, datetime(2026, 11, 30, 17, 5, tzinfo=UTC))
    assert recent == Window.parse("2026-11-15")
    assert board_from_votes(votes, "ar", window=recent).votes_used == 1
    with pytest.raises(ValueError, match="ISO-8601"):
        Window.parse("last week")
    with pytest.raises(ValueError, match="after its start"):
        Window.parse("2026-11-05", "2026-11-01")
    # Finer than a vote's microseconds: Python cut the digits, so a vote a hair before
    # "since" was in; refused (six digits, the votes' own, still read).
    assert (
        Window.parse("2026-11-05T00:00:00.000001Z").since_us
        == Window.parse("2026-11-05").since_us + 1
    )
    for finer in ("2026-11-05T00:00:00.0000005Z", "2026-11-05T00:00:00,1234567+01:00"):
        with pytest.raises(ValueError, match="more precise than a vote's time"):
            Window.parse(finer)


def test_time_decay_weighs_recent_votes_more(tmp_path):
    # x won three votes long ago (days 0-2); y won three recent ones (days 58-60).
    votes = make_log(tmp_path, [v("x", "y", "a")] * 3 + [v("y", "x", "a")] * 3,
                     days=[0, 1, 2, 58, 59, 60])  # fmt: skip
    flat = {r.model_id: r for r in board_from_votes(votes, "ar").rows}
    decayed = board_from_votes(votes, "ar", params=BoardParams(half_life_days=7))
    rows = {r.model_id: r for r in decayed.rows}
    assert flat["x"].rating == pytest.approx(flat["y"].rating)
    assert rows["y"].rating > rows["x"].rating
    assert rows["y"].battles == 6 and decayed.to_json()["fit"]["half_life_days"] == 7

    # Ages count back from the window's end when it has one: a week later, every vote
    # weighs half as much, so the same votes give wider intervals (under a fixed prior).
    def width(until):
        params = BoardParams(half_life_days=7, prior_weight=4.0)
        board = board_from_votes(votes, "ar", params=params,
                                 window=Window.parse(None, until))  # fmt: skip
        row = next(r for r in board.rows if r.model_id == "y")
        return row.ci_high - row.ci_low

    assert width("2027-01-07") > 1.1 * width("2026-12-31T00:00:01Z")
    # A half-life of a million days is no decay, to a hundredth of a point.
    slow = board_from_votes(votes, "ar", params=BoardParams(half_life_days=1e6))
    assert slow.rows[0].rating == pytest.approx(flat[slow.rows[0].model_id].rating, abs=0.01)


def test_elo_method_orders_by_sequential_elo_without_intervals(tmp_path):
    votes = make_log(
        tmp_path, [v("x", "y", "b"), v("x", "y", "a"), v("x", "y", "a"), v("y", "x", "a")]
    )
    board = board_from_votes(votes, "ar", params=BoardParams(method="elo"))
    assert all(r.rating == r.elo and r.ci_low is None for r in board.rows)
    assert [r.rank for r in board.rows] == [1, 2]
    with pytest.raises(ValueError, match="method"):
        BoardParams(method="glicko")
    with pytest.raises(ValueError, match="half_life"):
        BoardParams(half_life_days=0)


def test_board_json_is_plain_json(tmp_path):
    votes = make_log(tmp_path, [v("x", "y", "a"), v("y", "x", "tie")])
    data = json.loads(json.dumps(board_from_votes(votes, "ar").to_json(), allow_nan=False))
    assert data["arena"] == "ar" and data["votes_used"] == 2
    assert data["rows"][0]["rating"] == round(data["rows"][0]["rating"], 1)
    assert data["fit"]["prior"] == "fitted" and data["fit"]["spread"] > 0
    assert data["since"] is None and data["warnings"] == []


def test_plain_mle_intervals_widen_as_votes_decay_then_are_withheld(tmp_path):
    """Decayed votes are fractional evidence: with --prior-weight 0 the bootstrap resampled
    their rounded total, so as they aged the intervals widened, then collapsed to zero width
    (at 1000, outside the rating) once most replicates were dropped, and to the point
    estimate with no warning below half a vote. Now they widen, then none are given."""
    rng = np.random.default_rng(1)
    log = [v(*map(str, rng.choice(["x", "y", "z"], 2, replace=False)), str(rng.choice(list("ababt"))).replace("t", "tie"))
           for _ in range(60)]  # fmt: skip
    votes = make_log(tmp_path, log, days=[k / 1440 for k in range(60)])
    params = BoardParams(prior_weight=0.0, half_life_days=1.0)
    widths, warned = [], []
    for days in (1, 3, 5, 7, 10):
        until = (START + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
        board = board_from_votes(votes, "ar", params=params, window=Window.parse(None, until))
        x = {r.model_id: r for r in board.rows}["x"]
        widths.append(None if x.ci_low is None else x.ci_high - x.ci_low)
        warned.append(any("too few to give intervals" in w for w in board.warnings))
        if x.ci_low is not None:
            assert x.ci_low <= x.rating <= x.ci_high
    assert widths[0] < widths[1] and widths[2:] == [None, None, None]
    assert warned == [False, False, True, True, True]


def test_a_model_unbounded_above_counts_above_the_models_its_bound_clears(tmp_path):
    """The rank band's rule (1 + models of the group whose interval lies wholly above) left
    out a model never beaten, listed first with its one-sided bound above everyone's."""
    rng = np.random.default_rng(0)
    truth = {"a": 1100, "b": 1000, "c": 900}
    log = []
    for _ in range(600):
        x, y = rng.choice(list(truth), 2, replace=False)
        p = 1 / (1 + 10 ** (-(truth[x] - truth[y]) / 400))
        log.append(v(str(x), str(y), "a" if rng.random() < p else "b"))
    log += [v("new", "a", "a")] * 20  # beat the best model 20 times, never lost
    board = board_from_votes(make_log(tmp_path, log), "ar", params=BoardParams(prior_weight=0.0))
    rows = {r.model_id: r for r in board.rows}
    assert rows["new"].rating is None and rows["new"].ci_low > rows["a"].ci_high
    assert (rows["a"].rank, rows["b"].rank, rows["c"].rank) == (2, 3, 4)
    assert rows["c"].rank_worst == 4 and board.rows[0].model_id == "new"


def _mirrored_judge_log(tmp_path, both_orders: bool):
    """A deterministic judge's verdicts on 120 battles among four models: each battle's
    decision, written in the order shown and (``both_orders``) mirrored in the swapped one."""
    rng = np.random.default_rng(3)
    truth = {"w": 100.0, "x": 30.0, "y": -30.0, "z": -100.0}
    rows = []
    for k in range(120):
        a, b = rng.choice(sorted(truth), 2, replace=False)
        a_wins = rng.random() < 1 / (1 + 10 ** ((truth[b] - truth[a]) / 400))
        judge = {"voter_kind": "judge", "judge": "pitch", "battle_id": f"battle-{k}"}
        rows.append(v(a, b, "a" if a_wins else "b", **judge))
        if both_orders:
            rows.append(v(b, a, "b" if a_wins else "a", **judge))
    return make_log(tmp_path, rows)


@pytest.mark.parametrize("prior_weight", [4.0, None, 0.0])
def test_a_judges_mirrored_verdicts_on_a_battle_count_as_one_battle(tmp_path, prior_weight):
    """Both orders of one battle, mirrored, carry one battle's information: the judge's board
    is the board of its first-order verdicts alone (it was 0.71 times as wide)."""
    params = BoardParams(voter_kind="judge", judge="pitch", prior_weight=prior_weight,
                         bootstrap_rounds=200)  # fmt: skip
    both = board_from_votes(_mirrored_judge_log(tmp_path / "both", True), "ar", params=params)
    once = board_from_votes(_mirrored_judge_log(tmp_path / "once", False), "ar", params=params)
    assert both.votes_used == 2 * once.votes_used == 240
    for r2, r1 in zip(both.rows, once.rows, strict=True):
        assert r2.model_id == r1.model_id and r2.battles == 2 * r1.battles
        assert r2.rating == pytest.approx(r1.rating, abs=1e-6)
        assert r2.ci_high - r2.ci_low == pytest.approx(r1.ci_high - r1.ci_low, rel=1e-6)
