"""Each judge's biases, measured against the human votes, and its board corrected.

:func:`measure_judges` takes the vote rows (human and judge) and reports, per
judge (:class:`JudgeBias`):

* **agreement** with humans, on the same (pair, prompt) and otherwise on the
  same pair, beside the agreement of a coin-flipping judge
  (:class:`~arena_core.judges.measures.Agreement`);
* **correlation** of its board with the human board (Spearman and Pearson over
  the models both rated), before and after correction;
* **position bias**: the share of battles whose two verdicts (the clips shown
  in both orders) pick the same side, the share of decisive verdicts for side
  A, and the fitted A-side term with its interval;
* **self-preference** (a judge that shares a family with some models): its
  mean score for its family's model against others, the humans' on the same
  pairs, and the fitted self term;
* **duration preference**: the share of its decisive verdicts for the longer
  clip, the humans' share, and the fitted duration term (when durations are
  known).

The fitted terms come from one joint fit over all judges
(:mod:`~arena_core.judges.consensus`): shared model strengths, and per judge an
A-side term, a self term (+1 when side A is of the judge's family, -1 when side
B is; only when a judge outside that family judged its models against others, else
its self-preference is not corrected and the report says so) and a duration term (the normalised difference of :mod:`style
<arena_core.ratings.style>`), with each judge's discrimination and its
deviations shrunk toward the judges' consensus. Its intervals count each battle's
information once: a battle's verdicts (both orders, every judge) are one cluster of
a cluster-robust variance, so a deterministic judge's mirrored pair of verdicts is
not taken for two independent votes. A judge's corrected board is
its aligned board from that fit, over the models its fitted verdicts name; the
consensus lists the models some judge's fitted verdicts name (another's value
would be its prior). A judge none of whose verdicts is in the fit (they all lack
the durations its duration terms need) gets no fitted number, and says why
(``JudgeBias.not_fitted``). Human votes never enter it: the human board is what
the correction is judged against, not what it is fitted to; it is the arena's
leaderboard when the caller passes it (``human_board``).

Should that fit fail on some pathological log, the report says why
(``BiasReport.fit_error``) and still carries every measure that does not need
it; the fitted terms, discriminations and corrected boards are then None or
empty.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from arena_core.judges.consensus import (
    ConsensusFit,
    ConsensusParams,
    JudgeVotes,
    consensus_bradley_terry,
)
from arena_core.judges.measures import (
    HUMAN,
    Agreement,
    VoteArrays,
    agreement,
    longer_share,
    position_shares,
    self_shares,
    vote_arrays,
)
from arena_core.ratings.bt import BTParams, ConvergenceError, bradley_terry
from arena_core.ratings.counts import count_pairs, own_battles
from arena_core.ratings.covariates import VoteRows
from arena_core.ratings.scale import NATURAL
from arena_core.ratings.style import (
    Coefficient,
    SideVotes,
    position_term,
    style_covariates,
    supported_coefficients,
)
from arena_core.simulation.synthetic import spearman

#: Share of the judges' verdicts that must have both durations for the joint fit
#: to take duration terms (the verdicts without are then left out and counted).
MIN_DURATION_SHARE = 0.5
#: Fewest common models for a correlation between two boards.
MIN_COMMON_MODELS = 3
#: Why a judge has no fitted terms although it has verdicts (the only way it can happen).
NOT_IN_FIT = ("none of its verdicts has both clip durations, which the joint fit's duration "
              "terms need: it is left out of the fit")  # fmt: skip

#: Why a judge's self-preference is left in its corrected board (see ``_anchored``).
SELF_NOT_CORRECTED = ("self-preference not corrected: no judge outside its family ({family}) "
                      "judged that family's models against others, and without one its favour "
                      "cannot be told from their strength; its corrected board keeps it")  # fmt: skip

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BiasParams:
    """Settings of the bias report."""

    #: Votes' worth of prior of the plain boards (human, each judge's own): BTParams'.
    prior_weight: float = BTParams.prior_weight
    level: float = 0.95
    min_duration_share: float = MIN_DURATION_SHARE
    consensus: ConsensusParams = field(default_factory=ConsensusParams)


@dataclass(frozen=True)
class JudgeBias:
    """Every measure of one judge (see the module docstring); None where it cannot be measured."""

    judge: str
    family: str | None
    verdicts: int
    battles_paired: int
    agreement_prompt: Agreement
    agreement_pair: Agreement
    spearman_human: float | None
    pearson_human: float | None
    spearman_human_corrected: float | None
    pearson_human_corrected: float | None
    flip_share: float | None
    a_share: float | None
    position: Coefficient | None
    self_share: float | None
    self_share_human: float | None
    self_verdicts: int
    self_term: Coefficient | None
    longer_share: float | None
    longer_verdicts: int
    duration: Coefficient | None
    #: From the joint fit (None when it failed: see ``BiasReport.fit_error``).
    discrimination: float | None
    #: The judge's own Bradley-Terry board (its verdicts in both orders), points.
    board: dict[str, float]
    #: Its aligned board from the joint fit, and standard deviations (points), over the
    #: models its fitted verdicts name; empty when the fit failed or left it out.
    corrected: dict[str, float]
    corrected_sd: dict[str, float]
    #: Why the joint fit has none of its verdicts (None: it has some): its fitted terms,
    #: discrimination and corrected board are then None or empty.
    not_fitted: str | None = None
    #: What the reader of its corrected numbers must know (why a correlation after correction
    #: is missing, a bias left uncorrected), one sentence each.
    notes: tuple[str, ...] = ()
    #: Whether its corrected board takes its self-preference out: None when it has none to
    #: take out (no family, or its family's models never met another's in its fitted verdicts).
    self_corrected: bool | None = None

    @property
    def self_excess(self) -> float | None:
        """How much more the judge scores its family's models than humans do on the same pairs."""
        if self.self_share is None or self.self_share_human is None:
            return None
        return self.self_share - self.self_share_human


