"""From raw rows to valid votes in replay order.

Every file format is first read into contract columns; this module then drops
invalid rows (counting the first rule each breaks), sorts by ``(ts, vote_id)``
and keeps the first row of each ``vote_id``. Doing it once, on the combined
table, is what makes the result independent of file order and format.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from arena_core.votes.arrow import (
    indices,
    integers_in,
    mask,
    null_or_empty,
    numeric,
    to_numpy,
    valid,
)
from arena_core.votes.columns import (
    Encoded,
    canonical_layout,
    canonical_timestamps,
    encode,
    first_occurrences,
)
from arena_core.votes.kernels import cast, pc, take
from arena_core.votes.reasons import (
    BAD_TS,
    BAD_VOTE,
    BAD_VOTER_KIND,
    DUPLICATE,
    FUTURE_TS,
    MISSING,
    SAME_MODEL,
    VERSION,
)
from arena_core.votes.schema import (
    REQUIRED,
    SUPPORTED_VERSIONS,
    TS_MAX_US,
    TS_MIN_US,
    TS_PATTERN,
    VOTER_KINDS,
    VOTES,
    parse_ts,
)

#: How far past the reader's clock a vote may be dated (microseconds): the clocks of
#: replicas writing one dataset disagree by seconds, never by ten minutes. A row beyond
#: it is forged or broken; kept, it would stamp every later vote after it (the log
#: never writes a vote earlier than the latest one replayed).
FUTURE_SLACK_US = 10 * 60 * 1_000_000
#: What ``ts`` strings are cast to.
_TS_TYPE = pa.timestamp("us", tz="UTC")

#: Columns with few distinct values: dictionary-encoded in tables, and kept as
#: :class:`Encoded` codes in a :class:`VoteTable`.
CATEGORICAL = frozenset({"arena", "model_a", "model_b", "vote", "category", "voter_kind", "judge"})


@dataclass
class VoteTable:
    """Valid votes in replay order, and what was skipped on the way.

    ``table`` has the contract columns asked for (those in :data:`CATEGORICAL`
    dictionary-encoded); ``ts_us`` holds each row's timestamp in microseconds
    since the epoch; ``encoded`` holds the categorical columns as codes, with
    ``model_a`` and ``model_b`` sharing one list of values. All are aligned.
    """

    table: pa.Table
    ts_us: np.ndarray
    encoded: dict[str, Encoded]
    skipped: Counter
    files: int = 0
    #: The reader's clock (microseconds since the epoch) the rows were judged by: later
    #: than it plus :data:`FUTURE_SLACK_US`, a row was skipped as ``future_ts``. A board
    #: names it (its revision's ``read_at``), so a later replay can judge the rows alike.
    read_at_us: int | None = None
    #: The earliest ``ts`` of a row skipped as ``future_ts`` (None if none was): from
    #: that time less the slack, a replay counts it (the Space replays again then).
    future_from_us: int | None = None

    def __len__(self) -> int:
        return self.table.num_rows

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def without(self, vote_ids) -> VoteTable:
        """The same votes less those whose ``vote_id`` is in ``vote_ids`` (which needs the
        ``vote_id`` column); order and the skipped counts are kept."""
        ids = pa.array(list(vote_ids), type=pa.string())
        if not len(ids):
            return self
        rows = np.flatnonzero(~mask(pc.is_in(self.table.column("vote_id"), value_set=ids)))
        return VoteTable(table=self.table.take(indices(rows)), ts_us=self.ts_us[rows],
                         encoded={k: e.select(rows) for k, e in self.encoded.items()},
                         skipped=self.skipped, files=self.files, read_at_us=self.read_at_us,
                         future_from_us=self.future_from_us)  # fmt: skip


def clean(table: pa.Table, skipped: Counter, columns: list[str] | None = None, *,
          now_us: int | None = None) -> VoteTable:  # fmt: skip
    """Validate, order and deduplicate ``table``; count what is dropped in ``skipped``.

    ``now_us`` is the reader's clock (default: now), for refusing rows from the future.

    The rows to keep, in replay order, are worked out as one index; only then
    are the ``columns`` asked for (default: all) copied, once. Columns used only
    for checking (``vote_id``, ``ts``) are never copied when not asked for.
    """
    encoded = _encode(table)
    if now_us is None:
        now_us = time.time_ns() // 1000
    ok, ts_us, future_from = _validate(table, encoded, skipped, now_us + FUTURE_SLACK_US)
    rows = np.flatnonzero(ok)
    ids = table.column("vote_id")
    order = _replay_order(ts_us[rows], ids if ok.all() else take(ids, indices(rows)))
    if order is not None:
        rows = rows[order]
    first = first_occurrences(ids, rows)
    if not first.all():
        skipped[DUPLICATE] += int((~first).sum())
        rows = rows[first]
    keep = [c for c in (columns or table.column_names) if c in table.column_names]
    table = table.select(keep)
    if not np.array_equal(rows, np.arange(table.num_rows)):
        table = take(table, indices(rows))
        ts_us = ts_us[rows]
        encoded = {k: e.select(rows) for k, e in encoded.items()}
    return VoteTable(table=table, ts_us=ts_us, encoded=encoded, skipped=skipped,
                     read_at_us=now_us, future_from_us=future_from)  # fmt: skip


def _encode(table: pa.Table) -> dict[str, Encoded]:
    # Each column over its own values (a dictionary as Parquet delivers it is then used
    # as it is); only model_a and model_b share theirs, to be compared by code.
    names = [n for n in table.column_names if n in CATEGORICAL and n not in ("model_a", "model_b")]
    out = {name: encode(table.column(name))[0] for name in names}
    out["model_a"], out["model_b"] = encode(table.column("model_a"), table.column("model_b"))
    return out


def _validate(table: pa.Table, encoded: dict[str, Encoded], skipped: Counter, latest_us: int):
    """Mask of valid rows and their timestamps; the first rule each bad row breaks is counted."""
    n = table.num_rows
    reason = np.zeros(n, dtype=np.int8)
    labels: list[str] = []

    def mark(bad, label):
        labels.append(label)
        reason[(reason == 0) & bad] = len(labels)

    missing = np.zeros(n, dtype=bool)
    for name in REQUIRED:
        if name in encoded:
            e = encoded[name]
            missing |= (e.codes < 0) | e.isin([""])
        else:
            col = table.column(name)
            if pa.types.is_string(col.type):
                missing |= null_or_empty(col)
            else:
                missing |= ~valid(col)
    mark(missing, MISSING)
    mark(~integers_in(table.column("schema_version"), sorted(SUPPORTED_VERSIONS)), VERSION)
    mark(~encoded["vote"].isin(VOTES), BAD_VOTE)
    if "voter_kind" in encoded:
        kind = encoded["voter_kind"]
        mark((kind.codes >= 0) & ~kind.isin(VOTER_KINDS), BAD_VOTER_KIND)
    mark(encoded["model_a"].codes == encoded["model_b"].codes, SAME_MODEL)
    ts_us, good_ts = _parse_timestamps(table.column("ts"), reason == 0)
    mark(~good_ts & (reason == 0), BAD_TS)
    future = (reason == 0) & (ts_us > latest_us)
    mark(future, FUTURE_TS)
    for code, count in zip(*np.unique(reason[reason > 0], return_counts=True), strict=True):
        skipped[labels[code - 1]] += int(count)
    return reason == 0, ts_us, (int(ts_us[future].min()) if future.any() else None)


def _mask(values) -> np.ndarray:
    """Boolean numpy mask from an Arrow boolean array, nulls as False."""
    return mask(values)


def _parse_timestamps(ts: pa.ChunkedArray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Microseconds since the epoch, and which rows' ``ts`` is accepted.

    Only ``candidates`` (rows still valid) are parsed. Canonical values skip
    the regular expression (they satisfy it by construction). Arrow converts the
    accepted strings; if it refuses one (30 February), Python's parser
    (:func:`~arena_core.votes.schema.parse_ts`) takes the whole column, and the
    two agree on everything else, so a row's fate never depends on its neighbours.

    First, a column laid out as canonical timestamps (the separators in place) is
    handed to Arrow whole: when it takes every value, every value was canonical (see
    :func:`~arena_core.votes.columns.canonical_layout`), which spares checking each
    byte of a million timestamps; when it refuses one, the steps above decide.
    """
    if canonical_layout(ts):
        try:
            parsed = to_numpy(cast(cast(ts, _TS_TYPE), pa.int64()))
        except pa.ArrowInvalid:
            parsed = None
        if parsed is not None:
            ts_us = np.where(candidates, parsed, 0)
            return ts_us, candidates & (ts_us >= TS_MIN_US) & (ts_us <= TS_MAX_US)
    if canonical_timestamps(ts):
        good = candidates.copy()
    else:
        good = _mask(pc.match_substring_regex(ts, TS_PATTERN)) & candidates
    ts_us = np.zeros(len(ts), dtype=np.int64)
    if not good.any():
        return ts_us, good
    chosen = ts.filter(numeric(good)) if not good.all() else ts
    idx = np.flatnonzero(good)
    try:
        ts_us[idx] = to_numpy(cast(cast(chosen, _TS_TYPE), pa.int64()))
    except pa.ArrowInvalid:
        values = [parse_ts(v) for v in chosen.to_pylist()]
        valid = np.array([v is not None for v in values], dtype=bool)
        ts_us[idx[valid]] = [v for v in values if v is not None]
        good[idx[~valid]] = False
    out_of_range = (ts_us < TS_MIN_US) | (ts_us > TS_MAX_US)  # e.g. year 0000, or past 9999 in UTC
    good &= ~out_of_range
    return ts_us, good


def _replay_order(ts_us: np.ndarray, ids: pa.ChunkedArray) -> np.ndarray | None:
    """Row order by (ts, vote_id), or None when the rows are in that order already."""
    steps = np.diff(ts_us)
    tied = np.flatnonzero(steps == 0)
    if not np.any(steps < 0):
        if not len(tied):
            return None
        left, right = take(ids, indices(tied)), take(ids, indices(tied + 1))
        if pc.all(pc.less_equal(left, right)).as_py():
            return None
    order = np.argsort(ts_us, kind="stable")  # merges the shards' sorted runs
    if np.any(np.diff(ts_us[order]) == 0):  # equal timestamps: vote_id decides
        keyed = pa.table({"ts": numeric(ts_us), "vote_id": ids})
        order = to_numpy(pc.sort_indices(keyed, [("ts", "ascending"), ("vote_id", "ascending")]))
    return order
