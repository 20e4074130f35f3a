"""Reading vote logs: damaged rows of every kind are skipped and counted, never fatal."""

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_core.votes import clean as vote_clean
from arena_core.votes import jsonl, read, reasons
from arena_core.votes.jsonl import parse_jsonl
from arena_core.votes.lines import special_lines, special_lines_among
from arena_core.votes.read import read_votes
from arena_core.votes.schema import ARROW_SCHEMA, FIELDS, parse_ts

#: The health checks the suite's profile suppresses (tests/conftest.py): a test that names
#: its own list replaces the profile's, so it names these again (without too_slow, a busy
#: machine can trip it: Hypothesis calls data generation too slow past a wall-clock limit).
PROFILE_SUPPRESSES = tuple(settings.default.suppress_health_check)

ROOT = Path(__file__).resolve().parent.parent


def record(k: int, **over) -> dict:
    """A valid vote with every field of schema version 1, the k-th of a log."""
    row = {
        "schema_version": 1,
        "vote_id": f"00000000-0000-4000-8000-{k:012d}",
        "battle_id": f"10000000-0000-4000-8000-{k:012d}",
        "ts": f"2026-11-29T17:{k // 60 % 60:02d}:{k % 60:02d}.000Z",
        "arena": "tts-en",
        "model_a": "m1",
        "model_b": "m2",
        "vote": "a",
        "prompt_id": "p1",
        "prompt": "Hello there.",
        "category": "en",
        "voter": "abc",
        "voter_kind": "human",
        "judge": None,
        "flags": [],
    }
    row.update(over)
    return row


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def dumps(row):
    return json.dumps(row, ensure_ascii=False)


def ids(votes):
    return votes.column("vote_id").to_pylist()


def test_clean_log_reads_everything_in_order(tmp_path):
    rows = [record(k) for k in range(5)]
    write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in reversed(rows)])
    votes = read_votes(tmp_path)
    assert ids(votes) == [r["vote_id"] for r in rows]
    assert not votes.skipped
    assert votes.column("flags").to_pylist() == [[]] * 5


# (damage as written in the file, reason it must be counted under)
DAMAGE = [
    ("{not json", reasons.INVALID_JSON),
    ('{"vote_id": "dup key", "vote_id": "again"}', reasons.INVALID_JSON),
    ("[1, 2, 3]", reasons.NOT_OBJECT),
    ('"just a string"', reasons.NOT_OBJECT),
    (dumps(record(90, schema_version="1")), reasons.WRONG_TYPE),
    (dumps(record(91, model_a=7)), reasons.WRONG_TYPE),
    (dumps(record(92, flags="rate_limited")), reasons.WRONG_TYPE),
    (dumps(record(93, schema_version=True)), reasons.WRONG_TYPE),
    (dumps(record(94, schema_version=1.0)), reasons.WRONG_TYPE),
    (dumps({k: v for k, v in record(95).items() if k != "model_b"}), reasons.MISSING),
    (dumps(record(96, arena="")), reasons.MISSING),
    (dumps(record(97, vote_id=None)), reasons.MISSING),
    (dumps(record(98, schema_version=5)), reasons.VERSION),
    (dumps(record(99, vote="A")), reasons.BAD_VOTE),
    (dumps(record(100, vote="model_a")), reasons.BAD_VOTE),
    (dumps(record(101, voter_kind="robot")), reasons.BAD_VOTER_KIND),
    (dumps(record(102, model_b="m1")), reasons.SAME_MODEL),
    (dumps(record(103, ts="yesterday")), reasons.BAD_TS),
    (dumps(record(104, ts="2026-11-29T17:34:36")), reasons.BAD_TS),  # no zone
    (dumps(record(105, ts="2026-02-30T10:00:00Z")), reasons.BAD_TS),  # no such day
    (dumps(record(106, ts="2026-11-29T17:34:36.123456789Z")), reasons.BAD_TS),  # nanoseconds
    # Nested deeper than Python's JSON parser goes (it raised RecursionError out of the
    # whole replay): a 2 KB line of 1,000 levels, and one of 100,000 in a known field.
    ("[" * 1000 + "]" * 1000, reasons.INVALID_JSON),
    ('{"prompt":' + "[" * 100_000 + "]" * 100_000 + "}", reasons.INVALID_JSON),
    (dumps(record(107, ts="9999-12-31T23:59:59.999Z")), reasons.FUTURE_TS),
    (dumps(record(108, ts="3000-01-01T00:00:00Z")), reasons.FUTURE_TS),
    (dumps(record(109, vote_id="")), reasons.MISSING),
    (dumps(record(110, ts="")), reasons.MISSING),
    (dumps(record(111, ts="2026-11-29 17:34:36Z")), reasons.BAD_TS),  # a space for the T
]


