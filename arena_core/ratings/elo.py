"""Sequential Elo, replayed in vote order.

This is the rating a visitor sees move after their vote. Each model starts at
its prior rating; after a vote between a and b with score ``s`` for a (1, 0, or
0.5 for a tie or both-bad),

    E   = 1 / (1 + 10 ** ((R_b - R_a) / 400))
    R_a += K(n_a) * (s - E)
    R_b -= K(n_b) * (s - E)

where ``n`` is the number of battles the model had played before this one and
``K(n) = K_MIN + (K_MAX - K_MIN) * K_HALF / (K_HALF + n)``: new models move fast,
established ones slowly. Unlike Bradley-Terry, the result depends on vote order,
so replays follow the log's order (``ts``, then ``vote_id``).

The batch replay and the one-vote step run the same arithmetic in the same
order, so a live app that applies votes one at a time ends bit-identical to a
replay of its log.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass, field

import numpy as np

from arena_core.ratings import elo_kernel
from arena_core.ratings.counts import SCORE_A
from arena_core.ratings.scale import ANCHOR, NATURAL

log = logging.getLogger(__name__)

#: Replays of at least this many votes use the compiled loop (:mod:`.elo_kernel`). Compiling
#: it in a fresh process (llvmlite's import and the compile) takes 0.05 to 0.09 s on the
#: 2-core bench machine, what the plain loop (0.25 to 0.3 s per million) spends on about
#: 200,000 votes; measured in fresh processes, 100,000 votes: 0.05 s plain, 0.08 s compiled;
#: 300,000: 0.09 s and 0.06 s; a million: 0.30 s and 0.05 s.
COMPILED_FROM = 200_000
#: Once the loop is compiled in this process (the Space replays again and again), a call
#: costs microseconds: from this many votes it is used then.
COMPILED_WHEN_LOADED_FROM = 1_000
#: Votes converted to Python lists at a time by the plain-Python replay (bounds memory).
_CHUNK = 1 << 20


@dataclass(frozen=True)
class EloParams:
    """The K schedule of sequential Elo."""

    #: K of a model with no battles yet: new models find their level fast.
    k_max: float = 48.0
    #: K that a model with many battles approaches: established ratings move slowly.
    k_min: float = 12.0
    #: Battles after which K is halfway between k_max and k_min.
    k_half: float = 15.0

    def k(self, battles: int) -> float:
        return self.k_min + (self.k_max - self.k_min) * self.k_half / (self.k_half + battles)


@dataclass(frozen=True)
class EloStep:
    """Ratings of both models before and after one vote."""

    before_a: float
    before_b: float
    after_a: float
    after_b: float


@dataclass
class EloState:
    """Current sequential-Elo ratings and battle counts of ``n_items`` models.

    Mutable on purpose: the live app applies one vote at a time with :meth:`step`.
    """

    ratings: list[float]
    battles: list[int]
    params: EloParams = field(default_factory=EloParams)

    @classmethod
    def start(cls, n_items: int, prior=None, params: EloParams | None = None) -> EloState:
        ratings = [ANCHOR] * n_items if prior is None else [float(r) for r in prior]
        if len(ratings) != n_items:
            raise ValueError(f"prior has {len(ratings)} ratings for {n_items} models")
        return cls(ratings=ratings, battles=[0] * n_items, params=params or EloParams())

    def step(self, a: int, b: int, outcome: int) -> EloStep:
        """Apply one vote (outcome code from :mod:`~arena_core.ratings.counts`)."""
        if a == b:
            raise ValueError("a model cannot battle itself")
        r, n, k = self.ratings, self.battles, self.params.k
        ra, rb = r[a], r[b]
        delta = SCORE_A[outcome] - 1.0 / (1.0 + math.exp((rb - ra) * NATURAL))
        r[a] = ra + k(n[a]) * delta
        r[b] = rb - k(n[b]) * delta
        n[a] += 1
        n[b] += 1
        return EloStep(ra, rb, r[a], r[b])

    def as_array(self) -> np.ndarray:
        return np.array(self.ratings, dtype=float)


def sequential_elo(
    n_items: int,
    battles: tuple[np.ndarray, np.ndarray, np.ndarray],
    prior=None,
    params: EloParams | None = None,
) -> EloState:
    """Replay votes ``(a, b, outcome)`` (integer arrays, in vote order) from the prior.

    Parameters
    ----------
    n_items : int
        Number of models; indices in ``battles`` are ``0 .. n_items - 1``.
    battles : tuple of arrays
        Model a, model b and outcome code of each vote, in replay order.
    prior : array_like, optional
        Starting rating of each model (default: the anchor, 1000).
    params : EloParams, optional
        The K schedule.

    Returns
    -------
    EloState
        Final ratings and battle counts, ready for further :meth:`EloState.step` calls.
    """
    state = EloState.start(n_items, prior, params)
    a, b, outcome = (np.asarray(x) for x in battles)
    if len(a) and np.any(a == b):
        raise ValueError("a model cannot battle itself")
    if len(a) and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n_items):
        raise ValueError(f"model index out of range 0..{n_items - 1}")
    if len(outcome) and (outcome.min() < 0 or outcome.max() >= len(SCORE_A)):
        raise ValueError("outcome codes must be 0 (a wins), 1 (b wins), 2 (tie) or 3 (both bad)")
    played, k_table = _battles_and_k(state, a, b)
    compiled = compiled_replay() if _worth_compiling(len(a)) else None
    if compiled is not None:
        ratings = np.array(state.ratings, dtype=float)
        compiled(ratings, np.zeros(n_items, np.int64), k_table, a.astype(np.int64), b.astype(np.int64),
                 outcome.astype(np.int64), np.array(SCORE_A), NATURAL)  # fmt: skip
        state.ratings = ratings.tolist()
    else:
        _replay_python(state.ratings, k_table.tolist(), a, b, outcome)
    state.battles = played.tolist()
    return state


def ratings_after(
    n_items: int,
    battles: tuple[np.ndarray, np.ndarray, np.ndarray],
    ends,
    prior=None,
    params: EloParams | None = None,
) -> np.ndarray | None:
    """The ratings after each prefix ``battles[:end]`` of the replay, ``end`` in ``ends``
    (increasing), one row per end; bit-identical to :meth:`EloState.step` one vote at a
    time, by the compiled loop run segment after segment with its state carried over. None
    where llvmlite cannot compile it (the caller steps through the votes instead).

    A model page's Elo history stepped a million votes through :meth:`EloState.step` in
    Python (2 s of its 5.4 s); segments cost one call each (at most 300 for a page)."""
    replay = compiled_replay()
    if replay is None:
        return None
    state = EloState.start(n_items, prior, params)
    a, b, outcome = (np.ascontiguousarray(x, dtype=np.int64) for x in battles)
    if len(a) and np.any(a == b):
        raise ValueError("a model cannot battle itself")
    _, k_table = _battles_and_k(state, a, b)
    ratings, count = np.array(state.ratings, dtype=float), np.zeros(n_items, np.int64)
    scores, out, start = np.array(SCORE_A), [], 0
    for end in ends:
        if not start <= end <= len(a):
            raise ValueError("ends must be increasing and within the replay")
        replay(ratings, count, k_table, a[start:end], b[start:end], outcome[start:end], scores,
               NATURAL)  # fmt: skip
        out.append(ratings.copy())
        start = end
    return np.array(out).reshape(len(out), n_items)


def _battles_and_k(state: EloState, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each model's battles in the votes ``(a, b)``, and the K table of ``state``'s schedule
    long enough for them (entry n: the K of a model's battle after n played)."""
    played = np.bincount(np.concatenate([a, b]), minlength=len(state.ratings)).astype(np.int64)
    return played, state.params.k(np.arange(played.max(initial=0) + 1, dtype=float))


