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


@pytest.mark.parametrize("y", [0.5, 2, -1, "1", True, np.nan, np.array([1, 0])])
def test_a_click_is_0_or_1_everywhere_a_click_goes_in(y):
    """0.5 had updated the mean as a 0 and the predictive as a 1; 2 gave a mode past the likelihood's."""
    from inference.laplace import click_mode, laplace_fit, laplace_update
    from tdmodels.errors import InputError

    with pytest.raises(InputError, match="click"):
        laplace_update(np.zeros(3), np.eye(3), np.array([1., -1., .5]), y)
    if np.ndim(y) == 0:
        with pytest.raises(InputError, match="click"):
            click_mode(0.0, 1.0, y)
    if np.ndim(y) == 0 and not isinstance(y, bool):          # in an array of clicks, True is a 1
        with pytest.raises(InputError, match="y must be|y has non-finite"):
            laplace_fit(np.zeros(3), np.eye(3), np.eye(3), [y, 0, 1])


def test_laplace_update_names_a_covariance_or_mean_it_cannot_use():
    from inference.laplace import click_mode, laplace_update
    from tdmodels.errors import InputError

    z = np.array([1., -1., .5])
    with pytest.raises(InputError, match="positive semi-definite"):
        laplace_update(np.ones(3), -np.eye(3), z, 1)
    with pytest.raises(InputError, match="finite"):
        laplace_update(np.array([np.nan, 0, 0]), np.eye(3), z, 1)
    with pytest.raises(InputError, match=r"must be arrays \[d\], \[d, d\] and \[d\]"):
        laplace_update(np.zeros(3), np.eye(3), np.zeros(2), 1)
    with pytest.raises(InputError, match="variance"):
        click_mode(0.0, np.inf, 1)
    with pytest.raises(InputError, match="variance"):
        click_mode(np.zeros(2), np.array([1.0, -1.0]), 1)
    m1, _, lp1 = laplace_update(np.zeros(3), np.eye(3), z, np.int64(1))
    m2, _, lp2 = laplace_update(np.zeros(3), np.eye(3), z, 1.0)
    assert np.array_equal(m1, m2) and lp1 == lp2                  # numpy integers and 1.0 are clicks
