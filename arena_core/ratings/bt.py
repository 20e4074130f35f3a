"""Bradley-Terry maximum likelihood (or posterior mode) on aggregated pair counts, and its bootstrap.

Model i beats j with probability ``sigma(theta_i - theta_j)``; ratings are
``1000 + theta * 400 / ln 10`` (:mod:`~arena_core.ratings.scale`). A tie or a
both-bad vote counts as half a win for each side, the convention of Chatbot
Arena's ``compute_elo_mle_with_tie``. The objective is::

    sum over pairs (i, j):  W_ij log sigma(theta_i - theta_j) + W_ji log sigma(theta_j - theta_i)
    - (precision / 2) * sum over models m:  (theta_m - p_m) ** 2

with ``W_ij`` = decisive wins of i over j plus half their draws (counts may be
fractional: time-decayed votes), and ``p_m`` the model's prior rating. The
second line is a normal prior centred on the model's prior rating. With
``prior_weight`` W it has ``precision = W / 4``: the curvature of W votes
between equals, so "W votes' worth of prior" (a standard deviation of
``2 / sqrt(W)`` in log-odds, ``347 / sqrt(W)`` points). It keeps a model that
never played at its prior and a model that never lost finite, and it anchors
the scale. :mod:`~arena_core.ratings.posterior` fits that precision to the
arena instead of fixing it.

With ``prior_weight = 0`` this is plain maximum likelihood [Hun04]_. Ratings are
then identified only up to a shift per connected component of the comparison
graph: each component is centred on a mean of 1000. Within a component the
maximum exists only if the "beat or drew" graph is strongly connected
(:mod:`~arena_core.ratings.graph`); otherwise :class:`NotIdentifiableError`
names the models whose ratings would be infinite.

The solver is Newton's method with step halving on the concave objective,
batched so that one call fits a single data set, a thousand bootstrap
replicates, or one data set under many prior precisions (the Hessian of twenty
models is 20 x 20; building it from the pairs costs O(pairs) per replicate).

References
----------
.. [Hun04] D. R. Hunter, "MM algorithms for generalized Bradley-Terry models",
   Annals of Statistics 32(1), 2004.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena_core.ratings import graph
from arena_core.ratings.counts import PairCounts, PairData
from arena_core.ratings.scale import to_rating, to_theta

#: Step halvings tried before a Newton step is taken anyway (the objective is
#: concave, so a handful always suffices; the cap only guards against NaN).
_MAX_HALVINGS = 40
#: Newton steps no larger than this (natural units, ~43 points) are taken without
#: a likelihood check: log-sigmoid curvature changes too slowly to overshoot.
_TRUSTED_STEP = 0.25
#: Relative slack when comparing log-likelihoods, so rounding noise at the
#: optimum does not trigger step halving.
_LL_SLACK = 1e-12
#: Prior precision per unit of ``prior_weight``: one vote between equals has
#: Fisher information p (1 - p) = 1/4.
PRECISION_PER_WEIGHT = 0.25


class ConvergenceError(RuntimeError):
    """Newton's method did not reach the tolerance within ``max_iter`` steps."""


#: Why a plain maximum-likelihood fit stopped on a matrix singular to double precision.
TOO_LIGHT = ("with prior_weight 0, groups of models linked only by votes too light beside "
             "their own (under about 1e-16 of them: old votes under --half-life) cannot be "
             "placed against each other; use prior_weight > 0 or a longer half-life")  # fmt: skip


class NotIdentifiableError(ValueError):
    """With no prior, some ratings would be infinite (a group never beaten, or never winning).

    ``items`` holds the indices of the models concerned, for the caller to name.
    """

    def __init__(self, message: str, items: list[int]):
        super().__init__(message)
        self.items = items


