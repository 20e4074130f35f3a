"""The bias report on a hand-made log whose every measure is worked out in the comments."""

import json
from html import escape

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.analysis.text import judges_table
from arena_core.judges.bias import measure_judges, vote_arrays
from arena_core.judges.measures import HUMAN, agreement, longer_share, position_shares, self_shares
from arena_core.page.analysis_html import judges_html
from arena_core.votes.schema import VOTES

FAMILIES = {"x": "fa", "y": "fb", "z": "fb"}
JUDGE_FAMILIES = {"J1": "fa", "J2": None}
N = None  # no duration


def _log() -> pd.DataFrame:
    rows = [
        # battle, a, b, vote, kind, judge, prompt, duration a, duration b
        ("h1", "x", "y", "a", None, None, "p1", 3.0, 2.0),
        ("h2", "y", "x", "b", "human", None, "p1", N, N),
        ("h3", "x", "y", "tie", "human", None, "p1", N, N),
        ("h4", "x", "z", "b", "human", None, "p2", 3.0, 4.0),
        ("h5", "y", "z", "a", "human", None, None, N, N),
        ("B1", "x", "y", "a", "judge", "J1", "p1", 3.0, 2.0),
        ("B1", "y", "x", "b", "judge", "J1", "p1", 2.0, 3.0),
        ("B2", "x", "z", "a", "judge", "J1", "p3", 3.0, 4.0),
        ("B2", "z", "x", "a", "judge", "J1", "p3", 4.0, 3.0),
        ("B3", "y", "z", "tie", "judge", "J1", "p2", N, N),
        ("B3", "z", "y", "tie", "judge", "J1", "p2", N, N),
        ("B4", "y", "z", "b", "judge", "J2", None, N, N),
        ("B4", "z", "y", "a", "judge", "J2", None, N, N),
        # Rows that must be skipped and counted.
        ("bad1", "x", "y", "maybe", "human", None, "p1", N, N),
        ("bad2", "x", "x", "a", "human", None, "p1", N, N),
        ("bad3", "x", "y", "a", "robot", None, "p1", N, N),
        ("bad4", "x", "y", "a", "judge", None, "p1", N, N),
    ]
    return pd.DataFrame(rows, columns=["battle_id", "model_a", "model_b", "vote", "voter_kind",
                                       "judge", "prompt_id", "model_a_duration_s",
                                       "model_b_duration_s"])  # fmt: skip


def test_bad_rows_are_skipped_and_counted_by_reason():
    arrays, models, judges, skipped = vote_arrays(_log())
    assert models == ["x", "y", "z"] and judges == ["J1", "J2"]
    assert skipped == {"vote": 1, "models": 1, "voter_kind": 1, "judge": 1}
    assert (arrays.judge == HUMAN).sum() == 5  # a null voter_kind is a human


def test_agreement_on_the_same_prompt_and_on_the_same_pair():
    arrays, *_ = vote_arrays(_log())
    by_prompt, by_pair = agreement(arrays, 0, 3)
    # B1's two verdicts (x wins) against h1, h2 (x wins) and h3 (tie) on (x, y, p1): 2/3 each.
    # J1 is decisive on 4 of its 6 verdicts: chance = 2/3 * (2/3 + 0) / 2 + 1/3 * 1/3 = 1/3.
    assert (by_prompt.share, by_prompt.chance, by_prompt.verdicts) == pytest.approx(
        (2 / 3, 1 / 3, 2)
    )
    # B2 (x wins, then z wins) against h4 (z wins) on {x, z}: 0 and 1. B3's two ties against
    # h5 (y wins) on {y, z}: 0 and 0 (h5 has no prompt; h4's p2 is another pair). Chance:
    # 2/3 * 1 / 2 = 1/3 for each verdict.
    assert (by_pair.share, by_pair.chance, by_pair.verdicts) == pytest.approx((0.25, 1 / 3, 4))