# The replay loop is the hot path (ten million votes). Both versions run the same
# IEEE operations in the same order as EloState.step, so the live app, a replay
# compiled and one without all end with identical floats (tests check it).
# K comes from a table built by EloParams.k on a numpy array, which rounds like
# the Python int path of EloState.step.


def replay_loop(ratings, played, k_table, a, b, outcome, scores, natural):
    """The loop :mod:`.elo_kernel` compiles, in Python: its reference, and the streamed
    replay's loop where llvmlite is missing."""
    for t in range(a.shape[0]):
        i = a[t]
        j = b[t]
        ri = ratings[i]
        rj = ratings[j]
        delta = scores[outcome[t]] - 1.0 / (1.0 + math.exp((rj - ri) * natural))
        ratings[i] = ri + k_table[played[i]] * delta
        ratings[j] = rj - k_table[played[j]] * delta
        played[i] += 1
        played[j] += 1


def _worth_compiling(votes: int) -> bool:
    """Whether the compiled loop would finish first, its compilation included (both loops
    give the same floats, so this decides speed only)."""
    return votes >= COMPILED_FROM or (elo_kernel.compiled() and votes >= COMPILED_WHEN_LOADED_FROM)


def compiled_replay():
    """The compiled loop (:func:`.elo_kernel.replay`, compiled on first use), or None where
    llvmlite cannot compile it or its floats differ from the plain loop's on a fixed set of
    votes (:func:`_compiled_agrees`): the plain loop then runs, to the same floats."""
    return elo_kernel.replay if elo_kernel.available() and _compiled_agrees() else None


@functools.cache
def _compiled_agrees() -> bool:
    """Whether the compiled loop ends with the plain loop's floats on 2,000 fixed votes among
    seven models spread over 1,400 points (about 10 ms, once per process). Both call the C
    library's ``exp``; on a platform where ``math.exp`` is another implementation, which
    may round differently, the compiled loop is not used and replays stay bit-identical to
    the live app's steps."""
    rng = np.random.default_rng(20261202)
    a = rng.integers(0, 7, 2000)
    b = (a + rng.integers(1, 7, 2000)) % 7
    outcome = rng.integers(0, 4, 2000)
    start = np.linspace(300.0, 1700.0, 7)
    k_table = EloParams().k(np.arange(2001, dtype=float))
    runs = []
    for loop in (elo_kernel.replay, replay_loop):
        ratings, played = start.copy(), np.zeros(7, np.int64)
        loop(ratings, played, k_table, a, b, outcome, np.array(SCORE_A), NATURAL)
        runs.append((ratings.tolist(), played.tolist()))
    if runs[0] != runs[1]:
        log.warning("the compiled Elo loop differs from the plain one here: not used")
    return runs[0] == runs[1]


def _replay_python(r: list, k_table: list, a, b, outcome) -> None:
    """The same loop in plain Python (0.25 to 0.5 s per million votes): below
    :data:`COMPILED_FROM`, or where llvmlite is missing.

    Each model walks its own iterator over the K table, so the loop keeps no
    battle counters; votes become Python lists a chunk at a time.
    """
    next_k = [iter(k_table).__next__ for _ in range(len(r))]
    exp, nat, score = math.exp, NATURAL, SCORE_A
    for start in range(0, len(a), _CHUNK):
        rows = slice(start, start + _CHUNK)
        for i, j, o in zip(a[rows].tolist(), b[rows].tolist(), outcome[rows].tolist(), strict=True):
            ri, rj = r[i], r[j]
            delta = score[o] - 1.0 / (1.0 + exp((rj - ri) * nat))
            r[i] = ri + next_k[i]() * delta
            r[j] = rj - next_k[j]() * delta
