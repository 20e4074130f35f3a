"""One model's page: how it is doing and why, from the votes and the registry.

:func:`model_report` reads an arena's counted human votes (the votes the default board
counts: no flagged votes, no anomalous voters', no judges') and gathers, for one model:

* its rating history: sequential Elo after its votes and Bradley-Terry with its
  interval at snapshots every ``ceil(N / 40)`` of the arena's votes
  (:mod:`arena_core.analysis.model_stats`);
* its results against each opponent and in each category (language), with Wilson
  intervals, and its rating on each category's board;
* its style (clip duration, speaking rate, loudness, sample rate) against the arena's;
* its registry facts and its row of the default board (provenance, prior, shift);
* its last battles with their prompts.

Two facts are the Space's, not the log's: whether the model can run now, and its median
generation time (``ModelPool.median_latency``). Offline both stay None and
:data:`AVAILABILITY_NOTE` says why; the Space fills them in with :func:`dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import pandas as pd

from arena_core.analysis.boards import counted_frame
from arena_core.analysis.model_stats import (
    EloPoint,
    Snapshot,
    bt_history,
    elo_history,
    sides,
    style_medians,
    tally,
    wilson_interval,
)
from arena_core.board_row import LeaderboardRow, rounded
from arena_core.leaderboard import BOARD_COLUMNS, BoardParams, Entrant, board_from_votes
from arena_core.selection import select_votes
from arena_core.votes.schema import STYLE_COLUMNS
from arena_core.window import format_us

#: Columns the report reads (``read_votes(..., columns=MODEL_COLUMNS)``).
MODEL_COLUMNS = (*BOARD_COLUMNS, "vote_id", "ts", "prompt_id", "prompt", "model_a_version",
                 "model_b_version", *STYLE_COLUMNS)  # fmt: skip
#: Recent battles listed by default.
RECENT = 10
#: Why availability and generation time are missing from an offline report.
AVAILABILITY_NOTE = ("availability and median generation time are known only to the running "
                     "Space (its model pool); an offline report leaves them null")  # fmt: skip


@dataclass(frozen=True)
class Rate:
    """A count out of ``n`` with its share and 95% Wilson interval (None without battles)."""

    count: int
    rate: float | None
    low: float | None
    high: float | None


def rate(k: int, n: int, level: float = 0.95) -> Rate:
    if not n:
        return Rate(k, None, None, None)
    low, high = wilson_interval(k, n, level)
    return Rate(k, k / n, low, high)


@dataclass(frozen=True)
class OpponentRow:
    """The model's battles against one opponent; rates are shares of all these battles."""

    opponent: str
    battles: int
    win: Rate
    tie: Rate
    loss: Rate
    both_bad: Rate


@dataclass(frozen=True)
class CategoryRow:
    """The model in one category: win rate over decided battles (the board's definition)
    and its Bradley-Terry rating on that category's board (None: no finite rating)."""

    category: str | None
    battles: int
    win_rate: Rate
    rating: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class StyleRow:
    """One style field: the model's median against the arena's (None: no styled votes)."""

    field: str
    model_median: float | None
    arena_median: float | None
    votes: int


@dataclass(frozen=True)
class RecentBattle:
    vote_id: str
    ts: str
    prompt_id: str | None
    prompt: str | None
    category: str | None
    opponent: str
    side: str
    result: str
    #: The engine versions the vote recorded for this model and its opponent (None: not
    #: reported); the model page plays a battle's clips only if the engines still match.
    version: str | None = None
    opponent_version: str | None = None


@dataclass(frozen=True)
class ModelReport:
    """Everything the model page and ``python -m arena_core model`` show, by model id."""

    arena: str
    model: str
    name: str
    registry: dict | None
    board_row: LeaderboardRow | None
    elo_history: tuple[EloPoint, ...]
    bt_history: tuple[Snapshot, ...]
    opponents: tuple[OpponentRow, ...]
    categories: tuple[CategoryRow, ...]
    style: tuple[StyleRow, ...]
    recent: tuple[RecentBattle, ...]
    votes_used: int
    available: bool | None = None
    median_latency_s: float | None = None
    notes: tuple[str, ...] = field(default=(AVAILABILITY_NOTE,))
    #: Comparison groups on the board (a rank compares only within its group: named when
    #: there are several, as the board's table does).
    groups: int = 1

    def to_json(self) -> dict:
        out = asdict(self)
        out["board_row"] = rounded(self.board_row) if self.board_row else None
        return out


