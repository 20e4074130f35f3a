"""The bias report on a hand-made log whose every measure is worked out in the comments."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.judges.bias import measure_judges, vote_arrays
from arena_core.judges.measures import HUMAN, agreement, longer_share, position_shares, self_shares
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
    assert j1.self_term is not None and j2.self_term is None
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