@pytest.mark.parametrize(("line", "reason"), DAMAGE)
def test_each_kind_of_damage_is_skipped_and_counted(tmp_path, line, reason):
    good = [dumps(record(k)) for k in range(3)]
    write_lines(tmp_path / "votes-x.jsonl", [good[0], line, good[1], "", good[2]])
    votes = read_votes(tmp_path)
    assert ids(votes) == [record(k)["vote_id"] for k in range(3)]
    assert votes.skipped == {reason: 1}


def test_all_damage_at_once_counts_each_reason(tmp_path):
    good = [dumps(record(k)) for k in range(4)]
    write_lines(tmp_path / "votes-x.jsonl", good + [line for line, _ in DAMAGE])
    votes = read_votes(tmp_path)
    assert len(votes) == 4
    expected = {}
    for _, reason in DAMAGE:
        expected[reason] = expected.get(reason, 0) + 1
    assert dict(votes.skipped) == expected


def test_truncated_last_line_is_skipped(tmp_path):
    path = tmp_path / "votes-x.jsonl"
    full = dumps(record(1))
    path.write_text(dumps(record(0)) + "\n" + full[: len(full) // 2], encoding="utf-8")
    votes = read_votes(path)
    assert ids(votes) == [record(0)["vote_id"]]
    assert votes.skipped == {reasons.TRUNCATED: 1}


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "votes-x.jsonl"
    path.write_text(dumps(record(0)) + "\n" + dumps(record(1)), encoding="utf-8")
    assert len(read_votes(path)) == 2


def test_duplicate_vote_id_keeps_the_first(tmp_path):
    first = record(5, ts="2026-11-29T10:00:00.000Z", vote="a")
    later = record(5, ts="2026-11-29T11:00:00.000Z", vote="b")
    write_lines(tmp_path / "votes-1.jsonl", [dumps(later)])
    write_lines(tmp_path / "votes-2.jsonl", [dumps(first), dumps(first)])
    votes = read_votes(tmp_path)
    assert votes.column("vote").to_pylist() == ["a"]
    assert votes.skipped == {reasons.DUPLICATE: 2}


def test_equal_timestamps_are_ordered_by_vote_id(tmp_path):
    rows = [record(k, ts="2026-11-29T10:00:00.000Z") for k in (3, 1, 2)]
    write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in rows])
    assert ids(read_votes(tmp_path)) == sorted(r["vote_id"] for r in rows)


def test_timestamps_with_offsets_are_converted_to_utc(tmp_path):
    early = record(1, ts="2026-11-29T12:00:00+02:00")  # 10:00 UTC
    late = record(0, ts="2026-11-29T11:00:00Z")
    write_lines(tmp_path / "votes-x.jsonl", [dumps(late), dumps(early)])
    votes = read_votes(tmp_path)
    assert ids(votes) == [early["vote_id"], late["vote_id"]]


def test_unknown_extra_fields_are_ignored(tmp_path):
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0, latency_ms=12, extra={"x": 1}))])
    votes = read_votes(tmp_path)
    assert len(votes) == 1 and not votes.skipped


def test_only_required_fields_are_enough(tmp_path):
    required = {f.name: record(0)[f.name] for f in FIELDS if f.required}
    write_lines(tmp_path / "votes-x.jsonl", [dumps(required)])
    votes = read_votes(tmp_path)
    assert len(votes) == 1
    assert votes.column("prompt").to_pylist() == [None]


def test_parquet_and_jsonl_in_one_folder_merge_and_deduplicate(tmp_path):
    rows = [record(k) for k in range(6)]
    pq.write_table(pa.Table.from_pylist(rows[:4], schema=ARROW_SCHEMA), tmp_path / "part-0.parquet")
    write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in rows[2:]])
    votes = read_votes(tmp_path)
    assert ids(votes) == [r["vote_id"] for r in rows]
    assert votes.skipped == {reasons.DUPLICATE: 2}


