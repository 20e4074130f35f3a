"""From a vote table to the boards beside the default one: style-controlled, and the judges'.

The statistics are pure functions over arrays (:mod:`arena_core.ratings.style`,
:mod:`arena_core.judges.bias`); this module picks an arena's counted votes out of a
:class:`~arena_core.votes.clean.VoteTable` (flagged votes and anomalous voters' votes
left out, as the default board leaves them out), maps model ids to indices and
families from the registry, and names the results. The CLI and the Space share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from arena_core.judges.bias import BiasReport, measure_judges
from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.ratings.counts import OUTCOME_CODES, own_battles
from arena_core.ratings.covariates import CovariateParams
from arena_core.ratings.style import Coefficient, SideVotes, style_bradley_terry
from arena_core.selection import (
    Entrant,
    age_weights,
    battle_codes,
    counted_mask,
    entrant_indices,
)
from arena_core.votes.reasons import UNKNOWN_MODEL
from arena_core.votes.schema import STYLE_COLUMNS
from arena_core.window import ALL_TIME, Window

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
    #: The selection and fit settings (voters, flags, prior, decay, window).
    settings: dict = field(default_factory=dict)
    #: Models with counted votes none of which entered the fit (all lacked style): not rated.
    unrated: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "arena": self.arena, "category": self.category,
            "rows": [r.__dict__ for r in self.rows],
            "coefficients": [c.__dict__ for c in self.coefficients],
            "votes_used": self.votes_used, "left_out": self.left_out,
            "not_fitted": self.not_fitted, "unrated": list(self.unrated), **self.settings,
        }  # fmt: skip


def counted_frame(votes, arena: str, *, category: str | None = None,
                  voter_kind: str | None = None) -> pd.DataFrame:  # fmt: skip
    """The arena's votes that a board may count, as a DataFrame: those of ``voter_kind``
    ('human', 'judge'), or of every kind with None. Flagged votes and anomalous voters'
    votes are left out by the rule of every board (:func:`~arena_core.selection.counted_mask`)."""
    keep, _ = counted_mask(votes, arena, category=category,
                           params=BoardParams(voter_kind=voter_kind))  # fmt: skip
    return _frame(votes, keep)


def _frame(votes, keep: np.ndarray) -> pd.DataFrame:
    frame = votes.table.filter(keep).to_pandas()
    for name in frame.columns:  # categorical columns as plain objects: ids compared as strings
        if isinstance(frame[name].dtype, pd.CategoricalDtype):
            frame[name] = frame[name].astype(object)
    return frame


def style_board(votes, arena, *, category: str | None = None,
                params: BoardParams | None = None, window: Window = ALL_TIME) -> StyleBoard:  # fmt: skip
    """The style-controlled board of ``arena`` (a registry Arena), counting the votes the
    default board with the same ``params`` and ``window`` counts, decayed by
    ``params.half_life_days`` as that board is.

    The fit's prior is each model's registry prior at ``params.prior_weight`` votes' worth,
    4 when the default board fits the prior's spread (None), which the covariate fit does
    not: with the covariates in the model that spread is not re-fitted. Its intervals are
    the fit's own (Wald), so ``method``, ``bootstrap_rounds`` and a weight of 0 (plain
    maximum likelihood) have no meaning here and are refused.
    """
    params = params or BoardParams()
    check_style_params(params)
    keep, _ = counted_mask(votes, arena.id, category=category, params=params)
    if not window.all_time:
        keep &= window.mask(votes.ts_us)
    models = [m.id for m in arena.models]
    a, b = entrant_indices(votes, models)
    keep &= (a >= 0) & (b >= 0)
    frame, ts_us, a, b = _frame(votes, keep), votes.ts_us[keep], a[keep], b[keep]
    outcome = frame["vote"].map(OUTCOME_CODES).to_numpy(int)
    columns = {c: frame[c].to_numpy(float) for c in STYLE_COLUMNS if c in frame}
    weight = age_weights(ts_us, params.half_life_days, window)
    if params.voter_kind != "human":  # a judge's verdicts on one battle are one battle's worth
        share = battle_shares(battle_codes(votes), keep)
        if share is not None:
            weight = share if weight is None else weight * share
    prior = [m.prior_rating for m in arena.models]
    covariate = CovariateParams() if params.prior_weight is None else CovariateParams(
        prior_weight=params.prior_weight)  # fmt: skip
    fit = style_bradley_terry(len(models), SideVotes.from_columns(a, b, outcome, columns, weight),
                              prior, covariate, level=params.ci_level)  # fmt: skip
    # Only models a vote of the fit names are rated: one whose votes all lacked style has
    # only its prior here, as a model without votes has on the default board.
    rows = sorted((StyleRow(m, float(fit.rating[k]), float(fit.low[k]), float(fit.high[k]))
                   for k, m in enumerate(models) if fit.played[k]),
                  key=lambda r: -r.rating)  # fmt: skip
    counted = np.zeros(len(models), dtype=bool)
    counted[a] = counted[b] = True
    unrated = tuple(m for k, m in enumerate(models) if counted[k] and not fit.played[k])
    return StyleBoard(arena.id, category, tuple(rows), fit.coefficients, fit.votes_used,
                      fit.left_out, fit.not_fitted, _settings(params, window), unrated)  # fmt: skip


def check_style_params(params: BoardParams) -> None:
    """Refuse the settings of the default board that the style-controlled fit cannot honour."""
    if params.method != "bt":
        raise ValueError("the style-controlled board is a Bradley-Terry fit: --method elo "
                         "has no meaning with --style-control")  # fmt: skip
    if params.prior_weight == 0:
        raise ValueError("the style-controlled fit needs a prior (--prior-weight 'fitted' or "
                         "W > 0): with its covariates, plain maximum likelihood can diverge")  # fmt: skip


def _settings(params: BoardParams, window: Window) -> dict:
    """What decided a style board's numbers, for its JSON (so a reader can redo it)."""
    return {"voter_kind": params.voter_kind or "all", "judge": params.judge,
            "include_flagged": params.include_flagged,
            "prior_weight": CovariateParams().prior_weight if params.prior_weight is None
            else params.prior_weight, "half_life_days": params.half_life_days,
            "ci_level": params.ci_level, **window.to_json()}  # fmt: skip


