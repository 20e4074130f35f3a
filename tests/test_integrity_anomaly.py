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

from arena_core.integrity.anomaly import (
    AnomalyParams,
    anomalous_votes,
    detect,
    detection_of,
    enters_history,
)
from arena_core.integrity.detector import AnomalyDetector
from arena_core.integrity.pvalue import TIE_BITS
from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.votes.clean import clean
from arena_core.votes.schema import ARROW_SCHEMA, Vote, format_ts

START = datetime(2026, 3, 1, tzinfo=UTC)
#: Small checkpoints and a loose alpha, so random logs of a few dozen votes flag someone.
LOOSE = AnomalyParams(alpha=0.3, checks=(1, 2, 3, 5, 8, 13))
#: As loose, but a voter's first two votes stay out of the reference (the default's rule
#: with a first checkpoint of 3), one vote per voter and pair, or two.
LATE = AnomalyParams(alpha=0.3, checks=(3, 4, 6, 9, 13))
LATE_TWO = AnomalyParams(alpha=0.3, checks=(3, 4, 6, 9, 13), reference_per_pair=2)
SETTINGS = pytest.mark.parametrize(
    "params", [LOOSE, LATE, LATE_TWO], ids=["loose", "late", "late2"]
)


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
    """Fisher's statistic and flags, vote by vote, with plain lists and floats.

    The history holds the unflagged human votes without a voter, and those with one from
    its voter's ``checks[0]``-th human vote on, at most ``reference_per_pair`` of a voter
    on a pair (its first such ones)."""
    history = []  # (pair, outcome, voter) of the votes in the reference
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
        mine = sum(1 for p, _, who in history if p == pair and who == v.voter)
        late_enough = v.voter is None or (
            count[v.voter] >= params.checks[0] and mine < params.reference_per_pair
        )
        if not v.flags and late_enough:
            history.append((pair, outcome, v.voter))
    return dict(stat), flagged


# -- parameters -------------------------------------------------------------------------


def test_default_thresholds_are_fishers_at_a_bonferroni_level():
    params = AnomalyParams()
    level = params.alpha / len(params.checks)
    for j, fixed in params.thresholds().items():
        assert fixed / 2**32 == pytest.approx(stats.chi2.isf(level, 2 * j), rel=1e-9)


@pytest.mark.parametrize("bad", [{"alpha": 0}, {"alpha": 1.5}, {"checks": ()}, {"checks": (5, 3)},
                                 {"reference_per_pair": 0}])  # fmt: skip
def test_params_are_checked(bad):
    with pytest.raises(ValueError, match=r"alpha|checks|reference_per_pair"):
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


@SETTINGS
@settings(max_examples=60, deadline=None)
@given(rows=st.lists(vote_rows, max_size=60))
def test_the_replay_test_matches_a_plain_reimplementation(params, rows):
    votes = votes_of(rows)
    det = detect(table_of(votes), params)
    stat, flagged = naive_test(votes, params)
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
    quick = detect(table_of(votes), params, every_voter=False)
    assert quick.flagged_voters == flagged and np.array_equal(quick.mask, det.mask)


@SETTINGS
@settings(max_examples=40, deadline=None)
@given(rows=st.lists(vote_rows, max_size=60), split=st.floats(0, 1))
def test_the_live_detector_flags_what_the_replay_flags(params, rows, split):
    votes = votes_of(rows)
    cut = int(split * len(votes))
    live = AnomalyDetector.from_detection(detect(table_of(votes[:cut]), params), params)
    for vote in votes[cut:]:
        live.observe(vote)
    whole = AnomalyDetector.from_detection(detect(table_of(votes), params), params)
    assert live.snapshot() == whole.snapshot()
    # Vote by vote from an empty detector, the flags are the replay's, at the same vote.
    fresh = AnomalyDetector(params)
    for vote in votes:
        fresh.observe(vote)
    assert fresh.flagged == whole.flagged


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
    # At its 10th vote: its first five meet an empty reference (no honest voter reaches
    # its 5th vote before row 32, and only then does one of its votes enter).
    assert set(det.flagged_voters) == {"campaign"} and det.flagged_voters["campaign"] == 10
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


# -- who makes the reference -------------------------------------------------------------


@pytest.mark.parametrize(("per_pair", "last"), [(1, False), (2, True)])
def test_a_vote_enters_the_reference_from_its_voters_first_checkpoint_once_per_pair(per_pair, last):
    # Worked by hand, first checkpoint 3. Voter 0: votes 1 and 2 are too early, vote 3 is
    # flagged, vote 4 is its first on pair 1, vote 5 its first on pair 0, vote 6 its second on
    # pair 1 (in only with two a pair). Voter 1: its 3rd vote. A vote without a voter: in.
    params = AnomalyParams(checks=(3, 6), reference_per_pair=per_pair)
    voter = np.array([0, 0, 1, 0, 0, -1, 0, 1, 1, 0])
    pair = np.array([0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    unflagged = np.array([1, 1, 1, 0, 1, 1, 1, 1, 1, 1], dtype=bool)
    expected = [False, False, False, False, True, True, True, False, True, last]
    assert enters_history(voter, pair, unflagged, params).tolist() == expected


def sybil_log(sybils, per_sybil, honest_votes=5):
    """``sybils`` identities casting ``per_sybil`` both_bad votes each on m0 v m1, then one
    voter who finds m0 better ``honest_votes`` times."""
    rows = [{"a": "m0", "b": "m1", "vote": "both_bad", "voter": f"s{k}"}
            for k in range(sybils) for _ in range(per_sybil)]  # fmt: skip
    rows += [{"a": "m0", "b": "m1", "vote": "a", "voter": "h"}] * honest_votes
    return votes_of(rows)


def test_identities_under_the_first_checkpoint_write_no_ones_reference():
    # 10 identities x 4 both_bad votes. Were they the reference, each of h's votes would
    # have p = U / 41 (-2 ln p > 7.4), and 5 of them pass chi2_10(0.999) = 29.6: h flagged
    # at 5. They are not: h meets an empty reference (p = U), and only h's 5th vote enters.
    votes = sybil_log(10, 4)
    det = detect(table_of(votes))
    assert det.flagged_voters == {}
    live = AnomalyDetector()
    for vote in votes:
        live.observe(vote)
    assert live.flagged == {}
    state = live.snapshot()
    assert state["pairs"] == {("ar", "m0", "m1"): [1, 0, 0, 0]}
    assert state["voters"]["s0"][0] == 4 and state["voters"]["h"][0] == 5


def test_identities_at_the_first_checkpoint_are_tested():
    # With a 5th vote each sybil's 5th enters (once), and is tested there. The first sybil
    # meets a reference of 25 wins of m0 (25 honest voters' 5th votes, one each): each of
    # its both_bad votes gets p = U / 26, -2 ln p > 6.5, so 5 of them pass 29.6.
    rows = [{"a": "m0", "b": "m1", "vote": "a", "voter": f"h{k}"}
            for k in range(25) for _ in range(5)]  # fmt: skip
    rows += [{"a": "m0", "b": "m1", "vote": "both_bad", "voter": f"s{k}"}
             for k in range(6) for _ in range(5)]  # fmt: skip
    votes = votes_of(rows)
    det = detect(table_of(votes))
    assert det.flagged_voters.get("s0") == 5 and not any(
        v.startswith("h") for v in det.flagged_voters
    )
    live = AnomalyDetector()
    for vote in votes:
        live.observe(vote)
    assert live.flagged == det.flagged_voters
