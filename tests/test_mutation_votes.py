"""Vote-record pieces that mutation testing found untested: each rule pinned on rows written here.

Expected values are the rows themselves, written out by hand (FastChat's field names
and winner strings from its ``clean_battle`` format), never re-derived by the code
under test.
"""

import json

from arena_core.votes.fastchat import to_battles
from arena_core.votes.read import read_votes


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
