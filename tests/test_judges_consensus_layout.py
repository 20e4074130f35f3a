"""The consensus fit's derivatives against finite differences of its own objective.

Newton's method needs the observed information (the negative Hessian); Fisher's
expected one leaves out the residual term that the bilinear ``a_j * d`` adds. Both
are checked away from the mode, where that term is large, on judges that disagree.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from arena_core.judges.consensus import ConsensusParams
from arena_core.judges.consensus_layout import (
    SADDLE_FLOOR,
    ConsensusLayout,
    JudgeVotes,
    saddle_free_solve,
)
from arena_core.ratings.covariates import VoteRows


def _layout(seed: int, n: int = 4, judges: int = 3, rows: int = 200):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, rows)
    b = (a + rng.integers(1, n, rows)) % n
    judge = rng.integers(0, judges, rows)
    outcome = rng.integers(0, 4, rows)  # a, b, tie, both bad
    x = np.column_stack([(judge == j).astype(float) for j in range(judges)])
    votes = JudgeVotes(judge, judges, VoteRows.from_outcomes(a, b, outcome, x))
    model = ConsensusLayout(n, votes)
    z = rng.normal(0, 0.7, model.size)
    penalty = model.penalty(ConsensusParams(), 0.5)
    return model, z, penalty, rng.normal(0, 0.3, model.size)


def _numeric_hessian(f, z, h=1e-4):
    """Central second differences of ``f`` (a scalar function), entry by entry."""
    size = len(z)
    out = np.empty((size, size))
    eye = np.eye(size) * h
    for i in range(size):
        for k in range(i, size):
            out[i, k] = out[k, i] = (f(z + eye[i] + eye[k]) - f(z + eye[i] - eye[k])
                                     - f(z - eye[i] + eye[k]) + f(z - eye[i] - eye[k])) / (4 * h * h)  # fmt: skip
    return out


def test_the_gradient_is_the_objectives_slope():
    model, z, penalty, centre = _layout(0)

    def f(v):
        return model.objective(v, penalty, centre)

    eye = np.eye(model.size) * 1e-6
    numeric = np.array([(f(z + e) - f(z - e)) / 2e-6 for e in eye])
    analytic = model.gradient(z) - penalty * (z - centre)
    np.testing.assert_allclose(analytic, numeric, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_the_observed_information_is_the_objectives_curvature(seed):
    model, z, penalty, centre = _layout(seed)
    numeric = -_numeric_hessian(lambda v: model.objective(v, penalty, centre), z)
    observed = model.information(z, observed=True) + np.diag(penalty)
    np.testing.assert_allclose(observed, numeric, atol=2e-4 * np.abs(numeric).max())
    # Fisher's misses the residual term here: it is not the curvature.
    fisher = model.information(z) + np.diag(penalty)
    assert np.abs(fisher - numeric).max() > 100 * np.abs(observed - numeric).max()


def test_solving_refuses_an_information_that_is_not_positive_definite():
    model, z, penalty, _ = _layout(1)
    info = model.information(z) + np.diag(penalty)
    grad = np.random.default_rng(5).normal(size=model.size)
    np.testing.assert_allclose(info @ model.solve(info, grad), grad, atol=1e-8)
    bent = info.copy()
    bent[model.l0, model.l0] = -1.0  # a direction of negative curvature
    with pytest.raises(np.linalg.LinAlgError):
        model.solve(bent, grad)


def test_saddle_free_solve_flips_negative_curvature_by_hand():
    rotation = np.array([[0.6, -0.8], [0.8, 0.6]])
    matrix = rotation @ np.diag([2.0, -4.0]) @ rotation.T  # indefinite
    rhs = rotation @ np.array([2.0, 4.0])
    assert saddle_free_solve(matrix, rhs) == pytest.approx(rotation @ np.array([1.0, 1.0]))
    # a direction of almost no curvature is floored, not sent infinitely far
    flat = saddle_free_solve(np.diag([1.0, 1e-12]), np.array([1.0, 1.0]))
    assert flat == pytest.approx([1.0, 1.0 / SADDLE_FLOOR])


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.lists(st.floats(-5, 5), min_size=n * n + n,
                                                    max_size=n * n + n)))  # fmt: skip
def test_saddle_free_steps_always_climb(values):
    """Whatever the symmetric matrix, the step is an ascent direction of the gradient."""
    n = int((np.sqrt(1 + 4 * len(values)) - 1) / 2)
    raw = np.array(values[: n * n]).reshape(n, n)
    grad = np.array(values[n * n :])
    matrix = raw + raw.T
    assume(np.abs(np.linalg.eigvalsh(matrix)).max() > 1e-3 and np.abs(grad).max() > 1e-3)
    assert grad @ saddle_free_solve(matrix, grad) > 0


def test_saddle_free_solve_refuses_a_matrix_without_curvature():
    with pytest.raises(np.linalg.LinAlgError):
        saddle_free_solve(np.zeros((2, 2)), np.ones(2))