def test_position_self_and_duration_shares():
    arrays, *_ = vote_arrays(_log())
    # B2's verdicts both pick side A (x, then z); B1 and B3 follow the models. Decisive
    # verdicts: a, b, a, a -> 3 of 4 for side A.
    assert position_shares(arrays, 0) == pytest.approx((1 / 3, 0.75, 3))
    # J1's family is {x}. Its verdicts on {x, y}: x scores 1, 1; on {x, z}: 1, 0 -> 0.75.
    # Humans give x 2.5/3 on {x, y} and 0 on {x, z}: weighted like the verdicts, 5/12.
    family = np.array([True, False, False])
    assert self_shares(arrays, 0, family, 3) == pytest.approx((0.75, 5 / 12, 4))
    # Durations known on B1 and B2: the longer clip wins 3 of 4 decisive verdicts; humans 2 of 2.
    assert longer_share(arrays, 0) == pytest.approx((0.75, 4))
    assert longer_share(arrays, HUMAN) == pytest.approx((1.0, 2))


def test_the_report_carries_every_measure_and_is_json_ready():
    report = measure_judges(_log(), FAMILIES, JUDGE_FAMILIES)
    j1, j2 = report.judges
    assert (j1.judge, j1.family, j1.verdicts, j1.battles_paired) == ("J1", "fa", 6, 3)
    assert j1.self_excess == pytest.approx(0.75 - 5 / 12)
    # J2's verdicts lack durations, so the fit leaves them all out: J1 is alone in it, and a
    # lone judge's self term is its family's strength (until session 27 J2's empty columns
    # made it look like two judges, and J2 got fitted numbers from none of its verdicts).
    assert j1.self_term is None and j2.self_term is None and j1.not_fitted is None
    assert j2.not_fitted and j2.position is None and j2.discrimination is None
    assert j2.flip_share == 0.0 and j2.a_share == 0.5
    # Half the judges' verdicts have durations: duration terms on, the others left out.
    assert report.duration_terms and report.rows_without_duration == 4
    assert report.skipped == {"vote": 1, "models": 1, "voter_kind": 1, "judge": 1}
    assert set(report.human) == {"x", "y", "z"} and set(j1.board) == {"x", "y", "z"}
    assert report.human_position is not None and report.human_longer_share == 1.0
    json.dumps(report.to_json(), allow_nan=False)


def test_without_durations_there_are_no_duration_terms():
    log = _log().drop(columns=["model_a_duration_s", "model_b_duration_s"])
    report = measure_judges(log, FAMILIES, JUDGE_FAMILIES)
    assert not report.duration_terms and report.rows_without_duration == 0
    assert all(j.duration is None and j.longer_share is None for j in report.judges)


@st.composite
def logs(draw):
    """Random small logs: human votes and judge verdicts in swapped pairs, some with prompts."""
    models, prompts = ["x", "y", "z", "w"], ["p1", "p2", None]
    rows = []
    for i in range(draw(st.integers(1, 12))):
        a, b = draw(st.permutations(models))[:2]
        rows.append((f"h{i}", a, b, draw(st.sampled_from(VOTES)), "human", None,
                     draw(st.sampled_from(prompts)), draw(st.sampled_from([1.0, 2.0, None])),
                     draw(st.sampled_from([1.5, None]))))  # fmt: skip
    for i in range(draw(st.integers(1, 8))):
        a, b = draw(st.permutations(models))[:2]
        prompt = draw(st.sampled_from(prompts))
        for first, second in ((a, b), (b, a)):
            rows.append((f"B{i}", first, second, draw(st.sampled_from(VOTES)), "judge", "J1",
                         prompt, 2.0 if first == a else 3.0, 3.0 if first == a else 2.0))  # fmt: skip
    return pd.DataFrame(rows, columns=_log().columns)


def _swapped(log: pd.DataFrame) -> pd.DataFrame:
    out = log.copy()
    out["model_a"], out["model_b"] = log["model_b"], log["model_a"]
    out["model_a_duration_s"], out["model_b_duration_s"] = (log["model_b_duration_s"],
                                                              log["model_a_duration_s"])  # fmt: skip
    out["vote"] = log["vote"].replace({"a": "b", "b": "a"})
    return out


