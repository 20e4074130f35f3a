"""The numbers of a model page, as pure functions over integer arrays and vote frames.

:mod:`arena_core.analysis.model_report` picks the votes and maps names; everything here
takes the model as an index (array functions) or an id already chosen by the caller
(frame functions), and neither reads files nor the registry.

Intervals of rates are Wilson score intervals (:func:`wilson_interval`), one per
outcome: each rate (win, tie, loss, both-bad) is read on its own, as "how often does
this model lose to that one", so a marginal binomial interval is the question asked. A
Dirichlet/multinomial interval would make the four jointly valid but wider, and a page
reader compares one rate at a time. Wilson rather than the normal (Wald) interval
because it stays inside [0, 1] and keeps near its nominal coverage with the few battles
a pair often has, including none or all of one outcome (Brown, Cai and DasGupta 2001,
"Interval estimation for a binomial proportion").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from arena_core.ratings import elo_kernel
from arena_core.ratings.counts import PairCounts, count_pairs
from arena_core.ratings.elo import EloParams, EloState, ratings_after
from arena_core.ratings.fit import fit_board
from arena_core.votes.schema import STYLE_FIELDS

#: Most points of the sequential-Elo history: enough for a plot's width, small in JSON.
MAX_ELO_POINTS = 300
#: Replays of at least this many votes take the history from the compiled loop
#: (:func:`~arena_core.ratings.elo.ratings_after`): stepping costs about 2 us a vote in
#: Python, compiling the loop 0.05-0.09 s in a fresh process, what 30,000 steps take. Once
#: the loop is compiled in the process (the Space), from any size.
COMPILED_HISTORY_FROM = 30_000
#: Most Bradley-Terry snapshots: each is one fit of the counts so far (a few ms for tens
#: of models), so the history costs a fraction of a second whatever the log's size.
MAX_SNAPSHOTS = 40
#: What the model's side of a vote was, from its point of view, by vote and side.
RESULT = {("a", "a"): "win", ("a", "b"): "loss", ("b", "a"): "loss", ("b", "b"): "win",
          ("tie", "a"): "tie", ("tie", "b"): "tie", ("both_bad", "a"): "both_bad",
          ("both_bad", "b"): "both_bad"}  # fmt: skip
#: The outcomes of a model's battle, in the order the page lists them.
RESULTS = ("win", "tie", "loss", "both_bad")


def wilson_interval(k: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n``.

    The set of ``p`` that a score test at ``level`` does not reject:
    ``(k/n - p)^2 <= z^2 p (1 - p) / n``, whose roots are
    ``(k/n + z^2/2n +- z sqrt(k/n (1-k/n)/n + z^2/4n^2)) / (1 + z^2/n)``.
    ``(nan, nan)`` for ``n == 0`` (no battles say nothing).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p, z2n = k / n, z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    # At k = 0 (k = n) the lower (upper) root is exactly 0 (1); rounding would miss it.
    low = 0.0 if k == 0 else max(0.0, centre - half)
    return low, 1.0 if k == n else min(1.0, centre + half)


@dataclass(frozen=True)
class EloPoint:
    """The model's sequential Elo right after its ``battle``-th vote (1-based)."""

    battle: int
    #: How many of the arena's votes had been replayed (this one included).
    arena_votes: int
    rating: float
    #: When that vote was recorded (filled by the caller, which has the timestamps).
    ts: str | None = None


def elo_history(n_items: int, battles, model: int, prior=None, params: EloParams | None = None,
                *, points: int = MAX_ELO_POINTS) -> list[EloPoint]:  # fmt: skip
    """Sequential Elo of ``model`` after each of its votes, at most ``points`` of them.

    ``battles`` is ``(a, b, outcome)`` in replay order, as for
    :func:`~arena_core.ratings.elo.sequential_elo`; the replay runs
    :meth:`EloState.step`, the live app's arithmetic, so the last point is the board's
    Elo to the bit. Kept points are evenly spaced over the model's votes, the last
    always among them.
    """
    a, b, outcome = (np.asarray(x, dtype=np.int64) for x in battles)
    mine = np.flatnonzero((a == model) | (b == model))
    if not len(mine):
        return []
    keep = np.unique(np.linspace(0, len(mine) - 1, min(points, len(mine))).round().astype(int))
    wanted = dict.fromkeys(mine[keep].tolist())
    number = {int(t): k + 1 for k, t in enumerate(mine)}
    if len(a) >= COMPILED_HISTORY_FROM or elo_kernel.compiled():
        ends = [t + 1 for t in wanted]
        after = ratings_after(n_items, (a, b, outcome), ends, prior, params)
        if after is not None:
            return [EloPoint(number[t], t + 1, float(r)) for t, r in zip(wanted, after[:, model],
                                                                         strict=True)]  # fmt: skip
    state = EloState.start(n_items, prior, params)
    step, ratings = state.step, state.ratings
    out = []
    for t, (i, j, o) in enumerate(zip(a.tolist(), b.tolist(), outcome.tolist(), strict=True)):
        step(i, j, o)
        if t in wanted:
            out.append(EloPoint(number[t], t + 1, ratings[model]))
    return out


