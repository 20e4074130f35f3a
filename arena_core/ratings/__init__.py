"""Rating math over integer-indexed models: no I/O, names are mapped by the caller.

Every estimator takes ``(n_items, data, prior=None, params=None)``: sequential Elo
takes votes in order, Bradley-Terry, its bootstrap and its posterior take
aggregated counts, the covariate and style fits take votes as rows. :func:`fit_board` chooses among them as a board's settings say.
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
from arena_core.ratings.covariates import (
    CovariateFit,
    CovariateParams,
    VoteRows,
    covariate_bradley_terry,
)
from arena_core.ratings.decay import decay_weights
from arena_core.ratings.elo import EloParams, EloState, EloStep, sequential_elo
from arena_core.ratings.fit import BoardFit, fit_board
from arena_core.ratings.graph import components, split_unbounded
from arena_core.ratings.posterior import Posterior, PosteriorParams, posterior_bradley_terry
from arena_core.ratings.ranks import rank_bands
from arena_core.ratings.scale import ANCHOR, SCALE, expected_score
from arena_core.ratings.style import (
    Coefficient,
    SideVotes,
    StyleFit,
    position_term,
    style_bradley_terry,
)

__all__ = [
    "ANCHOR",
    "SCALE",
    "BTParams",
    "BoardFit",
    "Bootstrap",
    "Coefficient",
    "ConvergenceError",
    "CovariateFit",
    "CovariateParams",
    "EloParams",
    "EloState",
    "EloStep",
    "NotIdentifiableError",
    "PairCounts",
    "Posterior",
    "PosteriorParams",
    "SideVotes",
    "StyleFit",
    "VoteRows",
    "bootstrap_bradley_terry",
    "bradley_terry",
    "components",
    "count_pairs",
    "covariate_bradley_terry",
    "decay_weights",
    "expected_score",
    "fit_board",
    "position_term",
    "posterior_bradley_terry",
    "rank_bands",
    "sequential_elo",
    "split_unbounded",
    "style_bradley_terry",
]
