"""Leaderboards: from votes to ranked rows, the same way for the Space and the CLI.

:func:`standings` turns a sequential-Elo state and pair counts into ranked rows
with their warnings; :func:`board_from_votes` does the whole replay from a
:class:`VoteTable`. The live app keeps the Elo state and the counts up to date
vote by vote and calls :func:`standings` and :func:`make_board` too, so a
researcher replaying the published log with the CLI gets exactly the Space's board.

What a board claims (README, "How ratings are computed"): ratings and intervals
from :func:`~arena_core.ratings.fit.fit_board`; ranks as bands, only within a
comparison component (:mod:`~arena_core.ratings.ranks`); models without battles
at the end, rated by their published prior if they have one, else "not yet
rated" (no rating); what each rating rests on (:mod:`~arena_core.provenance`);
a model that cannot run here shown only if it has votes, and marked.

Column definitions live once, in :class:`~arena_core.board_row.LeaderboardRow`'s
field metadata; the table, CSV and JSON outputs all derive from them.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from arena_core.board_row import COLUMNS, LeaderboardRow, board_warnings, rounded
from arena_core.provenance import (
    UNRATED_NOTE,
    prior_precision,
    rung,
    votes_information,
    votes_share,
)
from arena_core.ratings import graph
from arena_core.ratings.counts import PairCounts
from arena_core.ratings.decay import check_half_life
from arena_core.ratings.elo import EloParams, EloState
from arena_core.ratings.fit import BoardFit, fit_board
from arena_core.ratings.ranks import rank_bands
from arena_core.selection import Entrant, Selection, select_votes
from arena_core.votes.read import VoteTable
from arena_core.window import ALL_TIME, Window, format_us

log = logging.getLogger(__name__)

__all__ = [
    "BOARD_COLUMNS", "COLUMNS", "ESTABLISHED", "METHODS", "NO_VOTE_ORDER", "PRIOR", "PROVISIONAL",
    "Board", "BoardParams", "Entrant", "FitSummary", "LeaderboardRow", "Selection", "Standings",
    "Window", "board_from_votes", "compute_board", "format_us", "make_board", "rounded",
    "select_votes", "standings",
]  # fmt: skip

#: Board methods: Bradley-Terry (order-free, with intervals) or sequential Elo.
METHODS = ("bt", "elo")
#: Statuses, from no data to a settled rating.
PRIOR, PROVISIONAL, ESTABLISHED = "prior", "provisional", "established"
#: Columns of the vote table a board of human votes needs (timestamps come as
#: ``VoteTable.ts_us``; ``voter`` for the anomalous-voter test); a board that counts judges'
#: verdicts needs :func:`board_columns`.
BOARD_COLUMNS = ("arena", "model_a", "model_b", "vote", "category", "flags", "voter_kind", "judge",
                 "voter")  # fmt: skip


def board_columns(voter_kind: str | None) -> tuple[str, ...]:
    """The columns a board of ``voter_kind`` needs: one that counts judges' verdicts also
    needs each vote's ``battle_id``, since it counts a battle once however many verdicts it
    got (:func:`~arena_core.ratings.counts.battle_counts`); read without it, each verdict
    would count as a vote and the intervals come out too narrow."""
    return BOARD_COLUMNS if voter_kind == "human" else (*BOARD_COLUMNS, "battle_id")


#: The warning of a board computed from a counts table alone (``elo`` None in
#: :func:`standings`): sequential Elo depends on the order of the votes, which counts lose.
NO_VOTE_ORDER = ("Seq. Elo is left empty: this board was computed from a counts table alone, "
                 "which holds no vote order; give the votes too (--votes with --counts) for it.")  # fmt: skip
#: Why an unbounded model has no rating, by its side (see ``arena_core.ratings.graph``).
UNBOUNDED_NOTES = {
    graph.ABOVE: "never beaten by the rest of its group, directly or through others: no finite "
    "rating; ci_low is the lowest rating its votes allow",
    graph.BELOW: "never beat the rest of its group, directly or through others: no finite "
    "rating; ci_high is the highest rating its votes allow",
    graph.APART: "compared only with models whose ratings are unbounded: no finite rating",
}


#: The range of a fixed prior weight (votes' worth), besides 0 (plain maximum likelihood).
#: Outside it the fit is numerically meaningless: below, the prior no longer pins the
#: ratings' common level and the posterior's matrix is singular to machine precision
#: (1e-300 failed); above, every rating is its prior whatever the votes say.
PRIOR_WEIGHT_RANGE = (1e-3, 1e9)


def check_prior_weight(weight: float | None) -> None:
    """Refuse a prior weight a board cannot be fitted with (None: fitted, 0: none)."""
    low, high = PRIOR_WEIGHT_RANGE
    if weight is None or weight == 0 or low <= weight <= high:
        return
    raise ValueError(f"a prior weight must be 'fitted', 0, or between {low:g} and {high:g} "
                     f"votes' worth, got {weight}")  # fmt: skip


@dataclass(frozen=True)
class BoardParams:
    """Everything that decides a board's numbers; the Space and the CLI share the defaults."""

    method: str = "bt"
    #: Prior strength (see ``arena_core.ratings.fit``): None fits the spread of true
    #: ratings to the arena; W > 0 fixes the prior at W votes' worth; 0 is plain MLE.
    prior_weight: float | None = None
    #: Bootstrap rounds for the intervals of plain MLE (0: no intervals).
    bootstrap_rounds: int = 1000
    #: Seed of the bootstrap, so every replay draws the same resamples.
    seed: int = 0
    #: Confidence level of the intervals.
    ci_level: float = 0.95
    #: A model is established when its interval is at most this wide...
    established_ci_width: float = 50.0
    #: ...and it has at least this many battles.
    established_min_battles: int = 100
    #: Count flagged votes (e.g. rate-limited) in the ratings.
    include_flagged: bool = False
    #: Only votes of this voter kind: 'human' (the default: judges' votes never enter
    #: the human board; rows without a kind are human), 'judge', or None for all.
    voter_kind: str | None = "human"
    #: Only the votes of this judge (with ``voter_kind='judge'``); None for any.
    judge: str | None = None
    #: Half-life (days) of a vote's weight in the Bradley-Terry fit; None: no decay.
    half_life_days: float | None = None
    elo: EloParams = field(default_factory=EloParams)

    def __post_init__(self):
        if self.voter_kind not in (None, "human", "judge"):
            raise ValueError(
                f"voter_kind must be 'human', 'judge' or None, got {self.voter_kind!r}"
            )
        if self.judge is not None and self.voter_kind != "judge":
            raise ValueError("a judge's board needs voter_kind='judge'")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.bootstrap_rounds < 0:
            raise ValueError("bootstrap_rounds must be >= 0")
        check_prior_weight(self.prior_weight)
        if self.half_life_days is not None:
            check_half_life(self.half_life_days)
        if not 0.0 < self.ci_level < 1.0:
            raise ValueError(f"ci_level must be between 0 and 1, got {self.ci_level}")

    @property
    def prior_label(self) -> str:
        """The prior as the JSON and the page name it."""
        if self.prior_weight is None:
            return "fitted"
        return "none" if self.prior_weight == 0 else f"{self.prior_weight:g}"


