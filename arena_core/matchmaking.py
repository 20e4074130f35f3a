"""Which two models fight next.

A simple sampler that still spends votes where they inform most: every pair
of available models can be drawn, with weight ``1 / sqrt(1 + battles so far
between them)``, so pairs that rarely met come up more often and a new model
gets its first battles quickly. Which side is "A" is a coin flip, so position
bias cannot favour any model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class NoPairError(ValueError):
    """Fewer than two models can be paired right now."""


def draw_pair(
    candidates: Sequence[int], battles: np.ndarray, rng: np.random.Generator
) -> tuple[int, int]:
    """Two distinct model indices from ``candidates``, in display order (A, B).

    Parameters
    ----------
    candidates : sequence of int
        Indices of the models that can be paired now (available, not paused,
        speaking the prompt's language).
    battles : (n, n) array
        Battles so far between each pair of models.
    rng : numpy.random.Generator
    """
    idx = np.asarray(sorted(set(candidates)), dtype=np.int64)
    if len(idx) < 2:
        raise NoPairError("fewer than two models are available")
    i, j = np.triu_indices(len(idx), k=1)
    weights = 1.0 / np.sqrt(1.0 + battles[idx[i], idx[j]])
    k = rng.choice(len(i), p=weights / weights.sum())
    a, b = int(idx[i[k]]), int(idx[j[k]])
    return (a, b) if rng.random() < 0.5 else (b, a)
