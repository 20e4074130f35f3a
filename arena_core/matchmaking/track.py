"""The snapshot carried forward over the votes since the fit, without a refit.

Between refits the sampler's :class:`~arena_core.matchmaking.sampler.Snapshot` is
stale: the pairs' variances shrink with the battles since the fit, but the gaps
never move and the outcomes are ignored, so the sampler keeps chasing a close call
the last votes may already have settled. :func:`advance` folds the votes since the
fit into the snapshot as one assumed-density-filtering step (a Laplace, or
rank-k Gaussian, update of ``N(theta, S)`` by the Bradley-Terry likelihood of
those votes, linearised at the fitted ratings): ``k`` pairs that met since the fit
cost ``O(k n^2 + k^3)``, a few array operations, and no fit.

With ``U`` the ``(n, k)`` contrasts ``e_i - e_j`` of the pairs that met, ``D`` their
information ``m h`` (``m`` battles, ``h = p (1 - p)`` at the fitted gap) and ``g``
their score residuals (half-win score minus ``m p``):

    S' = S - S U (D^-1 + U'SU)^-1 U'S,    theta' = theta + S' U g

(one Newton step of the posterior from the fit; the ``S' U`` is ``S U (I + D U'SU)^-1``).
"""

from __future__ import annotations

import numpy as np

from arena_core.matchmaking.value import TINY_VAR, expected_spearman, misordered, sigmoid
from arena_core.ratings.scale import to_rating, to_theta


def advance(snap, battles, scores, params):
    """``snap`` with the votes since its fit folded in (see the module docstring).

    ``battles`` and ``scores`` are current to the last vote: battles per pair, and
    the half-win score of each row against each column (wins plus half the draws).
    Returns ``snap`` itself when no vote came since the fit or it carries no
    covariance. The interval values and the posterior root are the fit's (the
    interval values of the pairs that met shrink as in the sampler); the ratings,
    gaps, pair variances, ranking values and interval share are the advanced ones.
    """
    from arena_core.matchmaking.sampler import Snapshot  # the sampler imports this module

    if snap.cov is None or snap.scores is None:
        return snap
    met = np.triu(battles != snap.battles, 1)
    i, j = np.nonzero(met)
    if not len(i):
        return snap
    m = np.maximum(battles[i, j] - snap.battles[i, j], 0).astype(float)
    theta = to_theta(snap.ratings)
    p = sigmoid(theta[i] - theta[j])
    info = m * p * (1.0 - p) / snap.dispersion
    resid = (scores[i, j] - snap.scores[i, j] - m * p) / snap.dispersion
    cov = snap.cov
    su = cov[:, i] - cov[:, j]  # S U, (n, k)
    usu = su[i] - su[j]  # U'SU, (k, k)
    k = len(i)
    # S' U = S U (I + D U'SU)^-1, and S' = S - S U D (I + U'SU D)^-1 U'S.
    su_new = np.linalg.solve((np.eye(k) + info[:, None] * usu).T, su.T).T
    theta = theta + su_new @ resid
    cov = cov - (su_new * info) @ su.T
    cov = 0.5 * (cov + cov.T)
    var = np.diag(cov)
    s2 = np.maximum(var[:, None] + var[None, :] - 2.0 * cov, TINY_VAR)
    gap = np.abs(theta[:, None] - theta[None, :])
    q = sigmoid(gap)
    h = q * (1.0 - q)
    wrong = misordered(gap, s2)  # once, for the pair values and the expected rho alike
    rank = (2.0 * wrong) ** snap.sharpness * h * s2 / (1.0 + h * s2)  # value.rank_value
    np.fill_diagonal(rank, 0.0)
    ratings = to_rating(theta)
    if params.exact_rho:
        rho = expected_spearman(ratings, gap, s2)
    else:  # value.shortcut_spearman, from the chances of misorder already computed
        n = len(theta)
        rho = 1.0 - 6.0 * (wrong.sum() - np.trace(wrong)) / (n * (n * n - 1))
    unsettled = (1.0 - rho) / max(1.0 - params.settled_rho, 1e-9)
    interval = snap.interval.copy()
    mm = np.maximum(battles - snap.battles, 0)
    changed = mm > 0
    interval[changed] /= 1.0 + mm[changed] * snap.h[changed] * snap.s2[changed]
    return Snapshot(
        ratings=ratings, battles=np.asarray(battles).copy(), gap=gap, s2=s2, h=h, rank=rank,
        interval=interval, root=snap.root,
        interval_share=params.interval_share * float(np.clip(2.0 * (1.0 - unsettled), 0.0, 1.0)),
        sharpness=snap.sharpness, cov=cov, scores=np.asarray(scores, dtype=float).copy(),
        dispersion=snap.dispersion,
    )  # fmt: skip