def test_parquet_with_mistyped_column_is_counted_unreadable(tmp_path):
    bad = pa.table({"vote_id": ["x"], "schema_version": ["one"]})
    pq.write_table(bad, tmp_path / "bad.parquet")
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0))])
    votes = read_votes(tmp_path)
    assert len(votes) == 1
    assert votes.skipped == {reasons.UNREADABLE: 1}


def test_reading_fewer_columns_keeps_the_same_votes(tmp_path):
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0)), dumps(record(1, prompt=5))])
    full = read_votes(tmp_path)
    narrow = read_votes(tmp_path, columns=["vote_id"])
    assert ids(full) == ids(narrow) == [record(0)["vote_id"]]
    assert narrow.skipped == full.skipped == {reasons.WRONG_TYPE: 1}


def test_hidden_files_and_other_extensions_are_ignored(tmp_path):
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0))])
    hidden = tmp_path / ".cache"
    hidden.mkdir()
    write_lines(hidden / "votes-y.jsonl", [dumps(record(1))])
    (tmp_path / "README.md").write_text("# card")
    assert len(read_votes(tmp_path)) == 1


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no vote file"):
        read_votes(tmp_path / "nope")


def test_empty_folder_reads_nothing(tmp_path):
    votes = read_votes(tmp_path)
    assert len(votes) == 0 and not votes.skipped


def test_result_does_not_depend_on_file_names(tmp_path):
    rows = [dumps(record(k, vote="ab"[k % 2])) for k in range(10)]
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    write_lines(one / "votes-a.jsonl", rows[:5])
    write_lines(one / "votes-b.jsonl", rows[5:])
    write_lines(two / "votes-b.jsonl", rows[:5])
    write_lines(two / "votes-a.jsonl", rows[5:])
    assert read_votes(one).table.to_pylist() == read_votes(two).table.to_pylist()


# Hypothesis: any mix of valid and mangled lines never crashes, and every line
# ends up either read or counted.
LINE = st.one_of(
    st.integers(0, 50).map(lambda k: dumps(record(k))),
    st.integers(0, 50).map(lambda k: dumps(record(k, vote="x"))),
    st.text(max_size=30).filter(lambda t: "\n" not in t and "\r" not in t),
    st.dictionaries(st.sampled_from([f.name for f in FIELDS]), st.one_of(
        st.none(), st.integers(), st.floats(), st.text(max_size=5),
        st.lists(st.text(max_size=3), max_size=2),
    )).map(dumps),
)  # fmt: skip


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[*PROFILE_SUPPRESSES, HealthCheck.function_scoped_fixture],
)
@given(st.lists(LINE, max_size=25))
def test_any_mangled_log_is_read_without_crashing(tmp_path, lines):
    shutil.rmtree(tmp_path / "log", ignore_errors=True)
    (tmp_path / "log").mkdir()
    write_lines(tmp_path / "log" / "votes-x.jsonl", lines)
    votes = read_votes(tmp_path / "log")
    non_blank = sum(1 for line in lines if line.encode().strip())
    assert len(votes) + sum(votes.skipped.values()) == non_blank
    assert len(set(ids(votes))) == len(votes)


