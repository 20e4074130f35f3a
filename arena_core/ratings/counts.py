"""Aggregated pair counts: the sufficient statistics of a set of votes.

Bradley-Terry and its bootstrap only need, for each pair of models, how often
each side won and how often they drew; a million votes between twenty models
collapse into a few hundred numbers. Everything here works on integer model
indices; names are mapped at the edge (``arena_core.leaderboard``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Outcome codes of a vote, from model a's side.
A_WINS, B_WINS, TIE, BOTH_BAD = 0, 1, 2, 3
#: Score of model a for each outcome code: ties and both-bad count half.
SCORE_A = (1.0, 0.0, 0.5, 0.5)
#: Vote strings of the public record, indexed by outcome code.
OUTCOME_NAMES = ("a", "b", "tie", "both_bad")
#: Outcome code of each vote name.
OUTCOME_CODES = {name: code for code, name in enumerate(OUTCOME_NAMES)}


@dataclass(eq=False)
class PairCounts:
    """Per-pair tallies of ``n_items`` models.

    ``wins[i, j]`` is how often i beat j; ``ties`` and ``both_bad`` are
    symmetric. Counts are integers, or floats when votes carry weights. The arrays are updated in place by :meth:`add` (the live app adds
    one vote at a time), so treat a ``PairCounts`` you did not create as read-only.
    """

    wins: np.ndarray
    ties: np.ndarray
    both_bad: np.ndarray

    @classmethod
    def zeros(cls, n_items: int) -> PairCounts:
        def z():
            return np.zeros((n_items, n_items), dtype=np.int64)

        return cls(z(), z(), z())

    @property
    def n_items(self) -> int:
        return self.wins.shape[0]

    def add(self, a: int, b: int, outcome: int) -> None:
        """Count one vote between models ``a`` and ``b``."""
        if outcome == A_WINS:
            self.wins[a, b] += 1
        elif outcome == B_WINS:
            self.wins[b, a] += 1
        else:
            table = self.ties if outcome == TIE else self.both_bad
            table[a, b] += 1
            table[b, a] += 1

    def copy(self) -> PairCounts:
        return PairCounts(self.wins.copy(), self.ties.copy(), self.both_bad.copy())

    def battles(self) -> np.ndarray:
        """Matrix of battle counts between each pair (symmetric)."""
        return self.wins + self.wins.T + self.ties + self.both_bad

    def tallies(self) -> dict[str, np.ndarray]:
        """Per-model totals: battles, wins, losses, ties, both_bad."""
        return {
            "battles": self.battles().sum(axis=1),
            "wins": self.wins.sum(axis=1),
            "losses": self.wins.sum(axis=0),
            "ties": self.ties.sum(axis=1),
            "both_bad": self.both_bad.sum(axis=1),
        }

    def total(self) -> float:
        """Number of votes (sum of their weights for weighted counts)."""
        total = self.wins.sum() + np.triu(self.ties).sum() + np.triu(self.both_bad).sum()
        return int(total) if np.issubdtype(self.wins.dtype, np.integer) else float(total)


def count_pairs(n_items: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray,
                weights: np.ndarray | None = None) -> PairCounts:  # fmt: skip
    """Aggregate votes given as parallel integer arrays (model a, model b, outcome code).

    With ``weights`` (one per vote, e.g. a time decay) the tallies are sums of
    weights, as floats; without, integer counts.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.int64)
    cells = n_items * n_items
    flat = a * n_items + b
    if weights is None:  # one bincount over (cell, outcome): a single pass over the votes
        both = np.bincount(flat * 4 + outcome, minlength=cells * 4).reshape(n_items, n_items, 4)
        per = [both[:, :, k] for k in range(4)]
    else:  # one weighted bincount per outcome over the flattened (a, b) cell
        per = []
        for k in range(4):
            chosen = outcome == k
            w = np.asarray(weights, dtype=float)[chosen]
            per.append(
                np.bincount(flat[chosen], weights=w, minlength=cells).reshape(n_items, n_items)
            )
    wins = per[A_WINS] + per[B_WINS].T
    return PairCounts(
        wins=wins, ties=per[TIE] + per[TIE].T, both_bad=per[BOTH_BAD] + per[BOTH_BAD].T
    )


@dataclass(frozen=True)
class PairData:
    """The pairs that met at least once, as flat arrays for the estimators.

    For pair ``p`` between ``i[p] < j[p]``: ``win_i[p]`` and ``win_j[p]`` are
    decisive wins, ``draws[p]`` ties plus both-bad (each worth half a win to
    each side in the likelihood).
    """

    i: np.ndarray
    j: np.ndarray
    win_i: np.ndarray
    win_j: np.ndarray
    draws: np.ndarray

    @classmethod
    def from_counts(cls, counts: PairCounts) -> PairData:
        draws = counts.ties + counts.both_bad
        i, j = np.triu_indices(counts.n_items, k=1)
        win_i, win_j, d = counts.wins[i, j], counts.wins[j, i], draws[i, j]
        met = (win_i + win_j + d) > 0
        return cls(i[met], j[met], win_i[met], win_j[met], d[met])

    @property
    def n_pairs(self) -> int:
        return len(self.i)
