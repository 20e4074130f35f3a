"""Leaderboards: from votes to ranked rows, the same way for the Space and the CLI.

:func:`compute_board` turns a sequential-Elo state and pair counts into rows;
:func:`board_from_votes` does the whole replay from a :class:`VoteTable`. The
live app keeps the Elo state and the counts up to date vote by vote and calls
:func:`compute_board` too, so a researcher replaying the published log with the
CLI gets exactly the Space's board.

Column definitions live once, in :class:`LeaderboardRow`'s field metadata;
the table, CSV and JSON outputs all derive from them.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime

import numpy as np
import pyarrow.compute as pc

from arena_core.integrity.anomaly import anomalous_votes
from arena_core.ratings.bt import (
    BTParams,
    NotIdentifiableError,
    bootstrap_bradley_terry,
    bradley_terry,
)
from arena_core.ratings.counts import PairCounts, count_pairs
from arena_core.ratings.elo import EloParams, EloState, sequential_elo
from arena_core.ratings.scale import ANCHOR
from arena_core.registry import Arena
from arena_core.votes.read import VoteTable
from arena_core.votes.reasons import ANOMALOUS_VOTER, FLAGGED, UNKNOWN_MODEL
from arena_core.votes.schema import VOTES

log = logging.getLogger(__name__)

#: Board methods: Bradley-Terry (order-free, with CIs) or sequential Elo.
METHODS = ("bt", "elo")
#: Statuses, from no data to a settled rating.
PRIOR, PROVISIONAL, ESTABLISHED = "prior", "provisional", "established"
#: Columns of the vote table a board needs (timestamps come as ``VoteTable.ts_us``;
#: ``voter`` for the anomalous-voter test).
BOARD_COLUMNS = ("arena", "model_a", "model_b", "vote", "category", "flags", "voter_kind", "voter")


@dataclass(frozen=True)
class BoardParams:
    """Everything that decides a board's numbers; the Space and the CLI share the defaults."""

    method: str = "bt"
    #: Virtual draws against each model's prior rating (see ``arena_core.ratings.bt``).
    prior_weight: float = 4.0
    #: Bootstrap rounds for the confidence intervals (0: no intervals).
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
    #: Only votes of this voter kind ('human', 'judge'); None for all.
    voter_kind: str | None = None
    elo: EloParams = field(default_factory=EloParams)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.bootstrap_rounds < 0:
            raise ValueError("bootstrap_rounds must be >= 0")
        BTParams(prior_weight=self.prior_weight)  # validates the weight


@dataclass(frozen=True)
class Entrant:
    """What a board needs to know about a model (from the registry, or just its id)."""

    id: str
    name: str
    params: str | None = None
    params_m: float | None = None
    prior_rating: float = ANCHOR

    @classmethod
    def from_arena(cls, arena: Arena) -> list[Entrant]:
        return [cls(m.id, m.name, m.params, m.params_m, m.prior_rating) for m in arena.models]


def _col(label: str, digits: int | None = None, doc: str = ""):
    return field(metadata={"label": label, "digits": digits, "doc": doc})


@dataclass(frozen=True)
class LeaderboardRow:
    """One model on a board. Field order is column order; metadata gives labels."""

    rank: int = _col("Rank", doc="Position on the board, best first.")
    rank_ub: int | None = _col(
        "Rank (UB)", doc="1 + models whose interval lies wholly above this one's."
    )
    model: str = _col("Model")
    model_id: str = _col("Model id")
    params: str | None = _col("Params")
    params_m: float | None = _col("Params (M)", 1)
    rating: float = _col(
        "Rating", 1, "Bradley-Terry (or Elo with --method elo) on the 1000/400 scale."
    )
    ci_low: float | None = _col("95% CI low", 1)
    ci_high: float | None = _col("95% CI high", 1)
    elo: float = _col("Seq. Elo", 1, "Sequential Elo replayed in vote order.")
    elo_per_m_params: float | None = _col("Elo per M params", 4)
    battles: int = _col("Battles")
    wins: int = _col("Wins")
    losses: int = _col("Losses")
    ties: int = _col("Ties")
    both_bad: int = _col("Both bad")
    win_rate: float | None = _col("Win rate", 3, "Wins over decided battles.")
    status: str = _col("Status", doc="prior (no battles), provisional or established.")


