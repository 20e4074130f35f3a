"""Several judges' verdicts in one Bradley-Terry fit: their biases as explicit terms, their boards
aligned toward a consensus.

Judge ``j`` prefers side A of a vote with probability::

    sigma( a_j (theta_A - theta_B + u_jA - u_jB) + x . beta )

* ``theta``: the consensus strength of each model, shared by all judges;
* ``u_j``: judge ``j``'s own deviations from it, ``u_jm ~ Normal(0, tau^2)``;
* ``a_j``: the judge's discrimination (how sharply its verdicts follow strength;
  a noisy judge has a small ``a_j``), ``log a_j`` summing to zero so that the
  consensus is on the scale of the geometric-mean judge;
* ``x . beta``: per-vote covariates with a coefficient per judge, as the caller
  lays them out: the judge's A-side term, its self-preference, its duration
  preference (:mod:`~arena_core.judges.bias`). They are not multiplied by
  ``a_j``: a bias is an amount of log-odds, whatever the judge's discrimination.

Judge ``j``'s **aligned board** is ``theta + u_j``: its view with its measured
biases taken out and its remaining idiosyncrasies shrunk toward the consensus
as far as the spread ``tau`` says they are noise. ``tau`` is estimated from the
judges themselves (empirical Bayes: where the Laplace approximation of the
verdicts' marginal likelihood peaks, as :mod:`~arena_core.ratings.posterior`
fits the spread of the ratings), so judges that agree up to their noise are
pulled together and a real, shared spread is kept. (EM on ``tau`` was tried
first: it crawls toward zero when the judges agree, hundreds of steps.)

**What this takes from UDA** (Zhang et al., "UDA: Unsupervised Debiasing
Alignment for Pair-wise LLM-as-a-Judge", arXiv 2508.09724): the judges' own
consensus as the unsupervised anchor (no human label enters the fit); a
per-judge "K-factor", here ``a_j``, deciding how much each of a judge's
verdicts moves the ratings; adjustments of each verdict for what biases it
(UDA's soft win-labels, learnt from features such as how close each answer is
to the judge's own), here explicit covariates; and shrinkage toward the
consensus as the reason it helps (UDA's variance-reduction argument).

**What it changes, and why.** UDA's network adjusts sequential Elo updates and
is trained to minimise the dispersion of the judges' Elo trajectories. Elo
depends on the order of the votes and gives no intervals; a dispersion loss
alone is minimised by collapsing every judge onto one board whatever the
evidence, and a network's adjustments are not interpretable. Here the same
ingredients are one likelihood over the whole log (order-free, fitted by
Fisher scoring), the pull toward the consensus is a prior whose strength
``tau`` is estimated rather than imposed, and each adjustment is a named
coefficient with an interval (the biases this project must publish).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from arena_core.ratings.bt import PRECISION_PER_WEIGHT, ConvergenceError, sigmoid
from arena_core.ratings.covariates import COEF_PRECISION, DECREMENT_PER_VOTE, VoteRows
from arena_core.ratings.scale import NATURAL, to_rating, to_theta

#: Range of the judges' spread around the consensus searched (points): below 1
#: point judges are identical for any practical purpose (and the prior precision
#: of ``u`` stays finite); 800 points is the posterior board's upper end too.
SPREAD_RANGE = (1.0, 800.0)
#: Prior standard deviation of log discrimination: a judge's discrimination is
#: within a factor e^2 ~ 7 of the others' unless its votes say otherwise.
DISCRIMINATION_SD = 1.0
#: Step size (natural units) at which the mode is taken as found while spreads are
#: compared (the evidence is flat at the mode; the last pass converges to ``tol``).
_SEARCH_TOL = 1e-5
#: Step size (natural units) taken without checking the objective (as bt.py).
_TRUSTED_STEP = 0.25
#: Step halvings before giving up on improving the objective.
_MAX_HALVINGS = 40


@dataclass(frozen=True)
class JudgeVotes:
    """Verdicts of ``n_judges`` judges: ``judge[r]`` says whose row ``r`` of ``rows`` is."""

    judge: np.ndarray
    n_judges: int
    rows: VoteRows


@dataclass(frozen=True)
class ConsensusParams:
    """Settings of the consensus fit."""

    #: Votes' worth of prior on each consensus strength (as BTParams.prior_weight); > 0.
    prior_weight: float = 4.0
    #: Smallest and largest spread of the judges around the consensus searched (points).
    spread_range: tuple[float, float] = SPREAD_RANGE
    discrimination_sd: float = DISCRIMINATION_SD
    coef_precision: float = COEF_PRECISION
    #: Convergence of Fisher scoring (natural units), and of log(spread): 1% of the
    #: spread, far inside its own uncertainty with a handful of judges.
    tol: float = 1e-8
    spread_tol: float = 1e-2
    max_iter: int = 100

    def __post_init__(self):
        if not self.prior_weight > 0:
            raise ValueError(f"the consensus fit needs prior_weight > 0, got {self.prior_weight}")
        if not 0 < self.spread_range[0] < self.spread_range[1]:
            raise ValueError(f"spread_range must be 0 < low < high, got {self.spread_range}")


@dataclass(frozen=True)
class ConsensusFit:
    """The consensus board, each judge's aligned board, discriminations and coefficients.

    Ratings are points, pinned (mean of rating minus prior over the models with
    verdicts is zero); ``boards`` is ``(n_judges, n_items)``. ``coef`` is points
    per unit of each covariate. ``spread`` is the fitted ``tau`` (points; None for
    one judge), ``evaluations`` the spreads tried on the way.
    """

    consensus: np.ndarray
    consensus_sd: np.ndarray
    boards: np.ndarray
    boards_sd: np.ndarray
    discrimination: np.ndarray
    coef: np.ndarray
    coef_sd: np.ndarray
    names: tuple[str, ...]
    spread: float | None
    evaluations: int


def consensus_bradley_terry(n_items: int, votes: JudgeVotes, prior=None,
                            params: ConsensusParams | None = None) -> ConsensusFit:  # fmt: skip
    """Fit the consensus model (see the module docstring): Fisher scoring for the mode, the
    spread ``tau`` where the Laplace approximation of the verdicts' likelihood peaks.

    Raises
    ------
    ConvergenceError
        When Fisher scoring does not converge.
    """
    params = params or ConsensusParams()
    prior_theta = np.zeros(n_items) if prior is None else to_theta(np.asarray(prior, float))
    model = _Layout(n_items, votes)
    centre = np.zeros(model.size)
    centre[:n_items] = prior_theta
    state = {"z": centre.copy(), "evaluations": 0}
    low, high = np.log(np.asarray(params.spread_range) * NATURAL)

    def negative_evidence(log_tau: float) -> float:
        penalty = model.penalty(params, np.exp(log_tau))
        # Warm-started from the last spread tried; a rough mode is enough to compare spreads.
        state["z"] = _maximise(model, state["z"], penalty, centre, params, _SEARCH_TOL)
        state["evaluations"] += 1
        return -model.log_evidence(state["z"], penalty, centre)

    tau = np.exp(high)
    if model.n_judges > 1:  # one judge has no deviations, so no spread to fit
        found = minimize_scalar(negative_evidence, bounds=(low, high), method="bounded",
                                options={"xatol": params.spread_tol})  # fmt: skip
        tau = float(np.exp(found.x))
    penalty = model.penalty(params, tau)
    z = _maximise(model, state["z"], penalty, centre, params, params.tol)
    cov = model.covariance(model.information(z) + np.diag(penalty))
    return model.summary(z, cov, prior_theta, tau, state["evaluations"])


def _maximise(model: _Layout, z, penalty, centre, params: ConsensusParams,
              tol: float) -> np.ndarray:  # fmt: skip
    """Fisher scoring with step halving on the penalised log-likelihood, to steps below ``tol``
    (or a gain below rounding noise: see :data:`~arena_core.ratings.covariates.DECREMENT_PER_VOTE`)."""
    flat = DECREMENT_PER_VOTE * (1.0 + float(model.rows.weight.sum()))
    for _ in range(params.max_iter):
        grad = model.gradient(z) - penalty * (z - centre)
        info = model.information(z) + np.diag(penalty)
        step = model.solve(info, grad)
        if np.abs(step).max() > _TRUSTED_STEP:
            before = model.objective(z, penalty, centre)
            scale = 1.0
            for _ in range(_MAX_HALVINGS):
                if model.objective(z + scale * step, penalty, centre) >= before:
                    break
                scale *= 0.5
            step = scale * step
        z = z + step
        if np.abs(step).max() < tol or grad @ step < flat:
            return z
    raise ConvergenceError(f"the consensus fit did not converge in {params.max_iter} steps")


class _Layout:
    """Where each parameter lives in ``z``: ``theta`` (n), ``u`` (J x n, when J > 1),
    ``l`` (J - 1: log discriminations in a sum-zero basis), ``beta`` (k).

    Derivatives are sums over rows of per-row values by (judge, model a, model b)
    cell, so each is a few ``bincount`` passes, never a rows-by-parameters matrix.
    """

    def __init__(self, n_items: int, votes: JudgeVotes):
        rows, judge = votes.rows, np.asarray(votes.judge, dtype=np.int64)
        self.n, self.n_judges, self.rows, self.judge = n_items, votes.n_judges, rows, judge
        many = self.n_judges > 1
        self.u0 = n_items
        self.l0 = n_items + (self.n_judges * n_items if many else 0)
        self.b0 = self.l0 + (self.n_judges - 1 if many else 0)
        self.k = rows.x.shape[1]
        self.size = self.b0 + self.k
        # Orthonormal basis of sum-zero vectors: log a = basis @ l.
        centred = np.eye(self.n_judges) - 1.0 / self.n_judges
        self.basis = np.linalg.qr(centred)[0][:, : self.n_judges - 1]
        self.played = np.zeros((self.n_judges, n_items), dtype=bool)
        self.played[judge, rows.a] = self.played[judge, rows.b] = True
        self.cell = (judge * n_items + rows.a) * n_items + rows.b
        self.x = np.asfortranarray(rows.x, dtype=float)
        self.onehot = np.zeros((len(judge), self.n_judges))
        self.onehot[np.arange(len(judge)), judge] = 1.0

    def unpack(self, z):
        n, m = self.n, self.n_judges
        u = z[self.u0 : self.l0].reshape(m, n) if m > 1 else np.zeros((1, n))
        log_a = self.basis @ z[self.l0 : self.b0] if m > 1 else np.zeros(1)
        return z[:n], u, np.exp(log_a), z[self.b0 :]

    def _parts(self, z):
        """Per row: the linear predictor, the judge's discrimination and the strength gap."""
        theta, u, a, beta = self.unpack(z)
        j, r = self.judge if self.n_judges > 1 else np.zeros_like(self.judge), self.rows
        d = theta[r.a] - theta[r.b] + u[j, r.a] - u[j, r.b]
        aj = a[j]
        eta = aj * d + (self.x @ beta if self.k else 0.0)
        return eta, aj, d

    def _by_model(self, values) -> np.ndarray:
        """``(J, n)``: per judge and model, ``values`` summed where it is a minus where it is b."""
        m, n = self.n_judges, self.n
        cells = np.bincount(self.cell, values, m * n * n).reshape(m, n, n)
        return cells.sum(axis=2) - cells.sum(axis=1)

    def _by_judge(self, values) -> np.ndarray:
        return np.bincount(self.judge, values, self.n_judges)

    def gradient(self, z) -> np.ndarray:
        eta, aj, d = self._parts(z)
        r = self.rows.weight * (self.rows.score - sigmoid(eta))
        grad = np.empty(self.size)
        per = self._by_model(r * aj)
        grad[: self.n] = per.sum(axis=0)
        if self.n_judges > 1:
            grad[self.u0 : self.l0] = per.ravel()
            grad[self.l0 : self.b0] = self.basis.T @ self._by_judge(r * aj * d)
        grad[self.b0 :] = self.x.T @ r
        return grad

    def information(self, z) -> np.ndarray:
        """Fisher information (the expected one: positive semi-definite), block by block."""
        n, m, k = self.n, self.n_judges, self.k
        eta, aj, d = self._parts(z)
        h = self.rows.weight * sigmoid(eta) * sigmoid(-eta)
        info = np.zeros((self.size, self.size))
        w = np.bincount(self.cell, h * aj * aj, m * n * n).reshape(m, n, n)
        w = w + w.transpose(0, 2, 1)
        lap = -w  # each judge's weighted Laplacian (a row never pits a model against itself)
        lap[:, np.arange(n), np.arange(n)] = w.sum(axis=2)
        info[:n, :n] = lap.sum(axis=0)
        hx = self.x * (h * aj)[:, None]
        cross = np.zeros((m, n, k))  # (J, n, k)
        for c in range(k):
            cross[:, :, c] = self._by_model(hx[:, c])
        info[:n, self.b0 :] = cross.sum(axis=0)
        if m > 1:
            for j in range(m):
                s = slice(self.u0 + j * n, self.u0 + (j + 1) * n)
                info[s, s] = info[:n, s] = lap[j]
                info[s, self.b0 :] = cross[j]
            v = self._by_model(h * aj * aj * d)  # (J, n)
            tl = v[:, :, None] * self.basis[:, None, :]  # (J, n, J - 1)
            info[:n, self.l0 : self.b0] = tl.sum(axis=0)
            info[self.u0 : self.l0, self.l0 : self.b0] = tl.reshape(m * n, m - 1)
            dd = self._by_judge(h * aj * aj * d * d)
            info[self.l0 : self.b0, self.l0 : self.b0] = self.basis.T @ (dd[:, None] * self.basis)
            per_judge = self.onehot.T @ (hx * d[:, None])  # (J, k)
            info[self.l0 : self.b0, self.b0 :] = self.basis.T @ per_judge
        info[self.b0 :, self.b0 :] = (self.x * h[:, None]).T @ self.x
        upper = np.triu(info, 1)
        return np.triu(info) + upper.T

    def objective(self, z, penalty, centre) -> float:
        eta, s = self._parts(z)[0], self.rows.score
        softplus = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
        e = z - centre
        return float(
            (self.rows.weight * (s * eta - softplus)).sum() - 0.5 * (penalty * e * e).sum()
        )

    def penalty(self, params: ConsensusParams, tau: float) -> np.ndarray:
        out = np.empty(self.size)
        out[: self.n] = params.prior_weight * PRECISION_PER_WEIGHT
        out[self.u0 : self.l0] = 1.0 / tau**2
        out[self.l0 : self.b0] = 1.0 / params.discrimination_sd**2
        out[self.b0 :] = params.coef_precision
        return out

    def _schur(self, info):
        """Pieces of ``info``'s inverse through the Schur complement of its ``u`` part.

        Each judge's deviations couple only with themselves and with the shared
        parameters, so inverting needs J small blocks and one matrix of the shared
        parameters: much faster than one dense solve, whose threaded BLAS crawls
        on a busy machine. Returns ``(u, rest, d_inv, c, dc, s)``.
        """
        n, m = self.n, self.n_judges
        u = np.arange(self.u0, self.l0)
        rest = np.r_[np.arange(self.n), np.arange(self.l0, self.size)]
        blocks = info[u][:, u].reshape(m, n, m, n)[np.arange(m), :, np.arange(m), :]
        d_inv = np.linalg.inv(blocks)  # (J, n, n)
        c = info[u][:, rest].reshape(m, n, -1)
        dc = (d_inv @ c).reshape(m * n, -1)
        s = info[rest][:, rest] - c.reshape(m * n, -1).T @ dc
        return u, rest, d_inv, c.reshape(m * n, -1), dc, s

    def solve(self, info, grad) -> np.ndarray:
        """``info^-1 grad`` (see :meth:`_schur`)."""
        if self.n_judges < 2:
            return np.linalg.solve(info, grad)
        u, rest, d_inv, c, dc, s = self._schur(info)
        g_u = grad[u].reshape(self.n_judges, self.n, 1)
        dg = (d_inv @ g_u).ravel()
        out = np.empty_like(grad)
        out[rest] = np.linalg.solve(s, grad[rest] - c.T @ dg)
        out[u] = dg - dc @ out[rest]
        return out

    def covariance(self, info) -> np.ndarray:
        """``info^-1`` (see :meth:`_schur`)."""
        if self.n_judges < 2:
            return np.linalg.inv(info)
        n = self.n
        u, rest, d_inv, _, dc, s = self._schur(info)
        s_inv = np.linalg.inv(s)
        cov = np.empty_like(info)
        cov[np.ix_(rest, rest)] = s_inv
        cov[np.ix_(u, rest)] = -dc @ s_inv
        cov[np.ix_(rest, u)] = cov[np.ix_(u, rest)].T
        uu = dc @ s_inv @ dc.T
        for j in range(self.n_judges):
            uu[j * n : (j + 1) * n, j * n : (j + 1) * n] += d_inv[j]
        cov[np.ix_(u, u)] = uu
        return cov

    def log_evidence(self, z, penalty, centre) -> float:
        """Laplace approximation of log p(verdicts | tau), up to a constant, at the mode ``z``.

        The objective at the mode, plus the log normalising constant of the normal
        priors (only ``u``'s depends on ``tau``), minus half the log determinant of
        the information, through the Schur complement of :meth:`_schur`.
        """
        info = self.information(z) + np.diag(penalty)
        _, _, d_inv, _, _, s = self._schur(info)
        logdet = -np.linalg.slogdet(d_inv)[1].sum() + np.linalg.slogdet(s)[1]
        prior = 0.5 * np.log(penalty[self.u0 : self.l0]).sum()
        return self.objective(z, penalty, centre) + prior - 0.5 * logdet

    def summary(self, z, cov, prior_theta, tau, evaluations) -> ConsensusFit:
        n, m = self.n, self.n_judges
        _, _, a, beta = self.unpack(z)
        played_any = self.played.any(axis=0)
        consensus, consensus_sd = _pinned(z, cov, self._select(None), prior_theta, played_any)
        boards, boards_sd = np.empty((m, n)), np.empty((m, n))
        for j in range(m):
            boards[j], boards_sd[j] = _pinned(z, cov, self._select(j), prior_theta, self.played[j])
        coef_sd = np.sqrt(np.diag(cov)[self.b0 :]) / NATURAL
        spread = tau / NATURAL if m > 1 else None
        return ConsensusFit(consensus, consensus_sd, boards, boards_sd, a, beta / NATURAL, coef_sd,
                            self.rows.names, spread, evaluations)  # fmt: skip

    def _select(self, j) -> np.ndarray:
        """The matrix taking ``z`` to ``theta`` (j None) or to ``theta + u_j``."""
        out = np.zeros((self.n, self.size))
        out[:, : self.n] = np.eye(self.n)
        if j is not None and self.n_judges > 1:
            start = self.u0 + j * self.n
            out[:, start : start + self.n] += np.eye(self.n)
        return out


def _pinned(z, cov, select, prior_theta, played) -> tuple[np.ndarray, np.ndarray]:
    """Ratings ``select @ z`` shifted so their mean minus prior over ``played`` is zero,
    with standard deviations (points) of the shifted values."""
    if played.any():
        pin = np.eye(len(prior_theta))
        pin[:, played] -= 1.0 / played.sum()
        select = pin @ select
    theta = select @ z + (prior_theta[played].mean() if played.any() else 0.0)
    sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", select, cov, select), 0.0)) / NATURAL
    return to_rating(theta), sd
