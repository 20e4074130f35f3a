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


def own_battles(battle: np.ndarray) -> np.ndarray:
    """Battle codes in which each vote without a battle id (code -1) is a battle of its own:
    the clusters of every fit that counts a battle once (here, the judges' sandwich
    variance, the style board's weights)."""
    battle = np.asarray(battle, dtype=np.int64)
    unknown = battle < 0
    return np.where(unknown, battle.max(initial=0) + 1 + np.cumsum(unknown), battle)


def battle_counts(n_items: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray,
                  battle: np.ndarray, weights: np.ndarray | None = None) -> PairCounts:  # fmt: skip
    """Pair counts in which each battle is one vote, however many verdicts it got.

    A judge gives a battle two verdicts, the clips in both orders, and a deterministic
    one (pitch range, WER) gives the same decision twice: counted as two votes, its
    board's intervals were 1/sqrt(2) too narrow. Here a battle's votes (same ``battle``
    code and pair; -1 is a battle of its own) become one vote worth their mean weight,
    scored their mean score ``m`` for the pair's lower-index model: a win for the side
    ahead worth ``|2m - 1|`` and a tie for the rest (the split with the score's least
    variance; exact when ``m`` is 0, 1/2 or 1). Mirrored verdicts are one battle's
    win; independent verdicts that split are one tie, and the fitted dispersion
    (:func:`~arena_core.ratings.posterior.dispersion`), which then falls below 1, gives
    such a board back the information of its independent verdicts. Battles of one vote
    are counted as :func:`count_pairs` counts them (both-bad kept apart from ties).
    Always floats.
    """
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    outcome, battle = np.asarray(outcome, dtype=np.int64), np.asarray(battle, dtype=np.int64)
    w = np.ones(len(a)) if weights is None else np.asarray(weights, dtype=float)
    low, high = np.minimum(a, b), np.maximum(a, b)
    keys = np.stack([own_battles(battle), low, high], axis=1)
    cluster, size = np.unique(keys, axis=0, return_inverse=True, return_counts=True)[1:]
    cluster = cluster.ravel()
    single = size[cluster] == 1
    plain = count_pairs(n_items, a[single], b[single], outcome[single], w[single])
    counts = PairCounts(*(getattr(plain, f).astype(float) for f in ("wins", "ties", "both_bad")))
    many = ~single
    if not many.any():
        return counts
    score = np.asarray(SCORE_A)[outcome[many]]
    score = np.where(a[many] == low[many], score, 1.0 - score)  # the lower-index model's
    first, group = np.unique(cluster[many], return_index=True, return_inverse=True)[1:]
    group = group.ravel()
    total = np.bincount(group, w[many])
    weight = total / np.bincount(group)
    mean = np.bincount(group, w[many] * score) / np.where(total > 0, total, 1.0)
    lo, hi = low[many][first], high[many][first]
    np.add.at(counts.wins, (lo, hi), weight * np.maximum(2.0 * mean - 1.0, 0.0))
    np.add.at(counts.wins, (hi, lo), weight * np.maximum(1.0 - 2.0 * mean, 0.0))
    tie = weight * (1.0 - np.abs(2.0 * mean - 1.0))
    np.add.at(counts.ties, (lo, hi), tie)
    np.add.at(counts.ties, (hi, lo), tie)
    return counts


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
