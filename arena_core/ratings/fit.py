"""One board's Bradley-Terry ratings and intervals, whatever the prior: the three modes in one place.

* ``prior_weight`` None (the default): the posterior with the spread of true
  ratings fitted to the arena (:mod:`~arena_core.ratings.posterior`).
* ``prior_weight`` W > 0: the same posterior with the prior fixed at W votes' worth.
* ``prior_weight`` 0: plain maximum likelihood with bootstrap percentile
  intervals. Models whose maximum-likelihood rating is infinite
  (:func:`~arena_core.ratings.graph.split_unbounded`) are not fitted: the rest
  are, from their votes among themselves, and each unbounded model gets the
  one-sided bound its own votes support.

Everything is in integer model indices; the leaderboard maps names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena_core.ratings import graph
from arena_core.ratings.bt import BTParams, bootstrap_bradley_terry, bradley_terry
from arena_core.ratings.counts import PairCounts
from arena_core.ratings.posterior import PosteriorParams, posterior_bradley_terry
from arena_core.ratings.scale import to_rating, to_theta

#: Most replicates the bootstrap may drop and still give intervals. The kept ones are
#: those whose ratings happened to be finite, not a sample of the uncertainty: when most
#: are dropped (a handful of votes, or decayed votes worth a few), their spread is an
#: artefact (a zero-width "95%" interval at 1000 once), so no interval is given.
MAX_DROPPED_SHARE = 0.5
#: Widest interval (rating points) taken as zero width: every bootstrap replicate gave the
#: same rating, up to the fit's rounding (its tolerance moves ratings by far less).
FLAT_WIDTH = 1e-6
#: Bisection steps for an unbounded model's bound (natural units; 60 halvings of
#: a 100-unit bracket reach 1e-16).
_BOUND_STEPS = 60
#: Half-width (natural units, ~8700 points) of the bracket searched for a bound.
_BOUND_BRACKET = 50.0


@dataclass(frozen=True)
class BoardFit:
    """Ratings, intervals and their provenance, one entry per model (points).

    ``rating`` is NaN for models without a finite rating (``side`` not
    FITTED). ``low`` and ``high`` are NaN where a model has no bound; an
    unbounded model carries its one-sided bound (``low`` for a model above the
    others, ``high`` below). ``intervals`` is False when no intervals were
    computed (then only those bounds are set). ``component`` is
    :func:`~arena_core.ratings.graph.components`.
    """

    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    side: np.ndarray
    component: np.ndarray
    intervals: bool = True
    #: Posterior mean of the spread of true ratings (points), fitted mode only.
    spread: float | None = None
    #: Dispersion of the votes (posterior modes).
    dispersion: float | None = None
    #: Bootstrap replicates drawn and dropped from some group (maximum-likelihood mode).
    rounds: int = 0
    dropped: int | None = None
    #: Per model, the replicates dropped from its own group (maximum-likelihood mode).
    group_dropped: np.ndarray | None = None
    #: Models whose bootstrap replicates all gave one rating, so no interval is given
    #: (maximum-likelihood mode): e.g. two models and one tie, every resample that tie.
    flat: frozenset[int] = frozenset()


def fit_board(n_items: int, counts: PairCounts, prior=None, *, prior_weight: float | None = None,
              level: float = 0.95, rounds: int = 1000,
              rng: np.random.Generator | None = None,
              posterior: PosteriorParams | None = None) -> BoardFit:  # fmt: skip
    """Fit one board in the mode ``prior_weight`` selects (see the module docstring)."""
    component = graph.components(counts)
    if prior_weight is None or prior_weight > 0:
        post = posterior_bradley_terry(n_items, counts, prior, prior_weight=prior_weight,
                                       params=posterior)  # fmt: skip
        low, high = post.interval(level)
        side = np.full(n_items, graph.FITTED)
        return BoardFit(post.mean, low, high, side, component, spread=post.spread,
                        dispersion=post.dispersion)  # fmt: skip
    return _maximum_likelihood(n_items, counts, level, rounds, rng, component)


def _maximum_likelihood(n_items, counts, level, rounds, rng, component) -> BoardFit:
    split = graph.split_unbounded(counts)
    inside = split.fitted[:, None] & split.fitted[None, :]
    kept = PairCounts(counts.wins * inside, counts.ties * inside, counts.both_bad * inside)
    params = BTParams(prior_weight=0)
    rating = bradley_terry(n_items, kept, None, params)
    low = high = None
    dropped = group_dropped = None
    flat: frozenset[int] = frozenset()
    if rounds:
        boot = bootstrap_bradley_terry(n_items, kept, None, params, rounds=rounds, rng=rng,
                                       initial=rating)  # fmt: skip
        dropped = boot.dropped
        # Per model: a group whose replicates were mostly infinite loses its intervals, the
        # others keep theirs (``group_dropped`` says how many each model's group lost).
        group_dropped = rounds - boot.kept
        low, high = boot.interval(level)
        enough = group_dropped <= MAX_DROPPED_SHARE * rounds
        # A zero-width percentile interval says the resamples could not vary, not that the
        # rating is certain: one tie gave "1000 [1000, 1000]". No interval instead.
        # Fitted models only: one without a finite rating is outside the replicates' fits.
        flat_models = split.fitted & np.isfinite(low) & (high - low <= FLAT_WIDTH)
        flat = frozenset(np.flatnonzero(flat_models & enough).tolist())
        enough &= ~flat_models
        low, high = np.where(enough, low, np.nan), np.where(enough, high, np.nan)
    # A fitted group of one model has nothing to be compared with: no interval.
    sizes = np.bincount(np.maximum(component, 0), weights=split.fitted * (component >= 0),
                        minlength=n_items)  # fmt: skip
    alone = (component < 0) | (sizes[np.maximum(component, 0)] < 2)
    tail = (1.0 - level) / 2.0
    low = np.full(n_items, np.nan) if low is None else np.where(alone, np.nan, low)
    high = np.full(n_items, np.nan) if high is None else np.where(alone, np.nan, high)
    rating = np.where(split.fitted, rating, np.nan)
    for i in split.unbounded:
        bound = unbounded_bound(counts, rating, i, split.side[i], tail)
        low[i] = bound if split.side[i] == graph.ABOVE else np.nan
        high[i] = bound if split.side[i] == graph.BELOW else np.nan
    if group_dropped is not None:  # a model without battles is in no group
        group_dropped = np.where(component >= 0, group_dropped, 0)
    return BoardFit(rating, low, high, split.side, component, intervals=bool(rounds),
                    rounds=rounds, dropped=dropped, group_dropped=group_dropped,
                    flat=frozenset(i for i in flat if not alone[i]))  # fmt: skip


def unbounded_bound(counts: PairCounts, rating: np.ndarray, i: int, side: int,
                    tail: float) -> float:  # fmt: skip
    """The one-sided bound on model ``i``'s rating that its votes against fitted models support.

    A model above the others won every such vote: its bound is the rating ``R``
    at which winning them all has probability ``tail`` (``sum_j n_j log
    sigma(R - r_j) = log tail``), so lower ratings are refuted at that level,
    like a Clopper-Pearson bound for no failures. Symmetrically below. The
    opponents' ratings are taken as known. NaN when the model has no direct
    vote against a fitted model.
    """
    if side not in (graph.ABOVE, graph.BELOW):
        return float("nan")
    fitted = np.isfinite(rating)
    games = (counts.wins[i] if side == graph.ABOVE else counts.wins[:, i]) * fitted
    if not games.sum():
        return float("nan")
    opp = to_theta(np.where(fitted, rating, 0.0))
    sign = 1.0 if side == graph.ABOVE else -1.0
    target = np.log(tail)

    def log_prob(r):  # log P(every one of these votes goes the way it went)
        return -(games * np.logaddexp(0.0, -sign * (r - opp))).sum()

    lo, hi = opp[games > 0].min() - _BOUND_BRACKET, opp[games > 0].max() + _BOUND_BRACKET
    for _ in range(_BOUND_STEPS):
        mid = 0.5 * (lo + hi)
        # log_prob rises with r above, falls below: keep the crossing inside [lo, hi].
        if (log_prob(mid) < target) == (sign > 0):
            lo = mid
        else:
            hi = mid
    return float(to_rating(0.5 * (lo + hi)))
