"""The model page's engine and CLI on hand-worked logs; Wilson intervals against scipy's."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from arena_core.analysis import model_stats
from arena_core.analysis.model_report import MODEL_COLUMNS, model_report
from arena_core.analysis.model_stats import MAX_SNAPSHOTS, bt_history, elo_history, wilson_interval
from arena_core.cli import main
from arena_core.ratings.elo import sequential_elo
from arena_core.votes.read import read_votes


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))  # fmt: skip
def test_wilson_matches_scipy_and_holds_the_share(kn, level):
    k, n = kn
    low, high = wilson_interval(k, n, level)
    ref = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert low == pytest.approx(ref.low, abs=1e-9) and high == pytest.approx(ref.high, abs=1e-9)
    assert 0.0 <= low <= k / n <= high <= 1.0
    flipped = wilson_interval(n - k, n, level)
    assert flipped[0] == pytest.approx(1 - high, abs=1e-12)


def test_wilson_by_hand_and_its_edges():
    # k = 0: the upper bound is z^2 / (n + z^2); z = 1.959964 at 95%.
    z2 = 1.959963984540054**2
    assert wilson_interval(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson_interval(3, 2)


def row(k, a, b, vote, category="en", **extra):
    return {"schema_version": 3, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
            "ts": f"2026-10-01T00:00:{k:02d}.000Z", "arena": "speech", "model_a": a,
            "model_b": b, "vote": vote, "prompt_id": f"p{k}", "prompt": f"text {k}",
            "category": category, "voter": f"v{k}", "voter_kind": "human", "flags": []} | extra  # fmt: skip


#: Model "x" against "y" and "z". From x's side: vs y win, loss, tie, win; vs z both_bad, win;
#: y against z once (x not in it); one flagged vote and one judge's vote, both not counted.
LOG = [
    row(0, "x", "y", "a", model_a_duration_s=2.0, model_b_duration_s=4.0),
    row(1, "y", "x", "a", model_a_duration_s=3.0, model_b_duration_s=1.0),
    row(2, "x", "y", "tie", category="fr", model_a_duration_s=6.0, model_b_duration_s=5.0),
    row(3, "y", "z", "b"),
    row(4, "y", "x", "b", category="fr"),
    row(5, "z", "x", "both_bad"),
    row(6, "x", "z", "a"),
    row(7, "x", "z", "b", flags=["rate_limited"]),
    row(8, "z", "x", "a", voter_kind="judge", judge="j", voter="judge:j"),
]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in LOG))
    return path


def test_the_hand_worked_log(log):
    report = model_report(read_votes(log, columns=MODEL_COLUMNS), "speech", "x", recent=2)
    assert report.votes_used == 7  # the flagged and the judge's votes are left out
    vs = {o.opponent: o for o in report.opponents}
    y, z = vs["y"], vs["z"]
    assert (y.battles, y.win.count, y.loss.count, y.tie.count, y.both_bad.count) == (4, 2, 1, 1, 0)
    assert (z.battles, z.win.count, z.loss.count, z.tie.count, z.both_bad.count) == (2, 1, 0, 0, 1)
    assert y.win.rate == 0.5 and z.both_bad.rate == 0.5
    cats = {c.category: c for c in report.categories}
    # en: vote 0 win, 1 loss, 5 both_bad, 6 win -> 4 battles, 2 of 3 decided; fr: tie, win.
    assert (cats["en"].battles, cats["en"].win_rate.count, cats["en"].win_rate.rate) == (
        4,
        2,
        2 / 3,
    )
    assert (cats["fr"].battles, cats["fr"].win_rate.rate) == (2, 1.0)
    style = {s.field: s for s in report.style}
    # x's durations 2, 1, 6 -> median 2; every side 2, 4, 3, 1, 6, 5 -> median 3.5.
    assert (style["duration_s"].model_median, style["duration_s"].arena_median) == (2.0, 3.5)
    assert style["duration_s"].votes == 3 and style["lufs"].model_median is None
    assert [(b.vote_id[-2:], b.opponent, b.side, b.result, b.prompt) for b in report.recent] == [
        ("06", "z", "a", "win", "text 6"), ("05", "z", "b", "both_bad", "text 5")]  # fmt: skip
    assert report.available is None and report.median_latency_s is None and report.notes


def test_the_elo_history_by_hand():
    # Models 0, 1, 2 from 1000; K(n) = 12 + 36 * 15 / (15 + n): K(0) = 48, K(1) = 45.75.
    a, b, outcome = [0, 1, 2], [1, 2, 0], [0, 0, 1]  # 0 beats 1, 1 beats 2, 0 beats 2 (b wins)
    points = elo_history(3, (a, b, outcome), 0)
    r0 = 1000 + 48 * 0.5  # first vote: E = 0.5
    r1 = 1000 - 48 * 0.5
    r2 = 1000 - 48 * (1 - 1 / (1 + 10 ** ((1000 - r1) / 400)))
    r0_after = r0 + 45.75 * (1 - 1 / (1 + 10 ** ((r2 - r0) / 400)))
    assert [(p.battle, p.arena_votes) for p in points] == [(1, 1), (2, 3)]
    assert points[0].rating == pytest.approx(r0) and points[1].rating == pytest.approx(r0_after)
    final = sequential_elo(3, (a, b, outcome)).ratings[0]
    assert points[-1].rating == final  # the same arithmetic as the board's replay, to the bit


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, n - 1), st.integers(0, 3)),
             min_size=1, max_size=400),
    st.integers(0, n - 1), st.integers(1, 40),
    st.lists(st.floats(800, 1200), min_size=n, max_size=n))))  # fmt: skip
def test_the_compiled_history_equals_stepping_the_votes_bit_for_bit(case):
    """From 30,000 votes (or once compiled) the history comes from the compiled loop run
    segment by segment; each point must be the live app's step-by-step Elo to the bit."""
    n, votes, model, points, prior = case
    a = [i for i, _, _ in votes]
    b = [(i + d) % n for i, d, _ in votes]
    outcome = [o for _, _, o in votes]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model_stats, "COMPILED_HISTORY_FROM", 0)
        compiled = elo_history(n, (a, b, outcome), model, prior, points=points)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model_stats, "COMPILED_HISTORY_FROM", 10**12)
        patch.setattr(model_stats.elo_kernel, "compiled", lambda: False)
        stepped = elo_history(n, (a, b, outcome), model, prior, points=points)
    assert compiled == stepped