@settings(max_examples=30, deadline=None)
@given(logs())
def test_showing_every_vote_the_other_way_round_changes_only_the_side_shares(log):
    one, two = vote_arrays(log)[0], vote_arrays(_swapped(log))[0]
    assert agreement(one, 0, 4) == agreement(two, 0, 4)
    family = np.array([True, False, True, False])
    assert self_shares(one, 0, family, 4) == pytest.approx(self_shares(two, 0, family, 4))
    assert longer_share(one, 0) == longer_share(two, 0)
    assert longer_share(one, HUMAN) == longer_share(two, HUMAN)
    flip1, a1, paired1 = position_shares(one, 0)
    flip2, a2, paired2 = position_shares(two, 0)
    assert (flip1, paired1) == (flip2, paired2)
    assert (a1 is None and a2 is None) or a1 == pytest.approx(1 - a2)


def test_logs_without_judges_humans_or_anything_give_a_report_of_what_there_is():
    log = _log()
    humans_only = measure_judges(log[log["voter_kind"] != "judge"], FAMILIES, JUDGE_FAMILIES)
    assert humans_only.judges == () and humans_only.consensus == {} and humans_only.human
    judges_only = measure_judges(log[log["voter_kind"] == "judge"], FAMILIES, JUDGE_FAMILIES)
    assert judges_only.human == {} and judges_only.human_position is None
    assert all(j.spearman_human is None and j.agreement_pair.verdicts == 0
               for j in judges_only.judges)  # fmt: skip
    empty = measure_judges(log.iloc[:0], FAMILIES, JUDGE_FAMILIES)
    assert empty.judges == () and empty.human == {} and empty.skipped == {}


def _judge_rows(judge, pairs, winner, durations=True, start=0):
    """Verdicts of ``judge`` on each pair in both orders, ``winner(a, b)`` picking the model."""
    rows = []
    for k, (a, b) in enumerate(pairs):
        w = winner(a, b)
        for first, second in ((a, b), (b, a)):
            d = (2.0 + len(first) / 10, 2.0 + len(second) / 10) if durations else (N, N)
            rows.append((f"{judge}{start + k}", first, second, "a" if w == first else "b",
                         "judge", judge, "p1", *d))  # fmt: skip
    return rows


STRENGTH = {"x": 3, "yy": 2, "zzz": 1, "w": 0}  # id lengths vary the clip durations
PAIRS = [("x", "yy"), ("yy", "zzz"), ("x", "zzz"), ("zzz", "w"), ("x", "w"), ("yy", "w")]


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=_log().columns)


def _humans():
    """Three human votes per pair: the stronger model twice, then a tie."""
    return [(f"h{k}{i}", a, b, ("a" if STRENGTH[a] > STRENGTH[b] else "b") if i < 2 else "tie",
             "human", None, "p1", N, N) for k, (a, b) in enumerate(PAIRS) for i in range(3)]  # fmt: skip


def _better(a, b):
    return a if STRENGTH[a] > STRENGTH[b] else b


def _worse(a, b):
    return b if STRENGTH[a] > STRENGTH[b] else a


def _noisy(a, b):
    return a if (len(a) + len(b)) % 3 else b


