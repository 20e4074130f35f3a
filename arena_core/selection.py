"""The votes of one board: an arena, a category, a time window, as integer arrays.

:func:`select_votes` picks the countable votes of a board from a
:class:`~arena_core.votes.clean.VoteTable` and indexes their models; the live
app builds its boards from the same selection at start-up, so the Space and the
CLI count the same votes. :meth:`Selection.fit_counts` weights them by age when
the board decays old votes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from arena_core.integrity.anomaly import anomalous_votes
from arena_core.ratings.counts import PairCounts, battle_counts, count_pairs
from arena_core.ratings.decay import decay_weights
from arena_core.ratings.elo import EloState, sequential_elo
from arena_core.ratings.scale import ANCHOR
from arena_core.votes import kernels
from arena_core.votes.arrow import filled, nonempty
from arena_core.votes.clean import VoteTable
from arena_core.votes.reasons import ANOMALOUS_VOTER, FLAGGED, UNKNOWN_MODEL
from arena_core.votes.schema import VOTES
from arena_core.window import ALL_TIME, Window

if TYPE_CHECKING:  # the leaderboard imports this module; the registry imports YAML
    from arena_core.leaderboard import BoardParams
    from arena_core.registry import Arena


@dataclass(frozen=True)
class Entrant:
    """What a board needs to know about a model (from the registry, or just its id)."""

    id: str
    name: str
    params: str | None = None
    params_m: float | None = None
    prior_rating: float = ANCHOR
    #: Where the prior was published; None: no published prior (the rating starts at the anchor).
    prior_source: str | None = None

    def __post_init__(self):
        if self.prior_source is None and self.prior_rating != ANCHOR:
            raise ValueError(f"{self.id}: a prior rating other than {ANCHOR:g} needs its source")

    @classmethod
    def from_arena(cls, arena: Arena) -> list[Entrant]:
        return [cls(m.id, m.name, m.params, m.params_m, m.prior_rating,
                    m.prior.source if m.prior else None) for m in arena.models]  # fmt: skip


@dataclass(frozen=True)
class Selection:
    """The votes of one board as integer arrays over its entrants, in replay order."""

    entrants: list[Entrant]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    ts_us: np.ndarray
    skipped: Counter
    window: Window = field(default_factory=Window)
    #: Each vote's battle (codes, -1 unknown) on a board of judges' verdicts, whose fit
    #: counts a battle once (:meth:`fit_counts`); None on a human board (one vote a battle).
    battle: np.ndarray | None = None

    @property
    def last_ts_us(self) -> int | None:
        return int(self.ts_us[-1]) if len(self.ts_us) else None

    def replay(self, params: BoardParams) -> tuple[EloState, PairCounts]:
        """Sequential Elo (from each entrant's prior) and the pair counts of these votes."""
        n, prior = len(self.entrants), [e.prior_rating for e in self.entrants]
        elo = sequential_elo(n, (self.a, self.b, self.outcome), prior, params.elo)
        return elo, count_pairs(n, self.a, self.b, self.outcome)

    def fit_counts(self, params: BoardParams) -> PairCounts | None:
        """The counts the fit takes, when they are not the tallies (None): time-decayed (see
        :mod:`~arena_core.ratings.decay`), and with battles known, each battle one vote
        (:func:`~arena_core.ratings.counts.battle_counts`: a judge's verdicts on the two
        orders of one battle are not two independent votes)."""
        weights = age_weights(self.ts_us, params.half_life_days, self.window)
        if self.battle is not None:
            return battle_counts(len(self.entrants), self.a, self.b, self.outcome, self.battle,
                                 weights)  # fmt: skip
        if weights is None:
            return None
        return count_pairs(len(self.entrants), self.a, self.b, self.outcome, weights)


def age_weights(ts_us: np.ndarray, half_life_days: float | None,
                window: Window) -> np.ndarray | None:  # fmt: skip
    """Each vote's decay weight (None without decay, or without votes), counted back from
    the window's end, else the last vote: so a board depends on the log alone, never on
    when it is computed. Every board that decays (the default, the style-controlled) uses it."""
    if half_life_days is None or not len(ts_us):
        return None
    reference = window.until_us if window.until_us is not None else int(np.max(ts_us))
    return decay_weights(ts_us, half_life_days, int(reference))


def voter_kind_mask(votes: VoteTable, voter_kind: str) -> np.ndarray:
    """Votes cast by this kind of voter; a row without a kind is a human's."""
    kind = votes.encoded["voter_kind"]
    return kind.isin([voter_kind]) | ((kind.codes < 0) & (voter_kind == "human"))


def flagged_mask(votes: VoteTable) -> np.ndarray:
    """Votes that carry a flag (e.g. rate-limited): left out of ratings unless asked for."""
    return nonempty(votes.column("flags"))


def counted_mask(votes: VoteTable, arena: str, *, category: str | None = None,
                 params: BoardParams | None = None) -> tuple[np.ndarray, Counter]:  # fmt: skip
    """The votes of ``arena`` (and ``category``) that a board with ``params`` counts, and
    how many it leaves out per reason: other voter kinds and judges silently, flagged votes
    and anomalous voters' votes (unless ``params.include_flagged``) counted.

    Every board counts by this rule (the default board, the style-controlled board, the
    analyses), so two views of one arena never disagree on which votes are in.
    """
    voter_kind = params.voter_kind if params is not None else "human"
    judge = params.judge if params is not None else None
    include_flagged = params.include_flagged if params is not None else False
    enc = votes.encoded
    skipped: Counter = Counter()
    keep = enc["arena"].isin([arena])
    if category is not None:
        keep &= enc["category"].isin([category])
    if voter_kind is not None:
        keep &= voter_kind_mask(votes, voter_kind)
    if judge is not None:
        keep &= enc["judge"].isin([judge])
    if not include_flagged:
        flagged = keep & flagged_mask(votes)
        skipped[FLAGGED] += int(flagged.sum())
        keep &= ~flagged
        anomalous = keep & anomalous_votes(votes)  # votes of flagged voters, before their flag too
        skipped[ANOMALOUS_VOTER] += int(anomalous.sum())
        keep &= ~anomalous
    return keep, skipped


def select_votes(votes: VoteTable, arena: str, *, category: str | None = None,
                 entrants: Sequence[Entrant] | None = None, params: BoardParams | None = None,
                 window: Window = ALL_TIME) -> Selection:  # fmt: skip
    """Pick an arena's (and category's) countable votes and index their models.

    Without ``entrants`` every model met in these votes enters from the anchor,
    in id order; with them, votes naming another model are skipped and counted.
    The ``window`` is applied last: ``skipped`` counts the whole log, the
    selection holds the window's votes.
    """
    enc = votes.encoded
    keep, skipped = counted_mask(votes, arena, category=category, params=params)
    model_a, model_b = enc["model_a"], enc["model_b"]
    if entrants is None:
        used = _models_in(model_a.codes[keep], model_b.codes[keep], len(model_a.values))
        entrants = [Entrant(i, i) for i in sorted(model_a.values[k] for k in used)]
    a, b = entrant_indices(votes, [e.id for e in entrants])
    unknown = keep & ((a < 0) | (b < 0))
    skipped[UNKNOWN_MODEL] += int(unknown.sum())
    keep &= ~unknown
    if not window.all_time:
        keep &= window.mask(votes.ts_us)
    outcome = enc["vote"].map({v: k for k, v in enumerate(VOTES)})
    battle = battle_codes(votes) if params is not None and params.voter_kind != "human" else None
    return Selection(list(entrants), a[keep], b[keep], outcome[keep], votes.ts_us[keep],
                     +skipped, window, None if battle is None else battle[keep])  # fmt: skip


def battle_codes(votes: VoteTable) -> np.ndarray | None:
    """Each vote's battle as an integer code (-1 without a battle id); None when the table
    was read without the ``battle_id`` column."""
    if "battle_id" not in votes.table.column_names:
        return None
    ids = votes.column("battle_id")
    if pa.types.is_null(ids.type):
        return np.full(len(ids), -1, dtype=np.int64)
    if pa.types.is_dictionary(ids.type):  # chunks may hold different dictionaries
        ids = kernels.cast(ids, ids.type.value_type)
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    return filled(kernels.dictionary_encode(ids).indices, -1).astype(np.int64)


def entrant_indices(votes: VoteTable, models: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each vote's two models as indices into ``models`` (-1: a model not listed). A vote
    naming an unlisted model is not counted (``unknown_model``): every board that takes
    its models from the registry (the default, style-controlled and humans' boards) drops
    it by this rule."""
    enc, index = votes.encoded, {m: k for k, m in enumerate(models)}
    return enc["model_a"].map(index), enc["model_b"].map(index)


def _models_in(a: np.ndarray, b: np.ndarray, values: int) -> np.ndarray:
    """The sorted distinct codes of ``a`` and ``b`` (``np.union1d``) without sorting two
    million codes: they index ``values`` distinct models."""
    if (len(a) and a.min() < 0) or (len(b) and b.min() < 0):  # nulls: as union1d has them
        return np.union1d(a, b)
    present = np.zeros(values, dtype=bool)
    present[a] = True
    present[b] = True
    return np.flatnonzero(present)