# Damage found in review: each must be judged the same whichever path reads the file.
DEEP = "[" * 5000 + "]" * 5000
SNEAKY = [
    # A valid vote with a deeply nested unknown field: Arrow ignores the field, so the
    # line-by-line path must keep the vote too (None: kept, not skipped).
    (json.dumps(record(77))[:-1].encode() + b', "extra": ' + DEEP.encode() + b"}", None),
    (b'{"x": ' * 2000 + b"1" + b"}" * 2000, reasons.MISSING),
    (b'{"schema_version":1,"vote_id":"u1","ts":"2026-11-29T10:00:00Z","arena":"ar","model_a":"m\xff","model_b":"m2","vote":"a"}', reasons.INVALID_JSON),
    (b'{"schema_version":1,"vote_id":"u2","ts":"2026-11-29T10:00:00Z","arena":"ar","model_a":"m1","model_b":"m2","vote":"a","prompt":"caf\xe9"}', reasons.INVALID_JSON),
    (json.dumps(record(70)).encode() + b" " + json.dumps(record(71)).encode(), reasons.INVALID_JSON),
    (json.dumps(record(72, ts="0000-01-01T00:00:00Z")).encode(), reasons.BAD_TS),
    (json.dumps(record(73, ts="9999-12-31T23:59:59-01:00")).encode(), reasons.BAD_TS),
    (json.dumps(record(74, ts="2026-11-29T17:34:36+13:66")).encode(), reasons.BAD_TS),
    (json.dumps(record(75, ts="2026-11-29T23:59:60Z")).encode(), reasons.BAD_TS),
    (json.dumps(record(76, ts="2026-13-01T00:00:00.000Z")).encode(), reasons.BAD_TS),
    (json.dumps(record(78)).encode().replace(b'"flags": []', b'"flags": ["x\xff"]'), reasons.INVALID_JSON),
    # schema_version is an int64: one past either end is the wrong type, either end itself
    # is a whole number of an unknown version.
    (json.dumps(record(79, schema_version=2**63)).encode(), reasons.WRONG_TYPE),
    (json.dumps(record(80, schema_version=2**63 - 1)).encode(), reasons.VERSION),
    (json.dumps(record(81, schema_version=-(2**63))).encode(), reasons.VERSION),
    (json.dumps(record(82, schema_version=-(2**63) - 1)).encode(), reasons.WRONG_TYPE),
    (json.dumps(record(83, schema_version=200)).encode(), reasons.VERSION),
    (json.dumps(record(84, flags=["rate_limited", 3])).encode(), reasons.WRONG_TYPE),
]  # fmt: skip


@pytest.mark.parametrize(("line", "reason"), SNEAKY)
@pytest.mark.parametrize("neighbour", [None, b"{broken"], ids=["alone", "beside-damage"])
def test_tricky_rows_are_judged_the_same_on_every_path(tmp_path, line, reason, neighbour):
    good = [json.dumps(record(k)).encode() for k in range(2)]
    lines = [good[0], line, good[1]] + ([neighbour] if neighbour else [])
    (tmp_path / "votes-x.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    votes = read_votes(tmp_path)
    kept = [record(k)["vote_id"] for k in range(2)]
    if reason is None:
        kept.append(json.loads(line.split(b', "extra"')[0] + b"}")["vote_id"])
    assert ids(votes) == kept
    expected = {reason: 1} if reason else {}
    if neighbour:
        expected[reasons.INVALID_JSON] = expected.get(reasons.INVALID_JSON, 0) + 1
    assert votes.skipped == expected


def test_validity_does_not_depend_on_the_columns_asked_for(tmp_path):
    write_lines(
        tmp_path / "votes-x.jsonl", [dumps(record(0)), dumps(record(1, voter_kind="robot"))]
    )
    assert read_votes(tmp_path).skipped == read_votes(tmp_path, columns=["vote_id"]).skipped
    assert len(read_votes(tmp_path, columns=["vote_id"])) == 1


def test_future_rows_are_judged_by_the_readers_clock(tmp_path):
    # A row from the future stopped all voting (OverflowError from the log's clock). It is
    # skipped as future_ts against the reader's clock, with ten minutes' slack for replicas.
    now = parse_ts("2026-11-29T17:00:00Z")
    rows = [record(0, ts="2026-11-29T17:09:59.000Z"), record(1, ts="2026-11-29T17:10:01.000Z")]
    write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in rows])
    votes = read_votes(tmp_path, now_us=now)
    assert ids(votes) == [rows[0]["vote_id"]]
    assert votes.skipped == {reasons.FUTURE_TS: 1}
    assert len(read_votes(tmp_path)) == 2  # today both are in the past


def test_a_row_dated_exactly_at_the_slack_is_kept(tmp_path):
    now = parse_ts("2026-11-29T17:00:00Z")
    rows = [record(0, ts="2026-11-29T17:10:00.000Z"), record(1, ts="2026-11-29T17:10:00.001Z")]
    write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in rows])
    votes = read_votes(tmp_path, now_us=now)
    assert ids(votes) == [rows[0]["vote_id"]] and votes.skipped == {reasons.FUTURE_TS: 1}


