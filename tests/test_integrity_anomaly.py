"""The anomalous-voter test: its p-values, its thresholds, and one answer for the Space and the CLI.

Expected values come from hand-worked counts, scipy's chi-squared law, and a
plain-Python re-implementation of the test written from the paper's definition
(``naive_test`` below), never from the module under test.
"""

import gc
import math
import weakref
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from test_integrity_pvalue import splitmix_tie

from arena_core.integrity.anomaly import AnomalyParams, anomalous_votes, detect, detection_of
from arena_core.integrity.detector import AnomalyDetector
from arena_core.integrity.pvalue import TIE_BITS
from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.votes.clean import clean
from arena_core.votes.schema import ARROW_SCHEMA, Vote, format_ts

START = datetime(2026, 3, 1, tzinfo=UTC)
#: Small checkpoints and a loose alpha, so random logs of a few dozen votes flag someone.
LOOSE = AnomalyParams(alpha=0.3, checks=(1, 2, 3, 5, 8, 13))


def votes_of(rows):
    """Vote records, one millisecond apart, in the given (replay) order."""
    out = []
    for k, r in enumerate(rows):
        ts = format_ts(START + timedelta(milliseconds=k))
        out.append(Vote(vote_id=f"id-{k:06d}", ts=ts, arena=r.get("arena", "ar"), model_a=r["a"],
                        model_b=r["b"], vote=r["vote"], voter=r.get("voter"),
                        voter_kind=r.get("kind", "human"), flags=tuple(r.get("flags", ())),
                        judge="j" if r.get("kind") == "judge" else None))  # fmt: skip
    return out


def table_of(votes):
    table = pa.Table.from_pylist([v.to_dict() for v in votes], schema=ARROW_SCHEMA)
    return clean(table, Counter())


# -- an independent implementation, from the definitions -------------------------------


def naive_test(votes, params):
    """Fisher's statistic and flags, vote by vote, with plain lists and floats."""
    history = []  # (pair, outcome, voter) of unflagged human votes
    stat, count, flagged = defaultdict(float), Counter(), {}
    for v in votes:
        if v.voter_kind != "human":
            continue
        first, second = sorted((v.model_a, v.model_b))
        pair = (v.arena, first, second)
        winner = {"a": v.model_a, "b": v.model_b}.get(v.vote)
        outcome = v.vote if winner is None else ("first" if winner == first else "second")
        if v.voter is not None:
            others = [o for p, o, who in history if p == pair and who != v.voter]
            seen = Counter([*others, outcome])
            rarer = sum(1 for o in [*others, outcome] if seen[o] < seen[outcome])
            equal = sum(1 for o in [*others, outcome] if seen[o] == seen[outcome])
            ts_us = round(
                (datetime.fromisoformat(v.ts) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()
                * 1e6
            )
            u = splitmix_tie(ts_us) / 2**TIE_BITS
            stat[v.voter] += -2.0 * math.log((rarer + u * equal) / (len(others) + 1))
            count[v.voter] += 1
            j = count[v.voter]
            level = params.alpha / len(params.checks)
            if (
                j in params.checks
                and v.voter not in flagged
                and stat[v.voter] >= stats.chi2.isf(level, 2 * j)
            ):
                flagged[v.voter] = j
        if not v.flags:
            history.append((pair, outcome, v.voter))
    return dict(stat), flagged


# -- parameters -------------------------------------------------------------------------


def test_default_thresholds_are_fishers_at_a_bonferroni_level():
    params = AnomalyParams()
    level = params.alpha / len(params.checks)
    for j, fixed in params.thresholds().items():
        assert fixed / 2**32 == pytest.approx(stats.chi2.isf(level, 2 * j), rel=1e-9)


@pytest.mark.parametrize("bad", [{"alpha": 0}, {"alpha": 1.5}, {"checks": ()}, {"checks": (5, 3)}])
def test_params_are_checked(bad):
    with pytest.raises(ValueError, match=r"alpha|checks"):
        AnomalyParams(**bad)


# -- the sequential test ----------------------------------------------------------------

MODELS = ("m0", "m1", "m2", "m3")
vote_rows = st.fixed_dictionaries(
    {
        "arena": st.sampled_from(["ar", "other"]),
        "pair": st.sampled_from([(a, b) for a in MODELS for b in MODELS if a != b][:6]),
        "vote": st.sampled_from(["a", "b", "tie", "both_bad"]),
        "voter": st.sampled_from(["v0", "v1", "v2", "v3", None]),
        "kind": st.sampled_from(["human"] * 9 + ["judge"]),
        "flags": st.sampled_from([()] * 8 + [("rate_limited",), ("anomalous_voter",)]),
    }
).map(lambda r: {**r, "a": r["pair"][0], "b": r["pair"][1]})


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(vote_rows, max_size=60))
def test_the_replay_test_matches_a_plain_reimplementation(rows):
    votes = votes_of(rows)
    det = detect(table_of(votes), LOOSE)
    stat, flagged = naive_test(votes, LOOSE)
    names, sums = det.voter_names(), Counter()
    for code, term in zip(det.voter.tolist(), det.term.tolist(), strict=True):
        if code >= 0:
            sums[names[code]] += term
    assert set(sums) == set(stat)
    for voter, value in stat.items():
        assert sums[voter] / 2**32 == pytest.approx(value, rel=1e-9, abs=1e-6)
    assert det.flagged_voters == flagged
    kept = {v.voter for v, m in zip(votes, det.mask, strict=True) if m}
    assert kept == set(flagged)
    # Working out only the voters who reach a checkpoint gives the same answer.
    quick = detect(table_of(votes), LOOSE, every_voter=False)
    assert quick.flagged_voters == flagged and np.array_equal(quick.mask, det.mask)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(vote_rows, max_size=60), split=st.floats(0, 1))
