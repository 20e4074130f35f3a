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
Newton's method), the pull toward the consensus is a prior whose strength
``tau`` is estimated rather than imposed, and each adjustment is a named
coefficient with an interval (the biases this project must publish).

**Fitting.** ``a_j`` multiplies the strength gap, so the model is not a GLM and
Fisher's expected information is not the objective's curvature: it leaves out a
term proportional to the residuals (:meth:`ConsensusLayout._residual
<arena_core.judges.consensus_layout.ConsensusLayout._residual>`). Where judges
agree the residuals are small and Fisher scoring converges; on the first real
judges' log (two speech judges that barely agree) it overshot along ``log a``
by nearly twice the right step every step, zigzagging toward the mode at
a rate of 0.94 per step, and never converged. The mode is therefore found by
Newton's method on the observed information, falling back to its saddle-free
form (negative eigenvalues flipped) where the observed one is not positive
definite, with a line search on every step (:func:`_maximise`). Fisher's was
the fallback until Hypothesis found a log on which it crawled along a ridge for
over 200 steps. The Laplace evidence and the intervals keep Fisher's
information, positive definite everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from arena_core.judges.consensus_layout import ConsensusLayout, JudgeVotes
from arena_core.ratings.bt import ConvergenceError
from arena_core.ratings.covariates import COEF_PRECISION, DECREMENT_PER_VOTE
from arena_core.ratings.scale import NATURAL, to_rating, to_theta

__all__ = ["ConsensusFit", "ConsensusParams", "JudgeVotes", "consensus_bradley_terry"]

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
#: Step halvings before a step is given up as unable to improve the objective.
_MAX_HALVINGS = 40
#: Armijo's constant: a step must gain at least this share of the gain its
#: slope predicts (the usual 1e-4: any real gain passes, a loss never does).
_SUFFICIENT_GAIN = 1e-4


@dataclass(frozen=True)
class ConsensusParams:
    """Settings of the consensus fit."""

    #: Votes' worth of prior on each consensus strength (as BTParams.prior_weight); > 0.
    prior_weight: float = 4.0
    #: Smallest and largest spread of the judges around the consensus searched (points).
    spread_range: tuple[float, float] = SPREAD_RANGE
    discrimination_sd: float = DISCRIMINATION_SD
    coef_precision: float = COEF_PRECISION
    #: Convergence of Newton's method (natural units), and of log(spread): 1% of the
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
    """Fit the consensus model (see the module docstring): Newton's method for the mode (see
    :func:`_maximise`), the spread ``tau`` where the Laplace approximation of the verdicts'
    likelihood peaks.

    Raises
    ------
    ConvergenceError
        When the mode is not found in ``params.max_iter`` steps.
    """
    params = params or ConsensusParams()
    prior_theta = np.zeros(n_items) if prior is None else to_theta(np.asarray(prior, float))
    model = ConsensusLayout(n_items, votes)
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
        tau = np.exp(_best_spread(negative_evidence, low, high, params.spread_tol))
    penalty = model.penalty(params, tau)
    z = _maximise(model, state["z"], penalty, centre, params, params.tol)
    cov = _clustered(model, z, model.information(z) + np.diag(penalty))
    return _summary(model, z, cov, prior_theta, tau, state["evaluations"])


def _best_spread(negative_evidence, low: float, high: float, tol: float) -> float:
    """The log spread in ``[low, high]`` where ``negative_evidence`` is least.

    Brent's bounded search never tries the bounds themselves: where the evidence keeps
    rising toward one (judges that agree to within a point, or that share nothing, as
    real judges may) it stops up to ``tol`` short of it. The bound it ran into is then
    tried too and kept if better, so a spread at a bound is reported as exactly the bound.
    """
    found = minimize_scalar(negative_evidence, bounds=(low, high), method="bounded",
                            options={"xatol": tol})  # fmt: skip
    best, value = float(found.x), float(found.fun)
    for bound in (low, high):
        if abs(best - bound) <= 2 * tol:
            at_bound = negative_evidence(bound)
            if at_bound <= value:
                best, value = bound, at_bound
    return best


