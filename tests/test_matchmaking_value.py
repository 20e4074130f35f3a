"""The pair values: the expected Spearman rho of the board, against hand-worked numbers and draws."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.matchmaking.value import expected_spearman, misordered, shortcut_spearman


def spearman_of(x, y):
    """Spearman rho without ties, written out: 1 - 6 sum d^2 / (n (n^2 - 1))."""
    n = len(x)
    d = np.argsort(np.argsort(x)) - np.argsort(np.argsort(y))
    return 1 - 6 * float(np.sum(d * d)) / (n * (n * n - 1))


def pairs_of(gaps, sds):
    """(n, n) gap and variance arrays from per-pair values given as dicts over i < j."""
    n = 1 + max(j for _, j in gaps)
    gap, s2 = np.zeros((n, n)), np.ones((n, n))
    for (i, j), g in gaps.items():
        gap[i, j] = gap[j, i] = g
        s2[i, j] = s2[j, i] = sds[i, j] ** 2
    return gap, s2


@pytest.mark.parametrize("n", [3, 4, 6])
def test_a_board_that_knows_nothing_expects_rho_zero(n):
    # Every pair a coin flip: the board's order is a random permutation of the truth, and the
    # mean Spearman rho over all n! permutations is 0 (enumerated here).
    rhos = [spearman_of(np.arange(n), np.array(p)) for p in itertools.permutations(range(n))]
    assert np.mean(rhos) == pytest.approx(0.0, abs=1e-12)
    assert expected_spearman(np.arange(n), np.zeros((n, n)), np.ones((n, n))) == pytest.approx(0.0)


def test_a_board_sure_of_its_order_expects_rho_one():
    ratings = np.array([900.0, 1000.0, 1100.0])
    gap = np.abs(ratings[:, None] - ratings[None, :])
    assert expected_spearman(ratings, gap, np.full((3, 3), 1e-6)) == pytest.approx(1.0)


def test_sum_of_squared_displacements_counts_each_misordered_pair_by_its_distance():
    # The identity behind the closed form, on every order of four models, by hand-free counting.
    for order in itertools.permutations(range(4)):
        board = np.array(order)
        d2 = int(np.sum((board - np.arange(4)) ** 2))
        flips = sum(j - k for k in range(4) for j in range(k + 1, 4) if board[k] > board[j])
        assert d2 == 2 * flips


def test_three_models_by_hand():
    # Ranks 0 < 1 < 2; the neighbours are misordered with chance a each, the ends with chance
    # b: E[sum d^2] = 2 (1 a + 1 a + 2 b) = 4 a + 4 b, and rho = 1 - 6 E / (3 * 8).
    a_sd, b_sd = 1.0, 0.5
    gap, s2 = pairs_of({(0, 1): 0.5, (1, 2): 0.5, (0, 2): 1.0}, {(0, 1): a_sd, (1, 2): a_sd,
                                                                 (0, 2): b_sd})  # fmt: skip
    a = 1 / (1 + math.exp(1.702 * 0.5 / a_sd))  # the logistic stand-in for Phi(-gap / sd)
    b = 1 / (1 + math.exp(1.702 * 1.0 / b_sd))
    assert misordered(gap, s2)[0, 1] == pytest.approx(a)
    assert expected_spearman([0.0, 1.0, 2.0], gap, s2) == pytest.approx(1 - (4 * a + 4 * b) / 4)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 9))
def test_expected_rho_matches_draws_from_the_normal_law(seed, n):
    # Independent strengths around the board's ratings: Spearman rho of a draw against the
    # board, averaged over draws, is what the closed form predicts, up to the logistic
    # stand-in for Phi (at most 0.0095 off per pair: since sum |r_k - r_l| over pairs is
    # n (n^2 - 1) / 6, rho at most 12 * 0.0095 / 6 = 0.019 off) and the draws' noise.
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(0.0, 1.0, n))
    var = rng.uniform(0.05, 0.6, n)
    gap = np.abs(theta[:, None] - theta[None, :])
    s2 = var[:, None] + var[None, :]
    draws = theta + np.sqrt(var) * rng.standard_normal((20_000, n))
    d = np.argsort(np.argsort(draws, axis=1), axis=1) - np.arange(n)  # theta is sorted
    rho = 1 - 6 * np.sum(d * d, axis=1) / (n * (n * n - 1))
    noise = 4 * rho.std() / math.sqrt(len(rho))
    assert expected_spearman(theta, gap, s2) == pytest.approx(rho.mean(), abs=0.019 + noise)


@pytest.mark.parametrize("n", [3, 5])
def test_the_shortcut_counts_every_swap_as_one_of_neighbours(n):
    # A board that knows nothing: 2 sum P = 2 * (n (n - 1) / 2) * 1/2 = n (n - 1) / 2, so the
    # shortcut reports rho = 1 - 6 * n (n - 1) / 2 / (n (n^2 - 1)) = 1 - 3 / (n + 1), not 0.
    gap, s2 = np.zeros((n, n)), np.ones((n, n))
    assert shortcut_spearman(np.arange(n), gap, s2) == pytest.approx(1 - 3 / (n + 1))
