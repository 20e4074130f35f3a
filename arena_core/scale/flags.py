"""The anomalous-voter test for engines that do not hold the votes in a VoteTable.

The test (:mod:`~arena_core.integrity.anomaly`) is sequential, but not
recursive: a vote's p-value depends only on how often each outcome was voted
before it, on its pair, by *other* voters' eligible votes (human, no row flag),
whether or not those voters end up flagged. Those counts are the pair's eligible
votes before the vote less the voter's own eligible votes on the pair before it.
The engine (:func:`votes_to_test_sql`, one text for DuckDB and Spark) counts the
first with one window function per pair (the four outcomes' counts packed in one
running sum: each window aggregate costs as much as its sort) and sends out every
human vote that has a voter, ordered by voter then replay order: a voter with fewer
votes than the first checkpoint never reaches a checkpoint, so it cannot be flagged
and its votes need no filter (see :func:`votes_to_test_sql` for what one cost).
:func:`flagged_in_batches` takes the voter's own counts in that stream (one voter's
votes follow each other) and runs the project's own numerics on them batch by batch
(:func:`~arena_core.integrity.pvalue.p_value_parts`, the fixed-point
:func:`~arena_core.integrity.pvalue.terms_of`, each voter's running statistic
and own counts carried across batch boundaries). Memory stays that of one batch;
the engine sorts and spills. The flags are those of ``detect(..., every_voter=False)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena_core.integrity.anomaly import AnomalyParams, checkpoint_hits
from arena_core.integrity.counting import before_in_group, running_totals
from arena_core.integrity.pvalue import N_OUTCOMES, p_value_parts, terms_of, tiebreak
from arena_core.ratings.counts import A_WINS, B_WINS, OUTCOME_NAMES
from arena_core.scale.rules import HUMAN_SQL, literal

#: The pair of a vote (arena, then its two models in id order), as a SQL expression whose
#: text is the same in DuckDB and Spark: pairs are told apart, never ordered, by it.
PAIR_SQL = "concat(arena, chr(0), least(model_a, model_b), chr(0), greatest(model_a, model_b))"
#: Replay order (time, then ``vote_id``: unique once duplicates are dropped).
REPLAY_ORDER = "ts_us, vote_id"
#: The strictly earlier rows of a window in replay order.
_BEFORE = f"ORDER BY {REPLAY_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
#: Bits of each outcome's count in the packed running sum: outcome k counts 2^(32 k), so
#: the sum's four 32-bit words (a 128-bit decimal, little-endian in Arrow) are the counts.
_FIELD_BITS = 32
#: Most human votes a log may hold for the packed counts to be exact: no count may carry
#: into the next word, and the sum must stay within DECIMAL(38, 0) (10^38 / 2^96 > 1.26e9).
MAX_HUMAN_VOTES = 1 << 30
#: SQL type of the packed sum, the same in DuckDB and Spark (a 128-bit decimal in Arrow).
_PACKED = "DECIMAL(38, 0)"


class TooManyVotesError(ValueError):
    """The log holds more human votes than the packed pair counts hold exactly."""


def check_size(human_votes: int) -> None:
    """Refuse a log beyond :data:`MAX_HUMAN_VOTES`: its packed counts could carry."""
    if human_votes >= MAX_HUMAN_VOTES:
        raise TooManyVotesError(f"{human_votes:,} human votes: the anomalous-voter test's packed "
                           f"pair counts are exact below {MAX_HUMAN_VOTES:,}")  # fmt: skip


def outcome_sql() -> str:
    """The vote's outcome code seen from the pair's first model (``anomaly.orient`` in SQL):
    when ``model_a`` sorts after ``model_b``, a win of a is a win of the pair's second model."""
    turned = {A_WINS: B_WINS, B_WINS: A_WINS}
    cases = " ".join(
        f"WHEN vote = {literal(name)} THEN CASE WHEN model_a > model_b "
        f"THEN {turned.get(code, code)} ELSE {code} END"
        for code, name in enumerate(OUTCOME_NAMES)
    )
    return f"CASE {cases} END"