@dataclass(frozen=True)
class BTParams:
    """Settings of the Bradley-Terry fit."""

    #: Votes' worth of normal prior around each model's prior rating (0 = plain MLE).
    prior_weight: float = 4.0
    #: Convergence: largest Newton step, in natural log-odds units (1e-10 ~ 2e-8 points).
    tol: float = 1e-10
    #: Newton iterations before :class:`ConvergenceError`.
    max_iter: int = 100

    def __post_init__(self):
        if not self.prior_weight >= 0:
            raise ValueError(f"prior_weight must be >= 0, got {self.prior_weight}")

    @property
    def precision(self) -> float:
        return self.prior_weight * PRECISION_PER_WEIGHT


@dataclass(frozen=True)
class Bootstrap:
    """Bootstrap replicates of the ratings.

    ``samples`` has one row per replicate that could be fitted in some comparison
    group; ``dropped`` counts replicates whose maximum-likelihood ratings were
    infinite in some group (possible only with ``prior_weight = 0``). A replicate
    is left out of a group's intervals only: the ratings of a group whose
    replicate was infinite are NaN in that row, the other groups' are kept
    (``kept`` counts, per model, the rows that rate it).
    """

    samples: np.ndarray
    dropped: int

    @property
    def kept(self) -> np.ndarray:
        """Per model, the replicates that rate it (finite in its group)."""
        return np.isfinite(self.samples).sum(axis=0)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Percentile interval of each model's rating: the (1 - level)/2 and (1 + level)/2
        quantiles of the replicates that rate it (NaN for a model none rates)."""
        tail = 50.0 * (1.0 - level)
        rated = self.kept > 0
        low, high = np.full(self.samples.shape[1], np.nan), np.full(self.samples.shape[1], np.nan)
        if rated.any():
            low[rated], high[rated] = np.nanpercentile(self.samples[:, rated],
                                                       [tail, 100.0 - tail], axis=0)  # fmt: skip
        return low, high


def bradley_terry(
    n_items: int, counts: PairCounts, prior=None, params: BTParams | None = None
) -> np.ndarray:
    """Bradley-Terry ratings from pair counts: posterior mode, or MLE with ``prior_weight`` 0.

    Parameters
    ----------
    n_items : int
        Number of models.
    counts : PairCounts
        Aggregated votes (integer, or fractional for time-decayed votes).
    prior : array_like, optional
        Prior rating of each model (default: the anchor for all).
    params : BTParams, optional

    Returns
    -------
    numpy.ndarray
        Rating of each model, on the 1000-anchored, 400-per-decade scale.

    Raises
    ------
    NotIdentifiableError
        With ``prior_weight`` 0, when some ratings would be infinite.
    """
    params = params or BTParams()
    pairs, prior_theta = prepare(n_items, counts, prior)
    win_i, win_j = half_wins(pairs.win_i, pairs.win_j, pairs.draws)
    gauge = None
    if params.prior_weight == 0:
        split = graph.split_unbounded(counts)
        if split.unbounded:
            raise NotIdentifiableError(
                "with prior_weight 0 the maximum-likelihood ratings are infinite: models at "
                f"index {split.unbounded} were never beaten (or never won), directly or through "
                "others, against the rest of their group (use prior_weight > 0)",
                split.unbounded,
            )
        gauge = component_gauge(graph.reachability(graph.met(n_items, pairs))[0])[None]
    precision = params.precision or None
    theta0 = prior_theta[None].copy() if precision else np.zeros((1, n_items))
    theta = newton(pairs, win_i[None], win_j[None], theta0, prior_theta, precision, params, gauge)
    return to_rating(theta[0])


def bootstrap_bradley_terry(
    n_items: int,
    counts: PairCounts,
    prior=None,
    params: BTParams | None = None,
    *,
    rounds: int = 1000,
    rng: np.random.Generator | None = None,
    initial=None,
) -> Bootstrap:
    """Refit on ``rounds`` bootstrap resamples of the votes, drawn from the counts.

    Resampling N votes with replacement is a multinomial draw of N over the
    (pair, outcome) cells, so each replicate costs O(pairs), not O(votes).
    Fractional (time-decayed) counts are resampled as their rounded total of
    votes with cell probabilities in proportion to the weights; when they are worth less
    than half a vote in all, a replicate holds no vote: with ``prior_weight`` 0 every one
    is dropped (nothing bounds it), else each is the prior's fit. ``initial``
    (e.g. the point estimate, in rating points) warm-starts Newton.

    With ``prior_weight`` 0, a replicate whose ratings would be infinite within
    one of the log's comparison components is dropped from that component's
    ratings (NaN) and counted, and each component is centred on 1000 as in
    :func:`bradley_terry`. Only from that component's: two models that never met
    the rest and split two votes lost both in most replicates, and with them the
    intervals of every model of the board (four models of 1,250 battles each).
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    params = params or BTParams()
    rng = rng if rng is not None else np.random.default_rng(0)
    pairs, prior_theta = prepare(n_items, counts, prior)
    cells = np.concatenate([pairs.win_i, pairs.win_j, pairs.draws]).astype(float)
    total = float(cells.sum())
    if initial is None:
        initial = bradley_terry(n_items, counts, prior, params)
    if round(total) == 0:  # no vote, or decayed votes worth under half a vote in all
        if total > 0 and params.prior_weight == 0:  # a resample holds none: nothing bounds it
            return Bootstrap(np.empty((0, n_items)), dropped=rounds)
        return Bootstrap(np.tile(np.asarray(initial, float), (rounds, 1)), dropped=0)
    draws = rng.multinomial(round(total), cells / total, size=rounds)
    p = pairs.n_pairs
    win_i, win_j = half_wins(draws[:, :p], draws[:, p : 2 * p], draws[:, 2 * p :])
    theta0 = np.tile(to_theta(np.asarray(initial, float)), (rounds, 1))
    gauge, dropped, finite = None, 0, None
    if params.prior_weight == 0:
        connected = graph.reachability(graph.met(n_items, pairs))[0]
        finite = graph.strongly_connected_models(n_items, pairs, win_i, win_j, connected)
        played = connected.sum(axis=1) > 1
        broken = ~finite[:, played]
        dropped = int(broken.any(axis=1).sum())
        keep = ~broken.all(axis=1) if played.any() else np.ones(rounds, dtype=bool)
        # A group infinite in a replicate is fitted on a stand-in (one win each way per
        # pair: finite) so that the batch converges, then blanked.
        stand_in = ~finite[:, pairs.i]
        win_i, win_j = np.where(stand_in, 1.0, win_i), np.where(stand_in, 1.0, win_j)
        win_i, win_j, theta0, finite = win_i[keep], win_j[keep], theta0[keep], finite[keep]
        gauge = np.broadcast_to(component_gauge(connected), (len(win_i), n_items, n_items))
    precision = params.precision or None
    theta = newton(pairs, win_i, win_j, theta0, prior_theta, precision, params, gauge)
    samples = to_rating(theta)
    if finite is not None:
        samples = np.where(finite, samples, np.nan)
    return Bootstrap(samples, dropped=dropped)


