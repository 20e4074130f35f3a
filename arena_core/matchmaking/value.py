"""What one more battle of a pair is worth: to the ranking, to the widest intervals.

The weighing behind :func:`arena_core.matchmaking.draw_pair` (its module
docstring says how the sampler uses it). Everything works on whole ``(n, n)``
arrays of pairs, in natural log-odds: ``gap`` is the fitted rating gap of each
pair, ``s2`` the variance of that gap and ``h = p (1 - p)`` the Fisher
information of one battle between them.
"""

from __future__ import annotations

import numpy as np

from arena_core.ratings.scale import NATURAL

#: Logistic stand-in for the normal CDF: Phi(x) ~ sigmoid(1.702 x), at most 0.01 off.
PROBIT = 1.702
#: Two-sided 95% normal quantile, for interval widths from variances.
Z95 = 1.959963984540054
#: Variances below this (natural log-odds squared) count as this, to avoid 0/0.
TINY_VAR = 1e-12


def misordered(gap, s2):
    """Chance the board has each pair the wrong way round: ``Phi(-|gap| / sd)``."""
    return sigmoid(-PROBIT * np.abs(gap) / np.sqrt(s2))


def rank_value(gap, s2, h, since, sharpness) -> np.ndarray:
    """Chance a pair is misordered (to ``sharpness``) times the share of its variance a vote removes.

    ``since`` battles of the pair after the fit have already shrunk its variance
    to ``s2 / (1 + since h s2)``, so no pair is drawn over and over before a refit.
    """
    s2 = s2 / (1.0 + since * h * s2)
    return (2.0 * misordered(gap, s2)) ** sharpness * h * s2 / (1.0 + h * s2)


def expected_spearman(ratings, gap, s2) -> float:
    """Expected Spearman rho of the board with the truth, from each pair's chance of misorder.

    The board's ranks are a permutation of the true ranks ``r``, so
    ``E[sum d^2] = 2 sum_{k<l} |r_k - r_l| P_kl`` exactly (``P_kl`` the chance the
    pair is misordered; ``bench/matchmaking_bound.py`` checks it by Monte Carlo),
    and the board's own ranks stand in for ``r``. The shortcut ``2 sum P``, which
    counts every swap as one between neighbours, is about half of it on a board
    still settling (:func:`shortcut_spearman`).
    """
    n = len(gap)
    if n < 2:
        return 1.0
    place = np.argsort(np.argsort(np.asarray(ratings, dtype=float)))
    apart = np.abs(place[:, None] - place[None, :])
    displacement = 2.0 * np.triu(apart * misordered(gap, s2), 1).sum()
    return 1.0 - 6.0 * displacement / (n * (n * n - 1))


def shortcut_spearman(ratings, gap, s2) -> float:
    """Expected Spearman rho with ``E[sum d^2] ~ 2 sum P_kl``: every swap counted as one of neighbours.

    About half the exact displacement (:func:`expected_spearman`) on a board still
    settling, so the rho it reports runs high; the sampler's default switch rule
    (:class:`arena_core.matchmaking.MatchParams`, ``exact_rho``).
    """
    n = len(gap)
    if n < 2:
        return 1.0
    return 1.0 - 12.0 * np.triu(misordered(gap, s2), 1).sum() / (n * (n * n - 1))


def interval_value(cov, s2, h, target_width: float, focus_power: float,
                   weights=None) -> np.ndarray:  # fmt: skip
    """Relative variance removed from the widest intervals (``theta_k - mean theta``), per pair.

    A battle of i and j removes ``h (c' S u)^2 / (1 + h u' S u)`` from the
    variance of a contrast ``c`` (``u = e_i - e_j``); summed over each model's
    interval relative to its variance, weighted by ``(w_k var_k / max w var)^focus_power``
    (``max`` at least the variance of an interval ``target_width`` points wide).

    ``weights`` (the registry's, default 1) make a model's interval count as if its
    variance were ``w_k`` times larger: the draws even out ``w_k var_k``, and since a
    model's variance falls as one over its battles, a model of weight 2 ends with about
    twice the battles. A weight applied to the pairs alone is undone here: a model drawn
    more has a narrower interval, so the widest intervals pull the votes back.
    """
    n = len(cov)
    own = np.maximum(centred_variances(cov), TINY_VAR)
    need = own if weights is None else own * np.asarray(weights, dtype=float)
    target = (target_width * NATURAL / (2.0 * Z95)) ** 2
    focus = (need / max(need.max(), target)) ** focus_power / own
    centre = np.eye(n) - 1.0 / n
    g = cov @ ((centre * focus) @ centre) @ cov
    gd = np.diag(g)
    value = h * np.maximum(gd[:, None] + gd[None, :] - 2.0 * g, 0.0) / (1.0 + h * s2)
    np.fill_diagonal(value, 0.0)
    return value


def centred_variances(cov: np.ndarray) -> np.ndarray:
    """Variance of ``theta_i - mean(theta)`` for each i: what a bootstrap interval measures."""
    row = cov.mean(axis=1)
    return np.maximum(np.diag(cov) - 2.0 * row + row.mean(), 0.0)


def sigmoid(x):
    """The logistic function, through tanh: no overflow for large ``|x|``."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))