def _maximise(model: ConsensusLayout, z, penalty, centre, params: ConsensusParams,
              tol: float) -> np.ndarray:  # fmt: skip
    """Newton's method with a line search on the penalised log-posterior, to steps below
    ``tol`` (or a predicted gain below rounding noise: see
    :data:`~arena_core.ratings.covariates.DECREMENT_PER_VOTE`).

    The curvature is the observed information where it is positive definite (near the
    mode it is), else its saddle-free form, which always is: so every step is an ascent
    direction.
    Fisher scoring alone zigzags along the log discriminations when judges disagree
    (see :meth:`ConsensusLayout._residual`). Each step is backtracked until it gains at
    least :data:`_SUFFICIENT_GAIN` of what its slope predicts, so the objective rises
    every step, whatever the start (a warm start from a far spread included).
    """
    flat = DECREMENT_PER_VOTE * (1.0 + float(model.rows.weight.sum()))
    value = model.objective(z, penalty, centre)
    for _ in range(params.max_iter):
        grad = model.gradient(z) - penalty * (z - centre)
        step = _ascent(model, z, penalty, grad)
        slope = float(grad @ step)
        if np.abs(step).max() < tol or slope < flat:
            return z
        scale = 1.0
        for _ in range(_MAX_HALVINGS):
            trial = model.objective(z + scale * step, penalty, centre)
            if trial >= value + _SUFFICIENT_GAIN * scale * slope:
                break
            scale *= 0.5
        else:  # no gain along an ascent direction: the mode, to rounding noise
            return z
        z, value = z + scale * step, trial
    raise ConvergenceError(f"the consensus fit did not converge in {params.max_iter} steps")


def _ascent(model: ConsensusLayout, z, penalty, grad) -> np.ndarray:
    """Newton's step with the observed information, or where that is not positive definite
    (far from the mode, where the residual term outweighs Fisher's) the saddle-free step
    with its eigenvalues' absolute values (:func:`~arena_core.judges.consensus_layout.
    saddle_free_solve`): Fisher scoring there crawled past the step limit on a log
    Hypothesis found."""
    info = model.information(z, observed=True) + np.diag(penalty)
    try:
        return model.solve(info, grad)
    except np.linalg.LinAlgError:
        return model.solve(info, grad, saddle_free=True)


def _clustered(model: ConsensusLayout, z, info) -> np.ndarray:
    """The posterior covariance ``info^-1``, made robust to verdicts clustered by battle.

    With battles of several rows it is the sandwich ``info^-1 M info^-1``, ``M`` being
    ``info`` plus :meth:`~arena_core.judges.consensus_layout.ConsensusLayout.cluster_excess`
    (negative eigenvalues, which sampling noise can give where a battle's rows oppose, set
    to zero): a judge whose two verdicts on a battle mirror each other then gets a battle's
    information from them, not two votes' (its intervals were 1/sqrt(2) too narrow, 84%
    coverage for 95% intervals in a simulation of mirrored judges). The prior's part of
    ``info`` stays in ``M``, so a direction no verdict informs keeps its prior variance.
    Without such battles it is ``info^-1``, unchanged.
    """
    cov = model.covariance(info)
    excess = model.cluster_excess(z)
    if excess is None:
        return cov
    values, vectors = np.linalg.eigh(info + excess)
    meat = (vectors * np.maximum(values, 0.0)) @ vectors.T
    return cov @ meat @ cov


def _summary(model: ConsensusLayout, z, cov, prior_theta, tau, evaluations) -> ConsensusFit:
    n, m = model.n, model.n_judges
    _, _, a, beta = model.unpack(z)
    played_any = model.played.any(axis=0)
    consensus, consensus_sd = _pinned(z, cov, model.select(None), prior_theta, played_any)
    boards, boards_sd = np.empty((m, n)), np.empty((m, n))
    for j in range(m):
        boards[j], boards_sd[j] = _pinned(z, cov, model.select(j), prior_theta, model.played[j])
    coef_sd = np.sqrt(np.diag(cov)[model.b0 :]) / NATURAL
    spread = tau / NATURAL if m > 1 else None
    return ConsensusFit(consensus, consensus_sd, boards, boards_sd, a, beta / NATURAL, coef_sd,
                        model.rows.names, spread, evaluations)  # fmt: skip


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
