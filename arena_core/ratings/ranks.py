"""Ranks a board can defend: bands of plausible positions, only within a comparison component.

A model's rank is a band ``best``–``worst``: ``best`` is 1 + the number of
models whose interval lies wholly above its own (Chatbot Arena's "rank (UB)"),
``worst`` is the number of models in its component minus those whose interval
lies wholly below. Two models whose intervals overlap therefore always have
bands that share a position: neither is ranked above the other on evidence the
board does not have. (Non-overlapping 95% intervals are a conservative test of
a difference: about 99.4% for equal widths.)

Ranks compare models of the same component only: across components ratings
rest on the prior alone. Without intervals (sequential Elo, or none asked for)
the band is the ordinal position by rating.
"""

from __future__ import annotations

import numpy as np


def rank_bands(rating, low, high, group) -> tuple[np.ndarray, np.ndarray]:
    """Best and worst plausible rank of each model within its group.

    Parameters
    ----------
    rating : array_like
        Point ratings; NaN for a model that is not ranked; +inf (-inf) for a model whose
        rating is unbounded above (below): not ranked itself, but above (below) the others
        of its group by its one-sided bound, or by position without intervals.
    low, high : array_like or None
        Interval bounds (NaN: unbounded on that side); None for no intervals.
    group : array_like of int
        Component of each model; negative for a model that is not ranked.

    Returns
    -------
    best, worst : numpy.ndarray of int
        1-based ranks; 0 for models that are not ranked.
    """
    rating = np.asarray(rating, dtype=float)
    group = np.asarray(group)
    compared = (group >= 0) & ~np.isnan(rating)  # the unbounded ones too: they are above or below
    ranked = compared & np.isfinite(rating)
    same = compared[:, None] & compared[None, :] & (group[:, None] == group[None, :])
    if low is None or high is None:
        # Ordinal: 1 + models of the group strictly above, ties broken by index.
        n = len(rating)
        above = (rating[None, :] > rating[:, None]) | (
            (rating[None, :] == rating[:, None]) & (np.arange(n)[None, :] < np.arange(n)[:, None])
        )
        best = 1 + (same & above).sum(axis=1)
        worst = best.copy()
    else:
        lo = np.where(np.isnan(low), -np.inf, np.asarray(low, dtype=float))
        hi = np.where(np.isnan(high), np.inf, np.asarray(high, dtype=float))
        best = 1 + (same & (lo[None, :] > hi[:, None])).sum(axis=1)
        worst = same.sum(axis=1) - (same & (hi[None, :] < lo[:, None])).sum(axis=1)
    return np.where(ranked, best, 0), np.where(ranked, worst, 0)
