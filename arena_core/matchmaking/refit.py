"""What the sampler needs from a fit of the board, recomputed every ``refit_votes`` votes.

The Space (:mod:`arena_core.space.pairing`, in a background thread) and the
simulation call :func:`fit_snapshot`: the board's posterior
(:func:`~arena_core.ratings.posterior.posterior_bradley_terry`), the covariance of
the pairs, which the posterior does not report, as the inverse Fisher information at
the fitted ratings (:func:`fisher_covariance`), and the sampler's
:class:`~arena_core.matchmaking.sampler.Snapshot` of both. This side reads the rating
modules and costs a fit; the sampler (:mod:`arena_core.matchmaking.sampler`) is pure
array math on what it is given, run at every draw, so the two live apart.
"""

from __future__ import annotations

import numpy as np

from arena_core.matchmaking.sampler import MatchParams, Snapshot, snapshot
from arena_core.matchmaking.value import Z95, centred_variances, sigmoid
from arena_core.ratings.bt import PRECISION_PER_WEIGHT
from arena_core.ratings.counts import PairCounts
from arena_core.ratings.posterior import Posterior, posterior_bradley_terry
from arena_core.ratings.scale import NATURAL, to_theta

#: Votes' worth of prior in the Fisher covariance while no vote gives the board a spread.
_EMPTY_PRIOR_WEIGHT = 4.0


def fisher_covariance(ratings, battles, prior=None, prior_weight: float = 4.0) -> np.ndarray:
    """Covariance of the strengths (natural log-odds) as the inverse Fisher information.

    The information of the Bradley-Terry fit with ``prior_weight`` virtual draws
    against each model's prior (:mod:`arena_core.ratings.bt`), at ``ratings``: a
    fast stand-in for the bootstrap, good enough to weigh pairs.
    """
    theta = to_theta(np.asarray(ratings, dtype=float))
    n = len(theta)
    p = sigmoid(theta[:, None] - theta[None, :])
    h = np.asarray(battles, dtype=float) * p * (1.0 - p)
    np.fill_diagonal(h, 0.0)
    info = np.diag(h.sum(axis=1)) - h
    if prior_weight > 0:
        prior_theta = np.zeros(n) if prior is None else to_theta(np.asarray(prior, dtype=float))
        q = sigmoid(theta - prior_theta)
        info[np.diag_indices(n)] += prior_weight * q * (1.0 - q)
    # Without a prior the information is singular along the shift of the scale: the
    # pseudo-inverse is the covariance with the mean pinned.
    return np.linalg.pinv(info, hermitian=True)


def fit_snapshot(counts: PairCounts, prior, *, prior_weight: float | None = None,
                 params: MatchParams | None = None, weights=None) -> tuple[Posterior, Snapshot]:  # fmt: skip
    """The board's posterior on ``counts`` and the sampler's :class:`Snapshot` of it.

    The ratings are the board's (the posterior mean, spread fitted when
    ``prior_weight`` is None; 0, plain maximum likelihood, also gets the fitted
    spread here: the sampler needs finite ratings). Their covariance is the
    inverse Fisher information with the posterior's prior precision
    ``1 / spread^2`` and scaled by its dispersion: the posterior reports only
    each model's own variance, and the sampler needs the pairs'.
    """
    n = counts.n_items
    post = posterior_bradley_terry(n, counts, prior, prior_weight=prior_weight or None)
    battles = counts.battles()
    if post.spread is None:  # no votes yet
        weight = _EMPTY_PRIOR_WEIGHT
    else:
        weight = 1.0 / (PRECISION_PER_WEIGHT * (post.spread * NATURAL) ** 2)
    cov = post.dispersion * fisher_covariance(post.mean, battles, prior, weight)
    scores = counts.wins + 0.5 * (counts.ties + counts.both_bad)
    return post, snapshot(post.mean, cov, battles, params, weights=weights, scores=scores,
                          dispersion=post.dispersion)  # fmt: skip


def interval_widths(covariance: np.ndarray) -> np.ndarray:
    """Normal-approximation 95% interval width of each rating (points), around the mean."""
    return 2.0 * Z95 * np.sqrt(centred_variances(covariance)) / NATURAL
