"""Vote-record pieces that mutation testing found untested: each rule pinned on rows written here.

Expected values are the rows themselves, written out by hand (FastChat's field names
and winner strings from its ``clean_battle`` format), never re-derived by the code
under test.
"""

import io
import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena_core.votes import reasons
from arena_core.votes.fastchat import to_battles
from arena_core.votes.parquet import contract_table, parquet_bytes
from arena_core.votes.read import read_votes
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