def test_the_first_and_last_accepted_instants_are_read_to_the_microsecond(tmp_path):
    # 719,162 days before the epoch; 2,932,897 days after it is 10000-01-01 (hand-counted
    # leap years), a microsecond before which is the last accepted instant: past 2**53,
    # so only integer microseconds hold it exactly.
    rows = [record(0, ts="0001-01-01T00:00:00Z"), record(1, ts="9999-12-31T23:59:59.999999Z")]
    write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in rows])
    votes = read_votes(tmp_path, now_us=2_932_897 * 86_400 * 10**6)
    assert not votes.skipped and votes.ts_us.dtype == np.int64
    assert votes.ts_us.tolist() == [-719_162 * 86_400 * 10**6, 2_932_897 * 86_400 * 10**6 - 1]


def test_timestamps_with_offsets_are_converted_by_arrow_alone(tmp_path, monkeypatch):
    # Python's parser is the fallback for a column Arrow refuses (30 February): ordinary
    # offsets must not need it (it is many times slower).
    monkeypatch.setattr(vote_clean, "parse_ts", lambda text: pytest.fail("fallback used"))
    rows = [record(0, ts="2026-11-29T12:00:00+02:00"), record(1, ts="2026-11-29T11:00:00.5Z")]
    write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in rows])
    # 2026-11-29 is day 20,786 after the epoch (20,727 to 1 October, + 31 + 28).
    day = 20_786 * 86_400 * 10**6
    assert read_votes(tmp_path).ts_us.tolist() == [day + 10 * 3600 * 10**6,
                                                   day + 11 * 3600 * 10**6 + 500_000]  # fmt: skip


def test_a_deeply_nested_fastchat_export_is_one_unreadable_file(tmp_path):
    (tmp_path / "battles.json").write_text("[" * 100_000 + "]" * 100_000)
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0))])
    votes = read_votes([tmp_path / "battles.json", tmp_path / "votes-x.jsonl"])
    assert len(votes) == 1 and votes.skipped == {reasons.UNREADABLE: 1}


def test_version_1_and_version_2_rows_read_together(tmp_path):
    # Version 2 added model_a_version and model_b_version; a version-1 row, from a JSONL shard
    # or a Parquet file written before the columns existed, reads with both null.
    v1 = [record(k) for k in range(3)]
    v2 = [record(k, schema_version=2, model_a_version="espeak-ng 1.52", model_b_version=None)
          for k in range(3, 6)]  # fmt: skip
    write_lines(tmp_path / "votes-a.jsonl", [dumps(r) for r in v1 + v2])
    added = {"model_a_version", "model_b_version"}
    old_schema = pa.schema([f for f in ARROW_SCHEMA if f.name not in added])
    pq.write_table(pa.Table.from_pylist([record(k) for k in range(6, 8)], schema=old_schema),
                   tmp_path / "part-old.parquet")  # fmt: skip
    votes = read_votes(tmp_path)
    assert not votes.skipped and len(votes) == 8
    assert votes.column("schema_version").to_pylist() == [1, 1, 1, 2, 2, 2, 1, 1]
    assert (
        votes.column("model_a_version").to_pylist()
        == [None] * 3 + ["espeak-ng 1.52"] * 3 + [None] * 2
    )
    assert votes.column("model_b_version").to_pylist() == [None] * 8
    assert votes.table.column_names == [f.name for f in FIELDS]


