"""The per-vote p-value of the anomalous-voter test, and Fisher's chi-squared law.

Pure functions on integer counts. A p-value is kept as an exact ratio of
integers (:func:`p_value_parts`); its logarithm is turned into fixed point
(:data:`FIXED_ONE`) by :func:`terms_of`, the one function that the replay (on
arrays) and the live app (one vote at a time, through :func:`fisher_terms`)
both call, so the two agree bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

#: Outcomes on an unordered pair (models ordered by id): first wins, second wins, tie, both bad.
N_OUTCOMES = 4
#: Fixed-point unit of Fisher's statistic: 2^-32 (an integer sum cannot differ between runs).
FIXED_ONE = 1 << 32
#: Bits of the tie-break between equally rare outcomes (p stays an exact ratio of integers
#: below 2^53 for pairs of up to 2^27 votes).
TIE_BITS = 26


def chi2_sf_even(x: float, dof: int) -> float:
    """``P(X > x)`` for a chi-squared ``X`` with an even number of degrees of freedom.

    For ``dof = 2k`` it equals ``P(Poisson(x / 2) <= k - 1)`` (summed in log
    space), which spares a dependency on scipy.
    """
    if dof < 2 or dof % 2:
        raise ValueError(f"dof must be even and positive, got {dof}")
    if x <= 0:
        return 1.0
    lam, k = x / 2.0, dof // 2
    i = np.arange(k, dtype=float)
    logs = -lam + i * math.log(lam) - np.array([math.lgamma(v + 1.0) for v in i])
    top = logs.max()
    return float(min(1.0, math.exp(top) * np.exp(logs - top).sum()))


def chi2_isf_even(q: float, dof: int) -> float:
    """The ``x`` with ``chi2_sf_even(x, dof) = q``, by bisection (to 1e-10 relative)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    low, high = 0.0, float(dof)
    while chi2_sf_even(high, dof) > q:
        low, high = high, 2.0 * high
    while high - low > 1e-10 * high:
        mid = (low + high) / 2.0
        if chi2_sf_even(mid, dof) > q:
            low = mid
        else:
            high = mid
    return high


def tiebreak(ts_us) -> np.ndarray:
    """Each vote's tie-break, an odd integer ``t`` in (0, 2^TIE_BITS): ``U = t / 2^TIE_BITS``.

    Drawn from the vote's timestamp (splitmix64, top bits), so a replay draws
    the same numbers. A voter cannot profit from steering it: the largest ``U``
    gives the plain conservative p-value, which is as weak as the test can get.
    """
    with np.errstate(over="ignore"):
        z = np.asarray(ts_us, dtype=np.int64).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (2 * (z >> np.uint64(64 - TIE_BITS + 1)) + 1).astype(np.int64)


def p_value_parts(others, outcome, tie) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator of each vote's p-value (integers; ``p = num / den``).

    ``others`` is ``(n, 4)``: counts of each outcome among the other voters'
    earlier unflagged votes on the pair; ``outcome`` is the vote's own code;
    ``tie`` its tie-break (:func:`tiebreak`). With ``c'`` the counts with the
    vote itself added, ``S`` the votes of outcomes rarer than the vote's and
    ``E`` those exactly as rare (itself included),
    ``p = (S + U E) / (|H| + 1)``: the randomised conformal p-value, uniform on
    (0, 1) when the vote is exchangeable with the others.
    """
    others = np.asarray(others, dtype=np.int64).reshape(-1, N_OUTCOMES)
    outcome = np.asarray(outcome, dtype=np.int64).reshape(-1)
    rows = np.arange(len(outcome))
    with_own = others.copy()
    with_own[rows, outcome] += 1
    own = with_own[rows, outcome][:, None]
    rarer = (with_own * (with_own < own)).sum(axis=1)
    as_rare = (with_own * (with_own == own)).sum(axis=1)
    num = (rarer << TIE_BITS) + np.asarray(tie, dtype=np.int64).reshape(-1) * as_rare
    return num, (others.sum(axis=1) + 1) << TIE_BITS


def fisher_terms(others, outcome, tie) -> np.ndarray:
    """Each vote's ``-2 ln p`` in fixed point (int64, units of 2^-32)."""
    return terms_of(*p_value_parts(others, outcome, tie))


def terms_of(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``-2 ln(num / den)`` in fixed point, from a p-value's exact parts."""
    logs = np.log(np.asarray(den, dtype=np.float64)) - np.log(np.asarray(num, dtype=np.float64))
    return np.rint(2.0 * logs * FIXED_ONE).astype(np.int64)