#: Column names, labels and rounding, in order.
COLUMNS = tuple(fields(LeaderboardRow))


def rounded(row: LeaderboardRow) -> dict:
    """The row as a dict, numbers rounded as displayed (for JSON and CSV)."""
    out = asdict(row)
    for col in COLUMNS:
        digits = col.metadata["digits"]
        if digits is not None and out[col.name] is not None:
            out[col.name] = round(float(out[col.name]), digits)
    return out


@dataclass(frozen=True)
class Board:
    arena: str
    category: str | None
    method: str
    rows: tuple[LeaderboardRow, ...]
    votes_used: int
    skipped: dict[str, int]
    last_vote: str | None = None

    def to_json(self) -> dict:
        return {
            "arena": self.arena,
            "category": self.category,
            "method": self.method,
            "rows": [rounded(r) for r in self.rows],
            "skipped": dict(sorted(self.skipped.items())),
            "votes_used": self.votes_used,
            "last_vote": self.last_vote,
        }


def compute_board(entrants: Sequence[Entrant], elo: EloState, counts: PairCounts,
                  params: BoardParams) -> list[LeaderboardRow]:  # fmt: skip
    """Rank ``entrants`` from their sequential-Elo state and pair counts."""
    n = len(entrants)
    prior = np.array([e.prior_rating for e in entrants], dtype=float)
    bt = BTParams(prior_weight=params.prior_weight)
    try:
        rating = bradley_terry(n, counts, prior, bt)
    except NotIdentifiableError as exc:
        names = ", ".join(entrants[i].id for i in exc.items)
        raise NotIdentifiableError(f"{exc} [models: {names}]", exc.items) from None
    low = high = None
    if params.bootstrap_rounds:
        boot = bootstrap_bradley_terry(
            n, counts, prior, bt, rounds=params.bootstrap_rounds,
            rng=np.random.default_rng(params.seed), initial=rating,
        )  # fmt: skip
        low, high = boot.interval(params.ci_level)
    tally = counts.tallies()
    elo_ratings = elo.as_array()
    shown = rating if params.method == "bt" else elo_ratings
    rows = []
    for i, e in enumerate(entrants):
        battles = int(tally["battles"][i])
        has_ci = low is not None and battles > 0 and params.method == "bt"
        decided = int(tally["wins"][i] + tally["losses"][i])
        width = (high[i] - low[i]) if low is not None else np.inf
        settled = width <= params.established_ci_width and battles >= params.established_min_battles
        rows.append(
            dict(
                model=e.name, model_id=e.id, params=e.params, params_m=e.params_m,
                rating=float(shown[i]),
                ci_low=float(low[i]) if has_ci else None,
                ci_high=float(high[i]) if has_ci else None,
                elo=float(elo_ratings[i]),
                elo_per_m_params=float(shown[i]) / e.params_m if e.params_m else None,
                battles=battles, wins=int(tally["wins"][i]), losses=int(tally["losses"][i]),
                ties=int(tally["ties"][i]), both_bad=int(tally["both_bad"][i]),
                win_rate=int(tally["wins"][i]) / decided if decided else None,
                status=PRIOR if battles == 0 else ESTABLISHED if settled else PROVISIONAL,
            )
        )  # fmt: skip
    rows.sort(key=lambda r: (-r["rating"], -r["battles"], r["model_id"]))
    return [
        LeaderboardRow(rank=k, rank_ub=_rank_ub(r, rows), **r) for k, r in enumerate(rows, start=1)
    ]


