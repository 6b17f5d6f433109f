import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from inference.laplace import laplace_fit, laplace_update


@given(st.integers(0, 10_000), st.integers(0, 1), st.floats(0.1, 10.0))
@settings(max_examples=40, deadline=None)
@example(seed=44, y=1, var=7.75)   # batch Newton once stopped early: its backtracking refused rounding-level steps
def test_one_click_update_is_the_exact_laplace(seed, y, var):
    rng = np.random.default_rng(seed)
    d = 7
    A = rng.standard_normal((d, d))
    S = var * (A @ A.T / d + np.eye(d))
    m = rng.standard_normal(d)
    z = rng.standard_normal(d)
    m1, S1, logpred = laplace_update(m, S, z, y)
    m2, S2 = laplace_fit(m, S, z[None], np.array([float(y)]))
    np.testing.assert_allclose(m1, m2, atol=1e-8)
    np.testing.assert_allclose(S1, S2, atol=1e-8)
    assert logpred <= 0.0
    assert np.all(np.linalg.eigvalsh(S1) > 0)


def test_update_moves_towards_the_winner():
    m, S = np.zeros(3), np.eye(3)
    z = np.array([1.0, -1.0, 0.0])
    m1, S1, _ = laplace_update(m, S, z, 1)
    assert z @ m1 > 0
    assert z @ S1 @ z < z @ S @ z
    m0, _, _ = laplace_update(m, S, z, 0)
    np.testing.assert_allclose(m0, -m1)


def test_the_one_click_newton_fails_the_same_way_for_scalars_and_arrays():
    """One implementation (the compiled kernel) behind every caller: a Newton that does not converge in
    its iterations raises, for a scalar and for arrays alike (the compiled copy used to return quietly)."""
    from inference.kernels import click_mode as compiled
    from inference.laplace import click_mode

    with pytest.raises(RuntimeError, match="did not converge"):
        click_mode(0.0, 100.0, 1, iters=1)
    with pytest.raises(RuntimeError, match="did not converge"):
        click_mode(np.zeros(3), np.full(3, 100.0), 1, iters=1)
    with pytest.raises(RuntimeError, match="did not converge"):
        compiled(0.0, 100.0, 1, 1e-12, -1.0, 1)
    a, s = np.linspace(-3, 3, 7), np.linspace(0, 5, 7)
    assert np.array_equal(click_mode(a, s, 1), [compiled(x, v, 1) for x, v in zip(a, s)])