@dataclass(frozen=True)
class BiasReport:
    """The judges' measures, the consensus and human boards, and what was left out."""

    judges: tuple[JudgeBias, ...]
    consensus: dict[str, float]
    consensus_sd: dict[str, float]
    human: dict[str, float]
    human_position: Coefficient | None
    human_longer_share: float | None
    #: Fitted spread of the judges around the consensus (points).
    spread: float | None
    duration_terms: bool
    #: Judge verdicts left out of the joint fit for lack of durations.
    rows_without_duration: int
    #: Rows not used at all, by reason.
    skipped: dict[str, int]
    #: Why the judges' joint fit failed (None when it did not, or there was nothing to fit):
    #: the fitted terms, discriminations, corrected boards and consensus are then missing.
    fit_error: str | None = None

    def to_json(self) -> dict:
        out = asdict(self)
        for judge, data in zip(self.judges, out["judges"], strict=True):
            data["self_excess"] = judge.self_excess
        return out


def measure_judges(votes: pd.DataFrame, families: Mapping[str, str],
                   judge_families: Mapping[str, str | None], params: BiasParams | None = None,
                   *, human_board: Mapping[str, float] | None = None) -> BiasReport:  # fmt: skip
    """The bias report of every judge in ``votes`` (see the module docstring).

    ``votes`` has the vote record's columns ``battle_id, model_a, model_b, vote,
    voter_kind, judge, prompt_id`` and optionally ``model_a_duration_s,
    model_b_duration_s``; a null ``voter_kind`` is a human. ``families`` maps a
    model id to its family, ``judge_families`` a judge id to its family (or None).
    ``human_board`` is the human board the judges are compared with, model id to
    rating, over the models human votes rated: the arena's leaderboard, so that the
    report and the board never disagree on the same votes
    (:func:`~arena_core.analysis.boards.judges_report` passes it). Without it, a plain
    Bradley-Terry board of the human rows of ``votes`` stands in (no priors).
    """
    params = params or BiasParams()
    arrays, models, judges, skipped = vote_arrays(votes)
    n = len(models)
    if not n:
        return BiasReport((), {}, {}, {}, None, None, None, False, 0, skipped)
    human = arrays.judge == HUMAN
    if human_board is None:
        human_board = _board(n, arrays.select(human), params.prior_weight)
    else:
        human_board = np.array([human_board.get(m, np.nan) for m in models], dtype=float)
    human_position = None
    if human.any():
        h = arrays.select(human)
        human_position = position_term(n, SideVotes(h.a, h.b, h.outcome), level=params.level)
    in_family = [_family_mask(models, families, judge_families.get(j)) for j in judges]
    joint = _joint_fit(n, arrays, in_family, params)
    fit = joint.fit
    rows = []
    for j, judge in enumerate(judges):
        board = _board(n, arrays.select(arrays.judge == j), params.prior_weight)
        rows.append(_judge_bias(arrays, j, judge, judge_families.get(judge), in_family[j], models,
                                board, human_board, joint, params))  # fmt: skip
    # The consensus of the models some judge's fitted verdicts name: another's would be its prior.
    judged = joint.played.any(axis=0)
    consensus = (_named(models, np.where(judged, fit.consensus, np.nan), fit.consensus_sd) if fit
                 else ({}, {}))  # fmt: skip
    return BiasReport(tuple(rows), consensus[0], consensus[1], _named(models, human_board)[0],
                      human_position, longer_share(arrays, HUMAN)[0],
                      fit.spread if fit else None, joint.use_duration and fit is not None,
                      joint.left_out, skipped, joint.error)  # fmt: skip