@dataclass(frozen=True)
class FitSummary:
    """How a board's ratings were fitted, for the JSON and the page."""

    prior: str
    #: Posterior mean spread of true ratings around their priors (points), fitted prior only.
    spread: float | None = None
    #: Dispersion of the votes (< 1 when draws make them less noisy than coin flips).
    dispersion: float | None = None
    bootstrap_rounds: int | None = None
    bootstrap_dropped: int | None = None
    half_life_days: float | None = None

    def to_json(self) -> dict:
        out = asdict(self)
        for key in ("spread", "dispersion"):
            if out[key] is not None:
                out[key] = round(out[key], 4)
        return out


@dataclass(frozen=True)
class Standings:
    """Ranked rows, what the reader must be warned about, and how they were fitted."""

    rows: tuple[LeaderboardRow, ...]
    warnings: tuple[str, ...]
    fit: FitSummary


@dataclass(frozen=True)
class Board:
    arena: str
    category: str | None
    method: str
    rows: tuple[LeaderboardRow, ...]
    votes_used: int
    skipped: dict[str, int]
    last_vote: str | None = None
    warnings: tuple[str, ...] = ()
    fit: FitSummary | None = None
    window: Window = field(default_factory=Window)
    #: The pair counts the board was computed from (not in its JSON): the Space's charts
    #: draw these, so a vote counted between the table and the charts cannot make the
    #: charts show one battle more than the table.
    pair_counts: PairCounts | None = field(default=None, compare=False, repr=False)

    @property
    def components(self) -> int:
        """Number of comparison groups among the rows."""
        return len({r.component for r in self.rows if r.component is not None})

    def to_json(self) -> dict:
        return {
            "arena": self.arena,
            "category": self.category,
            "method": self.method,
            **self.window.to_json(),
            "rows": [rounded(r) for r in self.rows],
            "warnings": list(self.warnings),
            "fit": self.fit.to_json() if self.fit else None,
            "skipped": dict(sorted(self.skipped.items())),
            "votes_used": self.votes_used,
            "last_vote": self.last_vote,
        }


