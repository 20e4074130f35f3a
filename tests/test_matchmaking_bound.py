"""The oracle bound's math (``bench/matchmaking_bound.py``), against independent computations.

The exact ``E[sum d^2]`` is checked against ranks of ratings drawn from the same normal law,
scored by :func:`arena_core.simulation.synthetic.spearman`; the closed-form gradient that
steers the best split is checked against finite differences of the loss it follows.
"""

import importlib.util
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from arena_core.simulation.synthetic import spearman

_PATH = Path(__file__).resolve().parent.parent / "bench" / "matchmaking_bound.py"
_SPEC = importlib.util.spec_from_file_location("matchmaking_bound", _PATH)
bound = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bound)

N = 6
PAIRS = np.triu_indices(N, 1)
THETA = np.linspace(-0.6, 0.6, N)
GAP = np.abs(THETA[:, None] - THETA[None, :])
P = 1.0 / (1.0 + np.exp(THETA[PAIRS[1]] - THETA[PAIRS[0]]))
H = P * (1.0 - P)


@pytest.mark.parametrize("seed", [0, 1])
def test_expected_displacement_matches_draws_from_the_normal_law(seed):
    rng = np.random.default_rng(seed)
    shares = rng.dirichlet(np.ones(len(H)))
    votes, dispersion = 150.0, 0.9
    exact = bound.expected_displacement(shares, PAIRS, H, N, votes, dispersion, GAP)
    cov = bound.covariance(shares, PAIRS, H, N) * dispersion / votes
    root = np.linalg.cholesky(cov + 1e-12 * np.eye(N))
    rho = np.array([spearman(THETA + root @ rng.standard_normal(N), THETA) for _ in range(8000)])
    # rho = 1 - 6 sum d^2 / (n (n^2 - 1)), so E[sum d^2] = (1 - E[rho]) n (n^2 - 1) / 6.
    drawn = (1.0 - rho) * N * (N * N - 1) / 6.0
    assert exact == pytest.approx(drawn.mean(), abs=4 * drawn.std() / np.sqrt(len(drawn)))
    assert exact > 1.0  # far from a board that is always right: the check has teeth


def test_the_split_moves_along_the_gradient_of_the_expected_displacement():
    shares = np.random.default_rng(3).dirichlet(np.ones(len(H)))
    votes, dispersion = 80.0, 0.9
    weigh = partial(bound.misorder_weights, pairs=PAIRS, n=N, scale=dispersion / votes, gap=GAP)
    gains = bound.pair_gains(shares, PAIRS, H, N, weigh)
    step = 1e-6
    for k in (0, 4, 14):
        up, down = shares.copy(), shares.copy()
        up[k] += step
        down[k] -= step
        slope = (bound.expected_displacement(up, PAIRS, H, N, votes, dispersion, GAP)
                 - bound.expected_displacement(down, PAIRS, H, N, votes, dispersion, GAP)) / (2 * step)  # fmt: skip
        assert slope == pytest.approx(-dispersion / votes * gains[k], rel=1e-5)


def test_the_best_split_for_the_ranking_needs_fewer_votes_than_uniform():
    uniform = np.full(len(H), 1.0 / len(H))
    before = bound.votes_to_rho(uniform, PAIRS, H, N, 0.9, GAP, 0.95)
    shares, after = bound.spearman_design(PAIRS, H, N, 0.9, GAP, 0.95, steps=400)
    assert shares.sum() == pytest.approx(1.0) and np.all(shares >= 0)
    assert after < before
    # The threshold is met at the votes reported, and not much before.
    target = bound.displacement_at(0.95, N)
    assert bound.expected_displacement(shares, PAIRS, H, N, after, 0.9, GAP) <= target * (1 + 1e-9)
    assert bound.expected_displacement(shares, PAIRS, H, N, 0.99 * after, 0.9, GAP) > target