def test_a_judge_none_of_whose_verdicts_is_in_the_fit_has_no_fitted_numbers():
    """J2 ranks the models upside down and records no durations; J1 records them, so the
    fit takes duration terms and leaves J2's verdicts out. Until session 27 J2 still got a
    discrimination, terms, a 'corrected' board and a Spearman after correction (-1 -> 0.8)
    read off parameters no verdict of its informed. J1's numbers are exactly those of a
    log without J2 at all: J2 no longer weighs on the fit either."""
    j1 = _judge_rows("J1", PAIRS * 3, _noisy) + _judge_rows("J1", PAIRS, _better, start=20)
    j2 = _judge_rows("J2", PAIRS, _worse, durations=False)
    both = measure_judges(_frame(_humans() + j1 + j2), {}, {"J1": None, "J2": None})
    alone = measure_judges(_frame(_humans() + j1), {}, {"J1": None})
    first, second = both.judges
    assert both.duration_terms and both.rows_without_duration == len(j2)
    assert (second.position, second.self_term, second.duration, second.discrimination) == (
        None, None, None, None)  # fmt: skip
    assert second.corrected == {} and second.corrected_sd == {}
    assert second.spearman_human_corrected is None and second.pearson_human_corrected is None
    assert second.not_fitted and "durations" in second.not_fitted
    assert second.spearman_human == pytest.approx(-1.0) and set(second.board) == set(STRENGTH)
    assert second.verdicts == len(j2) and second.a_share == 0.5  # measured, not fitted
    assert first.corrected == pytest.approx(alone.judges[0].corrected)
    assert first.position == alone.judges[0].position and both.consensus == pytest.approx(
        alone.consensus)  # fmt: skip
    data = both.to_json()["judges"][1]
    assert data["not_fitted"] == second.not_fitted and data["corrected"] == {}
    json.dumps(both.to_json(), allow_nan=False)
    for text in (judges_table(both, "ar", {}), judges_html(both, {}, {"J2": "Second"})):
        assert "no fitted terms" in text and "none of its verdicts has both clip durations" in text
    assert "Second: no fitted terms" in judges_html(both, {}, {"J2": "Second"})


def test_the_consensus_lists_only_models_some_judge_judged():
    """Humans play w; the judge only ever sees x against yy. Until session 27 the consensus
    ranked w too, at the anchor 1000 where its prior left it."""
    humans = [r for r in _humans() if "w" in r[1:3]] + _humans()[:3]
    report = measure_judges(_frame(humans + _judge_rows("J1", [("x", "yy")] * 4, _noisy)), {},
                            {"J1": None})  # fmt: skip
    assert "w" in report.human and set(report.consensus) == {"x", "yy"}
    assert set(report.consensus_sd) == {"x", "yy"}
    assert set(report.judges[0].corrected) == {"x", "yy"}


def test_a_judge_that_always_picks_side_a_has_an_unbounded_position_term():
    """Every verdict for side A, each battle in both orders: the judge's A-side term has no
    finite estimate (until session 27: a finite number with an interval of +-10^5 points
    calling it insignificant); a judge that follows the models keeps a bounded one."""
    first = _judge_rows("J1", PAIRS * 2, _noisy)
    first = [(*r[:3], "a", *r[4:]) for r in first]
    fair = _judge_rows("J2", PAIRS * 2, _better)
    fair += [
        (f"t{k}", a, b, "tie", "judge", "J2", "p1", 2.0, 2.0) for k, (a, b) in enumerate(PAIRS)
    ]
    report = measure_judges(_frame(_humans() + first + fair), {}, {"J1": None, "J2": None})
    j1, j2 = report.judges
    assert j1.a_share == 1.0 and j1.position.points is None and not j1.position.estimated
    assert j1.position.low > 0 and j1.position.high is None and "unbounded" in j1.position.note
    assert j2.position.estimated and j2.position.low < 0 < j2.position.high
    json.dumps(report.to_json(), allow_nan=False)
    line = next(r for r in judges_table(report, "ar", {}).splitlines() if r.startswith("J1"))
    assert "+inf" in line


def test_the_views_print_an_unbounded_humans_term_as_a_bound_and_an_uninformed_one_as_none():
    humans = [(f"h{k}", a, b, "a", "human", None, "p1", N, N)
              for k, (s, t) in enumerate(PAIRS) for a, b in ((s, t), (t, s))]  # fmt: skip
    report = measure_judges(_frame(humans), {}, {})
    term = report.human_position
    assert term.points is None and term.low > 0
    text, html = judges_table(report, "ar", {}), judges_html(report, {}, {})
    assert f"at least {term.low:+.1f} points" in text and "+2377" not in text
    judged = measure_judges(_frame(humans + _judge_rows("J1", PAIRS, _better)), {}, {"J1": None})
    html = judges_html(judged, {}, {})
    assert "Human voters' side-A term: +inf" in html and f"&gt; {term.low:+.1f}" in html