@pytest.mark.parametrize("flags", [["rate_limited"], [None], ["rate_limited", None]])
@pytest.mark.parametrize("neighbour", [None, b"{broken"], ids=["alone", "beside-damage"])
def test_flags_of_strings_and_nulls_are_kept_on_every_path(tmp_path, flags, neighbour):
    lines = [json.dumps(record(0, flags=flags)).encode()] + ([neighbour] if neighbour else [])
    (tmp_path / "votes-x.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    votes = read_votes(tmp_path)
    assert votes.column("flags").to_pylist() == [flags]
    assert votes.skipped == ({reasons.INVALID_JSON: 1} if neighbour else {})


def test_two_lines_with_bytes_that_are_not_utf8_count_twice(tmp_path):
    bad = [json.dumps(record(k, prompt="X")).encode().replace(b'"X"', b'"\xff"') for k in (1, 2)]
    (tmp_path / "votes-x.jsonl").write_bytes(b"\n".join([b"{broken", *bad, b"{broken"]) + b"\n")
    votes = read_votes(tmp_path)
    assert len(votes) == 0 and votes.skipped == {reasons.INVALID_JSON: 4}


def test_a_one_byte_file_without_newline_is_a_truncated_line(tmp_path):
    (tmp_path / "votes-x.jsonl").write_bytes(b"{")
    votes = read_votes(tmp_path)
    assert len(votes) == 0 and votes.skipped == {reasons.TRUNCATED: 1}


def test_a_truncated_file_keeps_every_complete_line_and_counts_the_damage(tmp_path):
    # Three whole lines, one of them damaged, then half a line: a crash mid-write.
    full = dumps(record(3))
    for name in ("votes-a.jsonl", "votes-b.jsonl"):
        text = "\n".join([dumps(record(0)), "{broken", dumps(record(1)), full[:40]])
        (tmp_path / name).write_text(text, encoding="utf-8")
    votes = read_votes(tmp_path)
    assert ids(votes) == [record(0)["vote_id"], record(1)["vote_id"]]
    assert votes.skipped == {reasons.TRUNCATED: 2, reasons.INVALID_JSON: 2,
                             reasons.DUPLICATE: 2}  # fmt: skip


@pytest.fixture
def arrow_only(monkeypatch):
    """Small parser blocks (a file spans several) and no line-by-line fallback: a clean
    file must go through Arrow's parser alone (the fallback is many times slower)."""

    def refuse(data, skipped, wanted):
        raise AssertionError("a clean file took the damaged-file path")

    monkeypatch.setattr(jsonl, "_JSON_BLOCK", 1 << 10)
    monkeypatch.setattr(jsonl, "_SCAN_WINDOW", 3 << 10)  # and several windows
    monkeypatch.setattr(jsonl, "read_damaged", refuse)


def test_a_clean_file_of_many_blocks_is_read_by_arrow_alone(tmp_path, arrow_only):
    rows = [record(k) for k in range(40)]  # about 12 KB: a dozen blocks of 1 KiB
    path = write_lines(tmp_path / "votes-x.jsonl", [dumps(r) for r in rows])
    assert path.stat().st_size > 10 * 1024
    assert ids(read_votes(path)) == [r["vote_id"] for r in rows]


def test_lines_in_memory_without_a_last_newline_are_read_by_arrow_alone(arrow_only):
    data = (dumps(record(0)) + "\n" + dumps(record(1))).encode()
    table = parse_jsonl(data, Counter())
    assert table.column("vote_id").to_pylist() == [record(0)["vote_id"], record(1)["vote_id"]]


def test_a_parquet_file_is_judged_on_its_contract_columns_only(tmp_path):
    # Another writer's extra column holding bytes that are not UTF-8 is never read, so it
    # cannot cost the file (the same bytes in a contract column refuse it whole).
    rows = [record(k) for k in range(2)]
    table = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
    note = pa.array([b"ok", b"\xff\xfe"], pa.binary()).view(pa.string())
    pq.write_table(table.append_column("note", note), tmp_path / "part-0.parquet")
    votes = read_votes(tmp_path)
    assert ids(votes) == [r["vote_id"] for r in rows] and not votes.skipped


def test_only_the_columns_asked_for_come_back_in_contract_order(tmp_path):
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0)), dumps(record(1))])
    votes = read_votes(tmp_path, columns=["vote", "vote_id", "voter"])
    assert votes.table.column_names == ["vote_id", "vote", "voter"]
    assert votes.column("vote").to_pylist() == ["a", "a"]


def test_an_unknown_column_is_refused_by_name(tmp_path):
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0))])
    with pytest.raises(ValueError, match=r"^unknown vote columns: \['nope', 'votes'\]$"):
        read_votes(tmp_path, columns=["vote", "votes", "nope"])


def test_categorical_columns_are_dictionaries_even_when_nothing_is_read(tmp_path):
    dictionary = pa.dictionary(pa.int32(), pa.string())
    for votes in (read_votes(tmp_path), read_votes(parquet_file(tmp_path))):
        assert votes.table.schema.field("arena").type == dictionary
        assert votes.table.schema.field("vote_id").type == pa.string()


def parquet_file(tmp_path):
    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.Table.from_pylist([record(0)], schema=ARROW_SCHEMA), path)
    return path


def test_files_are_counted_and_each_unreadable_one_too(tmp_path):
    (tmp_path / "a.parquet").write_bytes(b"not parquet")
    (tmp_path / "b.parquet").write_bytes(b"PAR1 nor this")
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(0))])
    votes = read_votes(tmp_path)
    assert votes.files == 3 and len(votes) == 1 and votes.skipped == {reasons.UNREADABLE: 2}


