"""The (pair, shared prompt) entries of a complementarity analysis, scored in bulk.

:func:`~arena_core.analysis.complementarity.complementarity` scores every pair of
models on every prompt they share, once on the observed votes and a thousand times on
redrawn ones. :class:`SharedPrompts` lays the entries out flat, grouped by pair, so
that one replicate (or a block of them) costs two ``bincount`` over the votes and a
gather over the entries, whatever the number of pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SharedPrompts:
    """The (pair, shared prompt) entries, grouped by pair, and how to score them.

    For entry e of pair (i, j) on prompt p: ``n_i[e]`` and ``n_j[e]`` count each model's
    votes on p against third models; ``cell[e]`` indexes the i-vs-j votes on p
    (``n_cells`` if none); ``side`` is +1 when a vote's side a is its pair's lower index.
    """

    n_prompts: int
    pair_i: np.ndarray
    pair_j: np.ndarray
    starts: np.ndarray
    stops: np.ndarray
    e_i: np.ndarray
    e_j: np.ndarray
    e_p: np.ndarray
    cell: np.ndarray
    n_i: np.ndarray
    n_j: np.ndarray
    vote_cell: np.ndarray
    side: np.ndarray
    n_cells: int
    n_items: int
    too_few: int
    #: Flat (model, prompt) cell of each vote's side a and side b.
    ia: np.ndarray
    ib: np.ndarray

    @property
    def n_pairs(self) -> int:
        return len(self.pair_i)

    @classmethod
    def build(cls, n_items: int, votes, counts: np.ndarray, min_overlap: int):
        n_p = votes.n_prompts
        lo, hi = np.minimum(votes.a, votes.b), np.maximum(votes.a, votes.b)
        keys, vote_cell, direct = np.unique((lo * n_items + hi) * n_p + votes.prompt,
                                            return_inverse=True, return_counts=True)  # fmt: skip
        played = np.flatnonzero(counts.sum(axis=1) > 0)
        found: dict[str, list] = {
            k: [] for k in ("i", "j", "e_i", "e_j", "e_p", "cell", "n_i", "n_j")
        }
        too_few = 0
        for x, i in enumerate(played):
            for j in played[x + 1 :]:
                ps = np.flatnonzero((counts[i] > 0) & (counts[j] > 0))
                key = (i * n_items + j) * n_p + ps
                pos = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
                hit = keys[pos] == key
                met = np.where(hit, direct[pos], 0)
                n_i, n_j = counts[i, ps] - met, counts[j, ps] - met
                keep = (n_i > 0) & (n_j > 0)
                if keep.sum() < min_overlap:
                    too_few += 1
                    continue
                m = int(keep.sum())
                for name, value in (("i", [i]), ("j", [j]), ("e_i", np.full(m, i)),
                                    ("e_j", np.full(m, j)), ("e_p", ps[keep]),
                                    ("cell", np.where(hit, pos, len(keys))[keep]),
                                    ("n_i", n_i[keep]), ("n_j", n_j[keep])):  # fmt: skip
                    found[name].append(np.asarray(value, dtype=np.int64))
        cat = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in found.items()}
        stops = np.cumsum([len(v) for v in found["e_i"]], dtype=np.int64)
        starts = stops - np.array([len(v) for v in found["e_i"]], dtype=np.int64)
        return cls(n_p, cat["i"], cat["j"], starts, stops, cat["e_i"], cat["e_j"], cat["e_p"],
                   cat["cell"], cat["n_i"], cat["n_j"], vote_cell.ravel(),
                   np.where(votes.a == lo, 1.0, -1.0), len(keys), n_items, too_few,
                   votes.a * n_p + votes.prompt, votes.b * n_p + votes.prompt)  # fmt: skip

    def pair_scores(self, residual: np.ndarray, rest: np.ndarray):
        """Scores of each entry's two models from third-party votes, per replicate row.

        ``residual`` is (replicates, votes): side a's outcome minus its expectation;
        ``rest`` is :func:`rest_of_field`.
        """
        reps, n_p = residual.shape[0], self.n_prompts
        cells = self.n_items * n_p
        row = np.arange(reps)[:, None]
        totals = (_bincount(row * cells + self.ia, residual, reps * cells)
                  - _bincount(row * cells + self.ib, residual, reps * cells)).reshape(reps, cells)  # fmt: skip
        width = self.n_cells + 1  # a last, empty cell for entries whose models never met there
        direct = _bincount(row * width + self.vote_cell, residual * self.side,
                           reps * width).reshape(reps, width)  # fmt: skip
        d = direct[:, self.cell]
        s_i = rest[self.e_i, self.e_j] + (totals[:, self.e_i * n_p + self.e_p] - d) / self.n_i
        s_j = rest[self.e_j, self.e_i] + (totals[:, self.e_j * n_p + self.e_p] + d) / self.n_j
        return s_i, s_j

    def gain_terms(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two terms of every pair's naive gain, ``mean|d| / 2`` and ``|mean d| / 2`` (the
        gain is their difference), per replicate row of entry differences ``d``."""
        size = (self.stops - self.starts).astype(float)
        mean_abs = np.add.reduceat(np.abs(d), self.starts, axis=1) / size
        mean = np.add.reduceat(d, self.starts, axis=1) / size
        return mean_abs / 2.0, np.abs(mean) / 2.0


def _bincount(index: np.ndarray, weights: np.ndarray, length: int) -> np.ndarray:
    return np.bincount(index.ravel(), np.broadcast_to(weights, index.shape).ravel(), length)