def _rank_ub(row: dict, rows: list[dict]) -> int | None:
    """Chatbot Arena's rank: 1 + models whose lower bound is above this upper bound."""
    if row["ci_high"] is None:
        return None
    return 1 + sum(1 for r in rows if r["ci_low"] is not None and r["ci_low"] > row["ci_high"])


@dataclass(frozen=True)
class Selection:
    """The votes of one board as integer arrays over its entrants, in replay order."""

    entrants: list[Entrant]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    skipped: Counter
    last_ts_us: int | None

    def replay(self, params: BoardParams) -> tuple[EloState, PairCounts]:
        """Sequential Elo (from each entrant's prior) and the pair counts of these votes."""
        n, prior = len(self.entrants), [e.prior_rating for e in self.entrants]
        elo = sequential_elo(n, (self.a, self.b, self.outcome), prior, params.elo)
        return elo, count_pairs(n, self.a, self.b, self.outcome)


def select_votes(votes: VoteTable, arena: str, *, category: str | None = None,
                 entrants: Sequence[Entrant] | None = None,
                 params: BoardParams = BoardParams()) -> Selection:  # fmt: skip
    """Pick an arena's (and category's) countable votes and index their models.

    Without ``entrants`` every model met in these votes enters from the anchor,
    in id order; with them, votes naming another model are skipped and counted.
    """
    enc = votes.encoded
    skipped: Counter = Counter()
    keep = enc["arena"].isin([arena])
    if category is not None:
        keep &= enc["category"].isin([category])
    if params.voter_kind is not None:
        kind = enc["voter_kind"]
        keep &= kind.isin([params.voter_kind]) | ((kind.codes < 0) & (params.voter_kind == "human"))
    if not params.include_flagged:
        lengths = pc.list_value_length(votes.column("flags")).to_numpy(zero_copy_only=False)
        flagged = keep & (np.nan_to_num(lengths.astype(float)) > 0)
        skipped[FLAGGED] += int(flagged.sum())
        keep &= ~flagged
        anomalous = keep & anomalous_votes(votes)  # votes of flagged voters, before their flag too
        skipped[ANOMALOUS_VOTER] += int(anomalous.sum())
        keep &= ~anomalous
    model_a, model_b = enc["model_a"], enc["model_b"]
    if entrants is None:
        used = np.union1d(model_a.codes[keep], model_b.codes[keep])
        entrants = [Entrant(i, i) for i in sorted(model_a.values[k] for k in used)]
    index = {e.id: k for k, e in enumerate(entrants)}
    a, b = model_a.map(index), model_b.map(index)
    unknown = keep & ((a < 0) | (b < 0))
    skipped[UNKNOWN_MODEL] += int(unknown.sum())
    keep &= ~unknown
    outcome = enc["vote"].map({v: k for k, v in enumerate(VOTES)})
    last = int(votes.ts_us[keep][-1]) if keep.any() else None
    return Selection(list(entrants), a[keep], b[keep], outcome[keep], +skipped, last)


def board_from_votes(votes: VoteTable, arena: str, *, category: str | None = None,
                     entrants: Sequence[Entrant] | None = None,
                     params: BoardParams = BoardParams()) -> Board:  # fmt: skip
    """Replay ``votes`` into the board of ``arena`` (optionally one category)."""
    sel = select_votes(votes, arena, category=category, entrants=entrants, params=params)
    elo, counts = sel.replay(params)
    rows = compute_board(sel.entrants, elo, counts, params)
    skipped = Counter(votes.skipped) + sel.skipped
    return Board(
        arena=arena, category=category, method=params.method, rows=tuple(rows),
        votes_used=len(sel.a), skipped=dict(skipped), last_vote=format_us(sel.last_ts_us),
    )  # fmt: skip


def format_us(ts_us: int | None) -> str | None:
    if ts_us is None:
        return None
    return datetime.fromtimestamp(ts_us / 1e6, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
