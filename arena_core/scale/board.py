"""A board from a counts table and a time-ordered vote stream, without the votes in memory.

Bradley-Terry needs only the pair counts; sequential Elo needs the votes in
order, but one at a time. :func:`board_from_counts` selects the board's rows of
a counts table (:mod:`~arena_core.scale.contract`) with the rules of
:func:`~arena_core.selection.select_votes`, replays Elo from a stream of record
batches (:class:`BoardQuery` says which votes the stream must yield), and hands
both to the same :func:`~arena_core.leaderboard.standings` as the in-process
path, so the two boards are the same numbers.

What a counts table cannot answer is refused with :class:`CountsError`: a time
window and a half-life need each vote's time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena_core.leaderboard import Board, BoardParams, make_board, standings
from arena_core.ratings import elo
from arena_core.ratings.counts import OUTCOME_NAMES, SCORE_A, PairCounts
from arena_core.ratings.elo import EloParams, EloState
from arena_core.ratings.scale import NATURAL
from arena_core.scale.contract import CountsError, skipped_of
from arena_core.selection import Entrant
from arena_core.votes.reasons import ANOMALOUS_VOTER, FLAGGED, UNKNOWN_MODEL
from arena_core.window import ALL_TIME, Window


@dataclass(frozen=True)
class BoardQuery:
    """The votes of one board, as a stream must select them (see :func:`select_counts`)."""

    arena: str
    category: str | None
    voter_kind: str | None
    judge: str | None
    include_flagged: bool
    #: Model ids of the board: a vote naming another model is left out.
    models: tuple[str, ...]


#: A stream of a board's votes: record batches with ``model_a``, ``model_b`` and ``vote``
#: (strings), in replay order (``ts``, then ``vote_id``), holding exactly the query's votes.
EloStream = Callable[[BoardQuery], Iterable[pa.RecordBatch]]


@dataclass(frozen=True)
class CountsSelection:
    """The counts rows of one board, its entrants, and what was left out (by reason)."""

    query: BoardQuery
    entrants: list[Entrant]
    rows: pa.Table
    skipped: Counter


def _mask(values) -> np.ndarray:
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def select_counts(counts: pa.Table, arena: str, *, category: str | None = None,
                  entrants: Sequence[Entrant] | None = None,
                  params: BoardParams | None = None) -> CountsSelection:  # fmt: skip
    """The rows of ``counts`` that ``select_votes`` would keep, in the same order of rules."""
    params = params if params is not None else BoardParams()
    col = counts.column
    keep = _mask(pc.equal(col("arena"), arena))
    if category is not None:
        keep &= _mask(pc.equal(col("category"), category))
    if params.voter_kind is not None:
        kind = col("voter_kind")
        keep &= _mask(pc.equal(kind, params.voter_kind)) | (
            _mask(pc.is_null(kind)) & (params.voter_kind == "human")
        )
    if params.judge is not None:
        keep &= _mask(pc.equal(col("judge"), params.judge))
    votes = col("votes").to_numpy()
    skipped: Counter = Counter()
    if not params.include_flagged:
        for name, reason in (("flagged", FLAGGED), ("anomalous", ANOMALOUS_VOTER)):
            out = keep & _mask(col(name))
            skipped[reason] += int(votes[out].sum())
            keep &= ~out
    if entrants is None:
        kept = counts.filter(pa.array(keep))
        used = set(kept.column("model_a").to_pylist()) | set(kept.column("model_b").to_pylist())
        entrants = [Entrant(i, i) for i in sorted(used)]
    ids = pa.array([e.id for e in entrants], pa.string())
    known = _mask(pc.is_in(col("model_a"), ids)) & _mask(pc.is_in(col("model_b"), ids))
    skipped[UNKNOWN_MODEL] += int(votes[keep & ~known].sum())
    keep &= known
    query = BoardQuery(arena, category, params.voter_kind, params.judge, params.include_flagged,
                       tuple(e.id for e in entrants))  # fmt: skip
    return CountsSelection(query, list(entrants), counts.filter(pa.array(keep)), +skipped)


def pair_counts(selection: CountsSelection) -> PairCounts:
    """The pair counts of the selected rows, as :func:`~arena_core.ratings.counts.count_pairs`
    makes them (integer tables)."""
    rows, n = selection.rows, len(selection.entrants)
    a, b = (
        _indices(rows.column("model_a"), selection.query.models),
        _indices(rows.column("model_b"), selection.query.models),
    )
    outcome = _outcomes(rows.column("vote"))
    votes = rows.column("votes").to_numpy().astype(float)
    flat = a * n + b
    per = [
        np.bincount(flat[outcome == k], weights=votes[outcome == k], minlength=n * n)
        .astype(np.int64)
        .reshape(n, n)
        for k in range(4)
    ]
    return PairCounts(wins=per[0] + per[1].T, ties=per[2] + per[2].T, both_bad=per[3] + per[3].T)


def _indices(column, models: Sequence[str]) -> np.ndarray:
    index = pc.index_in(column, value_set=pa.array(models, pa.string()))
    return pc.fill_null(index, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _outcomes(column) -> np.ndarray:
    return _indices(column, OUTCOME_NAMES)


def streaming_elo(n_items: int, batches: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
                  prior, params: EloParams, max_battles: int) -> EloState:  # fmt: skip
    """Sequential Elo over batches of ``(a, b, outcome)`` in replay order, in bounded memory.

    Runs the loop of :func:`~arena_core.ratings.elo.sequential_elo` batch after batch
    with its state carried over, on a K table of ``max_battles + 1`` entries computed
    the same way, so the ratings are bit-identical to one replay of all the votes.
    """
    state = EloState.start(n_items, prior, params)
    ratings = np.array(state.ratings, dtype=float)
    played = np.zeros(n_items, dtype=np.int64)
    k_table = state.params.k(np.arange(max_battles + 1, dtype=float))
    loop = elo.compiled_replay() or elo.replay_loop  # the plain loop where llvmlite is missing
    scores = np.array(SCORE_A)
    for a, b, outcome in batches:
        if len(a) and (np.any(a < 0) or np.any(b < 0) or np.any(outcome < 0) or np.any(a == b)):
            raise CountsError("the vote stream holds a vote outside the board's selection")
        if len(a) and (played.max() + len(a) > max_battles):
            counted = np.bincount(np.concatenate([a, b]), minlength=n_items) + played
            if counted.max() > max_battles:
                raise CountsError("the vote stream holds more votes than the counts table")
        loop(ratings, played, k_table, a.astype(np.int64), b.astype(np.int64),
             outcome.astype(np.int64), scores, NATURAL)  # fmt: skip
    state.ratings, state.battles = ratings.tolist(), played.tolist()
    return state


def _index_batches(batches: Iterable[pa.RecordBatch],
                   models: Sequence[str]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    for batch in batches:
        yield (_indices(batch.column("model_a"), models), _indices(batch.column("model_b"), models),
               _outcomes(batch.column("vote")))  # fmt: skip


def board_from_counts(counts: pa.Table, arena: str, stream: EloStream | None, *,
                      category: str | None = None, entrants: Sequence[Entrant] | None = None,
                      params: BoardParams | None = None, window: Window = ALL_TIME,
                      available: Mapping[str, bool] | None = None) -> Board:  # fmt: skip
    """The board of ``arena`` from a counts table and a vote stream (see the module docstring).

    Arguments as :func:`~arena_core.leaderboard.board_from_votes`; ``stream`` yields the
    board's votes in replay order for sequential Elo; None leaves the Elo column empty (a
    counts table alone: :data:`~arena_core.leaderboard.NO_VOTE_ORDER`), and a board whose
    rating is Elo is then refused.
    """
    params = params if params is not None else BoardParams()
    if not window.all_time:
        raise CountsError("a counts table has no vote times: --since/--until need --engine python")
    if params.half_life_days is not None:
        raise CountsError("a counts table has no vote times: --half-life needs --engine python")
    sel = select_counts(counts, arena, category=category, entrants=entrants, params=params)
    counts_ = pair_counts(sel)
    n = len(sel.entrants)
    battles = counts_.tallies()["battles"]
    prior = [e.prior_rating for e in sel.entrants]
    if stream is None:
        if params.method != "bt":
            raise CountsError("--method elo needs the votes in time order: give --votes with "
                              "--counts")  # fmt: skip
        elo = None
    else:
        elo = streaming_elo(n, _index_batches(stream(sel.query), sel.query.models), prior,
                            params.elo, int(battles.max(initial=0)))  # fmt: skip
    if elo is not None and not np.array_equal(np.array(elo.battles), battles):
        raise CountsError("the vote stream and the counts table disagree on the votes of this "
                          "board; were they made from the same files?")  # fmt: skip
    result = standings(sel.entrants, elo, counts_, params, available=available)
    votes = sel.rows.column("votes").to_numpy()
    last = int(pc.max(sel.rows.column("last_ts_us")).as_py()) if len(votes) else None
    return make_board(arena, category, params, result, votes_used=int(votes.sum()),
                      skipped=skipped_of(counts) + sel.skipped, last_ts_us=last, window=window)  # fmt: skip