def standings(entrants: Sequence[Entrant], elo: EloState | None, counts: PairCounts,
              params: BoardParams, *, fit_counts: PairCounts | None = None,
              available: Mapping[str, bool] | None = None) -> Standings:  # fmt: skip
    """Rank ``entrants`` from their sequential-Elo state and pair counts.

    ``elo`` None: no vote order is known (a counts table alone), so the Bradley-Terry
    board is given with its Elo column empty, and a warning says why. ``fit_counts`` (time-decayed counts, or a judges' board's counts with each battle
    once) replace ``counts`` in the fit; the
    tallies shown stay whole votes. ``available`` maps a model id to whether it
    can run here (missing ids count as available): an unavailable model without
    battles is left off the board, one with battles is kept and marked.
    """
    n = len(entrants)
    prior = np.array([e.prior_rating for e in entrants], dtype=float)
    fitted = fit_counts if fit_counts is not None else counts
    fit = fit_board(n, fitted, prior, prior_weight=params.prior_weight, level=params.ci_level,
                    rounds=params.bootstrap_rounds, rng=np.random.default_rng(params.seed))  # fmt: skip
    weights = (votes_information(fitted, fit.rating, fit.dispersion),
               prior_precision(params.prior_weight, fit.spread))  # fmt: skip
    if elo is None and params.method != "bt":
        raise ValueError("a sequential-Elo board needs the votes in time order, not counts alone")
    rows = _rows(entrants, elo, counts, fit, params, available or {}, weights)
    warnings = board_warnings(rows, fit, prior_weight=params.prior_weight, method=params.method,
                              flat=[entrants[i].id for i in sorted(fit.flat)])  # fmt: skip
    warnings += (NO_VOTE_ORDER,) if elo is None else ()
    summary = FitSummary(prior=params.prior_label, spread=fit.spread, dispersion=fit.dispersion,
                         bootstrap_rounds=fit.rounds if params.prior_weight == 0 else None,
                         bootstrap_dropped=fit.dropped, half_life_days=params.half_life_days)  # fmt: skip
    return Standings(tuple(rows), warnings, summary)


def compute_board(entrants: Sequence[Entrant], elo: EloState, counts: PairCounts,
                  params: BoardParams, **kwargs) -> list[LeaderboardRow]:  # fmt: skip
    """The rows of :func:`standings` (same keyword arguments)."""
    return list(standings(entrants, elo, counts, params, **kwargs).rows)


def _rows(entrants, elo: EloState | None, counts: PairCounts, fit: BoardFit, params: BoardParams,
          available: Mapping[str, bool], weights) -> list[LeaderboardRow]:  # fmt: skip
    tally = counts.tallies()
    battles = tally["battles"]
    elo_ratings = (np.asarray(elo.as_array(), dtype=float) if elo is not None
                   else np.full(len(entrants), np.nan))  # fmt: skip
    bt = params.method == "bt"
    shown = fit.rating if bt else elo_ratings
    # An infinite maximum-likelihood rating is the Bradley-Terry fit's: sequential Elo is
    # finite for every model that played, so an Elo board ranks them all by it (with
    # --prior-weight 0 its best model, unbeaten, was left unranked and noted "no finite
    # rating" beside its Elo, and the model below it ranked first).
    sides = np.where(battles > 0, fit.side, graph.FITTED) if bt else np.full(len(battles),
                                                                              graph.FITTED)  # fmt: skip
    ranked = (battles > 0) & (sides == graph.FITTED)
    with_ci = bt and fit.intervals
    compared = np.where(ranked, shown, np.nan)
    # a model unbounded above (below) is above (below) the rest of its group
    compared = np.where((battles > 0) & (sides == graph.ABOVE), np.inf, compared)
    compared = np.where((battles > 0) & (sides == graph.BELOW), -np.inf, compared)
    best, worst = rank_bands(compared, fit.low if with_ci else None, fit.high if with_ci else None,
                             np.where(battles > 0, fit.component, -1))  # fmt: skip
    keyed = []
    for i, e in enumerate(entrants):
        here = bool(available.get(e.id, True))
        if here or battles[i] > 0:
            side = int(sides[i])
            row = _row(i, e, tally, fit, params, (shown[i], elo_ratings[i]), (best[i], worst[i]),
                       (weights[0][i], weights[1]), side)  # fmt: skip
            keyed.append((_order(row, side), row if here else replace(row, available=False)))
    keyed.sort(key=lambda pair: pair[0])
    return [row for _, row in keyed]