@dataclass(frozen=True)
class Snapshot:
    """The model's Bradley-Terry rating fitted on the arena's first ``arena_votes`` votes."""

    arena_votes: int
    battles: int
    rating: float | None
    low: float | None
    high: float | None
    #: When the snapshot's last vote was recorded (filled by the caller).
    ts: str | None = None


def bt_history(n_items: int, battles, model: int, prior=None, *, prior_weight=None,
               level: float = 0.95, snapshots: int = MAX_SNAPSHOTS) -> list[Snapshot]:  # fmt: skip
    """Bradley-Terry rating and interval of ``model`` every ``ceil(N / snapshots)`` votes.

    Snapshots fall at equal steps of the arena's vote count (not of time: a quiet month
    and a busy day weigh as their votes do, and the last snapshot is the board), from
    the first that includes one of the model's votes. Each fits the pair counts so far,
    accumulated segment by segment, so the cost is ``snapshots`` fits of an
    ``n_items``-square table, not of rows. The fit is the board's
    (:func:`~arena_core.ratings.fit.fit_board`, posterior modes); with ``prior_weight``
    0 it is plain maximum likelihood without intervals (a bootstrap per snapshot
    would cost as many boards).
    """
    a, b, outcome = (np.asarray(x, dtype=np.int64) for x in battles)
    total = len(a)
    mine = np.flatnonzero((a == model) | (b == model))
    if not len(mine):
        return []
    step = math.ceil(total / max(1, snapshots))
    ends = sorted({*range(step, total, step), total})
    counts, start, out = PairCounts.zeros(n_items), 0, []
    for end in ends:
        part = count_pairs(n_items, a[start:end], b[start:end], outcome[start:end])
        counts = PairCounts(counts.wins + part.wins, counts.ties + part.ties,
                            counts.both_bad + part.both_bad)  # fmt: skip
        start = end
        played = int(np.searchsorted(mine, end))
        if not played:
            continue
        fit = fit_board(n_items, counts, prior, prior_weight=prior_weight, level=level, rounds=0)
        out.append(Snapshot(end, played, _finite(fit.rating[model]), _finite(fit.low[model]),
                            _finite(fit.high[model])))  # fmt: skip
    return out


def _finite(x) -> float | None:
    return float(x) if np.isfinite(x) else None


def sides(frame: pd.DataFrame, model: str) -> pd.DataFrame:
    """The model's votes in ``frame`` seen from its side: opponent, side, result, style.

    Columns ``opponent``, ``side`` ('a' or 'b'), ``result`` (one of :data:`RESULTS`)
    and, where the frame has them, the model's own style fields (``duration_s``, ...)
    and the frame's other columns unchanged; rows in the frame's order.
    """
    on_a = frame["model_a"] == model
    mine = frame[on_a | (frame["model_b"] == model)].copy()
    on_a = on_a[mine.index]
    mine["side"] = np.where(on_a, "a", "b")
    mine["opponent"] = np.where(on_a, mine["model_b"], mine["model_a"])
    mine["result"] = [RESULT[(v, s)] for v, s in zip(mine["vote"], mine["side"], strict=True)]
    for name in STYLE_FIELDS:
        col_a, col_b = f"model_a_{name}", f"model_b_{name}"
        if col_a in mine and col_b in mine:
            mine[name] = np.where(on_a, mine[col_a].astype(float), mine[col_b].astype(float))
    return mine


def tally(results: pd.Series) -> dict[str, int]:
    """Battles and each result's count."""
    counts = results.value_counts()
    return {"battles": len(results)} | {r: int(counts.get(r, 0)) for r in RESULTS}


def style_medians(
    frame: pd.DataFrame, model: str
) -> dict[str, tuple[float | None, float | None, int]]:
    """Per style field: the model's median, the arena's median over every side of every
    vote in ``frame``, and how many of the model's votes carry the field (None: unknown)."""
    mine = sides(frame, model)
    out = {}
    for name in STYLE_FIELDS:
        col_a, col_b = f"model_a_{name}", f"model_b_{name}"
        if col_a not in frame or name not in mine:
            out[name] = (None, None, 0)
            continue
        own = mine[name].dropna()
        arena = pd.concat([frame[col_a], frame[col_b]]).astype(float).dropna()
        out[name] = (float(own.median()) if len(own) else None,
                     float(arena.median()) if len(arena) else None, len(own))  # fmt: skip
    return out
