"""Synthetic vote logs with known true ratings, for benchmarks.

Outcomes come from :class:`arena_core.simulation.synthetic.Truth`, the half-win
Bradley-Terry model the estimators assume (a's expected score is exactly its
true win probability), so the fit recovers the true ratings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from arena_core.ratings.counts import OUTCOME_NAMES
from arena_core.ratings.scale import ANCHOR
from arena_core.simulation.synthetic import Truth
from arena_core.votes.schema import ARROW_SCHEMA

#: Probability that two equal models draw.
DRAW_RATE = 0.25
#: Share of draws that are "both bad" rather than "tie".
BOTH_BAD_SHARE = 0.3
#: Spread (standard deviation, rating points) of the true ratings.
TRUE_SPREAD = 120.0
#: Start of the synthetic log, in microseconds since the epoch (2026-01-01).
START_US = 1_767_225_600_000_000
#: Prompts cycled through the log (texts of a realistic length).
PROMPTS = [
    f"Synthetic prompt {k}: the quick brown fox reads {k} numbers aloud." for k in range(200)
]


def true_ratings(n_models: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r = rng.normal(0.0, TRUE_SPREAD, n_models)
    return ANCHOR + r - r.mean()


def simulate(n_votes: int, n_models: int = 20, seed: int = 0,
             chunk: int = 1_000_000) -> tuple[list[pd.DataFrame], np.ndarray]:  # fmt: skip
    """Contract-shaped vote tables (in ts order, ``chunk`` rows each) and the true ratings."""
    truth = true_ratings(n_models, seed)
    frames, start = [], START_US
    for k, first in enumerate(range(0, n_votes, chunk)):
        rng = np.random.default_rng([seed, k])
        frame = _chunk(min(chunk, n_votes - first), truth, rng, start)
        start = int(frame.attrs["last_ts_us"])
        frames.append(frame)
    return frames, truth


def _chunk(
    n_votes: int, truth: np.ndarray, rng: np.random.Generator, start_us: int
) -> pd.DataFrame:
    n_models = len(truth)
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models
    outcome = Truth(truth, draw_rate=DRAW_RATE, both_bad_share=BOTH_BAD_SHARE).sample(a, b, rng)
    vote = np.array(OUTCOME_NAMES, dtype=object)[outcome]
    ids = [f"model-{k:02d}" for k in range(n_models)]
    ts_us = start_us + np.cumsum(rng.integers(1_000, 3_000_000, n_votes))
    ts = np.char.add(np.datetime_as_string(ts_us.astype("datetime64[us]"), unit="ms"), "Z")
    prompt_k = rng.integers(0, len(PROMPTS), n_votes)
    frame = pd.DataFrame(
        {
            "schema_version": 2,
            "vote_id": _uuids(rng, n_votes),
            "battle_id": _uuids(rng, n_votes),
            "ts": ts,
            "arena": "synthetic",
            "model_a": np.array(ids)[a],
            "model_b": np.array(ids)[b],
            "model_a_version": None,
            "model_b_version": None,
            "vote": vote,
            "prompt_id": np.char.add("p", prompt_k.astype(str)),
            "prompt": np.array(PROMPTS)[prompt_k],
            "category": np.where(prompt_k % 2 == 0, "even", "odd"),
            "voter": np.frombuffer(rng.bytes(8 * n_votes).hex().encode(), dtype="S16").astype(str),
            "voter_kind": "human",
            "judge": None,
            "flags": [[] for _ in range(n_votes)],
        }
    )
    frame.attrs["last_ts_us"] = int(ts_us[-1])
    return frame


def _uuids(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random version-4 UUID strings, formatted without a Python loop per id."""
    raw = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    hexed = np.frombuffer(raw.tobytes().hex().encode(), dtype="S32").astype(str)
    h = hexed.astype("U32").view("U1").reshape(n, 32)
    dashed = np.concatenate([h[:, :8], _dash(n), h[:, 8:12], _dash(n), h[:, 12:16], _dash(n),
                             h[:, 16:20], _dash(n), h[:, 20:]], axis=1)  # fmt: skip
    return dashed.view("U36").ravel()


def _dash(n: int) -> np.ndarray:
    return np.full((n, 1), "-", dtype="U1")


def write_jsonl(frames: list[pd.DataFrame], folder: Path, shards: int = 4) -> None:
    """Deal rows round-robin into ``shards`` files, as several processes would write."""
    folder.mkdir(parents=True, exist_ok=True)
    for frame in frames:
        for s in range(shards):
            with (folder / f"votes-{s:04d}.jsonl").open("a", encoding="utf-8") as f:
                frame.iloc[s::shards].to_json(f, orient="records", lines=True, force_ascii=False)


def write_parquet(frames: list[pd.DataFrame], folder: Path, name: str = "votes.parquet") -> Path:
    """One zstd Parquet file ``folder/name``, a row group per frame.

    Each frame is reindexed to the vote schema's columns first: the frames carry the
    contract's fields, the schema grows newer optional ones (the models' durations...),
    and ``Table.from_pandas`` with a schema refuses a frame that lacks any of them. The
    fields a frame lacks are written null, as a log written before they existed reads.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with pq.ParquetWriter(path, ARROW_SCHEMA, compression="zstd") as writer:
        for frame in frames:
            writer.write_table(
                pa.Table.from_pandas(
                    frame.reindex(columns=ARROW_SCHEMA.names),
                    schema=ARROW_SCHEMA,
                    preserve_index=False,
                )
            )
    return path


#: Ways a line of a real log gets damaged, each a function of the line's bytes: cut short
#: by a crash mid-write, a value of the wrong type, a JSON value that is not an object, and
#: bytes that are not UTF-8 in a contract field (which Arrow's parser lets through to the
#: reader's own check, so its error names no row).
DAMAGE = (
    lambda line: line[: len(line) // 2],
    lambda line: line.replace(b'"schema_version":2', b'"schema_version":"2"', 1),
    lambda line: b"[" + line + b"]",
    lambda line: line.replace(b'"prompt":"Synthetic', b'"prompt":"\xffSynthetic', 1),
)


def damage_jsonl(source: Path, target: Path, share: float, seed: int = 0) -> int:
    """A copy of a JSONL file with ``share`` of its lines, spread at random, damaged (in
    turn each way of :data:`DAMAGE`); returns how many."""
    lines = source.read_bytes().split(b"\n")
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(lines) - 1, size=round((len(lines) - 1) * share), replace=False)
    for k, line in enumerate(np.sort(chosen).tolist()):
        lines[line] = DAMAGE[k % len(DAMAGE)](lines[line])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\n".join(lines))
    return len(chosen)
