"""Whether each vote counts, as the board's replay decides it: ``counted`` and ``count_reason``.

The writer knows some reasons a vote is left out (its ``flags``: over the rate limit,
a voter already found anomalous) and writes them as ``counted``/``count_reason``. The
anomalous-voter test knows more only at replay: once a voter is flagged, every vote of
theirs leaves the ratings, those cast before the flag too. :func:`replay_verdict` is
that decision over a whole log, the same one :func:`~arena_core.selection.select_votes`
makes for every board (flags first, then the voter's flag), so a file stamped with it
says exactly which of its votes the board of that log counted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena_core.integrity.anomaly import ANOMALOUS_FLAG, anomalous_votes
from arena_core.selection import flagged_mask
from arena_core.votes.clean import VoteTable


def replay_verdict(votes: VoteTable) -> tuple[pa.Array, pa.Array]:
    """``counted`` (bool) and ``count_reason`` (string, null when counted) of each vote of a
    whole, replay-ordered log (which needs its ``flags`` and ``voter`` columns).

    The reason is the vote's first flag when it has one, else ``anomalous_voter`` when the
    test flagged its voter anywhere in the log, else none. Judges' votes are never tested:
    they count on the judges' boards unless flagged.
    """
    flagged = flagged_mask(votes)
    anomalous = anomalous_votes(votes) & ~flagged
    first_flag = pc.list_element(
        pc.if_else(
            pa.array(flagged), votes.column("flags"), pa.scalar(["-"], pa.list_(pa.string()))
        ),
        0,
    )
    reason = pc.if_else(
        pa.array(flagged),
        first_flag,
        pc.if_else(pa.array(anomalous), pa.scalar(ANOMALOUS_FLAG), pa.scalar(None, pa.string())),
    )
    return pa.array(~(flagged | anomalous)), reason


def with_verdict(part: pa.Table, whole: VoteTable) -> pa.Table:
    """``part`` (rows of ``whole``, found by ``vote_id``) with ``counted`` and
    ``count_reason`` set to the replay's verdict over ``whole``."""
    counted, reason = replay_verdict(whole)
    at = pc.index_in(part.column("vote_id"), value_set=whole.column("vote_id")).to_numpy(
        zero_copy_only=False
    )
    if np.isnan(at.astype(float)).any():
        raise ValueError("a vote of the part is not in the whole log")
    rows = pa.array(at.astype(np.int64))
    for name, values in (("counted", counted.take(rows)), ("count_reason", reason.take(rows))):
        if name in part.column_names:
            part = part.set_column(part.column_names.index(name), name, values)
        else:
            part = part.append_column(name, values)
    return part
