"""Vote-record pieces that mutation testing found untested: each rule pinned on rows written here.

Expected values are the rows themselves, written out by hand (FastChat's field names
and winner strings from its ``clean_battle`` format), never re-derived by the code
under test.
"""

import hashlib
import io
import json
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena_core.votes import reasons
from arena_core.votes.fastchat import read_export, to_battles
from arena_core.votes.parquet import contract_table, parquet_bytes
from arena_core.votes.read import parse_jsonl, read_votes
from arena_core.votes.schema import ARROW_SCHEMA


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
    assert battles[0] == {
        "model_a": "m/a", "model_b": "m/b", "winner": "model_a",
        "tstamp": 1790812801.25,  # 2026-10-01T00:00:01.250Z: 20727 days of 86400 s, + 1.25
        "anony": True, "judge": "h1", "language": "en", "question_id": "p1",
        "arena": "speech", "vote_id": "00000000-0000-4000-8000-000000000001",
    }  # fmt: skip
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
        "schema_version": 2, "vote_id": fastchat_id(BATTLE), "battle_id": None,
        "ts": "2023-11-14T22:13:20.500000Z",  # 19675 days and 80000.5 s after the epoch
        "arena": "fastchat", "model_a": "x", "model_b": "y", "model_a_version": None,
        "model_b_version": None, "vote": "both_bad", "prompt_id": "7", "prompt": None,
        "category": "German",
        "voter": "fastchat:" + hashlib.sha256(b"arena_user_42").hexdigest()[:16],
        "voter_kind": "human", "judge": None, "flags": [],
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