def test_the_live_detector_flags_what_the_replay_flags(rows, split):
    votes = votes_of(rows)
    cut = int(split * len(votes))
    live = AnomalyDetector.from_detection(detect(table_of(votes[:cut]), LOOSE), LOOSE)
    for vote in votes[cut:]:
        live.observe(vote)
    whole = AnomalyDetector.from_detection(detect(table_of(votes), LOOSE), LOOSE)
    assert live.snapshot() == whole.snapshot()


def campaign_log():
    """Eight honest voters who find m0 far better than m1, and one who always votes m1."""
    rng = np.random.default_rng(1)
    rows = []
    for k in range(240):
        swap = bool(rng.integers(2))
        a, b = ("m1", "m0") if swap else ("m0", "m1")
        honest = rng.choice(["m0", "tie"], p=[0.95, 0.05])
        vote = "tie" if honest == "tie" else ("b" if swap else "a")
        rows.append({"a": a, "b": b, "vote": vote, "voter": f"h{k % 8}"})
        if k % 6 == 5:
            rows.append({"a": a, "b": b, "vote": "a" if swap else "b", "voter": "campaign"})
    return votes_of(rows)


def test_a_campaign_voter_is_flagged_and_all_their_votes_leave_the_board():
    votes = campaign_log()
    table = table_of(votes)
    det = detection_of(table)
    assert set(det.flagged_voters) == {"campaign"} and det.flagged_voters["campaign"] == 5
    board = board_from_votes(table, "ar", params=BoardParams(bootstrap_rounds=0))
    assert board.votes_used == 240 and board.skipped.get("anomalous_voter") == 40
    everything = board_from_votes(
        table, "ar", params=BoardParams(bootstrap_rounds=0, include_flagged=True)
    )
    assert everything.votes_used == 280


def test_a_log_without_voters_flags_no_one_and_the_result_is_remembered():
    votes = campaign_log()
    table = table_of(votes)
    assert detection_of(table) is detection_of(table)
    assert detection_of(table_of(votes)) is not detection_of(table)
    first = weakref.ref(detection_of(table))
    del table
    gc.collect()
    assert first() is None  # forgotten with its table
    anonymous = table_of([Vote(**{**v.to_dict(), "flags": (), "voter": None}) for v in votes])
    assert not anomalous_votes(anonymous).any()
    no_column = clean(
        pa.Table.from_pylist([v.to_dict() for v in votes], schema=ARROW_SCHEMA).drop(["voter"]),
        Counter(),
    )
    assert not anomalous_votes(no_column).any()


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(vote_rows, max_size=60), first=st.integers(1, 20))
def test_a_log_where_no_one_reaches_the_first_checkpoint_is_not_tested(rows, first):
    """anomalous_votes skips the test when no voter can reach the first checkpoint; its
    mask is the test's own, whether or not it skipped."""
    params = AnomalyParams(alpha=0.3, checks=(first, first + 1, first + 3))
    table = table_of(votes_of(rows))
    assert np.array_equal(anomalous_votes(table, params), detect(table, params).mask)
