"""Synthetic arenas with known true ratings, shared by every simulation and benchmark.

Outcomes follow the half-win Bradley-Terry model the estimators assume. For a
pair whose true win probability is ``p = sigma(theta_a - theta_b)``, a draw
happens with probability ``d = draw_rate * 4 p (1 - p)`` (``draw_rate`` between
equals, fewer between mismatched models), a decisive win for a with
``p - d / 2`` and for b with ``1 - p - d / 2``. A draw counts half a win to
each side, so a's expected score is exactly ``p``: the maximum-likelihood fit
is consistent for the true ratings, and coverage can be measured against them.
Draws split into ties and both-bad votes by ``both_bad_share``.

All functions are pure, vectorised over votes, and take a
``numpy.random.Generator``: the same seed gives the same votes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena_core.ratings.counts import A_WINS, B_WINS, BOTH_BAD, TIE
from arena_core.ratings.scale import ANCHOR, NATURAL


@dataclass(frozen=True)
class Truth:
    """The hidden state of a synthetic arena."""

    #: True rating of each model, in points on the 1000/400 scale.
    ratings: np.ndarray
    #: Probability that two equal models draw (tie or both bad).
    draw_rate: float = 0.1
    #: Share of draws voted "both bad" rather than "tie".
    both_bad_share: float = 0.3

    def __post_init__(self):
        if not 0.0 <= self.draw_rate <= 0.5:
            raise ValueError(f"draw_rate must be in [0, 0.5], got {self.draw_rate}")
        if not 0.0 <= self.both_bad_share <= 1.0:
            raise ValueError(f"both_bad_share must be in [0, 1], got {self.both_bad_share}")

    @property
    def n_items(self) -> int:
        return len(self.ratings)

    def win_probability(self, a, b) -> np.ndarray:
        """Expected score of ``a`` against ``b`` (a draw counting half)."""
        diff = (np.asarray(self.ratings)[a] - np.asarray(self.ratings)[b]) * NATURAL
        return 1.0 / (1.0 + np.exp(-diff))

    def outcome_probabilities(self, a, b) -> np.ndarray:
        """``(..., 4)`` probabilities of a-wins, b-wins, tie, both-bad (outcome-code order)."""
        p = self.win_probability(a, b)
        draw = self.draw_rate * 4.0 * p * (1.0 - p)
        out = np.empty((*np.shape(p), 4))
        out[..., A_WINS] = p - draw / 2.0
        out[..., B_WINS] = 1.0 - p - draw / 2.0
        out[..., TIE] = draw * (1.0 - self.both_bad_share)
        out[..., BOTH_BAD] = draw * self.both_bad_share
        return out

    def sample(self, a, b, rng: np.random.Generator) -> np.ndarray:
        """One outcome code per (a, b) pair, drawn from :meth:`outcome_probabilities`."""
        probs = self.outcome_probabilities(np.atleast_1d(a), np.atleast_1d(b))
        cumulative = probs.cumsum(axis=-1)
        u = rng.random(cumulative.shape[:-1])[..., None]
        return np.minimum((u >= cumulative).sum(axis=-1), 3).astype(np.int64)


def evenly_spread(n_items: int, spread: float, center: float = ANCHOR) -> np.ndarray:
    """``n_items`` ratings evenly spaced over ``spread`` points, centred on ``center``."""
    return center + np.linspace(-spread / 2.0, spread / 2.0, n_items)


def normal_spread(
    n_items: int, sd: float, rng: np.random.Generator, center: float = ANCHOR
) -> np.ndarray:
    """``n_items`` ratings drawn from a normal law with standard deviation ``sd``, mean-centred."""
    r = rng.normal(0.0, sd, n_items)
    return center + r - r.mean()


def uniform_pairs(
    n_items: int, n_votes: int, rng: np.random.Generator, candidates=None
) -> tuple[np.ndarray, np.ndarray]:
    """``n_votes`` pairs drawn uniformly among distinct pairs of ``candidates`` (default all)."""
    idx = np.arange(n_items) if candidates is None else np.asarray(candidates, dtype=np.int64)
    k = len(idx)
    if k < 2:
        raise ValueError("uniform pairs need at least two models")
    first = rng.integers(0, k, n_votes)
    second = (first + rng.integers(1, k, n_votes)) % k
    return idx[first], idx[second]


#: Slack of :func:`quota_pairs`'s release test for floating-point rounding of ``share * t``;
#: far below any real lead (some pair is at least 1/n pairs behind its quota at every vote).
_ROUNDING = 1e-9


def quota_pairs(shares, n_votes: int) -> tuple[np.ndarray, np.ndarray]:
    """``n_votes`` pairs that follow ``shares`` as closely as whole votes can: no randomness.

    ``shares[i, j]`` (i < j; the rest is ignored) is the share of votes pair
    (i, j) should get. After any number of votes ``t`` every pair is less than one
    vote from its quota ``share * t``: the design itself, without the sampling noise
    of drawing pairs at random (what a bound on a fixed split of the votes measures).

    Giving each vote to the pair furthest behind its quota does not keep that
    promise (shares 1, 1, 1, 1, 7, 7 leave a pair 1.06 votes off after 31 votes).
    Instead each pair's next vote is a unit job with a window: released once the
    quota passes the votes it has (else it would run a vote ahead), due when the
    quota reaches one more than it has (else it would fall a vote behind). Earliest
    deadline first meets every window whenever some schedule does (unit jobs), and
    one does: Tijdeman's chairman assignment theorem keeps every pair within
    ``1 - 1/(2n - 2)`` of its quota for ``n`` pairs.
    """
    upper = np.triu(np.asarray(shares, dtype=float), 1)
    i, j = np.nonzero(upper > 0)
    if len(i) == 0 or np.any(upper < 0):
        raise ValueError("shares must be non-negative with at least one pair above the diagonal")
    share = upper[i, j] / upper[i, j].sum()
    met = np.zeros(len(share))
    picked = np.empty(n_votes, dtype=np.int64)
    for t in range(n_votes):
        # Released only when the quota is past the votes by more than rounding: with shares
        # 6/34 at 85 votes the quota is 15 exactly, yet computed as 15.000000000000002, and a
        # 16th vote then put the pair a full vote ahead (hypothesis found it).
        released = share * (t + 1) > met + _ROUNDING
        deadline = np.where(released, (met + 1) / share, np.inf)
        k = int(np.argmin(deadline))  # the shares sum to 1, so some pair is always released
        met[k] += 1
        picked[t] = k
    return i[picked], j[picked]


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties), without scipy."""
    rx, ry = _ranks(np.asarray(x, float)), _ranks(np.asarray(y, float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    return float((rx * ry).sum() / denom) if denom > 0 else float("nan")


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=float)
    # Average the ranks of tied values.
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return (sums / counts)[inverse]


def first_sustained(values, threshold: float, steps) -> int | None:
    """The first step from which ``values`` stay at or above ``threshold`` (None if never).

    ``values[k]`` is measured after ``steps[k]`` votes; "sustained" means every
    later measurement holds too, the reading the matchmaking issue asks for.
    """
    values = np.asarray(values, float)
    below = np.flatnonzero(~(values >= threshold))
    if len(below) == 0:
        return int(steps[0])
    last = below[-1]
    return int(steps[last + 1]) if last + 1 < len(steps) else None
