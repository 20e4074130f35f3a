"""Rating math over integer-indexed models: no I/O, names are mapped by the caller.

Every estimator takes ``(n_items, data, prior=None, params=None)``: sequential Elo
takes votes in order, Bradley-Terry and its bootstrap take aggregated counts.
"""

from arena_core.ratings.bt import (
    Bootstrap,
    BTParams,
    ConvergenceError,
    NotIdentifiableError,
    bootstrap_bradley_terry,
    bradley_terry,
)
from arena_core.ratings.counts import PairCounts, count_pairs
from arena_core.ratings.elo import EloParams, EloState, EloStep, sequential_elo
from arena_core.ratings.scale import ANCHOR, SCALE, expected_score

__all__ = [
    "ANCHOR",
    "SCALE",
    "BTParams",
    "Bootstrap",
    "ConvergenceError",
    "EloParams",
    "EloState",
    "EloStep",
    "NotIdentifiableError",
    "PairCounts",
    "bootstrap_bradley_terry",
    "bradley_terry",
    "count_pairs",
    "expected_score",
    "sequential_elo",
]
