"""The vote record: the public contract of the vote dataset.

One JSON object per line. The writer always writes every field; a reader needs
only the required ones. The schema changes only with a new ``schema_version``
and a reader that still reads the old one. :data:`FIELDS` is the single
definition that the writer, the readers, the README table and the dataset card
all derive from.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from arena_core.ratings.counts import OUTCOME_NAMES

#: Version written by this code. Version 2 added ``model_a_version`` and
#: ``model_b_version``; version 3 added each side's style as delivered (duration,
#: speaking rate, loudness, the engine's sample rate), the covariates of the
#: style-controlled board; version 4 added what a researcher of the votes needs: the
#: session (salted) and the vote's order in it, the seconds each clip was listened to
#: and the clips' delivered length, the prompt's origin, and whether the vote counts
#: and why not. An older row reads as one whose new fields are unknown (null).
SCHEMA_VERSION = 4
#: Versions this reader understands; rows of other versions are skipped and counted.
SUPPORTED_VERSIONS = frozenset({1, 2, 3, 4})
#: The per-side style fields of version 3, without their ``model_a_``/``model_b_`` prefix.
STYLE_FIELDS = ("duration_s", "speech_rate", "lufs", "sample_rate")
#: The style columns of a row, A's then B's.
STYLE_COLUMNS = tuple(f"model_{side}_{name}" for side in "ab" for name in STYLE_FIELDS)
#: Allowed values of ``vote``, in outcome-code order.
VOTES = OUTCOME_NAMES
#: Allowed values of ``prompt_origin``: one of the arena's prompt set, or typed by the visitor.
PROMPT_ORIGINS = ("set", "typed")
#: The fields of version 4 that are seconds (listening and clip lengths), not negative.
SECONDS_COLUMNS = ("listen_a_s", "listen_b_s", "clip_a_s", "clip_b_s")
#: Allowed values of ``voter_kind``.
VOTER_KINDS = ("human", "judge")
#: Accepted timestamps: ISO-8601 with an explicit zone, at most microseconds, every
#: field in its calendar range (a leap second or a 24:00 is refused). Written without
#: look-arounds: Arrow's regular-expression engine (RE2) has none.
TS_PATTERN = (
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
    r"T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?"
    r"(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)
_TS_RE = re.compile(TS_PATTERN)
#: Range of accepted instants, microseconds since the epoch: years 1 to 9999 in UTC.
TS_MIN_US = -62_135_596_800_000_000
TS_MAX_US = 253_402_300_799_999_999


@dataclass(frozen=True)
class Field:
    """One field of the vote record."""

    name: str
    type: pa.DataType
    required: bool
    doc: str


FIELDS: tuple[Field, ...] = (
    Field("schema_version", pa.int64(), True, "Version of this record layout; 4 (rows of versions 1 to 3 are still read, their newer fields null, but for `counted` and `count_reason`, which compaction stamps on every row it rolls up)."),
    Field("vote_id", pa.string(), True, "Unique id of the vote (UUID); duplicates are dropped."),
    Field("battle_id", pa.string(), False, "Id of the battle the vote closes (UUID)."),
    Field("ts", pa.string(), True, "When the server recorded the vote, ISO-8601 UTC, e.g. 2026-11-29T17:34:36.123Z."),
    Field("arena", pa.string(), True, "Arena id from the registry."),
    Field("model_a", pa.string(), True, "Model id shown as 'Model A'."),
    Field("model_b", pa.string(), True, "Model id shown as 'Model B'."),
    Field("model_a_version", pa.string(), False, "Version of model_a as its backend reported it (engine release, API model revision); null when unknown. Since version 2."),
    Field("model_b_version", pa.string(), False, "Version of model_b, likewise. Since version 2."),
    Field("vote", pa.string(), True, "'a', 'b', 'tie' or 'both_bad'."),
    Field("prompt_id", pa.string(), False, "Id of the prompt in the arena's prompt set; null for a typed prompt."),
    Field("prompt", pa.string(), False, "The prompt text."),
    Field("category", pa.string(), False, "Prompt category, e.g. a language code."),
    Field("voter", pa.string(), False, "Salted hash of the voter; never a raw address or user name. For a judge, 'judge:' and the judge's id."),
    Field("voter_kind", pa.string(), False, "'human' or 'judge'."),
    Field("judge", pa.string(), False, "Id of the judge model when voter_kind is 'judge'; else null."),
    Field("flags", pa.list_(pa.string()), False, "Reasons the vote is left out of ratings (e.g. 'rate_limited'); empty when counted."),
    Field("model_a_duration_s", pa.float64(), False, "Seconds from the first to the last sound of model_a's clip as delivered (lead, trail and padding silence excluded); null when not speech. Since version 3."),
    Field("model_b_duration_s", pa.float64(), False, "The same for model_b. Since version 3."),
    Field("model_a_speech_rate", pa.float64(), False, "Prompt units (words; one per CJK character or kana) per second of sound in model_a's clip, pauses (silences of 250 ms or more) excluded; null when not speech. Since version 3."),
    Field("model_b_speech_rate", pa.float64(), False, "The same for model_b. Since version 3."),
    Field("model_a_lufs", pa.float64(), False, "Integrated loudness of model_a's clip as delivered (ITU-R BS.1770, LUFS); null when not speech. Since version 3."),
    Field("model_b_lufs", pa.float64(), False, "The same for model_b. Since version 3."),
    Field("model_a_sample_rate", pa.int64(), False, "Sample rate of model_a's engine output (Hz), before delivery resampled both clips to one rate; null when not speech. Since version 3."),
    Field("model_b_sample_rate", pa.int64(), False, "The same for model_b. Since version 3."),
    Field("session_id", pa.string(), False, "Salted hash (HMAC, as voter) of the session key the visitor's client sent (Gradio's random key per page load, or per API client); the client makes the key and may change it, so it groups a visit's votes and is never an identity. Null for judges. Since version 4."),
    Field("session_order", pa.int64(), False, "1-based order of the vote among its session's votes (by ts), counted by the server across restarts; null when the server could not know it yet (a vote cast while a restarted Space was still reading the earlier votes). Since version 4."),
    Field("listen_a_s", pa.float64(), False, "Seconds of clip A the visitor's browser played before the vote (played intervals summed, replays included, at any speed), as the browser reported it: client-reported, not verified. Null when not reported (API votes, text arenas) or beyond 10 times the clip's length. Since version 4."),
    Field("listen_b_s", pa.float64(), False, "The same for clip B. Since version 4."),
    Field("clip_a_s", pa.float64(), False, "Length in seconds of clip A as delivered (the file the visitor got: speech plus margins, both clips padded to one length); null when not audio. Since version 4."),
    Field("clip_b_s", pa.float64(), False, "The same for clip B. Since version 4."),
    Field("prompt_origin", pa.string(), False, "'set' (one of the arena's prompts, prompt_id given) or 'typed' (written by the visitor), from the server's battle record. Since version 4."),
    Field("counted", pa.bool_(), False, "Whether the vote counts in the ratings (of its voter_kind's boards). As written: false when flags is non-empty. In compacted files: the replay's verdict, which also leaves out every vote of a voter the anomalous-voter test flagged (see the dataset card). Since version 4."),
    Field("count_reason", pa.string(), False, "Why the vote does not count: 'rate_limited', 'anomalous_voter' (the voter failed the anomalous-voter test), or another flag; null when counted. Since version 4."),
)  # fmt: skip

#: Arrow schema of a record, in field order.
ARROW_SCHEMA = pa.schema([pa.field(f.name, f.type) for f in FIELDS])
_FIELD_TYPE = {f.name: f.type for f in FIELDS}
#: The range of the integer columns (Arrow's int64).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: Names of the fields a reader requires.
REQUIRED = tuple(f.name for f in FIELDS if f.required)


class VoteError(ValueError):
    """A vote that must not be written; the message is safe to show a visitor."""


@dataclass(frozen=True)
class Vote:
    """One vote, as written to the log."""

    vote_id: str
    ts: str
    arena: str
    model_a: str
    model_b: str
    vote: str
    model_a_version: str | None = None
    model_b_version: str | None = None
    battle_id: str | None = None
    prompt_id: str | None = None
    prompt: str | None = None
    category: str | None = None
    voter: str | None = None
    voter_kind: str = "human"
    judge: str | None = None
    flags: tuple[str, ...] = field(default=())
    model_a_duration_s: float | None = None
    model_b_duration_s: float | None = None
    model_a_speech_rate: float | None = None
    model_b_speech_rate: float | None = None
    model_a_lufs: float | None = None
    model_b_lufs: float | None = None
    model_a_sample_rate: int | None = None
    model_b_sample_rate: int | None = None
    session_id: str | None = None
    session_order: int | None = None
    listen_a_s: float | None = None
    listen_b_s: float | None = None
    clip_a_s: float | None = None
    clip_b_s: float | None = None
    prompt_origin: str | None = None
    counted: bool | None = None
    count_reason: str | None = None
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self):
        for name in ("vote_id", "arena", "model_a", "model_b"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise VoteError(f"{name} must be a non-empty string")
        if self.vote not in VOTES:
            raise VoteError(f"vote must be one of {', '.join(VOTES)}")
        if self.model_a == self.model_b:
            raise VoteError("model_a and model_b must differ")
        if self.voter_kind not in VOTER_KINDS:
            raise VoteError(f"voter_kind must be one of {', '.join(VOTER_KINDS)}")
        if parse_ts(self.ts) is None:
            raise VoteError(f"ts {self.ts!r} is not an ISO-8601 timestamp with a zone")
        if not all(isinstance(f, str) and f for f in self.flags):
            raise VoteError("flags must be non-empty strings")
        for name in ("model_a_version", "model_b_version"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise VoteError(f"{name} must be a non-empty string or None")
        if self.voter_kind == "judge" and not self.judge:
            raise VoteError("a judge's vote names its judge")
        for name in STYLE_COLUMNS:
            value = getattr(self, name)
            if value is not None and not _plausible(name, value):
                raise VoteError(
                    f"{name} must be a finite number (at least 0 but for loudness) or None"
                )
        self._check_v4()

    def _check_v4(self) -> None:
        """Version 4's fields: a session and its order together, seconds that are
        seconds, an origin that agrees with ``prompt_id``, and ``counted`` and
        ``count_reason`` that say what ``flags`` says (derived from it when not given)."""
        if self.session_order is not None and self.session_id is None:
            raise VoteError("a session_order needs its session_id")
        if self.session_id is not None and (not isinstance(self.session_id, str)
                                            or not self.session_id):  # fmt: skip
            raise VoteError("session_id must be a non-empty string or None")
        order = self.session_order
        if order is not None and (type(order) is not int or not 1 <= order <= INT64_MAX):
            raise VoteError("session_order must be an integer of at least 1 and below 2**63")
        for name in SECONDS_COLUMNS:
            value = getattr(self, name)
            if value is not None and not _plausible(name, value):
                raise VoteError(f"{name} must be a finite number of at least 0 or None")
        origin = self.prompt_origin
        if origin is not None and origin not in PROMPT_ORIGINS:
            raise VoteError(f"prompt_origin must be one of {', '.join(PROMPT_ORIGINS)} or None")
        if origin is not None and (origin == "set") != (self.prompt_id is not None):
            raise VoteError("prompt_origin 'set' goes with a prompt_id, 'typed' without one")
        counted, reason = write_verdict(self.flags)
        if self.counted is None and self.count_reason is None:
            object.__setattr__(self, "counted", counted)
            object.__setattr__(self, "count_reason", reason)
        elif (self.counted, self.count_reason) != (counted, reason):
            raise VoteError("counted and count_reason must agree with flags")

    def to_dict(self) -> dict:
        """Every field, in contract order."""
        data = asdict(self)
        data["flags"] = list(self.flags)
        return {f.name: data[f.name] for f in FIELDS}

    def to_json_line(self) -> bytes:
        """The record as one UTF-8 JSON line, newline included."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")


