"""Whether the votes bound a covariate's coefficient: separation in a Bradley-Terry fit.

In the fits with covariates (:mod:`~arena_core.ratings.covariates`,
:mod:`~arena_core.judges.consensus`) the model strengths carry a proper prior, so
they stay finite, but the coefficients ``beta`` get almost none (a precision of
:data:`~arena_core.ratings.covariates.COEF_PRECISION`). Their maximum-likelihood
value is infinite exactly when the votes are *separated* along some direction
``d`` of the coefficients (Albert and Anderson, Biometrika 1984): every decisive
row agrees with ``d`` (``x.d >= 0`` where side A won, ``<= 0`` where side B
won), every row with a fractional score (ties, or merged rows of wins and losses)
has ``x.d = 0``, and some row has ``x.d != 0``. Then the likelihood rises without
end along ``d``, and the fitted mode is wherever the near-flat prior stops it: a
finite-looking number (side A at +2377 points when every decisive vote went to
side A) with a huge symmetric interval that calls a certain effect uncertain.

:func:`coefficient_support` finds, per coefficient, how many votes inform it and
whether it is unbounded above, below, or bounded, by linear programs over the
cone of separating directions (directions no vote informs are projected out
first: they are the covariates' collinearity, not separation), solved by
constraint generation from a subset of the rows (:func:`_separable`), exact and
about half a second for a million votes with five covariates.
:func:`one_sided_bound` gives the bound the votes do support, as the leaderboard
does for an infinite rating: the value at which the coefficient's record (all
its informative votes going its way) has probability ``(1 - level) / 2``, the
rest of the fit held at its mode.
"""

from __future__ import annotations

import numpy as np

#: Bounded: the votes give the coefficient a finite maximum-likelihood value.
BOUNDED = 0
#: Unbounded above (+1) or below (-1): the likelihood rises without end that way.
ABOVE, BELOW = 1, -1
#: Unbounded either way: it moves with other coefficients along a separating direction.
EITHER = 2
#: Decisive rows each linear program starts from, and most it adds per round (:func:`_separable`).
SUBSET_ROWS = 2000
#: A separating direction's coordinate (in a unit box) below this is rounding noise.
_TOL = 1e-7
#: Eigenvalues of the covariates' Gram matrix below this share of the largest are zero.
_RANK_TOL = 1e-10


