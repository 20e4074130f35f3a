"""Vote-record pieces that mutation testing found untested: each rule pinned on rows written here.

Expected values are the rows themselves, written out by hand (FastChat's field names
and winner strings from its ``clean_battle`` format), never re-derived by the code
under test.
"""

import hashlib
import io
import json
import re
import tempfile
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena_core.votes import clean as vote_clean
from arena_core.votes import columns as vote_columns
from arena_core.votes import reasons
from arena_core.votes.clean import clean
from arena_core.votes.columns import (
    Encoded,
    byte_matrix,
    canonical_timestamps,
    encode,
    first_occurrences,
)
from arena_core.votes.fastchat import RECORD_KEYS, read_export, to_battles
from arena_core.votes.jsonl import parse_jsonl
from arena_core.votes.parquet import contract_table, parquet_bytes
from arena_core.votes.read import read_votes
from arena_core.votes.schema import ARROW_SCHEMA, VOTES, Vote, VoteError, format_ts, parse_ts


def vote_row(k, **over):
    row = {"schema_version": 2, "vote_id": f"00000000-0000-4000-8000-{k:012d}", "battle_id": None,
           "ts": f"2026-10-01T00:00:{k:02d}.250Z", "arena": "speech", "model_a": "m/a",
           "model_b": "m/b", "model_a_version": None, "model_b_version": None, "vote": "a",
           "prompt_id": None, "prompt": "Hi.", "category": None, "voter": "h1",
           "voter_kind": "human", "judge": None, "flags": []}  # fmt: skip
    return row | over


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_votes_export_as_fastchat_battles(tmp_path):
    rows = [
        vote_row(1, vote="a", category="en", prompt_id="p1"),
        vote_row(2, vote="b", voter=None),
        vote_row(3, vote="tie", model_a="m/c"),
        vote_row(4, vote="a", flags=["rate_limited"]),  # left out of ratings: not exported
        vote_row(5, vote="both_bad", arena="other"),
    ]
    votes = read_votes(write_jsonl(tmp_path / "v.jsonl", rows))
    battles = to_battles(votes)
    fastchat = {
        "model_a": "m/a", "model_b": "m/b", "winner": "model_a",
        "tstamp": 1790812801.25,  # 2026-10-01T00:00:01.250Z: 20727 days of 86400 s, + 1.25
        "anony": True, "judge": "h1", "language": "en", "question_id": "p1",
        "arena": "speech", "vote_id": "00000000-0000-4000-8000-000000000001",
    }  # fmt: skip
    assert {k: battles[0][k] for k in fastchat} == fastchat
    # Every other field of the record, under its own name (the judge model as judge_model).
    record = {RECORD_KEYS[k]: v for k, v in rows[0].items() if k in RECORD_KEYS}
    # Exported as the board counts it: its verdict says so, whatever the writer's schema.
    verdict = {"counted": True, "count_reason": None}
    assert battles[0] == fastchat | dict.fromkeys(RECORD_KEYS.values()) | record | verdict
    assert record["ts"] == "2026-10-01T00:00:01.250Z" and record["judge_model"] is None
    assert [b["winner"] for b in battles] == ["model_a", "model_b", "tie", "tie (bothbad)"]
    assert battles[1]["judge"] == ""  # no voter hash: an empty judge, as FastChat's rows have
    assert battles[2]["model_a"] == "m/c" and battles[3]["arena"] == "other"
    assert [b["vote_id"][-1] for b in battles] == list("1235")
    assert [b["vote_id"][-1] for b in to_battles(votes, include_flagged=True)] == list("12345")


@pytest.mark.parametrize("field", ["model_a", "model_b", "winner", "judge", "language"])
def test_a_fastchat_battle_with_a_non_string_field_is_skipped_alone(tmp_path, field):
    good = {"model_a": "x", "model_b": "y", "winner": "model_a", "tstamp": 1.7e9,
            "anony": True, "judge": "j", "language": "en"}  # fmt: skip
    path = tmp_path / "export.json"
    path.write_text(json.dumps([good, good | {field: 7}, good | {"tstamp": 1.7e9 + 1}]))
    votes = read_votes(path)
    assert len(votes) == 2 and votes.skipped == Counter({reasons.WRONG_TYPE: 1})


