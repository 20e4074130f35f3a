"""FastChat ``clean_battle`` exports, read into our vote records.

FastChat's leaderboards publish battles as a JSON list of objects with
``model_a``, ``model_b``, ``winner`` (``model_a``, ``model_b``, ``tie``,
``tie (bothbad)``), ``tstamp`` (Unix seconds), ``anony`` and ``judge`` (the
voter), sometimes with more keys (``language``, ``question_id``...). Like
FastChat's own leaderboard, only anonymous battles count unless asked.

Battles carry no id, so each gets a deterministic UUID-5 from its content and
its occurrence number among identical rows: importing the same export twice
deduplicates, and two genuinely identical battles both stay.

Our own exports (:func:`to_battles`) carry ``vote_id`` and ``arena``, and beside
FastChat's fields every other field of the vote record (:data:`RECORD_KEYS`): FastChat's
fields cannot say who voted (a judge's verdict would come back a human's vote), whether
the vote was flagged, or when to the microsecond (``tstamp`` is a double: microseconds
are lost far from 1970). A battle carrying a ``vote_id`` is one of ours, and its record
fields are read back as a JSONL line's would be, so importing the export gives the same
votes; a FastChat export has none of them and imports as FastChat's tools read it.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from arena_core.votes.clean import VoteTable
from arena_core.votes.lines import encodable, field_value, readable
from arena_core.votes.reasons import INVALID_JSON, NOT_ANONY, NOT_OBJECT, TRUNCATED, WRONG_TYPE
from arena_core.votes.schema import ARROW_SCHEMA, FIELDS, SCHEMA_VERSION
from arena_core.window import format_us

#: Arena id given to imported battles, which carry none.
DEFAULT_ARENA = "fastchat"
#: FastChat ``winner`` values and our ``vote`` values.
WINNER_TO_VOTE = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "both_bad"}
#: Namespace of the derived vote ids (a fixed, arbitrary UUID).
_NAMESPACE = uuid.UUID("6f1c3f5e-2b1a-4c55-9d0e-6a1e0c7b9a11")
#: Contract fields a battle holds under FastChat's names (``winner``, ``language``,
#: ``question_id``...), or under their own with a rule of their own (``arena``, ``vote_id``).
_FASTCHAT_HELD = frozenset({"vote_id", "arena", "model_a", "model_b", "vote", "category",
                            "prompt_id"})  # fmt: skip
#: The other contract fields, and the key each has in our exports: its own name, but for
#: ``judge`` (FastChat's ``judge`` is the voter), written as ``judge_model``.
RECORD_KEYS = {f.name: "judge_model" if f.name == "judge" else f.name
               for f in FIELDS if f.name not in _FASTCHAT_HELD}  # fmt: skip
#: The keys a battle's vote is read from (those of :data:`RECORD_KEYS` too, in ours).
_READ_KEYS = ("model_a", "model_b", "winner", "tstamp", "judge", "language", "question_id",
              "arena", "vote_id")  # fmt: skip


def read_export(path: Path, skipped: Counter, *, keep_all: bool = False,
                arena: str = DEFAULT_ARENA) -> pa.Table:  # fmt: skip
    """Read one export into contract rows; rows that cannot map are left for validation."""
    battles, cut = _battle_list(_decode(Path(path).read_bytes()))
    if cut:  # a download or a copy stopped midway: the battles before the cut are whole
        skipped[TRUNCATED] += 1
    rows, seen = [], Counter()
    for battle in battles:
        if not isinstance(battle, dict):
            skipped[NOT_OBJECT] += 1
            continue
        if battle.get("anony") is not True and not keep_all:
            skipped[NOT_ANONY] += 1
            continue
        if not readable_text(battle):
            skipped[INVALID_JSON] += 1  # as a JSONL line holding it: its battle alone
            continue
        row = to_vote_row(battle, arena)
        if row is None:
            skipped[WRONG_TYPE] += 1
            continue
        key = row["vote_id"]
        seen[key] += 1
        row["vote_id"] = (
            battle.get("vote_id")
            if isinstance(battle.get("vote_id"), str)
            else str(uuid.uuid5(_NAMESPACE, f"{key}#{seen[key]}"))
        )  # our own exports keep their ids
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


def _decode(data: bytes) -> str:
    """An export's text, as a JSONL line's is decoded: bytes that are not UTF-8 kept as
    surrogates, so that only a battle whose read fields hold them is skipped
    (:func:`readable_text`, ``invalid_json``) and a cut inside a multi-byte character is
    a cut like any other (one ``truncated_line``, the whole battles kept). The strict
    decode refused the whole export for one such byte, even in a field nobody reads.
    ``utf-8-sig``: an export saved by a Windows editor starts with a byte-order mark."""
    return data.decode("utf-8-sig", "surrogateescape")


def _battle_list(text: str) -> tuple[list, bool]:
    """The export's battles, and whether the file was cut short.

    A list that does not end with ``]`` was cut (a download or copy that stopped): its
    whole battles are read, as a JSONL file cut mid-line keeps its whole lines, and the
    cut is one ``truncated_line``. Before, the first error refused the file whole, so a
    half-downloaded export counted one ``unreadable_file`` and none of its battles. Damage
    anywhere else (a list that ends with ``]``) still refuses the file.
    """
    try:
        battles = json.loads(text)
    except json.JSONDecodeError:
        if text.rstrip().endswith("]"):
            raise
        return _whole_battles(text), True
    if not isinstance(battles, list):
        raise ValueError("a FastChat export is a JSON list of battles")
    return battles, False


def _whole_battles(text: str) -> list:
    """The items of a JSON list cut short, up to the first one the cut damaged: an object
    or list (closed by its bracket), or a value followed by a comma."""
    decoder = json.JSONDecoder()
    at = _after_space(text, 0)
    if not text.startswith("[", at):
        raise ValueError("a FastChat export is a JSON list of battles")
    items, at = [], at + 1
    while True:
        at = _after_space(text, at)
        try:
            item, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return items
        after = _after_space(text, end)
        if not isinstance(item, dict | list) and not text.startswith(",", after):
            return items  # a number or string at the cut may itself be cut
        items.append(item)
        if not text.startswith(",", after):
            return items
        at = after + 1


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def readable_text(battle: dict) -> bool:
    """Whether every string the battle's vote is read from can be written as UTF-8.

    A lone surrogate escape (``"judge": "x\\ud800"``) is valid JSON, but no Arrow column
    holds it: left in, it failed the whole export (every battle of it unread). A JSONL line
    holding one in a field that is read is skipped as ``invalid_json``; so is the battle.
    """
    keys = _READ_KEYS
    if isinstance(battle.get("vote_id"), str):
        keys += tuple(RECORD_KEYS.values())
    return all(encodable(battle.get(key)) for key in keys)


def to_vote_row(battle: dict, arena: str) -> dict | None:
    """One battle as a contract row (vote_id still the content key), or None if mistyped;
    its text is UTF-8 (:func:`readable_text` said so)."""
    tstamp = battle.get("tstamp")
    strings = ("model_a", "model_b", "winner", "judge", "language")
    if any(battle.get(k) is not None and not isinstance(battle.get(k), str) for k in strings):
        return None
    if tstamp is not None and (isinstance(tstamp, bool) or not isinstance(tstamp, int | float)):
        return None
    winner = battle.get("winner")
    judge = battle.get("judge")
    row = {
        "schema_version": SCHEMA_VERSION,
        "vote_id": json.dumps(battle, sort_keys=True, default=str),
        "battle_id": None,
        "ts": _ts(tstamp),
        "arena": battle["arena"] if isinstance(battle.get("arena"), str) else arena,
        "model_a": battle.get("model_a"),
        "model_b": battle.get("model_b"),
        "vote": WINNER_TO_VOTE.get(winner, winner),
        "prompt_id": _str_or_none(battle.get("question_id")),
        "prompt": None,
        "category": battle.get("language"),
        "voter": "fastchat:" + hashlib.sha256(judge.encode()).hexdigest()[:16] if judge else None,
        "voter_kind": "human",
        "judge": None,
        "flags": [],
    }
    return _with_record(row, battle) if isinstance(battle.get("vote_id"), str) else row


def _with_record(row: dict, battle: dict) -> dict | None:
    """``row`` with the record fields one of our battles carries, judged as a JSONL line's
    (None if one is mistyped); a field it lacks keeps the FastChat reading."""
    for name, key in RECORD_KEYS.items():
        if key in battle:
            value = battle[key]
            if not readable(name, value):
                return None
            row[name] = field_value(name, value)
    return row


#: The verdict fields of a vote the board counts (their keys in our exports are their names).
COUNTED = {"counted": True, "count_reason": None}
#: Our vote values and FastChat's ``winner`` values.
VOTE_TO_WINNER = {vote: winner for winner, vote in WINNER_TO_VOTE.items()}


def to_battles(votes: VoteTable, *, include_flagged: bool = False,
               arena: str | None = None) -> list[dict]:  # fmt: skip
    """Votes as FastChat ``clean_battle`` rows, so FastChat's notebooks run on our data.

    Every vote here was cast on anonymous outputs (``anony: true``); ``judge``
    carries the salted voter hash, ``language`` the prompt category. ``vote_id`` and
    the record's other fields the table has (:data:`RECORD_KEYS`: ``ts`` exactly, the
    voter, its kind and judge, the flags...) are added, so a re-import maps back to the
    same votes; ``ts`` is formatted from ``votes.ts_us`` when the table lacks it.

    Without ``include_flagged``, the votes the boards leave out are left out: by the
    board's rule over the whole of ``votes`` (:func:`~arena_core.dataset.verdict.replay_verdict`:
    flagged votes, and every vote of a voter the anomalous-voter test flags), and each
    battle's ``counted`` and ``count_reason`` say so (true, null), as the compacted files
    carry the replay's verdict. With it, every vote is exported as written. ``arena``
    keeps that arena's votes, judged over the whole log as its board judges them.
    """
    names = votes.table.column_names
    data = {c: votes.column(c).to_pylist() for c in {*_FASTCHAT_HELD, "voter", "flags", *names}}
    extra = [(name, key) for name, key in RECORD_KEYS.items() if name in names]
    keep = np.ones(len(votes), dtype=bool)
    if arena is not None:
        keep &= votes.encoded["arena"].isin([arena])
    if not include_flagged:
        # Imported here: the readers import this module, and need not load the anomaly test.
        from arena_core.dataset.verdict import replay_verdict

        keep &= replay_verdict(votes)[0].to_numpy(zero_copy_only=False)
        stamp = {name: value for name, value in COUNTED.items() if name in names}
    battles = []
    for k, ts_us in enumerate(votes.ts_us.tolist()):
        if not keep[k]:
            continue
        battle = {
            "model_a": data["model_a"][k],
            "model_b": data["model_b"][k],
            "winner": VOTE_TO_WINNER[data["vote"][k]],
            "tstamp": ts_us / 1e6,
            "anony": True,
            "judge": data["voter"][k] or "",
            "language": data["category"][k],
            "question_id": data["prompt_id"][k],
            "arena": data["arena"][k],
            "vote_id": data["vote_id"][k],
            "ts": format_us(ts_us),
        }  # fmt: skip
        battle.update((key, _finite(data[name][k])) for name, key in extra)
        if not include_flagged:
            battle.update(stamp)
        battles.append(battle)
    return battles


def _finite(value):
    """``value``, but a number JSON cannot hold (NaN, an infinity, which a log written by
    other tools may carry in a measurement column) as null: ``json.dumps`` wrote the token
    ``NaN``, which strict parsers (jq, a browser's ``JSON.parse``) refuse, so the whole
    export was unreadable to them. Null is the schema's "no measurement", which the
    readers and style control already treat a NaN as."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _ts(tstamp: float | None) -> str | None:
    """The battle's ``ts``: None when it has no ``tstamp`` (``missing_field``), else its
    ISO form, or for a number no timestamp names (NaN, an infinity, beyond the years 1 to
    9999) the number as written, which the reader skips as ``bad_ts``, as a JSONL line whose
    ``ts`` is out of range: the field is there, its value is wrong."""
    if tstamp is None:
        return None
    return _iso(tstamp) or f"tstamp {tstamp!r}"


def _iso(tstamp: float) -> str | None:
    try:
        moment = datetime.fromtimestamp(tstamp, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    # isoformat, not strftime("%Y"): the C library writes year 999 as "999", which no
    # reader takes as a timestamp.
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _str_or_none(value) -> str | None:
    return None if value is None else str(value)