def _family_mask(models, families, family) -> np.ndarray:
    return np.array([family is not None and families.get(m) == family for m in models], bool)


def _board(n: int, votes: VoteArrays, prior_weight: float) -> np.ndarray:
    """Bradley-Terry board of these votes; NaN for models without any."""
    counts = count_pairs(n, votes.a, votes.b, votes.outcome)
    rating = bradley_terry(n, counts, None, BTParams(prior_weight=prior_weight))
    return np.where(counts.battles().sum(axis=1) > 0, rating, np.nan)


def _named(models, values, sd=None) -> tuple[dict[str, float], dict[str, float]]:
    keep = [i for i in range(len(models)) if np.isfinite(values[i])]
    sds = {} if sd is None else {models[i]: float(sd[i]) for i in keep}
    return {models[i]: float(values[i]) for i in keep}, sds


class _Joint(NamedTuple):
    """The joint fit (None without judges, or when it failed: ``error`` says why) and what
    each judge got from it (``self_uncorrected``: see :func:`_anchored`): ``slot`` maps a judge with verdicts in the fit to its index
    there (a judge without has none: its verdicts all lacked durations), ``coefficients``
    maps ``(kind, judge)`` to its term, ``played`` marks per judge the models its fitted
    verdicts name."""

    fit: ConsensusFit | None
    slot: dict[int, int]
    coefficients: dict
    played: np.ndarray
    use_duration: bool
    left_out: int
    error: str | None = None
    #: Judges whose self-preference the fit cannot correct (see :func:`_anchored`).
    self_uncorrected: frozenset[int] = frozenset()


def _joint_fit(n, arrays: VoteArrays, in_family, params: BiasParams) -> _Joint:
    """The consensus fit over the judges' verdicts with per-judge position, self and duration
    columns; only judges with verdicts left in it take part (a judge's terms, discrimination
    and deviations fitted from none of its verdicts would be the prior's numbers, not its)."""
    rows = arrays.select(arrays.judge != HUMAN)
    n_judges = len(in_family)
    played = np.zeros((n_judges, n), dtype=bool)
    if not n_judges:
        return _Joint(None, {}, {}, played, False, 0)
    known = np.isfinite(rows.duration_a) & np.isfinite(rows.duration_b)
    known &= (rows.duration_a > 0) & (rows.duration_b > 0)
    use_duration = bool(known.mean() >= params.min_duration_share)
    left_out = int((~known).sum()) if use_duration else 0
    if use_duration:
        rows = rows.select(known)
    played[rows.judge, rows.a] = played[rows.judge, rows.b] = True
    fitted = [int(j) for j in np.unique(rows.judge)]
    slot = {j: k for k, j in enumerate(fitted)}
    x_dur, unit_sd = np.zeros((len(rows.a), 0)), 1.0
    if use_duration:
        x_dur, names, _, sd, _, _ = style_covariates(
            SideVotes(
                rows.a, rows.b, rows.outcome, {"duration_s": (rows.duration_a, rows.duration_b)}
            )
        )
        use_duration, unit_sd = bool(names), float(sd[0]) if names else 1.0
    cols, kinds, units, keys, uncorrected = [], [], [], [], set()
    for j in fitted:
        mine = (rows.judge == j).astype(float)
        side = in_family[j][rows.a].astype(float) - in_family[j][rows.b]
        terms = [("position", mine, 1.0)]
        if np.any(mine * side) and _anchored(rows.judge, side, fitted, in_family, j):
            terms.append(("self", mine * side, 1.0))
        elif np.any(mine * side):
            uncorrected.add(j)
        if use_duration:
            terms.append(("duration", mine * x_dur[:, 0], unit_sd))
        for kind, values, unit in terms:
            keys.append((kind, j))
            cols.append(values)
            kinds.append(kind)
            units.append(unit)
    judge = np.array([slot[j] for j in rows.judge], dtype=np.int64)
    vote_rows = VoteRows.from_outcomes(rows.a, rows.b, rows.outcome, np.column_stack(cols),
                                       names=tuple(f"{k}:{j}" for k, j in keys))  # fmt: skip
    try:
        votes = JudgeVotes(judge, len(fitted), vote_rows, own_battles(rows.battle))
        fit = consensus_bradley_terry(n, votes, None, params.consensus)
    except (ConvergenceError, np.linalg.LinAlgError) as error:
        # A report without the fitted terms beats no report: the other measures stand alone.
        logger.warning("the judges' joint fit failed, reporting without it: %s", error)
        return _Joint(None, slot, {}, played, use_duration, left_out,
                      f"{type(error).__name__}: {error}", frozenset(uncorrected))  # fmt: skip
    gap = (fit.boards[judge, vote_rows.a] - fit.boards[judge, vote_rows.b]) * NATURAL
    eta = fit.discrimination[judge] * gap + vote_rows.x @ (fit.coef * NATURAL)
    terms = supported_coefficients(tuple(kinds), fit.coef, fit.coef_sd, np.array(units),
                                   vote_rows, eta, params.level)  # fmt: skip
    return _Joint(fit, slot, dict(zip(keys, terms, strict=True)), played, use_duration, left_out,
                  None, frozenset(uncorrected))  # fmt: skip


