"""Where a board's rating comes from: a published benchmark, the arena's votes, or both.

Each row climbs a ladder (:func:`rung`):

* ``prior``: the rating rests on a published benchmark figure (the registry's
  prior, :mod:`arena_core.registry.priors`): the model has no votes yet, or its
  votes still weigh less than the prior.
* ``blended``: a published prior and the votes, the votes weighing at least as
  much as the prior.
* ``arena``: votes, no published prior, and the model is established (the
  board's own test of a trustworthy rating: an interval at most
  ``BoardParams.established_ci_width`` wide over at least
  ``established_min_battles`` battles).
* ``arena_thin``: votes, no published prior, not yet established: too few to trust.
* None: no published prior and no votes: the model has no rating ("not yet rated").

**Weight.** The board's posterior puts a normal prior of precision ``P`` on each
model's strength (natural log-odds units): ``P = 1 / tau^2`` with ``tau`` the
fitted spread of true ratings around their priors, or ``W / 4`` for a prior of
``W`` votes' worth (:data:`~arena_core.ratings.bt.PRECISION_PER_WEIGHT`). The
votes' Fisher information about the model, its opponents held at their
ratings, is ``I = sum_j n_j p_j (1 - p_j) / phi`` (``n_j`` battles against
``j``, ``p_j`` the chance of beating it, ``phi`` the dispersion). In the normal
approximation the rating is ``(I * votes' estimate + P * prior) / (I + P)``:
the votes carry the share ``I / (I + P)`` (:func:`votes_share`). The ladder
says ``blended`` once ``I >= P``, when the data outweigh the prior: with a
fixed prior of W votes' worth, after about W votes against equal opponents;
with a fitted spread of 100 points (``P`` ~ 3.0), after about 12. Lopsided
battles count less, as they tell less.

With ``prior_weight`` 0 (plain maximum likelihood) the fit gives priors no
weight: a model with a published prior and votes is rated by its votes alone,
so it is ``arena`` or ``arena_thin``; its prior and the shift from it are still
reported. A model without votes keeps its published prior under any setting.
Under ``--method elo`` the ladder is the Bradley-Terry fit's (the same votes
and prior; sequential Elo has no interval of its own, so no model is
established there and votes alone give ``arena_thin``).
"""

from __future__ import annotations

import numpy as np

from arena_core.ratings.bt import PRECISION_PER_WEIGHT
from arena_core.ratings.counts import PairCounts
from arena_core.ratings.scale import NATURAL, to_theta

#: The rungs of the ladder.
PRIOR, BLENDED, ARENA, ARENA_THIN = "prior", "blended", "arena", "arena_thin"
LADDER = (PRIOR, BLENDED, ARENA, ARENA_THIN)
#: Why a model has no provenance (and no rating).
UNRATED_NOTE = "not yet rated: no published prior and no votes yet"


def rung(*, published: bool, battles: float, information: float, precision: float,
         established: bool) -> str | None:  # fmt: skip
    """The model's rung (see the module docstring).

    ``published``: the model has a prior from a published benchmark.
    ``information``, ``precision``: the votes' Fisher information about it and
    the prior's precision in the fit (:func:`votes_information`, :func:`prior_precision`).
    """
    if not battles:
        return PRIOR if published else None
    if published and precision > 0:
        return BLENDED if information >= precision else PRIOR
    return ARENA if established else ARENA_THIN


def votes_information(counts: PairCounts, rating: np.ndarray, dispersion: float | None = None
                      ) -> np.ndarray:  # fmt: skip
    """Each model's Fisher information (natural units) from its votes, opponents held fixed.

    ``sum_j n_ij p_ij (1 - p_ij) / phi`` with ``p_ij`` from ``rating`` (points)
    and ``phi`` the dispersion (1 when None). Counts may be weighted (time
    decay). NaN for a model whose rating, or an opponent's, is not finite.
    """
    battles = np.asarray(counts.battles(), dtype=float)
    theta = to_theta(np.asarray(rating, dtype=float))
    with np.errstate(invalid="ignore"):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        per_pair = np.where(battles > 0, battles * p * (1.0 - p), 0.0)
    return per_pair.sum(axis=1) / (1.0 if dispersion is None else dispersion)


def prior_precision(prior_weight: float | None, spread: float | None) -> float:
    """The precision (natural units) the fit gives each prior.

    ``prior_weight`` W > 0: ``W / 4``; 0: none (maximum likelihood); None: the
    fitted ``spread`` (points, the posterior mean of ``tau``) as ``1 / tau^2``,
    infinite when nothing was fitted (no votes: the prior is all there is).
    """
    if prior_weight is not None:
        return prior_weight * PRECISION_PER_WEIGHT
    if spread is None:
        return float("inf")
    return 1.0 / (spread * NATURAL) ** 2


def votes_share(information: float, precision: float) -> float | None:
    """The votes' share ``I / (I + P)`` of the rating's weight; None when undefined
    (no information and no prior, or a rating that is not finite)."""
    if not np.isfinite(information):
        return None
    if np.isinf(precision):
        return 0.0
    total = information + precision
    return float(information / total) if total > 0 else None
