"""Schema version 4: session, listening times, clip lengths, prompt origin, counted.

Written rows read back the same on every path (Arrow's JSON parser, the line-by-line
reader a damaged file takes, Parquet); rows of versions 1 to 3 read with the new
fields null; the record refuses values that cannot be true.
"""

import json
import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.votes import reasons
from arena_core.votes.log import VoteLog
from arena_core.votes.parquet import write_parquet
from arena_core.votes.read import read_votes
from arena_core.votes.schema import FIELDS, SCHEMA_VERSION, Vote, VoteError

#: The fields version 4 added, with a value each.
V4 = {
    "session_id": "0123456789abcdef0123", "session_order": 3,
    "listen_a_s": 2.25, "listen_b_s": 0.0, "clip_a_s": 2.75, "clip_b_s": 2.75,
    "prompt_origin": "set",
}  # fmt: skip
NEW = (*V4, "counted", "count_reason")
BASE = {"vote_id": "v", "ts": "2026-11-29T17:00:00.000Z", "arena": "x", "model_a": "a",
        "model_b": "b", "vote": "a"}  # fmt: skip


def old_row(k: int, version: int) -> dict:
    return {"schema_version": version, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
            "ts": f"2026-11-29T17:00:{k:02d}.000Z", "arena": "tts-en", "model_a": "m1",
            "model_b": "m2", "vote": "b"}  # fmt: skip


def test_schema_version_is_4_and_the_new_fields_are_declared():
    assert SCHEMA_VERSION == 4
    names = [f.name for f in FIELDS]
    assert names[-len(NEW) :] == list(NEW)  # appended: older columns keep their places
    assert next(f for f in FIELDS if f.name == "counted").type == pa.bool_()


@pytest.mark.parametrize("path", ["jsonl", "jsonl-damaged", "parquet"])
def test_a_version_4_row_round_trips_on_every_path(tmp_path, path):
    log = VoteLog(tmp_path / "log")
    log.append(arena="tts-en", model_a="m1", model_b="m2", vote="a", prompt_id="p1",
               prompt="Hi.", **V4)  # fmt: skip
    log.append(arena="tts-en", model_a="m1", model_b="m2", vote="b", flags=["rate_limited"],
               prompt_origin="typed", session_id="s2", session_order=None)  # fmt: skip
    log.close()
    source = tmp_path / "log"
    if path == "jsonl-damaged":
        with log.path.open("ab") as f:
            f.write(b"{broken\n")
    elif path == "parquet":
        source = write_parquet(read_votes(tmp_path / "log").table, tmp_path / "p" / "v.parquet")
    votes = read_votes(source)
    first, second = votes.table.to_pylist()
    assert {k: first[k] for k in V4} == V4
    assert (first["counted"], first["count_reason"]) == (True, None)
    assert (second["counted"], second["count_reason"]) == (False, "rate_limited")
    assert (second["session_id"], second["session_order"]) == ("s2", None)
    assert votes.skipped == ({reasons.INVALID_JSON: 1} if path == "jsonl-damaged" else {})


@pytest.mark.parametrize("neighbour", [None, b"{broken"], ids=["alone", "beside-damage"])
def test_versions_one_to_three_read_with_the_new_fields_null(tmp_path, neighbour):
    lines = [json.dumps(old_row(k, v)).encode() for k, v in enumerate((1, 2, 3))]
    (tmp_path / "votes-x.jsonl").write_bytes(b"\n".join(lines + ([neighbour] if neighbour else []))
                                             + b"\n")  # fmt: skip
    votes = read_votes(tmp_path)
    assert len(votes) == 3
    for row in votes.table.to_pylist():
        assert all(row[name] is None for name in NEW), row


# (the JSON literal of "counted", and what a reader makes of the row), the same on both paths
@pytest.mark.parametrize(("literal", "counted", "reason"), [
    (b"true", True, None), (b"false", False, None), (b"null", None, None),
    (b"1", None, reasons.WRONG_TYPE), (b'"true"', None, reasons.WRONG_TYPE),
])  # fmt: skip
@pytest.mark.parametrize("neighbour", [None, b"{broken"], ids=["alone", "beside-damage"])
def test_counted_is_a_json_boolean_on_both_paths(tmp_path, literal, counted, reason, neighbour):
    row = json.dumps({**old_row(0, 4), "counted": "X"}).encode().replace(b'"X"', literal)
    (tmp_path / "votes-x.jsonl").write_bytes(b"\n".join([row] + ([neighbour] if neighbour else []))
                                             + b"\n")  # fmt: skip
    votes = read_votes(tmp_path)
    expected = {reason: 1} if reason else {}
    if neighbour:
        expected[reasons.INVALID_JSON] = expected.get(reasons.INVALID_JSON, 0) + 1
    assert votes.skipped == expected
    if reason is None:
        assert votes.table.column("counted").to_pylist() == [counted]
    elif neighbour is None:  # Arrow refuses the whole file's parse: the line goes the slow way
        assert len(votes) == 0


def test_counted_and_count_reason_follow_the_flags():
    assert (Vote(**BASE).counted, Vote(**BASE).count_reason) == (True, None)
    flagged = Vote(**BASE, flags=("rate_limited", "anomalous_voter"))
    assert (flagged.counted, flagged.count_reason) == (False, "rate_limited")
    assert Vote(**BASE, flags=("x",), counted=False, count_reason="x").counted is False
    for bad in ({"counted": False}, {"counted": True, "count_reason": "x"},
                {"flags": ("x",), "counted": True, "count_reason": None},
                {"flags": ("x",), "counted": False, "count_reason": "y"}):  # fmt: skip
        with pytest.raises(VoteError, match="agree with flags"):
            Vote(**BASE, **bad)


@pytest.mark.parametrize(("fields", "message"), [
    ({"session_order": 1}, "needs its session_id"),
    ({"session_id": "s", "session_order": 0}, "at least 1"),
    ({"session_id": "s", "session_order": True}, "at least 1"),
    ({"session_id": "", "session_order": 1}, "non-empty"),
    ({"listen_a_s": -0.5}, "listen_a_s"),
    ({"listen_b_s": math.nan}, "listen_b_s"),
    ({"clip_a_s": math.inf}, "clip_a_s"),
    ({"clip_b_s": "2"}, "clip_b_s"),
    ({"prompt_origin": "judge"}, "prompt_origin must be"),
    ({"prompt_origin": "set"}, "goes with a prompt_id"),
    ({"prompt_origin": "typed", "prompt_id": "p1"}, "goes with a prompt_id"),
])  # fmt: skip
def test_a_vote_refuses_impossible_version_4_values(fields, message):
    with pytest.raises(VoteError, match=message):
        Vote(**BASE, **fields)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["rate_limited", "anomalous_voter", "other"]), max_size=3),
       st.one_of(st.none(), st.floats(), st.integers(-5, 10**6)))  # fmt: skip
def test_any_flags_and_seconds_give_a_consistent_record_or_a_refusal(flags, seconds):
    try:
        vote = Vote(**BASE, flags=tuple(flags), listen_a_s=seconds, clip_a_s=seconds)
    except VoteError:
        assert seconds is not None and (not math.isfinite(seconds) or seconds < 0)
        return
    assert vote.counted == (not flags)
    assert vote.count_reason == (flags[0] if flags else None)
    data = json.loads(vote.to_json_line())
    assert data["counted"] is vote.counted and data["schema_version"] == 4
