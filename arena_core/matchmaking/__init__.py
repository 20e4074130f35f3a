"""Matchmaking: which two models the next battle pits against each other.

* :mod:`~arena_core.matchmaking.sampler` draws the pair: a pure, seeded function of a
  fit snapshot (ratings, their covariance, pair counts), the recent battles and the
  registry's rules;
* :mod:`~arena_core.matchmaking.value` is what each pair's next vote is worth to the
  ranking (the chance it is misordered, the expected Spearman's rho) and to the
  intervals.
"""

from arena_core.matchmaking.sampler import (
    MatchParams,
    NoPairError,
    Recent,
    Rules,
    Snapshot,
    draw_pair,
    fisher_covariance,
    fit_snapshot,
    interval_widths,
    snapshot,
)

__all__ = [
    "MatchParams",
    "NoPairError",
    "Recent",
    "Rules",
    "Snapshot",
    "draw_pair",
    "fisher_covariance",
    "fit_snapshot",
    "interval_widths",
    "snapshot",
]