def test_a_contract_table_has_every_column_typed_even_when_absent():
    table = contract_table(pa.table({"vote": ["a", "b"], "vote_id": ["1", "2"]}))
    assert table.schema == ARROW_SCHEMA
    assert table.column("vote").to_pylist() == ["a", "b"]
    assert table.column("flags").null_count == 2 and table.column("flags").type == pa.list_(
        pa.string()
    )


def test_published_parquet_is_zstd_compressed():
    data = parquet_bytes(pa.table({"vote": ["a"], "vote_id": ["1"]}))
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    assert {meta.row_group(0).column(k).compression for k in range(meta.num_columns)} == {"ZSTD"}


def test_a_mistyped_parquet_file_is_refused_whole_and_says_which_column(tmp_path, caplog):
    pq.write_table(pa.table({"vote_id": ["1"], "vote": [3]}), tmp_path / "bad.parquet")
    votes = read_votes(tmp_path / "bad.parquet")
    assert len(votes) == 0 and votes.skipped == Counter({reasons.UNREADABLE: 1})
    assert "column 'vote' has type int64" in caplog.text


def test_a_line_holding_two_records_is_one_invalid_line_on_both_paths():
    one = json.dumps(vote_row(1))
    skipped = Counter()
    table = parse_jsonl(f"{one}{json.dumps(vote_row(2))}\n{json.dumps(vote_row(3))}\n".encode(),
                        skipped)  # fmt: skip
    assert table.column("vote_id").to_pylist() == [vote_row(3)["vote_id"]]
    assert skipped == Counter({reasons.INVALID_JSON: 1})


def test_bytes_that_are_not_utf8_in_an_unknown_field_do_not_cost_the_row(tmp_path):
    # A damaged line elsewhere sends the file down the line-by-line path, which, like
    # Arrow, judges only the contract's fields.
    good = json.dumps(vote_row(1)).encode()
    odd = json.dumps(vote_row(2) | {"note": "X"}).encode().replace(b'"X"', b'"\xff\xfe"')
    path = tmp_path / "v.jsonl"
    path.write_bytes(good + b"\n" + odd + b"\n" + b"{broken\n")
    votes = read_votes(path)
    assert len(votes) == 2 and votes.skipped == Counter({reasons.INVALID_JSON: 1})


def parquet_of(path, columns: dict, types: dict | None = None):
    rows = [vote_row(1), vote_row(2, vote="b")]
    arrays = {}
    for name in columns:
        kind = (types or {}).get(name)
        values = [r[name] for r in rows]
        arrays[name] = pa.array(values, kind) if kind is not None else pa.array(values)
    pq.write_table(pa.table(arrays), path)
    return path


REQUIRED_COLUMNS = ["schema_version", "vote_id", "ts", "arena", "model_a", "model_b", "vote"]


def test_parquet_with_only_the_required_columns_reads_the_rest_as_null(tmp_path):
    votes = read_votes(parquet_of(tmp_path / "v.parquet", REQUIRED_COLUMNS))
    assert votes.column("vote").to_pylist() == ["a", "b"]
    assert votes.column("prompt").null_count == 2 and votes.column("flags").null_count == 2


def test_parquet_from_other_writers_string_types_is_read(tmp_path):
    # Dictionary strings (pandas categoricals), large strings and large lists (polars).
    types = {"vote": pa.dictionary(pa.int8(), pa.string()), "arena": pa.large_string(),
             "model_a": pa.string_view(), "flags": pa.large_list(pa.string())}  # fmt: skip
    path = parquet_of(tmp_path / "v.parquet", [*REQUIRED_COLUMNS, "flags"], types)
    votes = read_votes(path)
    assert votes.column("vote").to_pylist() == ["a", "b"] and not votes.skipped
    assert votes.column("arena").to_pylist() == ["speech"] * 2


def test_parquet_with_flags_as_plain_strings_is_refused_whole(tmp_path, caplog):
    path = parquet_of(tmp_path / "v.parquet", REQUIRED_COLUMNS)
    table = pq.read_table(path).append_column("flags", pa.array(["x", "y"]))
    pq.write_table(table, path)
    votes = read_votes(path)
    assert len(votes) == 0 and votes.skipped == Counter({reasons.UNREADABLE: 1})
    assert "column 'flags' has type string" in caplog.text