def coefficient_support(x: np.ndarray, score: np.ndarray,
                        weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Per column of ``x``: the votes informing it and whether its coefficient is bounded.

    Parameters
    ----------
    x : (rows, k) covariates; score : side A's (mean) score per row; weight : votes per row.

    Returns
    -------
    informative : (k,) float
        Votes (sum of weights) of the rows where the column is not zero.
    direction : (k,) int
        :data:`BOUNDED`, :data:`ABOVE`, :data:`BELOW` or :data:`EITHER`.
    """
    x = np.asarray(x, float)
    used = np.asarray(weight, float) > 0
    x, score = x[used], np.asarray(score, float)[used]
    informative = (np.asarray(weight, float)[used, None] * (x != 0)).sum(axis=0)
    direction = np.zeros(x.shape[1], dtype=np.int64)
    basis = _free_directions(x, (score > 0) & (score < 1))
    if not basis.shape[1]:
        return informative, direction
    decisive = x[(score == 0) | (score == 1)] * np.where(score[(score == 0) | (score == 1)] == 1,
                                                         1.0, -1.0)[:, None]  # fmt: skip
    reach = _separable(decisive[np.any(decisive != 0, axis=1)], basis)
    direction[reach[:, 0] & reach[:, 1]] = EITHER
    direction[reach[:, 0] & ~reach[:, 1]] = ABOVE
    direction[~reach[:, 0] & reach[:, 1]] = BELOW
    return informative, direction


def _free_directions(x: np.ndarray, fractional: np.ndarray) -> np.ndarray:
    """Orthonormal basis (k, m) of the directions some row informs and no fractional row does."""
    k = x.shape[1]
    span = _eigen_basis(x.T @ x, keep_large=True) if len(x) else np.zeros((k, 0))
    if not span.shape[1] or not fractional.any():
        return span
    tied = x[fractional] @ span
    return span @ _eigen_basis(tied.T @ tied, keep_large=False, scale=_scale(x.T @ x))


def _scale(gram: np.ndarray) -> float:
    return float(np.abs(np.linalg.eigvalsh(gram)).max(initial=0.0))


def _eigen_basis(gram: np.ndarray, *, keep_large: bool, scale: float | None = None) -> np.ndarray:
    """Eigenvectors of a Gram matrix with non-zero (``keep_large``) or zero eigenvalues."""
    values, vectors = np.linalg.eigh(gram)
    scale = max(scale if scale is not None else float(np.abs(values).max(initial=0.0)), 1e-300)
    large = values > _RANK_TOL * scale
    return vectors[:, large if keep_large else ~large]


def _separable(decisive: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """(k, 2): whether a separating direction ``d = basis @ c`` (decisive rows, sign-folded,
    all ``>= 0``) can have ``d_i > 0`` (column 0) or ``d_i < 0`` (column 1).

    By constraint generation: each linear program starts on an evenly spaced subset of the
    rows; a direction it finds that some other row contradicts brings in the rows most
    contradicting it, and it is solved again. A subset with no such direction proves there
    is none (fewer rows, a larger cone), so the answer is exact, and a log that is not
    separated costs one small program per coefficient and side, whatever its size.
    """
    k = basis.shape[0]
    rows = decisive @ basis
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = rows / np.where(norms > 0, norms, 1.0)  # unit rows: the same cone, better scaled
    start = np.arange(0, len(rows), max(1, -(-len(rows) // SUBSET_ROWS)))
    reach = np.zeros((k, 2), dtype=bool)
    for i in range(k):
        for side, sign in enumerate((1.0, -1.0)):
            reach[i, side] = _reaches(rows, -sign * basis[i], start)
    return reach


def _reaches(rows: np.ndarray, cost: np.ndarray, active: np.ndarray) -> bool:
    """Whether some ``c`` in the unit box with ``rows @ c >= 0`` has ``cost @ c < 0``."""
    # Imported here: scipy.optimize costs 0.4 s to import, and ratings/__init__ imports this
    # module, so at the top it was paid by every fresh leaderboard run, which never uses it.
    from scipy.optimize import linprog

    while True:
        a_ub = rows[active]
        found = linprog(cost, A_ub=-a_ub if len(a_ub) else None,
                        b_ub=np.zeros(len(a_ub)) if len(a_ub) else None,
                        bounds=[(-1.0, 1.0)] * len(cost), method="highs")  # fmt: skip
        if found.status != 0 or -found.fun <= _TOL:
            return False
        slack = rows @ found.x
        wrong = np.flatnonzero(slack < -_TOL)
        if not len(wrong):
            return True
        worst = wrong[np.argsort(slack[wrong])[:SUBSET_ROWS]]
        active = np.union1d(active, worst)


def axis_separated(
    column: np.ndarray, score: np.ndarray, weight: np.ndarray, direction: int
) -> bool:
    """Whether moving this one coefficient alone toward ``direction`` separates the votes
    (every row it informs is decisive and goes that way): then :func:`one_sided_bound` applies."""
    used = (np.asarray(weight) > 0) & (np.asarray(column) != 0)
    s, c = np.asarray(score)[used], np.asarray(column)[used]
    won = np.where(s == 1, 1.0, np.where(s == 0, -1.0, 0.0))
    return bool(used.any() and np.all(won * np.sign(c) * direction > 0))


def one_sided_bound(offset: np.ndarray, column: np.ndarray, score: np.ndarray,
                    weight: np.ndarray, direction: int, level: float = 0.95) -> float:  # fmt: skip
    """The coefficient (natural units) at which its informative votes' record has probability
    ``(1 - level) / 2``: a lower bound when ``direction`` is :data:`ABOVE`, an upper one when
    :data:`BELOW`. ``offset`` is each row's linear predictor without this coefficient.

    Only for an :func:`axis_separated` coefficient: each informative row is then decisive
    and its probability moves one way with the coefficient, so the root is unique.
    """
    used = (np.asarray(weight) > 0) & (np.asarray(column) != 0)
    won = np.where(np.asarray(score)[used] == 1, 1.0, -1.0)
    off, col, w = np.asarray(offset)[used], np.asarray(column)[used], np.asarray(weight)[used]
    target = np.log((1.0 - level) / 2.0)

    def log_record(beta: float) -> float:
        t = won * (off + col * beta)  # log sigma(t) = -softplus(-t), stably
        return float(-(w * (np.maximum(-t, 0.0) + np.log1p(np.exp(-np.abs(t))))).sum()) - target

    from scipy.optimize import brentq  # imported here, as in _reaches

    near, far = 0.0, float(direction)
    while log_record(near) > 0:  # walk back until the record is improbable enough
        near -= direction * max(1.0, abs(near))
    while log_record(far) < 0:
        far += direction * max(1.0, abs(far))
    return float(brentq(log_record, min(near, far), max(near, far), xtol=1e-10))