def _anchored(judge, side, fitted, in_family, j) -> bool:
    """Whether judge ``j``'s self term can be fitted: some judge outside its family judged
    that family's models against others (``side`` nonzero).

    Its self term is +1 whenever its family's model is on side A and -1 on side B, so
    judged by it alone, a favour for those models is the same as their being stronger:
    only a judge that does not share the favour tells the two apart. Without one the term
    is dropped (with one judge it always was), and the report says its self-preference
    is not corrected, instead of a "correction" the coefficients' priors would split
    at will (two judges of one family once got a self term of 73 [-205, +352] points).
    """
    outside = [k for k in fitted if not np.array_equal(in_family[k], in_family[j])]
    return bool(np.any(np.isin(judge, outside) & (side != 0)))


def _correlations(board: np.ndarray, reference: np.ndarray) -> tuple[float | None, float | None]:
    common = np.isfinite(board) & np.isfinite(reference)
    if common.sum() < MIN_COMMON_MODELS:
        return None, None
    x, y = board[common], reference[common]
    pearson = float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else None
    rho = spearman(x, y)
    return (None if np.isnan(rho) else rho), pearson


def _judge_bias(arrays, j, judge, family, in_family, models, board, human_board, joint: _Joint,
                params: BiasParams) -> JudgeBias:  # fmt: skip
    n = len(models)
    fit = joint.fit if j in joint.slot else None  # no verdict in the fit: nothing fitted is its
    mine = arrays.judge == j
    by_prompt, by_pair = agreement(arrays, j, n)
    flip, a_share, paired = position_shares(arrays, j)
    self_judge, self_human, self_n = (self_shares(arrays, j, in_family, n) if in_family.any()
                                      else (None, None, 0))  # fmt: skip
    longer, longer_n = longer_share(arrays, j)
    k = joint.slot.get(j)
    # Its aligned board where its fitted verdicts name the model (elsewhere it is the consensus).
    corrected = np.where(joint.played[j], fit.boards[k], np.nan) if fit else np.full(n, np.nan)
    corrected_sd = fit.boards_sd[k] if fit else None
    terms = joint.coefficients
    before = _correlations(board, human_board)
    after = _correlations(corrected, human_board)
    notes = []
    runaway = [kind for kind in ("position", "self", "duration")
               if (t := terms.get((kind, j))) is not None and t.informative and not t.estimated]  # fmt: skip
    if runaway:  # its corrected board is then the fit's limit, ratings a hair apart
        after = (None, None)
        notes.append(f"no correlation after correction: its {' and '.join(runaway)} "
                     f"term{'s have' if len(runaway) > 1 else ' has'} no finite estimate, so its "
                     "corrected board is not a fit of its verdicts")  # fmt: skip
    if j in joint.self_uncorrected:
        notes.append(SELF_NOT_CORRECTED.format(family=family))
    return JudgeBias(
        judge, family, int(mine.sum()), paired, by_prompt, by_pair, before[0], before[1], after[0],
        after[1], flip, a_share, terms.get(("position", j)), self_judge, self_human,
        self_n, terms.get(("self", j)), longer, longer_n, terms.get(("duration", j)),
        float(fit.discrimination[k]) if fit else None,
        _named(models, board)[0], *_named(models, corrected, corrected_sd),
        None if j in joint.slot or not mine.any() else NOT_IN_FIT, tuple(notes),
        True if ("self", j) in terms else False if j in joint.self_uncorrected else None,
    )  # fmt: skip