def test_parquet_holding_bytes_that_are_not_utf8_is_refused_whole(tmp_path):
    path = parquet_of(tmp_path / "v.parquet", REQUIRED_COLUMNS)
    table = pq.read_table(path)
    bad = pa.array([b"m/a", b"m\xff"], pa.binary()).view(pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("model_a"), "model_a", bad),
                   path)  # fmt: skip
    votes = read_votes(path)
    assert len(votes) == 0 and votes.skipped == Counter({reasons.UNREADABLE: 1})


#: The namespace of FastChat-derived vote ids (a public contract: re-imports map to the
#: same ids), and one battle in FastChat's clean_battle form.
FASTCHAT_NAMESPACE = uuid.UUID("6f1c3f5e-2b1a-4c55-9d0e-6a1e0c7b9a11")
BATTLE = {"model_a": "x", "model_b": "y", "winner": "tie (bothbad)", "tstamp": 1700000000.5,
          "anony": True, "judge": "arena_user_42", "language": "German", "question_id": 7}  # fmt: skip


def fastchat_id(battle, n=1):
    return str(uuid.uuid5(FASTCHAT_NAMESPACE, f"{json.dumps(battle, sort_keys=True)}#{n}"))


def test_a_fastchat_battle_becomes_this_vote_row(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps([BATTLE]))
    (row,) = read_votes(path).table.to_pylist()
    assert row == {
        "schema_version": 4, "vote_id": fastchat_id(BATTLE), "battle_id": None,
        "ts": "2023-11-14T22:13:20.500000Z",  # 19675 days and 80000.5 s after the epoch
        "arena": "fastchat", "model_a": "x", "model_b": "y", "model_a_version": None,
        "model_b_version": None, "vote": "both_bad", "prompt_id": "7", "prompt": None,
        "category": "German",
        "voter": "fastchat:" + hashlib.sha256(b"arena_user_42").hexdigest()[:16],
        "voter_kind": "human", "judge": None, "flags": [],
        "model_a_duration_s": None, "model_b_duration_s": None, "model_a_speech_rate": None,
        "model_b_speech_rate": None, "model_a_lufs": None, "model_b_lufs": None,
        "model_a_sample_rate": None, "model_b_sample_rate": None,
        "session_id": None, "session_order": None, "listen_a_s": None, "listen_b_s": None,
        "clip_a_s": None, "clip_b_s": None, "prompt_origin": None, "counted": None,
        "count_reason": None,
    }  # fmt: skip


def test_fastchat_timestamps_do_not_depend_on_the_machines_zone(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        path = tmp_path / "e.json"
        path.write_text(json.dumps([BATTLE]))
        assert read_votes(path).column("ts").to_pylist() == ["2023-11-14T22:13:20.500000Z"]
    finally:
        monkeypatch.undo()
        time.tzset()


def test_identical_battles_both_stay_and_a_reimport_adds_nothing(tmp_path):
    (tmp_path / "one.json").write_text(json.dumps([BATTLE, BATTLE]))
    (tmp_path / "two.json").write_text(json.dumps([BATTLE | {"model_b": "z"}]))
    (tmp_path / "again.json").write_text(json.dumps([BATTLE, BATTLE]))
    paths = [tmp_path / n for n in ("one.json", "two.json", "again.json")]
    votes = read_votes(paths)
    assert sorted(votes.column("vote_id").to_pylist()) == sorted(
        [fastchat_id(BATTLE, 1), fastchat_id(BATTLE, 2), fastchat_id(BATTLE | {"model_b": "z"})]
    )
    assert votes.skipped == Counter({reasons.DUPLICATE: 2})


def test_fastchat_rows_that_cannot_be_votes_are_skipped_one_by_one(tmp_path):
    rows = ["not a battle", BATTLE | {"tstamp": "yesterday"}, 3, BATTLE | {"tstamp": True},
            BATTLE | {"anony": False}, {k: v for k, v in BATTLE.items() if k != "tstamp"},
            {k: v for k, v in BATTLE.items() if k not in ("judge", "question_id")}]  # fmt: skip
    path = tmp_path / "e.json"
    path.write_text(json.dumps(rows))
    skipped = Counter()
    table = read_export(path, skipped)  # anonymous battles only, by default
    assert skipped == Counter({reasons.NOT_OBJECT: 2, reasons.WRONG_TYPE: 2,
                               reasons.NOT_ANONY: 1})  # fmt: skip
    assert table.num_rows == 2 and table.column("ts").to_pylist() == [None,
                                                                     "2023-11-14T22:13:20.500000Z"]  # fmt: skip
    last = table.to_pylist()[1]
    assert last["voter"] is None and last["prompt_id"] is None
    votes = read_votes(path)  # the battle without a time is then skipped as incomplete
    assert len(votes) == 1 and votes.skipped[reasons.MISSING] == 1


def test_an_export_that_is_not_a_list_is_refused():
    path = Path(tempfile.mkdtemp()) / "e.json"
    path.write_text(json.dumps({"battles": [BATTLE]}))
    with pytest.raises(ValueError, match=r"^a FastChat export is a JSON list of battles$"):
        read_export(path, Counter())


VOTE = {"vote_id": "v1", "ts": "2026-11-29T17:34:36.123Z", "arena": "ar", "model_a": "m/a",
        "model_b": "m/b", "vote": "tie"}  # fmt: skip


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"vote": "A"}, "vote must be one of a, b, tie, both_bad"),
        ({"model_b": "m/a"}, "model_a and model_b must differ"),
        ({"voter_kind": "bot"}, "voter_kind must be one of human, judge"),
        ({"ts": "yesterday"}, "ts 'yesterday' is not an ISO-8601 timestamp with a zone"),
        ({"flags": ("rate_limited", "")}, "flags must be non-empty strings"),
    ],
)
def test_a_refused_vote_says_why_in_these_words(over, message):
    # The message is shown to the visitor (VoteError): pinned word for word.
    with pytest.raises(VoteError, match=f"^{re.escape(message)}$"):
        Vote(**VOTE | over)