def pair_before_sql() -> str:
    """``pair_before``: the pair's eligible votes before this one, outcome k in word k."""
    weights = " ".join(f"WHEN {k} THEN {1 << (_FIELD_BITS * k)}" for k in range(N_OUTCOMES))
    zero = f"CAST(0 AS {_PACKED})"
    step = f"CASE WHEN eligible THEN CAST(CASE outcome {weights} END AS {_PACKED}) ELSE {zero} END"
    return f"coalesce(sum({step}) OVER (PARTITION BY pair {_BEFORE}), {zero}) AS pair_before"


def eligible_sql(params: AnomalyParams) -> str:
    """``eligible``: whether the row enters later votes' history, ``anomaly.enters_history``
    in SQL (over ``unflagged``, ``number``: the row's place among its voter's human votes in
    replay order, and ``pair``): unflagged, and without a voter or from its voter's first
    checkpoint on while the voter has fewer than ``reference_per_pair`` rows in the pair's
    history."""
    may = f"(unflagged AND number >= {int(params.checks[0])})"
    earlier = (f"sum(CASE WHEN {may} THEN 1 ELSE 0 END) OVER (PARTITION BY voter, pair "
               f"{_BEFORE})")  # fmt: skip
    return (f"CASE WHEN voter IS NULL THEN unflagged ELSE {may} AND "
            f"coalesce({earlier}, 0) < {int(params.reference_per_pair)} END AS eligible")  # fmt: skip


def votes_to_test_sql(valid: str, params: AnomalyParams | None = None) -> str:
    """The human votes with a voter of the valid rows ``valid`` (a view with the contract's
    columns, ``ts_us`` and ``flagged``), ordered by voter, then replay order: ``voter``,
    ``ts_us``, ``outcome`` (seen from the pair's first model), ``eligible``, ``pair`` and
    ``pair_before``, all voters' earlier eligible votes on the pair (packed, see
    :func:`unpack_counts`; the log must hold fewer than :data:`MAX_HUMAN_VOTES` human votes).

    All valid human votes make the pairs' history; judges' votes take no part; votes
    without a voter count in the history and are not sent. The votes of voters below the
    first checkpoint are sent too (they cannot be flagged): keeping only the voters who
    reach it took a semi-join, which DuckDB planned with its hash table built on the
    window's output (a ``RIGHT_SEMI`` join holding every windowed row, strings and all),
    so under a 500 MB limit that join spilled and the query took 1,050 s instead of 72 s
    (10M votes; a mark join below the window instead: 122-140 s). The sort by voter
    carries those voters' rows, one pass of them.
    """
    params = params if params is not None else AnomalyParams()
    human = f"{valid} WHERE {HUMAN_SQL}"
    number = f"row_number() OVER (PARTITION BY voter ORDER BY {REPLAY_ORDER}) AS number"
    return f"""SELECT voter, ts_us, outcome, eligible, pair, pair_before FROM (
            SELECT *, {pair_before_sql()} FROM (
                SELECT *, {eligible_sql(params)} FROM (
                    SELECT {PAIR_SQL} AS pair, {outcome_sql()} AS outcome, voter,
                        NOT flagged AS unflagged, ts_us, vote_id, {number}
                    FROM {human}) human) numbered) counted
        WHERE voter IS NOT NULL
        ORDER BY voter, {REPLAY_ORDER}"""  # noqa: S608