def prepare(n_items: int, counts: PairCounts, prior) -> tuple[PairData, np.ndarray]:
    """Check the arguments; the met pairs and the prior in natural units."""
    if counts.n_items != n_items:
        raise ValueError(f"counts are for {counts.n_items} models, not {n_items}")
    prior = np.zeros(n_items) if prior is None else to_theta(np.asarray(prior, dtype=float))
    if prior.shape != (n_items,) or not np.all(np.isfinite(prior)):
        raise ValueError(f"prior must be {n_items} finite ratings")
    return PairData.from_counts(counts), prior


def half_wins(win_i, win_j, draws) -> tuple[np.ndarray, np.ndarray]:
    """Wins plus half the draws, per side, as floats."""
    half = 0.5 * np.asarray(draws, dtype=float)
    return np.asarray(win_i, dtype=float) + half, np.asarray(win_j, dtype=float) + half


def log_likelihood(pairs: PairData, win_i, win_j, theta, prior_theta, precision) -> np.ndarray:
    """Objective of each replicate (rows of ``theta``); ``precision`` None, a number, or one per row."""
    d = theta[:, pairs.i] - theta[:, pairs.j]
    # log sigma(x) = -log(1 + exp(-x)), computed stably by logaddexp.
    ll = -(win_i * np.logaddexp(0.0, -d) + win_j * np.logaddexp(0.0, d)).sum(axis=1)
    if precision is not None:
        e = theta - prior_theta
        ll -= 0.5 * np.reshape(precision, (-1,)) * (e * e).sum(axis=1)
    return ll