def test_a_judge_whose_terms_separate_its_verdicts_gets_no_correlation_after_correction():
    """J1 always picks the shorter clip (the shorter id), in both orders: its duration term
    runs off to -inf, its position term with it, and its "corrected" board is the limit of
    the fit, ratings a hundredth of a point apart. That board used to get a Spearman
    of -1 against the humans, and the position term's note said all its informative votes
    went its way, although its verdicts pick side A exactly half the time."""
    shorter = [("x", "yy"), ("yy", "zzz"), ("x", "zzz")] * 3
    judge = _judge_rows("J1", shorter, lambda a, b: min(a, b, key=len))
    report = measure_judges(_frame(_humans() + judge), {}, {"J1": None})
    (j1,) = report.judges
    assert j1.a_share == 0.5 and j1.flip_share == 0.0
    assert not j1.duration.estimated and not j1.position.estimated
    assert "not identified" in j1.position.note and "go its way" not in j1.position.note
    assert j1.spearman_human is not None
    assert j1.spearman_human_corrected is None and j1.pearson_human_corrected is None
    (note,) = j1.notes
    assert "no correlation after correction" in note and "no finite estimate" in note
    assert json.loads(json.dumps(report.to_json()))["judges"][0]["notes"] == [note]
    assert f"J1: {note}" in judges_table(report, "ar", {})
    assert f"First: {note}." in judges_html(report, {}, {"J1": "First"})


def _family_judge(judge, start=0):
    """A judge of family fa (the weakest model w's) that picks w unless it meets x, the
    strongest, and otherwise the stronger model; no durations (the shorter clip would
    always win, a duration term without end)."""
    return _judge_rows(judge, PAIRS * 2,
                       lambda a, b: "w" if "w" in (a, b) and "x" not in (a, b) else _better(a, b),
                       durations=False, start=start)  # fmt: skip


@pytest.mark.parametrize("judges", [("J1",), ("J1", "J2")])
def test_a_self_preference_no_outside_judge_anchors_is_said_to_be_uncorrected(judges):
    """One judge of family fa, or two: their favour for w cannot be told from w's strength
    (their self term is +1 exactly where w plays side A against another family). One judge's
    was silently left in a board called corrected; two got a self term the priors split
    (73 [-205, +352] points on the hunter's log). Now: no self term, a note, and the
    consensus not called corrected for it. A judge outside the family anchors it."""
    verdicts = [r for k, j in enumerate(judges) for r in _family_judge(j, start=100 * k)]
    families = {"x": "fb", "yy": "fb", "zzz": "fb", "w": "fa"}
    report = measure_judges(_frame(_humans() + verdicts), families, dict.fromkeys(judges, "fa"))
    for bias in report.judges:
        assert bias.self_term is None and bias.self_corrected is False
        assert bias.self_excess is not None and bias.self_excess > 0  # measured all the same
        (note,) = bias.notes
        assert note.startswith("self-preference not corrected") and "(fa)" in note
    text, html = judges_table(report, "ar", {}), judges_html(report, {}, {"J1": "First"})
    assert (
        f"J1: {report.judges[0].notes[0]}" in text
        and f"First: {escape(report.judges[0].notes[0])}" in html
    )
    assert "(corrected, except for the self-preference of J1" in text
    assert "consensus (except for the self-preference of First" in html
    assert json.loads(json.dumps(report.to_json()))["judges"][0]["self_corrected"] is False
    outsider = _judge_rows("J3", PAIRS * 2, _better, durations=False, start=500)
    anchored = measure_judges(_frame(_humans() + verdicts + outsider), families,
                              {**dict.fromkeys(judges, "fa"), "J3": None})  # fmt: skip
    for bias in anchored.judges[: len(judges)]:
        assert bias.self_term is not None and bias.self_corrected and bias.notes == ()
    assert "except" not in judges_table(anchored, "ar", {})
