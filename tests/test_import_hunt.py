"""Import hunt: a researcher imports an arena's battles and must get that arena's board.

Battles here are the Japanese arena's own votes exported as ``export --format fastchat``
writes them (``json.dumps(..., ensure_ascii=False)``: its prompts are UTF-8 Japanese, from
``prompts/tts_ja.yaml``, its models from ``registry.yaml``), then damaged as downloads and
editors damage files. What a clean read gives is worked out from the battles' own byte
offsets, not from the importer.
"""

import json
from collections import Counter
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.votes import reasons
from arena_core.votes.fastchat import to_battles
from arena_core.votes.read import read_votes
from arena_core.votes.schema import TS_MAX_US

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = yaml.safe_load((ROOT / "prompts" / "tts_ja.yaml").read_text(encoding="utf-8"))
MODELS = ("kokoro-82m/jf_alpha", "openjtalk/mei_normal", "espeak-ng/ja")
VOTES = ("a", "b", "tie", "both_bad")


def _japanese_export(tmp_path: Path, n: int = 8) -> tuple[bytes, list[str]]:
    """The bytes ``export`` writes for ``n`` votes of the Japanese arena, and their ids."""
    rows = []
    for k in range(n):
        prompt = PROMPTS[k % len(PROMPTS)]
        rows.append({"schema_version": 4, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
                     "ts": f"2026-01-01T00:00:{k:02d}.000000Z", "arena": "tts-ja",
                     "model_a": MODELS[k % 3], "model_b": MODELS[(k + 1) % 3],
                     "vote": VOTES[k % 4], "prompt_id": prompt["id"], "prompt": prompt["text"],
                     "category": prompt["category"], "voter": f"v{k}", "voter_kind": "human",
                     "judge": None, "flags": []})  # fmt: skip
    source = tmp_path / "votes.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    battles = to_battles(read_votes(source, now_us=TS_MAX_US), include_flagged=True)
    text = json.dumps(battles, ensure_ascii=False, allow_nan=False).encode("utf-8")
    return text, [b["vote_id"] for b in battles]


def _ends(text: bytes) -> list[int]:
    """Byte offset just past each battle of a ``json.dumps`` list (items joined by ", ")."""
    battles = json.loads(text)
    ends, at = [], 1  # after "["
    for k, battle in enumerate(battles):
        at += (2 if k else 0) + len(json.dumps(battle, ensure_ascii=False).encode("utf-8"))
        ends.append(at)
    return ends


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_an_export_cut_inside_a_character_keeps_its_whole_battles(tmp_path_factory, data):
    """A download cut short keeps the battles before the cut and counts one
    ``truncated_line`` (README, "Reproducing a leaderboard"), wherever the cut falls.

    Found: the export was decoded as strict UTF-8, so a cut inside a multi-byte character
    (any non-ASCII export: Japanese prompts, FastChat conversations) raised before the cut
    was looked for, and the whole export counted one ``unreadable_file`` and no battle.
    A JSONL log cut the same way keeps its whole lines.
    """
    folder = tmp_path_factory.mktemp("cut")
    text, ids = _japanese_export(folder)
    ends = _ends(text)
    inside = [p for p in range(1, len(text)) if (text[p] & 0xC0) == 0x80]  # mid-character
    cut = data.draw(st.sampled_from(inside))
    path = folder / "battles.json"
    path.write_bytes(text[:cut])
    votes = read_votes(path, now_us=TS_MAX_US)
    whole = sum(end <= cut for end in ends)
    assert votes.skipped == Counter({reasons.TRUNCATED: 1})
    assert votes.column("vote_id").to_pylist() == ids[:whole]


def test_a_byte_that_is_not_utf8_skips_its_battle_alone(tmp_path):
    """One damaged character (its first byte kept, the rest lost, as an editor or a bad
    copy leaves it) in one battle's prompt skips that battle as ``invalid_json``, as the
    same damage in a JSONL line does; the other battles are read.

    Found: the strict decode refused the whole export (one ``unreadable_file``, 0 votes)."""
    text, ids = _japanese_export(tmp_path)
    prompt = PROMPTS[3]["text"].encode("utf-8")
    at = text.index(prompt)
    damaged = text[: at + 1] + text[at + 3 :]  # the prompt's first character loses 2 bytes
    path = tmp_path / "battles.json"
    path.write_bytes(damaged)
    votes = read_votes(path, now_us=TS_MAX_US)
    assert votes.skipped == Counter({reasons.INVALID_JSON: 1})
    assert votes.column("vote_id").to_pylist() == ids[:3] + ids[4:]
    # The same damage in the log's line of that vote: that line alone.
    log = tmp_path / "votes.jsonl"
    raw = log.read_bytes()
    at = raw.index(prompt)
    log.write_bytes(raw[: at + 1] + raw[at + 3 :])
    assert read_votes(log, now_us=TS_MAX_US).skipped == Counter({reasons.INVALID_JSON: 1})
