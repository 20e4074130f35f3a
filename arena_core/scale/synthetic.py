"""Large synthetic vote logs in monthly Parquet partitions, written fast with numpy and Arrow.

The scale benchmark needs 100 million votes; writing them through ``VoteLog``
(one JSON object at a time) would take hours. Here every column is built as a
numpy array (fixed-width strings as byte matrices handed to Arrow without a
Python object per row) and written one month at a time, as
``compacted/<YYYY-MM>/part-0000.parquet`` like :mod:`~arena_core.dataset.compact`.

The log is not clean on purpose, so the engines' selection rules have work to
do: repeated ``vote_id`` (an identical re-push, and a later conflicting row),
flagged votes, judges' votes, votes without a voter kind, several categories,
and, when ``voters`` is set, repeat voters among whom a few vote against the
crowd (what the anomalous-voter test flags). Outcomes follow a Bradley-Terry
truth with ties, so the boards look like an arena's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from arena_core.dataset.compact import COMPACTED
from arena_core.votes.parquet import COMPRESSION
from arena_core.votes.schema import SCHEMA_VERSION

log = logging.getLogger(__name__)

#: Categories of the synthetic prompts (languages), with their shares.
CATEGORIES = (("en", 0.7), ("ja", 0.2), (None, 0.1))
#: Share of votes cast by a judge model rather than a visitor.
JUDGE_SHARE = 0.02
#: Share of votes flagged (rate-limited): kept in the log, left out of ratings.
FLAGGED_SHARE = 0.005
#: Share of rows repeating an earlier ``vote_id`` of the same month (half identical, half not).
DUPLICATE_SHARE = 0.001
#: Share of human votes written without a voter kind (old rows: read as human).
NO_KIND_SHARE = 0.05
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


@dataclass(frozen=True)
class SynthSpec:
    """What to generate: ``votes`` over ``months`` months from ``start`` (``YYYY-MM``)."""

    votes: int
    months: int = 24
    models: int = 20
    arena: str = "tts-en"
    start: str = "2025-01"
    #: Distinct repeat voters (0: no ``voter`` column values, as FastChat exports).
    voters: int = 0
    #: Voters among them who vote against the crowd (the anomalous-voter test's prey).
    campaigners: int = 0
    seed: int = 0


def generate(spec: SynthSpec, folder: Path) -> list[Path]:
    """Write the log under ``folder`` (one file per month); returns the files in month order."""
    rng = np.random.default_rng(spec.seed)
    strength = np.sort(rng.normal(0.0, 1.0, spec.models))[::-1]
    per_month = np.full(spec.months, spec.votes // spec.months)
    per_month[: spec.votes % spec.months] += 1
    first = np.datetime64(spec.start, "M")
    written = []
    for m in range(spec.months):
        month = first + m
        table = _month(spec, rng, strength, int(per_month[m]), month)
        path = Path(folder) / COMPACTED / str(month) / "part-0000.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, compression=COMPRESSION, row_group_size=1 << 20)
        written.append(path)
        log.info("wrote %s (%d votes)", path, table.num_rows)
    return written


def _month(spec: SynthSpec, rng, strength, n: int, month) -> pa.Table:
    start_ms = month.astype("datetime64[ms]").astype(np.int64)
    span_ms = (month + 1).astype("datetime64[ms]").astype(np.int64) - start_ms
    ts_ms = np.sort(start_ms + rng.integers(0, span_ms, n))
    a = rng.integers(0, spec.models, n)
    b = (a + 1 + rng.integers(0, spec.models - 1, n)) % spec.models
    outcome = _outcomes(rng, strength[a] - strength[b])
    ids = _hex_ids(rng, n)
    dup = np.flatnonzero(rng.random(n) < DUPLICATE_SHARE)
    dup = dup[dup > 0]
    src = rng.integers(0, dup, len(dup)) if len(dup) else dup  # an earlier row of the month
    ids[dup] = ids[src]
    same = rng.random(len(dup)) < 0.5  # an identical re-push; else a later, conflicting row
    for arr in (ts_ms, a, b, outcome):
        arr[dup[same]] = arr[src[same]]
    kind = np.where(rng.random(n) < JUDGE_SHARE, 1, 0)
    kind = np.where((kind == 0) & (rng.random(n) < NO_KIND_SHARE), -1, kind)
    voter = _voters(spec, rng, n, kind, outcome, strength[a] - strength[b])
    if voter is not None:
        outcome = voter[1]
    return pa.table({
        "schema_version": pa.array(np.full(n, SCHEMA_VERSION, dtype=np.int64)),
        "vote_id": _strings(ids),
        "ts": _strings(_ts_bytes(ts_ms)),
        "arena": _dictionary(np.zeros(n, dtype=np.int32), [spec.arena]),
        "model_a": _dictionary(a, _model_names(spec.models)),
        "model_b": _dictionary(b, _model_names(spec.models)),
        "vote": _dictionary(outcome, ["a", "b", "tie", "both_bad"]),
        "category": _category(rng, n),
        "voter": voter[0] if voter is not None else pa.nulls(n, pa.string()),
        "voter_kind": _dictionary(kind, ["human", "judge"]),
        "judge": _dictionary(np.where(kind == 1, 0, -1), ["judge-1"]),
        "flags": _flags(rng.random(n) < FLAGGED_SHARE),
    })  # fmt: skip


def _outcomes(rng, diff: np.ndarray) -> np.ndarray:
    """Bradley-Terry outcomes with ties: a 20% draw band, split 3:1 tie / both bad."""
    u = rng.random(len(diff))
    p_a = 1.0 / (1.0 + np.exp(-diff))
    out = np.where(u < 0.8 * p_a, 0, np.where(u < 0.8, 1, np.where(u < 0.95, 2, 3)))
    return out.astype(np.int64)


def _voters(spec: SynthSpec, rng, n: int, kind, outcome, diff):
    """Voter hashes (judges get ``judge:<id>``) and outcomes, campaigners voting for the
    weaker side whatever they hear."""
    if not spec.voters:
        return None
    who = rng.integers(0, spec.voters, n)
    campaign = who < spec.campaigners
    outcome = np.where(campaign & (kind != 1), np.where(diff > 0, 1, 0), outcome)
    names = [f"{(k * 2654435761) % (1 << 64):016x}" for k in range(spec.voters)] + ["judge:judge-1"]
    codes = np.where(kind == 1, spec.voters, who)
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(names)).cast(
        pa.string()
    ), outcome


def _category(rng, n: int) -> pa.Array:
    names = [c for c, _ in CATEGORIES]
    shares = np.array([s for _, s in CATEGORIES])
    code = rng.choice(len(names), n, p=shares)
    return _dictionary(np.where(np.array([c is None for c in names])[code], -1, code),
                       [c or "" for c in names])  # fmt: skip


def _model_names(models: int) -> list[str]:
    return [f"model-{k:02d}" for k in range(models)]


def _dictionary(codes: np.ndarray, values: list[str]) -> pa.Array:
    """Plain strings (the contract's type) from codes; -1 is null."""
    codes = np.asarray(codes, dtype=np.int32)
    indices = pa.array(codes, mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, pa.array(values)).cast(pa.string())


def _flags(flagged: np.ndarray) -> pa.Array:
    lengths = flagged.astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = pa.array(["rate_limited"] * int(lengths.sum()), pa.string())
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def _hex_ids(rng, n: int) -> np.ndarray:
    """UUID-shaped ids (8-4-4-4-12 hex digits) as an (n, 36) byte matrix."""
    nibbles = rng.integers(0, 16, (n, 32), dtype=np.uint8)
    out = np.full((n, 36), ord("-"), dtype=np.uint8)
    cols = [c for c in range(36) if c not in (8, 13, 18, 23)]
    out[:, cols] = _HEX[nibbles]
    return out


def _ts_bytes(ts_ms: np.ndarray) -> np.ndarray:
    """Canonical timestamps (``2026-11-29T17:34:36.123Z``) as an (n, 24) byte matrix."""
    text = np.datetime_as_string(ts_ms.astype("datetime64[ms]"), unit="ms").astype("S23")
    out = np.full((len(ts_ms), 24), ord("Z"), dtype=np.uint8)
    out[:, :23] = np.frombuffer(text.tobytes(), dtype=np.uint8).reshape(-1, 23)
    return out


def _strings(matrix: np.ndarray) -> pa.Array:
    """Fixed-width byte rows as an Arrow string array, without a Python object per row."""
    n, width = matrix.shape
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * width).tobytes())
    return pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(matrix.tobytes())])
