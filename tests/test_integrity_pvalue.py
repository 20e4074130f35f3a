"""The anomalous-voter test's p-values, its tie-break and the chi-squared law it is judged by.

Expected values come from hand-worked counts, scipy, and a plain-Python splitmix64.
"""

import numpy as np
import pytest
from scipy import stats

from arena_core.integrity.pvalue import (
    TIE_BITS,
    chi2_isf_even,
    chi2_sf_even,
    fisher_terms,
    p_value_parts,
    tiebreak,
)


def splitmix_tie(ts_us: int) -> int:
    """The tie-break of a timestamp, written out with Python integers."""
    mask = (1 << 64) - 1
    z = (ts_us + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return 2 * (z >> (64 - TIE_BITS + 1)) + 1


def test_p_value_by_hand():
    # Others voted first-wins 5, second-wins 3, tie 1, both-bad 0 times; with U = t / 2^26.
    t = 12345
    u = t / 2**TIE_BITS
    # A tie: with it, counts (5, 3, 2, 0). Rarer: both-bad (0 votes). As rare: the 2 ties.
    num, den = p_value_parts([[5, 3, 1, 0]], [2], [t])
    assert num[0] / den[0] == pytest.approx(u * 2 / 10, rel=1e-15)
    # A first-wins vote: (6, 3, 1, 0). Rarer: 3 + 1 + 0 = 4 votes; as rare: its own 6.
    num, den = p_value_parts([[5, 3, 1, 0]], [0], [t])
    assert num[0] / den[0] == pytest.approx((4 + u * 6) / 10, rel=1e-15)
    # Nothing to compare with: p = U.
    num, den = p_value_parts([[0, 0, 0, 0]], [3], [t])
    assert num[0] / den[0] == pytest.approx(u, rel=1e-15)


def test_p_values_are_uniform_when_the_vote_is_like_the_others():
    # Exchangeable votes (the null): the randomised p-value is uniform on (0, 1).
    rng = np.random.default_rng(11)
    probs = [0.6, 0.25, 0.1, 0.05]
    n = 20_000
    sizes = rng.integers(0, 30, n)
    others = np.array([rng.multinomial(k, probs) for k in sizes])
    own = rng.choice(4, size=n, p=probs)
    num, den = p_value_parts(others, own, tiebreak(rng.integers(0, 2**50, n)))
    assert stats.kstest(num / den, "uniform").pvalue > 1e-3
    # A vote for an outcome the others almost never chose gets small p-values.
    num, den = p_value_parts(others, np.full(n, 3), tiebreak(rng.integers(0, 2**50, n)))
    assert np.median(num / den) < 0.1


def test_tiebreak_matches_a_plain_python_splitmix():
    ts = [0, 1, 1_767_225_600_000_000, 2**62 + 12345]
    assert tiebreak(np.array(ts)).tolist() == [splitmix_tie(x) for x in ts]
    assert all(0 < t < 2**TIE_BITS and t % 2 for t in tiebreak(np.arange(1000)))


def test_fisher_terms_are_the_same_in_a_batch_and_one_by_one():
    # The live app computes one vote at a time, the replay all at once: the bits must agree.
    rng = np.random.default_rng(3)
    others = rng.integers(0, 5000, (2000, 4))
    outcome = rng.integers(0, 4, 2000)
    tie = tiebreak(rng.integers(0, 2**50, 2000))
    batch = fisher_terms(others, outcome, tie)
    single = [
        int(fisher_terms(others[k : k + 1], outcome[k : k + 1], tie[k : k + 1])[0])
        for k in range(2000)
    ]
    assert batch.tolist() == single
    num, den = p_value_parts(others, outcome, tie)
    np.testing.assert_allclose(batch / 2**32, -2 * np.log(num / den), rtol=1e-12, atol=1e-9)


# -- thresholds -------------------------------------------------------------------------


@pytest.mark.parametrize("dof", [2, 10, 80, 640, 5120])
@pytest.mark.parametrize("q", [1e-5, 1e-3, 0.05, 0.5])
def test_chi_squared_matches_scipy(dof, q):
    x = chi2_isf_even(q, dof)
    assert x == pytest.approx(stats.chi2.isf(q, dof), rel=1e-8)
    assert chi2_sf_even(x, dof) == pytest.approx(q, rel=1e-6)
    assert chi2_sf_even(0.5 * dof, dof) == pytest.approx(stats.chi2.sf(0.5 * dof, dof), rel=1e-9)
