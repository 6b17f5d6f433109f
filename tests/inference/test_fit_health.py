"""A fit's health reads every parameter: a NaN or infinite draw fails it, never passes as a constant."""
import arviz as az
import numpy as np
import pytest

from inference.health import fit_health


def _idata(x):
    return az.from_dict(posterior={"theta": x}, sample_stats={"diverging": np.zeros(x.shape[:2], bool)})


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_parameter_with_a_non_finite_draw_fails_the_fit(bad):
    x = np.random.default_rng(0).normal(size=(4, 1000, 3))
    assert fit_health(_idata(x)).ok
    x[1, 7, 2] = bad
    health = fit_health(_idata(x))
    assert not health.ok and health.n_params == 3 and health.n_rhat_over == 1
    assert "R-hat inf > 1.01 (1 of 3 parameters)" in health.problems


def test_a_constant_parameter_is_still_left_out():
    x = np.random.default_rng(0).normal(size=(4, 1000, 2))
    x[..., 1] = 4.0
    health = fit_health(_idata(x))
    assert health.ok and health.n_params == 1