def _row(i, e: Entrant, tally, fit: BoardFit, params: BoardParams, values, band,
         weights, side: int) -> LeaderboardRow:  # fmt: skip
    battles = int(tally["battles"][i])
    shown, elo = values
    rating = float(shown) if np.isfinite(shown) else None
    low, high = _bounds(i, fit) if battles and params.method == "bt" else (None, None)
    if not battles:  # the posterior of a model without votes is its prior, if published
        rating = e.prior_rating if e.prior_source is not None else None
    width = high - low if low is not None and high is not None else np.inf
    settled = width <= params.established_ci_width and battles >= params.established_min_battles
    decided = int(tally["wins"][i] + tally["losses"][i])
    status = PRIOR if not battles else ESTABLISHED if settled else PROVISIONAL
    origin = _provenance(e, battles, rating, status, *weights)
    return LeaderboardRow(
        rank=int(band[0]) or None, rank_worst=int(band[1]) or None,
        component=int(fit.component[i]) + 1 if battles else None,
        model=e.name, model_id=e.id, params=e.params, params_m=e.params_m,
        rating=rating, ci_low=low, ci_high=high, elo=float(elo) if np.isfinite(elo) else None,
        elo_per_m_params=rating / e.params_m if rating is not None and e.params_m else None,
        battles=battles, wins=int(tally["wins"][i]), losses=int(tally["losses"][i]),
        ties=int(tally["ties"][i]), both_bad=int(tally["both_bad"][i]),
        win_rate=int(tally["wins"][i]) / decided if decided else None,
        status=status, available=True, **origin,
        note=UNRATED_NOTE if origin["provenance"] is None else UNBOUNDED_NOTES.get(side),
    )  # fmt: skip


def _provenance(e: Entrant, battles: int, rating: float | None, status: str,
                information: float, precision: float) -> dict:  # fmt: skip
    """The row's provenance fields (see :mod:`arena_core.provenance`)."""
    published = e.prior_source is not None
    ladder = rung(published=published, battles=battles, information=information,
                  precision=precision, established=status == ESTABLISHED)  # fmt: skip
    share = votes_share(information, precision) if battles else 0.0 if published else None
    prior = e.prior_rating if published else None
    shift = rating - prior if prior is not None and rating is not None else None
    return {"provenance": ladder, "votes_share": share, "prior_rating": prior,
            "prior_source": e.prior_source, "prior_shift": shift}  # fmt: skip


def _bounds(i: int, fit: BoardFit) -> tuple[float | None, float | None]:
    low, high = fit.low[i], fit.high[i]
    return (float(low) if np.isfinite(low) else None, float(high) if np.isfinite(high) else None)


#: Order of the sections of a component: unbounded above, ranked, unbounded below, apart.
_SECTION = {graph.ABOVE: 0, graph.FITTED: 1, graph.BELOW: 2, graph.APART: 3}


def _order(row: LeaderboardRow, side: int) -> tuple:
    """Groups in order (group 1 first), each by section, rank band, rating; unrated last."""
    if row.component is None:
        return (1, 0, 0, 0, -row.rating if row.rating is not None else 0.0, 0, row.model_id)
    value = row.rating if row.rating is not None else row.ci_low or row.ci_high or 0.0
    return (0, row.component, _SECTION[side], row.rank or 0, -value, -row.battles, row.model_id)


def make_board(arena: str, category: str | None, params: BoardParams, result: Standings, *,
               votes_used: int, skipped: Mapping[str, int], last_ts_us: int | None,
               window: Window, counts: PairCounts | None = None) -> Board:  # fmt: skip
    """The board of one replay or live state: one constructor, so both print the same JSON.
    ``counts``: the whole votes' pair counts it was computed from (``Board.pair_counts``)."""
    return Board(arena=arena, category=category, method=params.method, rows=result.rows,
                 votes_used=votes_used, skipped=dict(skipped), last_vote=format_us(last_ts_us),
                 warnings=result.warnings, fit=result.fit, window=window,
                 pair_counts=counts)  # fmt: skip


def board_from_votes(votes: VoteTable, arena: str, *, category: str | None = None,
                     entrants: Sequence[Entrant] | None = None,
                     params: BoardParams = BoardParams(), window: Window = ALL_TIME,
                     available: Mapping[str, bool] | None = None) -> Board:  # fmt: skip
    """Replay ``votes`` into the board of ``arena`` (optionally one category and time window)."""
    sel = select_votes(votes, arena, category=category, entrants=entrants, params=params,
                       window=window)  # fmt: skip
    elo, counts = sel.replay(params)
    result = standings(sel.entrants, elo, counts, params, fit_counts=sel.fit_counts(params),
                       available=available)  # fmt: skip
    return make_board(arena, category, params, result, votes_used=len(sel.a),
                      skipped=Counter(votes.skipped) + sel.skipped, last_ts_us=sel.last_ts_us,
                      window=window, counts=counts)  # fmt: skip