def test_a_vote_is_this_compact_utf8_line():
    line = Vote(**VOTE, prompt="Grüße aus 東京", flags=("rate_limited",)).to_json_line()
    assert (
        line
        == (
            '{"schema_version":4,"vote_id":"v1","battle_id":null,"ts":"2026-11-29T17:34:36.123Z",'
            '"arena":"ar","model_a":"m/a","model_b":"m/b","model_a_version":null,'
            '"model_b_version":null,"vote":"tie","prompt_id":null,"prompt":"Grüße aus 東京",'
            '"category":null,"voter":null,"voter_kind":"human","judge":null,'
            '"flags":["rate_limited"],"model_a_duration_s":null,"model_b_duration_s":null,'
            '"model_a_speech_rate":null,"model_b_speech_rate":null,"model_a_lufs":null,'
            '"model_b_lufs":null,"model_a_sample_rate":null,"model_b_sample_rate":null,'
            '"session_id":null,"session_order":null,"listen_a_s":null,"listen_b_s":null,'
            '"clip_a_s":null,"clip_b_s":null,"prompt_origin":null,"counted":false,'
            '"count_reason":"rate_limited"}\n'
        ).encode()
    )


def test_timestamps_are_formatted_in_utc_whatever_the_machines_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        five_hours_behind = timezone(timedelta(hours=-5))
        moment = datetime(2026, 11, 29, 17, 34, 36, 123999, tzinfo=five_hours_behind)
        assert format_ts(moment) == "2026-11-29T22:34:36.123Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_the_accepted_instants_run_from_year_1_to_year_9999_in_utc():
    # 719,162 days from 0001-01-01 to 1970-01-01, and 2,932,897 days from then to
    # 10000-01-01 (a microsecond before it is the last accepted instant).
    first, end = -719_162 * 86_400 * 10**6, 2_932_897 * 86_400 * 10**6
    assert parse_ts("0001-01-01T00:00:00Z") == first
    assert parse_ts("9999-12-31T23:59:59.999999Z") == end - 1  # past 2**53: exact integers
    assert type(parse_ts("2026-11-29T17:34:36.5Z")) is int
    assert parse_ts("0001-01-01T00:00:00+00:01") is None  # 00:59 on 31 December of year 0
    assert parse_ts("9999-12-31T23:59:59-00:01") is None  # year 10000 in UTC


# The byte-level fast paths of votes/columns.py, each checked on hand-written columns
# (through read_votes a wrong fast path only falls back to the slow one, unseen).


def test_a_byte_matrix_holds_each_string_of_one_width_as_a_row():
    sliced = pa.array(["ab", "cd", "ef", "g"]).slice(1, 2)  # an offset into the buffers
    assert byte_matrix(sliced).tolist() == [[ord("c"), ord("d")], [ord("e"), ord("f")]]
    assert byte_matrix(pa.array(["ab", "cd", "e"]).slice(0, 2)).tolist() == [[97, 98], [99, 100]]
    assert byte_matrix(pa.array(["xyz"])).tolist() == [[120, 121, 122]]


