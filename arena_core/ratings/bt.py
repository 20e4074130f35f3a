"""Bradley-Terry maximum likelihood on aggregated pair counts, and its bootstrap.

Model i beats j with probability ``sigma(theta_i - theta_j)``; ratings are
``1000 + theta * 400 / ln 10`` (:mod:`~arena_core.ratings.scale`). A tie or a
both-bad vote counts as half a win for each side, the convention of Chatbot
Arena's ``compute_elo_mle_with_tie``. The log-likelihood is::

    sum over pairs (i, j):  W_ij log sigma(theta_i - theta_j) + W_ji log sigma(theta_j - theta_i)
    + prior_weight * sum over models m:  (1/2) log sigma(theta_m - p_m) + (1/2) log sigma(p_m - theta_m)

with ``W_ij`` = decisive wins of i over j plus half their draws, and ``p_m`` the
model's prior rating. The second line is ``prior_weight`` virtual draws against
an opponent fixed at the model's own prior: it keeps a model that never played
at its prior and a model that never lost finite, and it anchors the scale.

With ``prior_weight = 0`` this is plain maximum likelihood [Hun04]_. Ratings are
then identified only up to a shift per connected component of the comparison
graph: each component is centred on a mean of 1000 (and a warning is logged
when there is more than one, because ratings in different components cannot be
compared). Within a component the maximum exists only if the "beat or drew"
graph is strongly connected [For57]_; otherwise :class:`NotIdentifiableError`
names the models that were never beaten by the rest.

The solver is Newton's method with step halving on the concave log-likelihood,
batched so that one call fits a single data set or a thousand bootstrap
replicates (the Hessian of twenty models is 20 x 20; building it from the pairs
costs O(pairs) per replicate).

References
----------
.. [Hun04] D. R. Hunter, "MM algorithms for generalized Bradley-Terry models",
   Annals of Statistics 32(1), 2004.
.. [For57] L. R. Ford, "Solution of a ranking problem from binary comparisons",
   American Mathematical Monthly 64(8), 1957.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from arena_core.ratings.counts import PairCounts, PairData
from arena_core.ratings.scale import to_rating, to_theta

log = logging.getLogger(__name__)

#: Step halvings tried before a Newton step is taken anyway (the objective is
#: concave, so a handful always suffices; the cap only guards against NaN).
_MAX_HALVINGS = 40
#: Newton steps no larger than this (natural units, ~43 points) are taken without
#: a likelihood check: log-sigmoid curvature changes too slowly to overshoot.
_TRUSTED_STEP = 0.25
#: Relative slack when comparing log-likelihoods, so rounding noise at the
#: optimum does not trigger step halving.
_LL_SLACK = 1e-12


class ConvergenceError(RuntimeError):
    """Newton's method did not reach the tolerance within ``max_iter`` steps."""


class NotIdentifiableError(ValueError):
    """With no prior, some ratings would be infinite (a group never beaten).

    ``items`` holds the indices of the models concerned, for the caller to name.
    """

    def __init__(self, message: str, items: list[int]):
        super().__init__(message)
        self.items = items


@dataclass(frozen=True)
class BTParams:
    """Settings of the Bradley-Terry fit."""

    #: Virtual draws of each model against its own prior rating (0 = plain MLE).
    prior_weight: float = 4.0
    #: Convergence: largest Newton step, in natural log-odds units (1e-10 ~ 2e-8 points).
    tol: float = 1e-10
    #: Newton iterations before :class:`ConvergenceError`.
    max_iter: int = 100

    def __post_init__(self):
        if not self.prior_weight >= 0:
            raise ValueError(f"prior_weight must be >= 0, got {self.prior_weight}")


@dataclass(frozen=True)
class Bootstrap:
    """Bootstrap replicates of the ratings.

    ``samples`` has one row per replicate that could be fitted; ``dropped``
    counts replicates whose maximum-likelihood ratings were infinite (possible
    only with ``prior_weight = 0`` on sparse data).
    """

    samples: np.ndarray
    dropped: int

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Percentile interval of each model's rating."""
        tail = 50.0 * (1.0 - level)
        low, high = np.percentile(self.samples, [tail, 100.0 - tail], axis=0)
        return low, high


