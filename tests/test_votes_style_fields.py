"""Schema version 3: each side's style as delivered, read the same on every path.

The style fields are the first floating-point columns of the contract. Arrow's JSON
parser takes number literals that Python's does not (``Inf``, ``-NaN``) and turns
integers too large for a double into infinities, so these tests hold the
line-by-line reader to Arrow's verdict on exactly such lines, alone and beside a
damaged line (which sends the whole file down the line-by-line path).
"""

import json
import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.votes import reasons
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes
from arena_core.votes.schema import STYLE_COLUMNS, Vote, VoteError

STYLE = {
    "model_a_duration_s": 2.5, "model_b_duration_s": 3.25,
    "model_a_speech_rate": 2.8, "model_b_speech_rate": 2.1,
    "model_a_lufs": -23.1, "model_b_lufs": -22.9,
    "model_a_sample_rate": 16000, "model_b_sample_rate": 22050,
}  # fmt: skip


def row(k: int, version: int = 3, **over) -> dict:
    data = {
        "schema_version": version, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
        "ts": f"2026-11-29T17:00:{k:02d}.000Z", "arena": "tts-en", "model_a": "m1",
        "model_b": "m2", "vote": "a",
    }  # fmt: skip
    if version == 3:
        data.update(STYLE)
    data.update(over)
    return data


def line(data: dict) -> bytes:
    return json.dumps(data).encode()


def read_lines(tmp_path, lines: list[bytes]):
    (tmp_path / "votes-x.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return read_votes(tmp_path)


def style_of(votes, k: int) -> dict:
    rows = votes.table.to_pylist()
    return {c: rows[k][c] for c in STYLE_COLUMNS}


@pytest.mark.parametrize("neighbour", [None, b"{broken"], ids=["alone", "beside-damage"])
def test_versions_one_two_and_three_read_together(tmp_path, neighbour):
    lines = [line(row(0, version=1)), line(row(1, version=2)), line(row(2))]
    votes = read_lines(tmp_path, lines + ([neighbour] if neighbour else []))
    assert len(votes) == 3
    assert style_of(votes, 0) == style_of(votes, 1) == dict.fromkeys(STYLE_COLUMNS)
    assert style_of(votes, 2) == STYLE
    assert votes.table.schema.field("model_a_lufs").type == pa.float64()
    assert votes.table.schema.field("model_a_sample_rate").type == pa.int64()


# (text of the model_a_duration_s value, what Arrow reads, or the reason it is skipped)
LITERALS = [
    (b"1", 1.0, None),  # a JSON integer in a float field is that float
    (b"1.5e2", 150.0, None),
    (b"-0.0", -0.0, None),
    (b"0.1e-400", 0.0, None),  # underflows to zero
    (b"1" + b"0" * 400, math.inf, None),  # an integer beyond a double: infinity, as Arrow
    (b"NaN", math.nan, None),
    (b"Infinity", math.inf, None),
    (b"-Inf", -math.inf, None),  # Arrow's literal, not Python's: Arrow decides the line
    (b"-NaN", -math.nan, None),  # a NaN with its sign bit set
    (b"true", None, reasons.WRONG_TYPE),
    (b'"2.5"', None, reasons.WRONG_TYPE),
    (b"[2.5]", None, reasons.WRONG_TYPE),
    (b"1e400", None, reasons.INVALID_JSON),  # Arrow refuses a float literal beyond a double
]


@pytest.mark.parametrize(("literal", "value", "reason"), LITERALS)
@pytest.mark.parametrize("neighbour", [None, b"{broken"], ids=["alone", "beside-damage"])
def test_style_numbers_are_judged_as_arrow_judges_them(tmp_path, literal, value, reason, neighbour):
    body = line(row(1, model_a_duration_s=0)).replace(
        b'"model_a_duration_s": 0', b'"model_a_duration_s": ' + literal
    )
    votes = read_lines(tmp_path, [line(row(0)), body] + ([neighbour] if neighbour else []))
    expected = {reason: 1} if reason else {}
    if neighbour:
        expected[reasons.INVALID_JSON] = expected.get(reasons.INVALID_JSON, 0) + 1
    assert votes.skipped == expected
    if reason is None:
        got = style_of(votes, 1)["model_a_duration_s"]
        assert got == value or (math.isnan(value) and math.isnan(got))
        assert math.copysign(1, got) == math.copysign(1, value)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(STYLE_COLUMNS),
        st.one_of(
            st.none(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.text(max_size=3)
        ),
    )
)
def test_any_style_values_read_the_same_on_both_paths(tmp_path_factory, style):
    lines = [line(row(0)), line(row(1, **style))]
    clean = read_lines(tmp_path_factory.mktemp("clean"), lines)
    damaged = read_lines(tmp_path_factory.mktemp("damaged"), [*lines, b"{broken"])
    assert clean.table.to_pylist() == damaged.table.to_pylist()
    assert damaged.skipped - clean.skipped == {reasons.INVALID_JSON: 1}