def test_formats_are_told_by_name_and_a_fastchat_export_by_its_first_bracket(tmp_path):
    export = {"model_a": "x", "model_b": "y", "winner": "model_a", "tstamp": 1.7e9,
              "anony": True, "judge": "j", "language": "en"}  # fmt: skip
    (tmp_path / "export.json").write_text("\n  \n" + json.dumps([export]))
    (tmp_path / "lines.json").write_text(dumps(record(0)) + "\n")
    write_lines(tmp_path / "votes-x.jsonl", [dumps(record(1))])
    named = [tmp_path / n for n in ("export.json", "lines.json", "votes-x.jsonl")]
    assert read.vote_files(named) == list(zip(named, ["fastchat", "jsonl", "jsonl"], strict=True))
    votes = read_votes(named, fastchat_arena="lmsys")
    assert sorted(votes.column("arena").to_pylist()) == ["lmsys", "tts-en", "tts-en"]


def test_a_file_of_blank_lines_reads_nothing_and_skips_nothing(tmp_path):
    (tmp_path / "votes-x.jsonl").write_text(" \n\n\t\n")
    votes = read_votes(tmp_path)
    assert len(votes) == 0 and not votes.skipped


def test_a_line_of_stray_byte_order_mark_bytes_is_counted(tmp_path):
    # Arrow calls a file of just "\xbf" (a byte of the UTF-8 BOM) empty JSON; before issue 16
    # the fast path read it as a blank file, while the line-by-line reader counted the line.
    (tmp_path / "votes-x.jsonl").write_bytes(b"\xbf\n")
    votes = read_votes(tmp_path)
    assert len(votes) == 0 and votes.skipped == {reasons.INVALID_JSON: 1}


# A line that is JSON null alone: pyarrow 26.0.1's JSON reader dies with a segmentation fault
# when a block starts with one (a shard holding just "null" crashed any replay). Read in a
# child process, so that a regression fails this test instead of killing the test worker.
NULL_READER = """
import sys, json
sys.path.insert(0, {root!r})
import arena_core.votes.read as read
import arena_core.votes.jsonl as jsonl
jsonl._JSON_BLOCK = {block}
votes = read.read_votes({folder!r})
print(json.dumps([len(votes), dict(votes.skipped)]))
"""


