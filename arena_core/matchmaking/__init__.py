"""Matchmaking: which two models the next battle pits against each other.

* :mod:`~arena_core.matchmaking.sampler` draws the pair: a pure, seeded function of a
  fit snapshot (ratings, their covariance, pair counts), the recent battles and the
  registry's rules;
* :mod:`~arena_core.matchmaking.refit` fits the board for it every ``refit_votes`` votes
  (the posterior, and the pairs' covariance as the inverse Fisher information);
* :mod:`~arena_core.matchmaking.value` is what each pair's next vote is worth to the
  ranking (the chance it is misordered, the expected Spearman's rho) and to the
  intervals;
* :mod:`~arena_core.matchmaking.track` folds the votes since the fit into the snapshot
  (``MatchParams.track_votes``, off: measured, it saves no votes).
"""

from arena_core.matchmaking.refit import fisher_covariance, fit_snapshot, interval_widths
from arena_core.matchmaking.sampler import (
    MatchParams,
    NoPairError,
    Recent,
    Rules,
    Snapshot,
    draw_pair,
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