def incidence(pairs: PairData, n_items: int) -> np.ndarray:
    """Signed incidence ``(pairs, n)`` of pairs on models: gradients and degrees become products."""
    inc = np.zeros((pairs.n_pairs, n_items))
    inc[np.arange(pairs.n_pairs), pairs.i] = 1.0
    inc[np.arange(pairs.n_pairs), pairs.j] = -1.0
    return inc


def information(pairs: PairData, win_i, win_j, theta, inc=None) -> tuple[np.ndarray, np.ndarray]:
    """Gradient ``(batch, n)`` and observed information ``(batch, n, n)`` of the likelihood.

    ``inc`` is :func:`incidence` of the pairs (computed if not given).
    """
    batch, n = theta.shape
    inc = incidence(pairs, n) if inc is None else inc
    p, q = win_probabilities(theta[:, pairs.i] - theta[:, pairs.j])
    total = win_i + win_j
    h_pair = total * p * q
    # ``win_i * q - win_j * p``, not ``win_i - total * p``: with millions of votes in a
    # lopsided pair the latter lost the gradient to rounding (5 million wins to one loss:
    # steps of 1e-9 forever, and the board failed with ConvergenceError).
    grad = (win_i * q - win_j * p) @ inc
    info = np.zeros((batch, n, n))
    info[:, pairs.i, pairs.j] = -h_pair
    info[:, pairs.j, pairs.i] = -h_pair
    diag = np.arange(n)
    info[:, diag, diag] = h_pair @ np.abs(inc)
    return grad, info


def newton(pairs, win_i, win_j, theta, prior_theta, precision, params: BTParams, gauge):
    """Maximise the objective of every replicate (rows of ``win_*`` and ``theta``, in place).

    ``precision`` is None (no prior: ``gauge`` pins each component's mean), a
    number, or an array with one precision per replicate.
    """
    n = theta.shape[1]
    diag = np.arange(n)
    prec = None if precision is None else np.broadcast_to(np.reshape(precision, (-1, 1)),
                                                           (theta.shape[0], 1))  # fmt: skip
    inc = incidence(pairs, n)
    active = np.arange(theta.shape[0])
    for _ in range(params.max_iter):
        if not len(active):
            break
        th, wi, wj = theta[active], win_i[active], win_j[active]
        grad, hess = information(pairs, wi, wj, th, inc)
        if prec is not None:
            grad -= prec[active] * (th - prior_theta)
            hess[:, diag, diag] += prec[active]
        if gauge is None:
            step = np.linalg.solve(hess, grad[..., None])[..., 0]
        else:
            try:
                step = _gauged_step(hess, grad, gauge[active])
            except np.linalg.LinAlgError:
                raise ValueError(TOO_LIGHT) from None
        p_act = None if prec is None else prec[active]
        theta[active] = _halve_until_better(pairs, wi, wj, th, step, prior_theta, p_act)
        moved = np.abs(step).max(axis=1)
        active = active[moved >= params.tol]
    else:
        if len(active):
            raise ConvergenceError(
                f"Bradley-Terry did not converge to {params.tol} in {params.max_iter} steps "
                f"({len(active)} of {theta.shape[0]} fits still moving)"
            )
    if gauge is not None:
        theta -= np.einsum("bij,bj->bi", gauge, theta)
    return theta


