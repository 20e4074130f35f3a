"""From a vote table to the boards beside the default one: style-controlled, and the judges'.

The statistics are pure functions over arrays (:mod:`arena_core.ratings.style`,
:mod:`arena_core.judges.bias`); this module picks an arena's counted votes out of a
:class:`~arena_core.votes.clean.VoteTable` (flagged votes and anomalous voters' votes
left out, as the default board leaves them out), maps model ids to indices and
families from the registry, and names the results. The CLI and the Space share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena_core.integrity.anomaly import anomalous_votes
from arena_core.judges.bias import BiasReport, measure_judges
from arena_core.ratings.counts import OUTCOME_CODES
from arena_core.ratings.style import Coefficient, SideVotes, style_bradley_terry
from arena_core.selection import flagged_mask, voter_kind_mask
from arena_core.votes.schema import STYLE_COLUMNS

#: Columns the two analyses read (``read_votes(..., columns=ANALYSIS_COLUMNS)``).
ANALYSIS_COLUMNS = ("battle_id", "arena", "model_a", "model_b", "vote", "category", "prompt_id",
                    "voter", "voter_kind", "judge", "flags", *STYLE_COLUMNS)  # fmt: skip


@dataclass(frozen=True)
class StyleRow:
    model: str
    rating: float
    low: float
    high: float


@dataclass(frozen=True)
class StyleBoard:
    """The style-controlled board of an arena's human votes, with each covariate's effect."""

    arena: str
    category: str | None
    rows: tuple[StyleRow, ...]
    coefficients: tuple[Coefficient, ...]
    votes_used: int
    #: Votes left out because a style feature was unknown on a side (votes before schema 3).
    left_out: int
    not_fitted: dict[str, str]

    def to_json(self) -> dict:
        return {
            "arena": self.arena, "category": self.category,
            "rows": [r.__dict__ for r in self.rows],
            "coefficients": [c.__dict__ for c in self.coefficients],
            "votes_used": self.votes_used, "left_out": self.left_out,
            "not_fitted": self.not_fitted,
        }  # fmt: skip


def counted_frame(votes, arena: str, *, category: str | None = None,
                  voter_kind: str | None = None) -> pd.DataFrame:  # fmt: skip
    """The arena's votes that a board may count, as a DataFrame: those of ``voter_kind``
    ('human', 'judge'), or of every kind with None. Flagged votes and anomalous voters'
    votes are left out by the same rules as :func:`~arena_core.selection.select_votes`."""
    keep = votes.encoded["arena"].isin([arena])
    if category is not None:
        keep &= votes.encoded["category"].isin([category])
    if voter_kind is not None:
        keep &= voter_kind_mask(votes, voter_kind)
    if "flags" in votes.table.column_names:
        keep &= ~flagged_mask(votes)
    keep &= ~anomalous_votes(votes)
    table = votes.table.filter(keep)
    frame = table.to_pandas()
    for name in frame.columns:  # categorical columns as plain objects: ids compared as strings
        if isinstance(frame[name].dtype, pd.CategoricalDtype):
            frame[name] = frame[name].astype(object)
    return frame


def style_board(votes, arena, *, category: str | None = None, level: float = 0.95) -> StyleBoard:
    """The style-controlled board of ``arena`` (a registry Arena) from its human votes.

    The fit's prior is each model's registry prior at a fixed weight of 4 votes
    (:class:`~arena_core.ratings.covariates.CovariateParams`), not the default board's
    fitted spread: with the covariates in the model that spread is not re-fitted.
    """
    frame = counted_frame(votes, arena.id, category=category, voter_kind="human")
    models = [m.id for m in arena.models]
    index = {m: k for k, m in enumerate(models)}
    frame = frame[frame["model_a"].isin(index) & frame["model_b"].isin(index)]
    a = frame["model_a"].map(index).to_numpy(int)
    b = frame["model_b"].map(index).to_numpy(int)
    outcome = frame["vote"].map(OUTCOME_CODES).to_numpy(int)
    columns = {c: frame[c].to_numpy(float) for c in STYLE_COLUMNS if c in frame}
    prior = [m.prior_rating for m in arena.models]
    fit = style_bradley_terry(len(models), SideVotes.from_columns(a, b, outcome, columns),
                              prior, level=level)  # fmt: skip
    rows = sorted((StyleRow(m, float(fit.rating[k]), float(fit.low[k]), float(fit.high[k]))
                   for k, m in enumerate(models) if _played(k, a, b)),
                  key=lambda r: -r.rating)  # fmt: skip
    return StyleBoard(arena.id, category, tuple(rows), fit.coefficients, fit.votes_used,
                      fit.left_out, fit.not_fitted)  # fmt: skip


def _played(k: int, a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.any(a == k) or np.any(b == k))


def judges_report(votes, arena, registry) -> BiasReport:
    """Every judge of ``arena`` against its human votes (:func:`measure_judges`)."""
    frame = counted_frame(votes, arena.id)
    families = {m.id: m.family for m in arena.models if m.family}
    judge_families = {j.id: j.family for j in registry.judges}
    return measure_judges(frame, families, judge_families)