def model_report(votes, arena_id: str, model_id: str, *, arena=None, recent: int = RECENT,
                 params: BoardParams | None = None) -> ModelReport:  # fmt: skip
    """The report of ``model_id`` in ``arena_id`` from a VoteTable read with MODEL_COLUMNS.

    ``arena`` is the registry's :class:`~arena_core.registry.Arena` (priors, names, the
    models that count); without it every model met in the votes enters from the anchor.
    ``params`` are the default board's (None: :class:`BoardParams` defaults).
    Raises ValueError for a model that is neither in the registry nor in the votes.
    """
    params = params if params is not None else BoardParams()
    entrants = Entrant.from_arena(arena) if arena is not None else None
    sel = select_votes(votes, arena_id, entrants=entrants, params=params)
    ids = [e.id for e in sel.entrants]
    if model_id not in ids:
        listed = "" if arena is None else " and is not in its registry entry"
        known = ", ".join(ids) if ids else "none"
        raise ValueError(f"model {model_id!r} has no counted votes in arena {arena_id!r}{listed} "
                         f"(the arena's models: {known})")  # fmt: skip
    k, prior = ids.index(model_id), [e.prior_rating for e in sel.entrants]
    battles = (sel.a, sel.b, sel.outcome)
    frame = _between(counted_frame(votes, arena_id, voter_kind="human"), set(ids))
    mine = sides(frame, model_id)
    board = board_from_votes(votes, arena_id, entrants=entrants, params=params)
    model = arena.model(model_id) if arena is not None else None
    return ModelReport(
        arena=arena_id, model=model_id, name=model.name if model else model_id,
        registry=_registry_facts(model), board_row=_row(board, model_id),
        elo_history=_dated(elo_history(len(ids), battles, k, prior, params.elo), sel.ts_us),
        bt_history=_dated(bt_history(len(ids), battles, k, prior, prior_weight=params.prior_weight,
                                     level=params.ci_level), sel.ts_us),
        opponents=tuple(_opponents(mine)),
        categories=tuple(_categories(votes, arena_id, model_id, mine, entrants, params)),
        style=tuple(StyleRow(f, *v) for f, v in style_medians(frame, model_id).items()),
        recent=tuple(_recent(mine, recent)), votes_used=len(sel.a), groups=board.components,
    )  # fmt: skip


def _dated(points, ts_us) -> tuple:
    """The points with the time of the arena's vote each was taken after."""
    return tuple(replace(p, ts=format_us(int(ts_us[p.arena_votes - 1]))) for p in points)


def _between(frame: pd.DataFrame, ids: set[str]) -> pd.DataFrame:
    """Votes between entrants: with counted human votes, the rows the default board counts."""
    return frame[frame["model_a"].isin(ids) & frame["model_b"].isin(ids)]


def _row(board, model_id: str) -> LeaderboardRow | None:
    return next((r for r in board.rows if r.model_id == model_id), None)


def _registry_facts(model) -> dict | None:
    if model is None:
        return None
    return {"name": model.name, "license": model.license, "url": model.url,
            "family": model.family, "params": model.params, "description": model.description,
            "prior": model.prior.to_json() if model.prior else None}  # fmt: skip


def _opponents(mine: pd.DataFrame) -> list[OpponentRow]:
    rows = []
    for opponent, group in mine.groupby("opponent", sort=True):
        t = tally(group["result"])
        n = t["battles"]
        rows.append(OpponentRow(str(opponent), n, rate(t["win"], n), rate(t["tie"], n),
                                rate(t["loss"], n), rate(t["both_bad"], n)))  # fmt: skip
    rows.sort(key=lambda r: (-r.battles, r.opponent))
    return rows


def _categories(votes, arena_id, model_id, mine, entrants, params) -> list[CategoryRow]:
    rows = []
    for category, group in mine.groupby("category", sort=True, dropna=False):
        t = tally(group["result"])
        name = None if pd.isna(category) else str(category)
        row = None
        if name is not None:  # a board of the votes without a category has no filter for them
            board = board_from_votes(votes, arena_id, category=name, entrants=entrants,
                                     params=params)  # fmt: skip
            row = _row(board, model_id)
        rows.append(CategoryRow(name, t["battles"], rate(t["win"], t["win"] + t["loss"]),
                                row.rating if row else None, row.ci_low if row else None,
                                row.ci_high if row else None))  # fmt: skip
    rows.sort(key=lambda r: (-r.battles, r.category or ""))
    return rows


def _recent(mine: pd.DataFrame, k: int) -> list[RecentBattle]:
    last = mine.tail(k).iloc[::-1]
    return [RecentBattle(r.vote_id, r.ts, _opt(r.prompt_id), _opt(r.prompt), _opt(r.category),
                         r.opponent, r.side, r.result, *_versions(r)) for r in last.itertuples()]  # fmt: skip


def _versions(r) -> tuple[str | None, str | None]:
    """(this model's, the opponent's) engine version as the vote recorded them."""
    a, b = _opt(getattr(r, "model_a_version", None)), _opt(getattr(r, "model_b_version", None))
    return (a, b) if r.side == "a" else (b, a)


def _opt(value) -> str | None:
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