def unpack_counts(packed: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The counts (rows, outcome) of a packed ``pair_before`` column (a decimal of the
    counts' 32-bit words: non-negative, below 2^128, so its little-endian words are them)."""
    if isinstance(packed, pa.ChunkedArray):
        packed = packed.combine_chunks()
    if not pa.types.is_decimal(packed.type) or packed.type.byte_width != 16 or packed.null_count:
        raise TypeError(f"packed counts must be a 128-bit decimal without nulls, not {packed.type}")
    words = np.frombuffer(packed.buffers()[1], dtype="<u4").reshape(-1, N_OUTCOMES)
    return words[packed.offset : packed.offset + len(packed)].astype(np.int64)


@dataclass
class _Carry:
    """The last voter of the batches so far: its vote count, statistic and own eligible
    votes on each pair (pair -> counts by outcome), for a voter whose votes go on."""

    voter: str | None = None
    count: int = 0
    statistic: int = 0
    own: dict[str, np.ndarray] = field(default_factory=dict)


def flagged_in_batches(batches: Iterable[pa.RecordBatch],
                       params: AnomalyParams | None = None) -> dict[str, int]:  # fmt: skip
    """Flagged voter -> the vote count at which the test fired, from the rows of
    :func:`votes_to_test_sql` in its order, in batches of any size.

    Each voter's running count, statistic and own counts are carried from one batch
    to the next, so where the batches split the rows changes nothing.
    """
    params = params if params is not None else AnomalyParams()
    flagged: dict[str, int] = {}
    carry = _Carry()
    for batch in batches:
        if batch.num_rows:
            carry = _batch(batch, params, carry, flagged)
    return flagged


def _batch(batch: pa.RecordBatch, params: AnomalyParams, carry: _Carry,
           flagged: dict[str, int]) -> _Carry:  # fmt: skip
    """Test one batch (rows grouped by voter, each in replay order), given the previous
    batch's last voter and its totals; records new flags and returns this batch's carry."""
    n = batch.num_rows
    voter = batch.column("voter")
    starts = np.ones(n, dtype=bool)
    if n > 1:
        starts[1:] = pc.not_equal(voter.slice(1), voter.slice(0, n - 1)).to_numpy(
            zero_copy_only=False
        )
    who = np.cumsum(starts) - 1  # voters numbered 0, 1, 2... within the batch
    goes_on = voter[0].as_py() == carry.voter  # the previous batch ended inside this voter
    outcome = batch.column("outcome").to_numpy().astype(np.int64)
    mine = (outcome[:, None] == np.arange(N_OUTCOMES)) & _bools(batch.column("eligible"))[:, None]
    mine = mine.astype(np.int64)  # each row's own eligible vote, as a count by outcome
    encoded = pc.dictionary_encode(batch.column("pair"))
    pair, pairs = encoded.indices.to_numpy().astype(np.int64), encoded.dictionary.to_pylist()
    own = before_in_group(who * len(pairs) + pair, mine)
    first = who == 0
    if goes_on:
        own[first] += _as_rows(carry.own, pairs)[pair[first]]
    others = unpack_counts(batch.column("pair_before")) - own
    ts_us = batch.column("ts_us").to_numpy()
    term = terms_of(*p_value_parts(others, outcome, tiebreak(ts_us)))
    count, statistic = running_totals(who, term)
    if goes_on:
        count[first] += carry.count
        statistic[first] += carry.statistic
    names = voter.take(pa.array(np.flatnonzero(starts)))
    for code, j in checkpoint_hits(who, count, statistic, params).items():
        flagged.setdefault(names[code].as_py(), j)
    last = who == who[-1]
    kept = carry.own if goes_on and who[-1] == 0 else {}
    return _Carry(voter[n - 1].as_py(), int(count[-1]), int(statistic[-1]),
                  _owned(kept, pair[last], mine[last], pairs))  # fmt: skip


def _bools(column: pa.Array) -> np.ndarray:
    return column.to_numpy(zero_copy_only=False).astype(bool)


def _as_rows(own: dict[str, np.ndarray], pairs: list[str]) -> np.ndarray:
    """The carried own counts as one row per pair code of this batch (zeros elsewhere)."""
    rows = np.zeros((len(pairs), N_OUTCOMES), dtype=np.int64)
    for code, name in enumerate(pairs):
        if name in own:
            rows[code] = own[name]
    return rows


def _owned(kept: dict[str, np.ndarray], pair: np.ndarray, mine: np.ndarray,
           pairs: list[str]) -> dict[str, np.ndarray]:  # fmt: skip
    """``kept`` plus the own counts of ``mine`` (rows on pair codes ``pair``), by pair name."""
    sums = np.zeros((len(pairs), N_OUTCOMES), dtype=np.int64)
    np.add.at(sums, pair, mine)
    own = {name: counts.copy() for name, counts in kept.items()}
    for code in np.unique(pair).tolist():
        own[pairs[code]] = own.get(pairs[code], 0) + sums[code]
    return own