def test_the_log_writes_style_and_a_vote_refuses_impossible_values(tmp_path):
    log = VoteLog(tmp_path)
    vote = log.append(arena="tts-en", model_a="m1", model_b="m2", vote="b", **STYLE)
    (written,) = read_votes(tmp_path).table.to_pylist()
    assert {c: written[c] for c in STYLE_COLUMNS} == STYLE and vote.model_b_lufs == -22.9
    base = {"vote_id": "v", "ts": "2026-11-29T17:00:00.000Z", "arena": "x", "model_a": "a",
            "model_b": "b", "vote": "a"}  # fmt: skip
    for bad in ({"model_a_duration_s": -1.0}, {"model_b_speech_rate": math.nan},
                {"model_a_lufs": math.inf}, {"model_b_sample_rate": True}):  # fmt: skip
        with pytest.raises(VoteError, match=next(iter(bad))):
            Vote(**base, **bad)
    assert Vote(**base, model_a_lufs=-40.0).model_a_lufs == -40.0  # loudness is negative
    with pytest.raises(VoteError, match="names its judge"):
        Vote(**base, voter_kind="judge")


def test_the_readmes_table_is_the_schemas():
    """The README documents the contract; its table must say what FIELDS says."""
    from pathlib import Path

    from arena_core.votes.schema import FIELDS, SCHEMA_VERSION

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert f"## The vote record (schema_version {SCHEMA_VERSION})" in readme
    kinds = {"int64": "integer", "string": "string", "double": "number", "bool": "boolean"}
    for f in FIELDS:
        kind = "list of strings" if str(f.type).startswith("list") else kinds[str(f.type)]
        row = f"| `{f.name}` | {kind} | {'yes' if f.required else ''} | {f.doc} |"
        assert row in readme, row


NUMBER_FIELDS = (*STYLE_COLUMNS, "listen_a_s", "clip_b_s", "session_order")
NUMBERS = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([2**63 - 1, 2**63, -(2**63), 10**400, 22050.0]))  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NUMBER_FIELDS), NUMBERS)
def test_every_number_the_log_acknowledges_is_read_back_as_written(tmp_path_factory, name,
                                                                   value):  # fmt: skip
    """A vote the log acknowledges is one every reader counts: a sample rate of 2**63 or a
    session order of 2**64 was written, acknowledged, then skipped as ``wrong_type`` by
    every replay, and a duration of 10**400 raised OverflowError out of the whole batch."""
    folder = tmp_path_factory.mktemp("log")
    fields = {name: value, **({"session_id": "s"} if name == "session_order" else {})}
    try:
        VoteLog(folder).append(arena="tts-en", model_a="m1", model_b="m2", vote="a", **fields)
    except VoteError:
        return  # refused with a message; nothing written
    votes = read_votes(folder)
    assert (len(votes), dict(votes.skipped)) == (1, {})
    column = votes.table.column(name)
    assert column[0].as_py() == (value if pa.types.is_integer(column.type) else float(value))