def judges_report(votes, arena, registry) -> BiasReport:
    """Every judge of ``arena`` against its human votes (:func:`measure_judges`).

    The votes are those the leaderboard counts, of humans and judges, between models the
    registry lists (a vote naming another is skipped as ``unknown_model``, by the
    leaderboard's own rule: :func:`~arena_core.selection.entrant_indices`), and the human
    board is the arena's default leaderboard itself (registry priors, fitted spread), over
    the models human votes rated: the report's "humans" column is what ``leaderboard``
    prints for the same votes.
    """
    keep, _ = counted_mask(votes, arena.id, params=BoardParams(voter_kind=None))
    a, b = entrant_indices(votes, [m.id for m in arena.models])
    unknown = keep & ((a < 0) | (b < 0))
    frame = _frame(votes, keep & ~unknown)
    board = board_from_votes(votes, arena.id, entrants=Entrant.from_arena(arena))
    human = {r.model_id: r.rating for r in board.rows if r.battles and r.rating is not None}
    families = {m.id: m.family for m in arena.models if m.family}
    judge_families = {j.id: j.family for j in registry.judges}
    report = measure_judges(frame, families, judge_families, human_board=human)
    if not unknown.any():
        return report
    return replace(report, skipped={**report.skipped, UNKNOWN_MODEL: int(unknown.sum())})


def battle_shares(codes: np.ndarray | None, keep: np.ndarray) -> np.ndarray | None:
    """Each kept vote's weight in a fit that counts a battle once: one over the number of
    kept votes of its battle (a vote without a battle id, code -1, is a battle of its own).

    A judge gives each battle two verdicts, the clips in both orders; a deterministic one
    gives the same decision twice, which counted as two votes made the style-controlled
    board's intervals 1/sqrt(2) too narrow. Weighted 1/2 each, they carry one battle's
    information, as :func:`~arena_core.ratings.counts.battle_counts` gives the default
    board. None when the table has no battle ids (the votes are then counted as written).
    """
    if codes is None:
        return None
    _, inverse, size = np.unique(own_battles(codes[keep]), return_inverse=True, return_counts=True)
    return 1.0 / size[inverse.ravel()]
