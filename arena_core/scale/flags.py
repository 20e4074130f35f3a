"""The anomalous-voter test for engines that do not hold the votes in a VoteTable.

The test (:mod:`~arena_core.integrity.anomaly`) is sequential over the whole
log, so no aggregation can stand in for it. An engine fetches the human votes
in replay order, with the columns of :data:`FLAG_COLUMNS`, and
:func:`flagged_voters_of` runs the very function the board runs on them. An
engine skips this when no voter has reached the first checkpoint: no one can
be flagged then.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena_core.integrity.anomaly import AnomalyParams, orient, sequential_test
from arena_core.integrity.pvalue import tiebreak
from arena_core.ratings.counts import OUTCOME_CODES

#: The pair of a vote (arena, then its two models in id order), as a SQL expression whose
#: text is the same in DuckDB and Spark: pairs are told apart, never ordered, by it.
PAIR_SQL = "concat(arena, chr(0), least(model_a, model_b), chr(0), greatest(model_a, model_b))"
#: Columns the test needs, in replay order: ``pair`` (PAIR_SQL), ``vote``, ``swapped``
#: (model_a sorts after model_b), ``voter``, ``eligible`` (no flag), ``ts_us``.
FLAG_COLUMNS = ("pair", "vote", "swapped", "voter", "eligible", "ts_us")


def flagged_voters_of(table: pa.Table, params: AnomalyParams | None = None) -> list[str]:
    """The voters the test flags among these human votes (see ``integrity.anomaly.detect``)."""
    if not table.num_rows:
        return []
    table = table.combine_chunks()  # one dictionary per column below
    pair = pc.dictionary_encode(table.column("pair").chunk(0)).indices
    vote = pc.index_in(table.column("vote"), value_set=pa.array(list(OUTCOME_CODES)))
    voters = pc.dictionary_encode(table.column("voter").chunk(0))
    codes = pc.fill_null(voters.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    ts_us = table.column("ts_us").to_numpy()
    result = sequential_test(
        pair.to_numpy().astype(np.int64),
        orient(vote.to_numpy(), table.column("swapped").to_numpy()),
        codes,
        table.column("eligible").to_numpy(),
        tiebreak(ts_us),
        params if params is not None else AnomalyParams(),
        every_voter=False,
    )
    names = voters.dictionary
    return sorted(names[k].as_py() for k in result.flagged_at)