@pytest.mark.parametrize(
    "arr",
    [pa.array([], pa.string()), pa.array(["ab", None]), pa.array(["ab", "abc"]),
     pa.array(["", ""]), pa.array(["ab"], pa.large_string()), pa.array([b"ab"], pa.binary()),
     pa.array([12, 34])],
    ids=["empty", "null", "two-widths", "width-0", "large-string", "binary", "integers"],
)  # fmt: skip
def test_no_byte_matrix_unless_every_string_has_one_width(arr):
    assert byte_matrix(arr) is None


CANONICAL = "2026-11-29T17:34:36.123Z"


def at(text, pos, chars):
    return text[:pos] + chars + text[pos + len(chars) :]


@pytest.mark.parametrize(
    "good",
    [CANONICAL, "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z",
     "2026-10-10T10:10:10.000Z", "2026-09-19T19:49:59.000Z"],
)  # fmt: skip
def test_canonical_timestamps_at_the_edges_of_each_field(good):
    assert canonical_timestamps(pa.chunked_array([[CANONICAL], [good, CANONICAL]]))


@pytest.mark.parametrize(
    "bad",
    [at(CANONICAL, 5, "00"), at(CANONICAL, 5, "13"), at(CANONICAL, 8, "00"),
     at(CANONICAL, 8, "32"), at(CANONICAL, 11, "24"), at(CANONICAL, 14, "60"),
     at(CANONICAL, 17, "60"), at(CANONICAL, 5, "1:"), at(CANONICAL, 0, "/"),
     at(CANONICAL, 23, "z"), at(CANONICAL, 10, " "), at(CANONICAL, 19, ","),
     CANONICAL[:-1] + "+", CANONICAL[:-1], CANONICAL + " "],
)  # fmt: skip
def test_one_odd_timestamp_makes_a_column_not_canonical(bad):
    assert not canonical_timestamps(pa.chunked_array([[CANONICAL], [CANONICAL, bad]]))
    assert not canonical_timestamps(pa.array([bad, CANONICAL]))


def test_each_byte_of_a_canonical_timestamp_is_checked():
    # Any byte one below or one above what its position allows ('0'-'9', or the literal).
    for pos, char in enumerate(CANONICAL):
        allowed = "0123456789" if char.isdigit() else char
        for wrong in (chr(ord(min(allowed)) - 1), chr(ord(max(allowed)) + 1)):
            assert not canonical_timestamps(pa.array([CANONICAL, at(CANONICAL, pos, wrong)]))


FIRST_CASES = [
    (["b", "a", "b", "c", "a"], None, [True, True, False, True, False]),
    (["b", "a", "b", "c", "a"], [4, 2, 1, 0], [True, True, False, False]),
    (["bb", "a", "bb", "c", "a"], None, [True, True, False, True, False]),  # two widths
    (["bb", "a", "bb", "c", "a"], [4, 2, 1, 0], [True, True, False, False]),
    (["x1", "x2", "x3"], None, [True, True, True]),
]


@pytest.mark.parametrize(("values", "rows", "expected"), FIRST_CASES)
@pytest.mark.parametrize("chunked", [False, True])
def test_first_occurrences_mark_each_value_seen_first(values, rows, expected, chunked):
    column = pa.chunked_array([values[:2], values[2:]]) if chunked else pa.array(values)
    picked = None if rows is None else np.array(rows)
    first = first_occurrences(column, picked)
    assert first.dtype == bool and first.tolist() == expected


@pytest.mark.parametrize(("values", "rows", "expected"), FIRST_CASES)
def test_equal_fingerprints_are_only_candidates(monkeypatch, values, rows, expected):
    # Every value folded to one fingerprint: the values themselves must decide.
    monkeypatch.setattr(vote_columns, "_fingerprints", lambda m: np.zeros(len(m), dtype=np.uint64))
    picked = None if rows is None else np.array(rows)
    assert first_occurrences(pa.chunked_array([values]), picked).tolist() == expected


