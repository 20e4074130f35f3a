"""The anomalous-voter test for engines that do not hold the votes in a VoteTable.

The test (:mod:`~arena_core.integrity.anomaly`) is sequential, but not
recursive: a vote's p-value depends only on how often each outcome was voted
before it, on its pair, by *other* voters' eligible votes (human, no row flag),
whether or not those voters end up flagged. Those counts are two running
counts, which SQL window functions give: the pair's eligible votes before the
vote, less the voter's own eligible votes on the pair before it. So the engine
(:func:`votes_to_test_sql`, one text for DuckDB and Spark) sends out only the
tested votes (voters with at least the first checkpoint's number of human
votes), with their four ``others`` counts, ordered by voter then replay order,
and :func:`flagged_in_batches` runs the project's own numerics on them batch by
batch (:func:`~arena_core.integrity.pvalue.p_value_parts`, the fixed-point
:func:`~arena_core.integrity.pvalue.terms_of`, each voter's running statistic
carried across batch boundaries). Memory stays that of one batch; the engine
sorts and spills. The flags are those of ``detect(..., every_voter=False)``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena_core.integrity.anomaly import AnomalyParams, checkpoint_hits
from arena_core.integrity.counting import running_totals
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


def _earlier(partition: str, prefix: str) -> str:
    """Four columns ``<prefix>_<k>``: eligible rows of outcome k before this one in the partition."""
    return ", ".join(
        f"CAST(coalesce(sum(CASE WHEN eligible AND outcome = {k} THEN 1 ELSE 0 END) "
        f"OVER (PARTITION BY {partition} {_BEFORE}), 0) AS BIGINT) AS {prefix}_{k}"
        for k in range(N_OUTCOMES)
    )


def votes_to_test_sql(valid: str, first_check: int) -> str:
    """The tested votes of the valid rows ``valid`` (a view with the contract's columns,
    ``ts_us`` and ``flagged``), ordered by voter, then replay order: ``voter``, ``ts_us``,
    ``outcome`` (seen from the pair's first model) and ``others_<k>``, the other voters'
    earlier eligible votes of outcome k on the pair.

    All valid human votes make the pairs' history; a voter's votes are tested when it cast at
    least ``first_check`` of them. Judges' votes take no part; votes without a voter count in
    the history and are not tested.
    """
    others = ", ".join(f"pair_{k} - own_{k} AS others_{k}" for k in range(N_OUTCOMES))
    return f"""SELECT voter, ts_us, outcome, {others} FROM (
            SELECT *, {_earlier("voter, pair", "own")} FROM (
                SELECT *, {_earlier("pair", "pair")}, count(*) OVER (PARTITION BY voter) AS cast_votes
                FROM (SELECT {PAIR_SQL} AS pair, {outcome_sql()} AS outcome, voter,
                        NOT flagged AS eligible, ts_us, vote_id
                    FROM {valid} WHERE {HUMAN_SQL}) human) counted
            WHERE voter IS NOT NULL AND cast_votes >= {int(first_check)}) tested
        ORDER BY voter, {REPLAY_ORDER}"""  # noqa: S608


def flagged_in_batches(batches: Iterable[pa.RecordBatch],
                       params: AnomalyParams | None = None) -> dict[str, int]:  # fmt: skip
    """Flagged voter -> the vote count at which the test fired, from the rows of
    :func:`votes_to_test_sql` in its order, in batches of any size.

    Each voter's running count and statistic are carried from one batch to the next,
    so where the batches split the rows changes nothing.
    """
    params = params if params is not None else AnomalyParams()
    flagged: dict[str, int] = {}
    carry: tuple[str | None, int, int] = (None, 0, 0)  # last voter, its count and statistic
    for batch in batches:
        if batch.num_rows:
            carry = _batch(batch, params, carry, flagged)
    return flagged


def _batch(batch: pa.RecordBatch, params: AnomalyParams, carry: tuple,
           flagged: dict[str, int]) -> tuple[str, int, int]:  # fmt: skip
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
    others = np.stack([batch.column(f"others_{k}").to_numpy() for k in range(N_OUTCOMES)], axis=1)
    ts_us = batch.column("ts_us").to_numpy()
    term = terms_of(*p_value_parts(others, batch.column("outcome").to_numpy(), tiebreak(ts_us)))
    count, statistic = running_totals(who, term)
    first = voter[0].as_py()
    if first == carry[0]:  # the previous batch ended inside this voter's votes
        count[who == 0] += carry[1]
        statistic[who == 0] += carry[2]
    names = voter.take(pa.array(np.flatnonzero(starts)))
    for code, j in checkpoint_hits(who, count, statistic, params).items():
        flagged.setdefault(names[code].as_py(), j)
    return voter[n - 1].as_py(), int(count[-1]), int(statistic[-1])