def bradley_terry(
    n_items: int, counts: PairCounts, prior=None, params: BTParams | None = None
) -> np.ndarray:
    """Maximum-likelihood Bradley-Terry ratings from pair counts.

    Parameters
    ----------
    n_items : int
        Number of models.
    counts : PairCounts
        Aggregated votes.
    prior : array_like, optional
        Prior rating of each model (default: the anchor for all).
    params : BTParams, optional

    Returns
    -------
    numpy.ndarray
        Rating of each model, on the 1000-anchored, 400-per-decade scale.
    """
    params = params or BTParams()
    pairs, prior_theta = _prepare(n_items, counts, prior)
    win_i, win_j = _weights(pairs.win_i, pairs.win_j, pairs.draws)
    gauge = None
    if params.prior_weight == 0:
        reach = _reachability(_beats(n_items, pairs, win_i[None], win_j[None]))[0]
        _check_identifiable(reach, n_items)
        gauge = _gauge(_reachability(_met(n_items, pairs, 1)))
        components = len({tuple(row) for row in gauge[0] > 0})
        if components > 1:
            log.warning(
                "comparison graph has %d disconnected groups; with prior_weight 0 each is "
                "centred on 1000 and ratings are comparable only within a group",
                components,
            )
    theta0 = prior_theta[None].copy() if params.prior_weight > 0 else np.zeros((1, n_items))
    theta = _newton(pairs, win_i[None], win_j[None], theta0, prior_theta, params, gauge)
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
    ``initial`` (e.g. the point estimate, in rating points) warm-starts Newton.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    params = params or BTParams()
    rng = rng if rng is not None else np.random.default_rng(0)
    pairs, prior_theta = _prepare(n_items, counts, prior)
    cells = np.concatenate([pairs.win_i, pairs.win_j, pairs.draws]).astype(np.int64)
    total = int(cells.sum())
    if total == 0:
        start = bradley_terry(n_items, counts, prior, params) if initial is None else initial
        return Bootstrap(np.tile(np.asarray(start, float), (rounds, 1)), dropped=0)
    draws = rng.multinomial(total, cells / total, size=rounds)
    p = pairs.n_pairs
    win_i, win_j = _weights(draws[:, :p], draws[:, p : 2 * p], draws[:, 2 * p :])
    if initial is None:
        initial = bradley_terry(n_items, counts, prior, params)
    theta0 = np.tile(to_theta(np.asarray(initial, float)), (rounds, 1))
    gauge, dropped = None, 0
    if params.prior_weight == 0:
        keep = _identifiable(n_items, pairs, win_i, win_j)
        dropped = int((~keep).sum())
        if dropped:
            log.warning(
                "%d of %d bootstrap replicates had infinite ratings; left out", dropped, rounds
            )
        win_i, win_j, theta0 = win_i[keep], win_j[keep], theta0[keep]
        gauge = _gauge(_reachability(_met(n_items, pairs, len(win_i), win_i + win_j)))
    theta = _newton(pairs, win_i, win_j, theta0, prior_theta, params, gauge)
    return Bootstrap(to_rating(theta), dropped=dropped)


def _prepare(n_items: int, counts: PairCounts, prior) -> tuple[PairData, np.ndarray]:
    if counts.n_items != n_items:
        raise ValueError(f"counts are for {counts.n_items} models, not {n_items}")
    prior = np.zeros(n_items) if prior is None else to_theta(np.asarray(prior, dtype=float))
    if prior.shape != (n_items,) or not np.all(np.isfinite(prior)):
        raise ValueError(f"prior must be {n_items} finite ratings")
    return PairData.from_counts(counts), prior


def _weights(win_i, win_j, draws) -> tuple[np.ndarray, np.ndarray]:
    """Wins plus half the draws, per side, as floats."""
    half = 0.5 * np.asarray(draws, dtype=float)
    return np.asarray(win_i, dtype=float) + half, np.asarray(win_j, dtype=float) + half


def _log_likelihood(pairs: PairData, win_i, win_j, theta, prior_theta, weight) -> np.ndarray:
    d = theta[:, pairs.i] - theta[:, pairs.j]
    # log sigma(x) = -log(1 + exp(-x)), computed stably by logaddexp.
    ll = -(win_i * np.logaddexp(0.0, -d) + win_j * np.logaddexp(0.0, d)).sum(axis=1)
    if weight:
        e = theta - prior_theta
        ll -= 0.5 * weight * (np.logaddexp(0.0, -e) + np.logaddexp(0.0, e)).sum(axis=1)
    return ll