def test_the_dictionary_sees_only_what_fingerprints_cannot_settle(monkeypatch):
    # Fixed-width values (UUIDs, the usual case) are settled by their fingerprints; only
    # rows whose fingerprints repeat are compared by value.
    seen = []
    by_dictionary = vote_columns._first_by_dictionary
    monkeypatch.setattr(vote_columns, "_first_by_dictionary",
                        lambda values: (seen.append(values.to_pylist()), by_dictionary(values))[1])  # fmt: skip
    column = pa.chunked_array([["ab", "cd"], ["ab", "ef", "gh"]])
    assert first_occurrences(column).tolist() == [True, True, False, True, True]
    assert seen == [["ab", "ab"]]
    assert first_occurrences(column, np.array([4, 3, 2, 1])).all() and len(seen) == 1
    assert first_occurrences(column, np.array([2, 1, 0])).tolist() == [True, True, False]
    assert seen[1:] == [["ab", "ab"]]


def test_an_empty_column_has_no_first_occurrences():
    empty = pa.chunked_array([], type=pa.string())
    assert first_occurrences(empty).tolist() == []
    assert first_occurrences(empty, np.array([], dtype=np.int64)).tolist() == []


def test_chunks_of_different_widths_are_compared_by_value():
    column = pa.chunked_array([["aa", "bb"], ["a", "aa"]])
    assert first_occurrences(column).tolist() == [True, True, True, False]
    assert first_occurrences(column, np.array([3, 0, 2])).tolist() == [True, False, True]


@pytest.mark.parametrize("width", [1, 7, 8, 13, 36, 41])
def test_every_byte_of_an_id_changes_its_fingerprint(width):
    # A fingerprint that ignored a byte would make ids differing there collide: never wrong
    # (values decide), but every such pair would take the slow path.
    base = bytes(range(65, 65 + width))
    rows = [base] + [base[:k] + bytes([base[k] ^ 1]) + base[k + 1 :] for k in range(width)]
    m = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), width)
    prints = vote_columns._fingerprints(m)
    assert len(set(prints.tolist())) == len(rows)
    # Rows picked out of a larger matrix (a strided view) fold as their copy does.
    assert vote_columns._fingerprints(m[::2]).tolist() == prints[::2].tolist()


def test_ten_thousand_distinct_ids_give_distinct_fingerprints():
    ids = [str(uuid.UUID(int=k * 0x9E3779B97F4A7C15 % 2**128)) for k in range(10_000)]
    m = byte_matrix(pa.array(ids))
    assert len(set(vote_columns._fingerprints(m).tolist())) == 10_000
    assert first_occurrences(pa.array(ids)).all()


def test_columns_are_encoded_over_one_shared_list_of_values():
    a, b = encode(pa.chunked_array([["x", None], ["y", "x"]]), pa.array(["y", "z", None]))
    assert a.values == b.values == ["x", "y", "z"]
    assert a.codes.tolist() == [0, -1, 1, 0] and b.codes.tolist() == [1, 2, -1]


def test_dictionary_chunks_are_encoded_as_they_come():
    # Parquet's dictionaries: an unused entry, a null entry, a null index.
    chunk = pa.DictionaryArray.from_arrays(
        pa.array([2, 0, None, 3, 2], pa.int32()), pa.array(["unused", "p", "q", None])
    )
    (e,) = encode(pa.chunked_array([chunk]))
    assert e.values == ["unused", "p", "q"] and e.codes.tolist() == [2, 0, -1, -1, 2]
    (empty,) = encode(pa.chunked_array([], type=pa.string()))
    assert empty.values == [] and empty.codes.tolist() == []


def test_an_encoded_column_answers_per_value_and_broadcasts():
    e = Encoded(["tts-en", "tts-de", "judge"], np.array([1, -1, 0, 2, 1]))
    assert e.map({"tts-en": 10, "tts-de": 20}).tolist() == [20, -1, 10, -1, 20]
    assert e.map({"tts-de": 2.5}, missing=0.5, dtype=float).tolist() == [2.5, 0.5, 0.5, 0.5, 2.5]
    assert e.isin(["tts-de", "judge"]).tolist() == [True, False, False, True, True]
    assert e.isin([]).dtype == bool
    as_float = e.map({"tts-de": 2}, missing=0, dtype=np.float64)
    assert as_float.dtype == np.float64 and as_float.tolist() == [2.0, 0.0, 0.0, 0.0, 2.0]
    assert e.select(np.array([True, False, False, True, True])).codes.tolist() == [1, 2, 1]
    assert e.select(np.array([4, 0])).codes.tolist() == [1, 1] and e.select([0]).values is e.values