def _gauged_step(hess: np.ndarray, grad: np.ndarray, gauge: np.ndarray) -> np.ndarray:
    """The Newton step of plain maximum likelihood, each component's mean pinned by ``gauge``
    (:func:`component_gauge`), solved on the Hessian scaled to a unit diagonal (Jacobi).

    Unscaled, a model whose votes weigh 1e-16 of the others' (with ``--half-life``, one that
    last played a year of 7-day half-lives ago) has a row of curvatures that round away
    beside the rest of its group: Newton's matrix was singular ("Singular matrix") or its
    steps never settled (ConvergenceError, a traceback). Scaled, its row is as large as
    any: the graph's normalised Laplacian, whose conditioning no longer depends on how much
    a model's votes weigh, only on how strongly the two sides of the graph's weakest cut are
    linked. A group whose votes all decayed is the same case (it was mended before by
    scaling the gauge to the group's mean curvature). Two groups linked only by votes under
    about 1e-16 of their own (a link 57 half-lives old) still cannot be placed against
    each other in double precision: :data:`TOO_LIGHT` is raised, not a bare "Singular
    matrix". The gauge pins, per component, the free shift of its ratings: in scaled
    coordinates the direction of the square roots of the curvatures.
    """
    n = hess.shape[1]
    curvature = hess[:, np.arange(n), np.arange(n)]
    root = np.sqrt(np.where(curvature > 0, curvature, 1.0))  # a model without votes: as is
    scaled = hess / root[:, :, None] / root[:, None, :]
    shift = (gauge > 0) * root[:, :, None] * root[:, None, :]  # the free shift, scaled
    scaled += shift / np.einsum("bij,bj->bi", gauge > 0, root**2)[:, :, None]
    return np.linalg.solve(scaled, (grad / root)[..., None])[..., 0] / root


def _halve_until_better(pairs, wi, wj, theta, step, prior_theta, prec) -> np.ndarray:
    """Take the Newton step, halved per replicate until the objective does not drop."""
    big = np.abs(step).max(axis=1) > _TRUSTED_STEP
    if not big.any():
        return theta + step
    wi, wj, th, st = wi[big], wj[big], theta[big], step[big]
    prec = None if prec is None else prec[big]
    ll0 = log_likelihood(pairs, wi, wj, th, prior_theta, prec)
    scale = np.ones(len(th))
    for _ in range(_MAX_HALVINGS):
        candidate = th + scale[:, None] * st
        ll1 = log_likelihood(pairs, wi, wj, candidate, prior_theta, prec)
        worse = ~(ll1 >= ll0 - _LL_SLACK * (1.0 + np.abs(ll0)))
        if not worse.any():
            break
        scale[worse] *= 0.5
    out = theta + step
    out[big] = candidate
    return out


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def win_probabilities(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sigma(d)`` and ``sigma(-d)``, each to full relative precision: the smaller one is
    ``e / (1 + e)`` with ``e = exp(-|d|)``, never ``1 -`` a number near 1 (:func:`sigmoid`
    gives it with an absolute error of 1e-16, a relative one of 1e-9 at 1e-7)."""
    e = np.exp(-np.abs(d))
    large, small = 1.0 / (1.0 + e), e / (1.0 + e)
    ahead = d >= 0
    return np.where(ahead, large, small), np.where(ahead, small, large)


def component_gauge(connected: np.ndarray) -> np.ndarray:
    """The matrix that maps theta to its component means (``connected``: the met closure).

    Adding it to the Hessian pins the free shift of each component without
    changing the Newton step in any other direction.
    """
    c = connected.astype(float)
    return c / c.sum(axis=-1, keepdims=True)
