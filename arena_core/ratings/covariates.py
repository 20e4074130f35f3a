"""Bradley-Terry with per-vote covariates: position, self-preference and style terms, fitted jointly.

Model a beats model b in a vote with covariates ``x`` with probability::

    P(a beats b) = sigma(theta_a - theta_b + x . beta)

``x`` holds what the vote's two sides differ in besides the models: a constant
1 (the A side's edge: every vote's first-shown model gets ``beta`` extra), an
indicator of who voted (a judge's own position term), +1/-1/0 when side A/B
shares the judge's family (self-preference), style differences (clip
duration). A tie or a both-bad vote counts half a win to each side, as in
:mod:`~arena_core.ratings.bt`. The objective is::

    sum over rows r:  w_r [s_r log sigma(eta_r) + (1 - s_r) log sigma(-eta_r)]
    - (precision / 2) sum_m (theta_m - p_m)^2 - (coef_precision / 2) |beta|^2

with ``s_r`` a's score (1, 1/2, 0, or a row's mean score when rows are
aggregated) and ``w_r`` its votes. The prior on ``theta`` is
:class:`~arena_core.ratings.bt.BTParams`' (``prior_weight`` votes' worth
around each model's prior rating): it identifies the common shift and keeps
ratings finite. ``beta`` gets only a very weak prior (a guard against a
covariate that never varies), so a coefficient is what the votes say.

**Intervals** come from the curvature at the mode (the observed information,
which for a logistic model is also the expected one) as in a Laplace
approximation, with the likelihood's part divided by Pearson's dispersion
(:func:`~arena_core.ratings.posterior.dispersion`: draws make a vote's score
less variable than a coin's). Ratings are reported pinned as the posterior
board pins them (mean of rating minus prior over models with votes is zero),
so their intervals leave out a shift common to all models. A coefficient is in
rating points: ``beta / (ln 10 / 400)``, the rating gap that moves the odds as
much.

**Speed.** Newton's method on ``n + k`` parameters. Each step costs a few
passes over the rows (a ``bincount`` per model-sum, ``x.T @ (h x)`` for the
``k x k`` block), so a million rows with a handful of covariates fit in about
a second (``bench/covariates.py``). Rows sharing models and covariates can be
merged first (:meth:`VoteRows.aggregated`): with discrete covariates only
(position, judge, self-preference) a million votes collapse to a few thousand
rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from arena_core.ratings.bt import PRECISION_PER_WEIGHT, ConvergenceError, sigmoid
from arena_core.ratings.counts import SCORE_A
from arena_core.ratings.posterior import DISPERSION_PSEUDO_VOTES
from arena_core.ratings.scale import NATURAL, to_rating, to_theta

#: Prior precision of each coefficient (natural log-odds units): a standard
#: deviation of 1000 log-odds, i.e. no prior for any practical purpose; it only
#: keeps the Hessian invertible when a covariate is zero on every row.
COEF_PRECISION = 1e-6
#: Newton steps up to this size (natural units) are taken without a likelihood
#: check, as in :mod:`~arena_core.ratings.bt`.
_TRUSTED_STEP = 0.25
#: Step halvings before giving up on improving the objective.
_MAX_HALVINGS = 40
#: Largest merged-row key (see :meth:`VoteRows.aggregated`), well inside int64.
_KEY_LIMIT = 2**62
#: Newton decrement (the gain in log-posterior a step predicts) per vote below which
#: the mode counts as found even if the step is large: the gain is then below the
#: rounding noise of the sums, and the step lies along a direction only the
#: coefficients' near-flat prior determines (collinear covariates).
DECREMENT_PER_VOTE = 1e-14


@dataclass(frozen=True)
class VoteRows:
    """Votes as rows of a covariate fit, in integer model indices.

    ``score`` is a's mean score over the row's votes and ``score_sq`` the mean
    of its square (1, 1/4 or 0 for one vote: the dispersion needs it once rows
    are merged); ``weight`` the number (or decayed weight) of votes. ``x`` has
    one column per covariate, named by ``names``.
    """

    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    x: np.ndarray
    weight: np.ndarray
    score_sq: np.ndarray
    names: tuple[str, ...] = ()

    def __post_init__(self):
        n = len(self.a)
        if self.x.ndim != 2 or self.x.shape[0] != n:
            raise ValueError(f"x must have one row per vote ({n}), got shape {self.x.shape}")
        if not (len(self.b) == len(self.score) == len(self.weight) == len(self.score_sq) == n):
            raise ValueError("a, b, score, score_sq and weight must have one entry per row")
        if self.names and len(self.names) != self.x.shape[1]:
            raise ValueError(f"{len(self.names)} names for {self.x.shape[1]} covariates")
        if not np.all(np.isfinite(self.x)):
            raise ValueError("covariates must be finite (leave votes with a missing one out)")
        if np.any(self.a == self.b):
            raise ValueError("a vote needs two different models")

    @classmethod
    def from_outcomes(cls, a, b, outcome, x=None, weight=None,
                      names: tuple[str, ...] = ()) -> VoteRows:  # fmt: skip
        """One row per vote, from outcome codes (:mod:`~arena_core.ratings.counts`)."""
        a = np.asarray(a, dtype=np.int64)
        score = np.asarray(SCORE_A)[np.asarray(outcome, dtype=np.int64)]
        x = np.zeros((len(a), 0)) if x is None else np.asarray(x, dtype=float)
        x = x[:, None] if x.ndim == 1 else x
        w = np.ones(len(a)) if weight is None else np.asarray(weight, dtype=float)
        return cls(a, np.asarray(b, dtype=np.int64), score, x, w, score * score, tuple(names))

    @property
    def n_rows(self) -> int:
        return len(self.a)

    def swapped(self) -> VoteRows:
        """The same votes with sides A and B exchanged: a's score becomes b's, ``x`` its negative."""
        return VoteRows(self.b, self.a, 1.0 - self.score, -self.x, self.weight,
                        1.0 - 2.0 * self.score + self.score_sq, self.names)  # fmt: skip

    def select(self, keep) -> VoteRows:
        keep = np.asarray(keep)
        return VoteRows(self.a[keep], self.b[keep], self.score[keep], self.x[keep],
                        self.weight[keep], self.score_sq[keep], self.names)  # fmt: skip

    def aggregated(self) -> VoteRows:
        """Rows with the same models and covariates merged (the fit is unchanged: the
        log-likelihood of a row is linear in its votes' scores).

        Worth it when the covariates take few values (position, judge, self-preference):
        each column is coded by its distinct values and the codes folded into one key
        (re-coded when it could overflow), much faster than ``numpy.unique`` over
        whole rows.
        """
        if not self.n_rows:
            return self
        key, radix = np.zeros(self.n_rows, dtype=np.int64), 1
        for column in (self.a, self.b, *self.x.T):
            values, code = np.unique(column, return_inverse=True)
            if radix > _KEY_LIMIT // len(values):  # re-code the key before it could overflow
                key = np.unique(key, return_inverse=True)[1].ravel()
                radix = int(key.max()) + 1
            key, radix = key * len(values) + code.ravel(), radix * len(values)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        w = np.bincount(inverse, weights=self.weight)
        safe = np.where(w > 0, w, 1.0)
        score = np.bincount(inverse, weights=self.weight * self.score) / safe
        score_sq = np.bincount(inverse, weights=self.weight * self.score_sq) / safe
        return VoteRows(self.a[first], self.b[first], score, self.x[first], w, score_sq,
                        self.names)  # fmt: skip


@dataclass(frozen=True)
class CovariateParams:
    """Settings of the covariate fit."""

    #: Votes' worth of normal prior around each model's prior rating (as in BTParams); > 0.
    prior_weight: float = 4.0
    #: Prior precision of each coefficient, natural units (see :data:`COEF_PRECISION`).
    coef_precision: float = COEF_PRECISION
    #: Pseudo-votes shrinking the dispersion towards 1 (as the posterior board does).
    dispersion_pseudo_votes: float = DISPERSION_PSEUDO_VOTES
    #: Convergence: largest Newton step, natural units (1e-9 ~ 2e-7 points).
    tol: float = 1e-9
    max_iter: int = 100

    def __post_init__(self):
        if not self.prior_weight > 0:
            raise ValueError(f"a covariate fit needs prior_weight > 0, got {self.prior_weight}")
        if not self.coef_precision > 0:
            raise ValueError(f"coef_precision must be > 0, got {self.coef_precision}")


@dataclass(frozen=True)
class CovariateFit:
    """Ratings and coefficients with their standard deviations.

    ``rating``/``rating_sd`` are points on the pinned scale; ``coef``/``coef_sd``
    points per unit of each covariate. ``covariance`` is in natural units, over
    ``(theta_0..theta_{n-1}, beta_0..beta_{k-1})``, pinned. ``dispersion`` is the
    factor applied to the likelihood's part of the covariance.
    """

    rating: np.ndarray
    rating_sd: np.ndarray
    coef: np.ndarray
    coef_sd: np.ndarray
    names: tuple[str, ...]
    covariance: np.ndarray
    dispersion: float
    iterations: int

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Normal interval of each rating at ``level``."""
        z = _z(level)
        return self.rating - z * self.rating_sd, self.rating + z * self.rating_sd

    def coef_interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Normal interval of each coefficient (points) at ``level``."""
        z = _z(level)
        return self.coef - z * self.coef_sd, self.coef + z * self.coef_sd


def covariate_bradley_terry(n_items: int, rows: VoteRows, prior=None,
                            params: CovariateParams | None = None) -> CovariateFit:  # fmt: skip
    """Posterior mode of ratings and coefficients, with curvature intervals.

    Parameters
    ----------
    n_items : int
        Number of models.
    rows : VoteRows
        The votes and their covariates.
    prior : array_like, optional
        Prior rating of each model (default: the anchor for all).
    params : CovariateParams, optional

    Raises
    ------
    ConvergenceError
        When Newton's method has not converged in ``max_iter`` steps.
    """
    params = params or CovariateParams()
    prior_theta = np.zeros(n_items) if prior is None else to_theta(np.asarray(prior, float))
    if prior_theta.shape != (n_items,) or not np.all(np.isfinite(prior_theta)):
        raise ValueError(f"prior must be {n_items} finite ratings")
    if rows.n_rows and (min(rows.a.min(), rows.b.min()) < 0
                        or max(rows.a.max(), rows.b.max()) >= n_items):  # fmt: skip
        raise ValueError(f"model indices must be in [0, {n_items})")
    data = _Rows(n_items, rows)
    k = rows.x.shape[1]
    penalty = np.r_[np.full(n_items, params.prior_weight * PRECISION_PER_WEIGHT),
                    np.full(k, params.coef_precision)]  # fmt: skip
    centre = np.r_[prior_theta, np.zeros(k)]
    z = centre.copy()
    flat = DECREMENT_PER_VOTE * (1.0 + float(rows.weight.sum()))
    for iteration in range(1, params.max_iter + 1):  # noqa: B007 (reported after the loop)
        grad, info = data.derivatives(z)
        grad -= penalty * (z - centre)
        info[np.diag_indices_from(info)] += penalty
        step = np.linalg.solve(info, grad)
        z = _halve_until_better(data, z, step, penalty, centre)
        if np.abs(step).max() < params.tol or grad @ step < flat:
            break
    else:
        raise ConvergenceError(f"the covariate fit did not converge to {params.tol} in "
                               f"{params.max_iter} steps")  # fmt: skip
    return _summarise(data, z, penalty, prior_theta, params, iteration)


def _summarise(data: _Rows, z, penalty, prior_theta, params, iterations) -> CovariateFit:
    """Pinned ratings, covariance (likelihood part over the dispersion) and standard deviations."""
    n, rows = data.n, data.rows
    _, info = data.derivatives(z)
    played = np.zeros(n, dtype=bool)
    played[rows.a[rows.weight > 0]] = played[rows.b[rows.weight > 0]] = True
    phi = data.dispersion(z, int(played.sum()), params.dispersion_pseudo_votes)
    info = info / phi
    info[np.diag_indices_from(info)] += penalty
    cov = np.linalg.inv(info)
    # Pin: report theta_i - mean over played of (theta - prior); the mode already has that mean 0.
    pin = np.eye(len(z))
    theta = z[:n]
    if played.any():
        pin[:n, :n][:, played] -= 1.0 / played.sum()
        theta = theta - (theta - prior_theta)[played].mean()
    cov = pin @ cov @ pin.T
    sd = np.sqrt(np.maximum(np.diag(cov), 0.0)) / NATURAL
    return CovariateFit(to_rating(theta), sd[:n], z[n:] / NATURAL, sd[n:], rows.names, cov, phi,
                        iterations)  # fmt: skip


class _Rows:
    """The rows laid out for the passes of each Newton step: covariates column by column
    (Fortran order), and each row's ordered pair as one cell index for ``bincount``."""

    def __init__(self, n_items: int, rows: VoteRows):
        self.n, self.rows = n_items, rows
        self.x = np.asfortranarray(rows.x, dtype=float)
        self.cell = rows.a * n_items + rows.b

    def eta(self, z) -> np.ndarray:
        theta, beta = z[: self.n], z[self.n :]
        eta = theta[self.rows.a] - theta[self.rows.b]
        return eta + self.x @ beta if len(beta) else eta

    def _by_model(self, values) -> np.ndarray:
        """Per model, the sum of ``values`` over rows where it is a minus rows where it is b."""
        cells = np.bincount(self.cell, values, self.n * self.n).reshape(self.n, self.n)
        return cells.sum(axis=1) - cells.sum(axis=0)

    def derivatives(self, z) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and information of the log-likelihood over ``(theta, beta)``."""
        n, rows, k = self.n, self.rows, self.x.shape[1]
        p = sigmoid(self.eta(z))
        r = rows.weight * (rows.score - p)
        h = rows.weight * p * (1.0 - p)
        grad = np.empty(n + k)
        grad[:n] = self._by_model(r)
        grad[n:] = self.x.T @ r
        info = np.empty((n + k, n + k))
        pair = np.bincount(self.cell, h, n * n).reshape(n, n)
        pair = pair + pair.T
        info[:n, :n] = np.diag(pair.sum(axis=1)) - pair
        hx = self.x * h[:, None]
        for c in range(k):
            info[:n, n + c] = self._by_model(hx[:, c])
        info[n:, :n] = info[:n, n:].T
        info[n:, n:] = hx.T @ self.x
        return grad, info

    def objective(self, z, penalty, centre) -> float:
        eta = self.eta(z)
        s = self.rows.score
        # s log sigma(eta) + (1 - s) log sigma(-eta) = s eta - softplus(eta), stably.
        softplus = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
        e = z - centre
        return float((self.rows.weight * (s * eta - softplus)).sum()
                     - 0.5 * (penalty * e * e).sum())  # fmt: skip

    def dispersion(self, z, played: int, pseudo_votes: float) -> float:
        """Pearson's dispersion of the scores, shrunk towards 1 (as the posterior board's).

        Per row, ``sum over its votes of (s - p)^2 = w (mean s^2 - 2 p mean s + p^2)``.
        """
        rows = self.rows
        p = sigmoid(self.eta(z))
        sq = rows.weight * (rows.score_sq - 2.0 * p * rows.score + p * p)
        x2 = float((sq / np.maximum(p * (1.0 - p), 1e-300)).sum())
        dof = max(float(rows.weight.sum()) - (played - 1) - self.x.shape[1], 0.0)
        return (x2 + pseudo_votes) / (dof + pseudo_votes)


def _halve_until_better(data: _Rows, z, step, penalty, centre) -> np.ndarray:
    """Take the Newton step, halved until the objective does not drop (large steps only)."""
    if np.abs(step).max() <= _TRUSTED_STEP:
        return z + step
    before = data.objective(z, penalty, centre)
    scale = 1.0
    for _ in range(_MAX_HALVINGS):
        if data.objective(z + scale * step, penalty, centre) >= before:
            break
        scale *= 0.5
    return z + scale * step


def _z(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2.0)