# votes/clean.py on contract tables built here.


def contract_rows(rows):
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


def test_clean_adds_to_the_counts_it_is_given():
    rows = [vote_row(1), vote_row(2, vote_id=vote_row(1)["vote_id"]), vote_row(3, arena=None),
            vote_row(4, vote="x")]  # fmt: skip
    skipped = Counter({reasons.DUPLICATE: 3, reasons.MISSING: 5})
    votes = clean(contract_rows(rows), skipped, now_us=parse_ts("2027-01-01T00:00:00Z"))
    assert len(votes) == 1 and votes.skipped is skipped
    assert skipped == Counter({reasons.DUPLICATE: 4, reasons.MISSING: 6, reasons.BAD_VOTE: 1})


def test_the_codes_follow_the_rows_when_they_are_reordered_and_deduplicated():
    rows = [vote_row(5, vote="b", arena="x"), vote_row(3, vote="tie", category="en"),
            vote_row(4, vote="both_bad", model_a="m/c"), vote_row(1, vote="a", judge="j"),
            vote_row(3, vote="a")]  # fmt: skip
    votes = clean(contract_rows(rows), Counter(), now_us=parse_ts("2027-01-01T00:00:00Z"))
    assert votes.column("vote").to_pylist() == ["a", "tie", "both_bad", "b"]
    for name in ("arena", "model_a", "model_b", "vote", "category", "judge", "voter_kind"):
        e = votes.encoded[name]
        assert [e.values[c] if c >= 0 else None for c in e.codes] == votes.column(
            name
        ).to_pylist(), name
    # 2026-10-01 is day 20,727 after the epoch; the k-th row is at k.250 s past midnight.
    day = 20_727 * 86_400 * 10**6
    assert votes.ts_us.tolist() == [day + k * 10**6 + 250_000 for k in (1, 3, 4, 5)]


def test_a_voter_kind_is_judged_by_its_value_whatever_its_code():
    # "robot" is the first value seen (as an arena), so it gets the first code.
    rows = [vote_row(1, arena="robot", voter_kind="robot"), vote_row(2)]
    votes = clean(contract_rows(rows), Counter(), now_us=parse_ts("2027-01-01T00:00:00Z"))
    assert len(votes) == 1 and votes.skipped == Counter({reasons.BAD_VOTER_KIND: 1})


@pytest.mark.parametrize(
    ("ts", "ids", "expected"),
    [
        ([1, 2, 3], ["c", "a", "b"], None),  # in time order: ids do not matter
        ([1, 2, 2, 3], ["w", "x", "y", "z"], None),  # a tie already in id order
        ([1, 2, 2, 2], ["w", "x", "x", "y"], None),  # equal ids count as in order
        ([1, 2, 2, 3], ["w", "y", "x", "z"], [0, 2, 1, 3]),
        ([3, 1, 2], ["a", "b", "c"], [1, 2, 0]),
        ([2, 1, 2, 1], ["d", "c", "b", "a"], [3, 1, 2, 0]),
    ],
)
def test_rows_are_put_in_time_then_id_order_only_when_they_are_not(ts, ids, expected):
    order = vote_clean._replay_order(np.array(ts, dtype=np.int64), pa.chunked_array([ids]))
    assert (order if order is None else order.tolist()) == expected


def test_without_leaves_out_the_named_votes_and_keeps_the_rest_aligned():
    rows = [vote_row(k, vote=v) for k, v in zip((1, 2, 3, 4), VOTES, strict=True)]
    skipped = Counter({reasons.MISSING: 2})
    votes = clean(contract_rows(rows), skipped, now_us=parse_ts("2027-01-01T00:00:00Z"))
    votes.files = 3
    out = votes.without({rows[1]["vote_id"], rows[3]["vote_id"], "not-a-vote"})
    assert out.column("vote").to_pylist() == ["a", "tie"]
    day = 20_727 * 86_400 * 10**6  # 2026-10-01; the k-th row is at k.250 s past midnight
    assert out.ts_us.tolist() == [day + 1_250_000, day + 3_250_000]
    e = out.encoded["vote"]
    assert [e.values[c] for c in e.codes] == ["a", "tie"]
    assert out.skipped is skipped and out.files == 3
    assert votes.without(()) is votes and len(votes) == 4