def test_the_histories_are_downsampled_and_end_at_the_board(log):
    a, b, outcome = [0, 1] * 300, [1, 2] * 300, [0, 2] * 300
    points = elo_history(3, (a, b, outcome), 0, points=50)
    assert len(points) == 50 and points[-1].battle == 300 and points[0].battle == 1
    snaps = bt_history(3, (a, b, outcome), 2)
    assert len(snaps) == MAX_SNAPSHOTS and snaps[-1].arena_votes == 600
    assert all(s.low < s.rating < s.high for s in snaps)
    report = model_report(read_votes(log, columns=MODEL_COLUMNS), "speech", "x")
    assert report.bt_history[-1].rating == pytest.approx(report.board_row.rating)
    assert report.elo_history[-1].rating == pytest.approx(report.board_row.elo)
    assert report.elo_history[-1].ts == "2026-10-01T00:00:06.000000Z"


def test_the_cli_json(log, capsys):
    assert main(["model", "--votes", str(log), "--arena", "speech", "--model", "x",
                 "--recent", "1", "--format", "json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "x" and out["available"] is None and out["median_latency_s"] is None
    assert [o["opponent"] for o in out["opponents"]] == ["y", "z"]
    ref = binomtest(2, 4).proportion_ci(confidence_level=0.95, method="wilson")
    win = out["opponents"][0]["win"]
    assert (win["count"], win["rate"]) == (2, 0.5)
    assert (win["low"], win["high"]) == pytest.approx((ref.low, ref.high), abs=1e-9)
    assert len(out["recent"]) == 1 and out["board_row"]["battles"] == 6
    assert main(["model", "--votes", str(log), "--arena", "speech", "--model", "nobody"]) == 2
    assert main(["model", "--votes", str(log), "--arena", "speech", "--model", "x"]) == 0
    assert "opponent | battles" in capsys.readouterr().out