@pytest.mark.parametrize("block", [4 << 20, 64, 70])
@pytest.mark.parametrize("where", ["alone", "first", "middle", "last"])
def test_a_bare_null_line_is_skipped_and_never_crashes_the_reader(tmp_path, where, block):
    import subprocess
    import sys

    valid = [dumps(record(k)) for k in range(6)]
    lines = {"alone": ["null"], "first": [" null", *valid], "middle": [*valid[:3], "null\r", *valid[3:]],
             "last": [*valid, "null"]}[where]  # fmt: skip
    write_lines(tmp_path / "votes-x.jsonl", lines)
    code = NULL_READER.format(root=str(ROOT), block=block, folder=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    used, skipped = json.loads(done.stdout.splitlines()[-1])
    assert (used, skipped) == (len(lines) - 1, {reasons.NOT_OBJECT: 1})


def test_a_bare_null_line_in_memory_is_skipped_too():
    skipped = Counter()
    table = parse_jsonl(f"{dumps(record(1))}\nnull\n{dumps(record(2))}\n".encode(), skipped)
    assert table.num_rows == 2 and skipped == {reasons.NOT_OBJECT: 1}
    assert parse_jsonl(b"null\n", skipped).num_rows == 0 and skipped[reasons.NOT_OBJECT] == 2


def scan_lines(path):
    """What the windows of ``jsonl._windows`` say of the whole file: its newlines, and
    whether a line must be kept from Arrow's parser (``_parse_windows`` then gives None)."""
    count, special = 0, False
    for start, end, mapped, newlines, lone_return in jsonl._windows(path):
        count += len(newlines)
        special = special or lone_return or bool(special_lines_among(mapped, start, end, newlines))
    return count, special


def test_scan_lines_counts_newlines_and_finds_a_bare_null_across_chunks(tmp_path, monkeypatch):
    """In process (mutation testing sees only in-process calls): the scan that routes a file
    with a line beginning with null away from Arrow, with chunks smaller than a line."""
    monkeypatch.setattr(jsonl, "_SCAN_WINDOW", 3)
    path = tmp_path / "votes-x.jsonl"
    cases = [(b"", (0, False)), (b'{"a": 1}\n', (1, False)), (b'{"a": 1}\n  null \r\n', (2, True)),
             (b"null", (0, True)), (b'{"x": "null"}\n"null"\n nul\n', (3, False)), (b'{"a": 1}\nnull,\n', (2, True)),
             (b'{"a": 1}\n{"b": 2}\n\tnull\n{"c": 3}\n', (4, True))]  # fmt: skip
    for data, expected in cases:
        path.write_bytes(data)
        assert scan_lines(path) == expected, data


def test_a_crlf_file_cut_between_return_and_newline_keeps_the_fast_path(tmp_path, monkeypatch):
    # The first window ends right after the second line's "\r": that return is not a lone one (its
    # newline is in the next window), so the file is not sent to the damaged-file path.
    monkeypatch.setattr(jsonl, "_SCAN_WINDOW", 19)
    path = tmp_path / "votes-crlf.jsonl"
    path.write_bytes(b'{"a": 1}\r\n' * 3)
    assert scan_lines(path) == (3, False)


LINE_PARTS = st.sampled_from([b'{"a": 1}', b"null", b" ", b"\t", b"\r", b"\xef\xbb\xbf", b"\xbf",
                              b'"null"', b"nul", b"x" * 40, b""])  # fmt: skip


@settings(
    max_examples=200,
    suppress_health_check=[*PROFILE_SUPPRESSES, HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(st.lists(LINE_PARTS, max_size=4).map(b"".join), max_size=12),
    end=st.sampled_from([b"", b"\n"]),
    window=st.integers(1, 64),
)
def test_scan_lines_agrees_with_counting_and_the_pattern_on_the_whole_file(
    tmp_path, monkeypatch, lines, end, window
):
    """The mapped, windowed scan against bytes.count, special_lines and a pattern for a
    carriage return without a newline after it, on the whole file, windows from one byte
    (every line longer than its window) to several lines."""
    monkeypatch.setattr(jsonl, "_SCAN_WINDOW", window)
    data = b"\n".join(lines) + end
    path = tmp_path / "votes-h.jsonl"
    path.write_bytes(data)
    lone_return = re.search(rb"\r(?!\n|\Z)", data) is not None  # Arrow's other row end
    assert scan_lines(path) == (data.count(b"\n"), bool(special_lines(data)) or lone_return)


@pytest.mark.parametrize("joint", [b" null", b"", b" "], ids=["null-between", "glued", "space"])
@pytest.mark.parametrize("blanks", [b"\n\n", b"\n \t\n", b"\n\r\n"], ids=["empty", "spaces", "cr"])
def test_a_line_of_several_objects_is_not_hidden_by_blank_lines(tmp_path, joint, blanks):
    """Arrow reads ``{...} null{...}`` as three rows and a blank line as none: with two blank
    lines the row count matched the line count, and the fast path kept the rows of a
    line the reference reader refuses (and shifted which line each row came from)."""
    lines = [dumps(record(k)).encode() for k in range(4)]
    data = lines[0] + b"\n" + lines[1] + joint + lines[2] + blanks + lines[3] + b"\n"
    (tmp_path / "votes-x.jsonl").write_bytes(data)
    for votes in (read_votes(tmp_path), parse_jsonl(data, Counter())):
        assert ids(votes) == [record(0)["vote_id"], record(3)["vote_id"]]
    assert read_votes(tmp_path).skipped == {reasons.INVALID_JSON: 1}


def test_a_glob_reads_the_files_it_matches_in_a_folders_order(tmp_path):
    """``--votes 'dir/*/*.jsonl'``: the help of every engine promises globs; the reader
    (the python engine and the in-process board) once said "no vote file or folder"."""
    from arena_core.votes.log import VoteLog

    for month in ("2026-02", "2026-01"):
        log = VoteLog(tmp_path / month)
        log.append(arena="a", model_a="x", model_b="y", vote="a")
        log.close()
    every = read_votes([tmp_path])
    matched = read_votes([f"{tmp_path}/*/*.jsonl"])
    assert matched.table.equals(every.table) and matched.files == every.files == 2
    with pytest.raises(FileNotFoundError, match="no vote file matches"):
        read_votes([f"{tmp_path}/*/*.parquet"])