def _plausible(name: str, value) -> bool:
    """A style value the writer may record: a finite number, not negative but for loudness,
    that its column's type holds (readers refuse the row otherwise, so the vote would be
    acknowledged and lost): a whole number within 64 bits in an integer column, a number a
    double holds in the others (``10**400`` does not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if _FIELD_TYPE[name] == pa.int64():
        if not isinstance(value, int) or not INT64_MIN <= value <= INT64_MAX:
            return False
    else:
        try:
            if not math.isfinite(value):
                return False
        except OverflowError:  # an int too large for a double
            return False
    return value >= 0 or name.endswith("lufs")


def write_verdict(flags) -> tuple[bool, str | None]:
    """``counted`` and ``count_reason`` as the writer knows them: a vote with a flag is
    left out, for its first flag; the anomalous-voter test may later leave out more
    (the replay's verdict, :mod:`arena_core.dataset.verdict`)."""
    flags = tuple(flags)
    return (not flags, flags[0] if flags else None)


def new_vote_id() -> str:
    return str(uuid.uuid4())


def format_ts(moment: datetime) -> str:
    """Canonical form: UTC, milliseconds, 'Z' (e.g. 2026-11-29T17:34:36.123Z)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_ts(text: str) -> int | None:
    """Microseconds since the epoch for an accepted timestamp, else None."""
    if not isinstance(text, str) or not _TS_RE.match(text):
        return None
    # Python has no year 0; Arrow and DuckDB date it, and 0000-12-31T23:00-01:00 is in year
    # 1 in UTC. Refused here alone, such a row counted or not by its column's other rows
    # (a 30 February sends the whole column here). Year 400 has the same calendar.
    shift = _GREGORIAN_CYCLE if text.startswith("0000") else timedelta(0)
    try:
        moment = datetime.fromisoformat(text.replace("0000", "0400", 1) if shift else text)
    except ValueError:
        return None
    us = (moment - datetime(1970, 1, 1, tzinfo=UTC) - shift) // _MICROSECOND
    return us if TS_MIN_US <= us <= TS_MAX_US else None


_MICROSECOND = datetime(1970, 1, 1, 0, 0, 0, 1) - datetime(1970, 1, 1)
#: 400 Gregorian years: the calendar repeats after them.
_GREGORIAN_CYCLE = timedelta(days=146_097)