def _newton(pairs, win_i, win_j, theta, prior_theta, params: BTParams, gauge) -> np.ndarray:
    """Maximise the log-likelihood of every replicate (rows of ``win_*`` and ``theta``)."""
    n = theta.shape[1]
    weight = params.prior_weight
    total = win_i + win_j
    diag = np.arange(n)
    # Signed incidence of pairs on models: gradients and degrees become matrix products.
    incidence = np.zeros((pairs.n_pairs, n))
    incidence[np.arange(pairs.n_pairs), pairs.i] = 1.0
    incidence[np.arange(pairs.n_pairs), pairs.j] = -1.0
    active = np.arange(theta.shape[0])
    for _ in range(params.max_iter):
        if not len(active):
            break
        th, wi, wj, tot = theta[active], win_i[active], win_j[active], total[active]
        p = _sigmoid(th[:, pairs.i] - th[:, pairs.j])
        g_pair = wi - tot * p
        h_pair = tot * p * (1.0 - p)
        grad = g_pair @ incidence
        deg = h_pair @ np.abs(incidence)
        hess = np.zeros((len(active), n, n))
        hess[:, pairs.i, pairs.j] = -h_pair
        hess[:, pairs.j, pairs.i] = -h_pair
        if weight:
            q = _sigmoid(th - prior_theta)
            grad += weight * (0.5 - q)
            deg += weight * q * (1.0 - q)
        hess[:, diag, diag] = deg
        if gauge is not None:
            hess += gauge[active]
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        theta[active] = _halve_until_better(pairs, wi, wj, th, step, prior_theta, weight)
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


def _halve_until_better(pairs, wi, wj, theta, step, prior_theta, weight) -> np.ndarray:
    """Take the Newton step, halved per replicate until the likelihood does not drop."""
    big = np.abs(step).max(axis=1) > _TRUSTED_STEP
    if not big.any():
        return theta + step
    wi, wj, th, st = wi[big], wj[big], theta[big], step[big]
    ll0 = _log_likelihood(pairs, wi, wj, th, prior_theta, weight)
    scale = np.ones(len(th))
    for _ in range(_MAX_HALVINGS):
        candidate = th + scale[:, None] * st
        ll1 = _log_likelihood(pairs, wi, wj, candidate, prior_theta, weight)
        worse = ~(ll1 >= ll0 - _LL_SLACK * (1.0 + np.abs(ll0)))
        if not worse.any():
            break
        scale[worse] *= 0.5
    out = theta + step
    out[big] = candidate
    return out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _met(n_items: int, pairs: PairData, batch: int, totals=None) -> np.ndarray:
    """Adjacency (batch, n, n) of the undirected comparison graph."""
    adj = np.zeros((batch, n_items, n_items), dtype=bool)
    met = np.ones((batch, pairs.n_pairs), dtype=bool) if totals is None else totals > 0
    adj[:, pairs.i, pairs.j] = met
    adj[:, pairs.j, pairs.i] = met
    return adj


def _beats(n_items: int, pairs: PairData, win_i, win_j) -> np.ndarray:
    """Adjacency (batch, n, n) of "i beat or drew j at least once"."""
    adj = np.zeros((len(win_i), n_items, n_items), dtype=bool)
    adj[:, pairs.i, pairs.j] = win_i > 0
    adj[:, pairs.j, pairs.i] = win_j > 0
    return adj


def _reachability(adj: np.ndarray) -> np.ndarray:
    """Transitive closure (with self-loops) of a batch of directed graphs."""
    n = adj.shape[-1]
    reach = adj | np.eye(n, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        f = reach.astype(np.float32)
        reach = (f @ f) > 0
    return reach


def _gauge(connected: np.ndarray) -> np.ndarray:
    """Per replicate, the matrix that maps theta to its component means.

    Adding it to the Hessian pins the free shift of each component without
    changing the Newton step in any other direction.
    """
    c = connected.astype(float)
    return c / c.sum(axis=2, keepdims=True)


def _identifiable(n_items: int, pairs: PairData, win_i, win_j) -> np.ndarray:
    """Whether each replicate has finite MLE ratings (strongly connected components)."""
    reach = _reachability(_beats(n_items, pairs, win_i, win_j))
    connected = _reachability(_met(n_items, pairs, len(win_i), win_i + win_j))
    # Within a comparison component every model must reach every other by "beat" edges.
    return (reach | ~connected).all(axis=(1, 2))


def _check_identifiable(reach: np.ndarray, n_items: int) -> None:
    connected = reach | reach.T
    # Closure of the undirected graph: weakly connected components.
    undirected = _reachability(connected[None])[0]
    broken = undirected & ~reach
    if not broken.any():
        return
    # A model none of whose component-mates can reach it by "beat" edges was never beaten.
    unbeaten = [int(i) for i in range(n_items) if (broken[:, i]).any()]
    raise NotIdentifiableError(
        "with prior_weight 0 the maximum-likelihood ratings are infinite: models at index "
        f"{unbeaten} were never beaten, directly or through others, by some models of their "
        "group (use prior_weight > 0)",
        unbeaten,
    )
