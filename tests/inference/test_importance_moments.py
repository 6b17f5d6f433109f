"""The importance-sampled exact mixture against the grid posterior (two dimensions, two components), and the
inputs it refuses."""
from __future__ import annotations

import numpy as np
import pytest

from inference.importance_moments import importance_mixture
from inference.online_beliefs import fold_session
from tdmodels.errors import InputError
from tests.inference.test_online_beliefs import _exact, _prior


@pytest.mark.parametrize("seed", [0, 1])
def test_importance_mixture_is_the_grid_posterior_to_its_monte_carlo_error(seed):
    """Around ADF's belief (a proposal a few percent off): weights to 0.003, means to 0.01 sd, covariances to
    2% in every direction, with 100,000 draws a component (effective sample sizes over 30,000)."""
    rng = np.random.default_rng(seed)
    prior = _prior(rng, 2, 2)
    z, y = rng.normal(size=(8, 2)) * 1.5, rng.integers(0, 2, 8)
    w, m, S, _ = _exact(prior, z, y)
    got = importance_mixture(prior, z, y, fold_session(prior, z, y, "adf").belief, 100_000, np.random.default_rng(3))
    np.testing.assert_allclose(got.weights, w, atol=3e-3)
    assert np.all(got.ess > 30_000)
    for c in range(2):
        Li = np.linalg.inv(np.linalg.cholesky(S[c]))
        assert np.abs(Li @ (got.means[c] - m[c])).max() < 0.01
        assert np.abs(np.linalg.eigvalsh(Li @ got.covs[c] @ Li.T) - 1).max() < 0.02


def test_importance_mixture_refuses_what_it_cannot_use():
    rng = np.random.default_rng(0)
    prior = _prior(rng, 2, 2)
    z, y = rng.normal(size=(3, 2)), np.array([1, 0, 1])
    around = fold_session(prior, z, y, "adf").belief
    for draws in (0, 10, True, 2.5, "1000", 10 ** 9):
        with pytest.raises(InputError, match="importance draws"):
            importance_mixture(prior, z, y, around, draws, rng)
    nan = around._replace(means=np.where(np.eye(2, dtype=bool), np.nan, around.means))
    with pytest.raises(InputError, match="not finite"):
        importance_mixture(prior, z, y, nan, 1000, rng)
    with pytest.raises(InputError, match="same shapes"):
        importance_mixture(prior, z[:, :1], y, around, 1000, rng)
    flat = around._replace(covs=np.zeros_like(around.covs))
    with pytest.raises(InputError, match="not positive definite"):
        importance_mixture(prior, z, y, flat, 1000, rng)
    none = around._replace(weights=np.zeros(2))
    with pytest.raises(InputError, match="no component"):
        importance_mixture(prior, z, y, none, 1000, rng)
