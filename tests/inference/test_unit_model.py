"""The whitened unit model has the per-user model's log density at theta = loc + L xi (the constant
Jacobian |det L| is left out, so both are the same function of theta)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpyro.infer.util import log_density

from inference.unit_model import whiten_units, whitened_units
from tdmodels.click_model import user_utilities
from tdmodels.priors import MixturePrior


def _random_units(rng, n, S, d):
    z = rng.normal(size=(n, S, d))
    y = rng.integers(0, 2, (n, S))
    m = rng.normal(size=(n, d))
    A = rng.normal(size=(n, d, d))
    C = A @ A.transpose(0, 2, 1) / d + 0.5 * np.eye(d)
    loc = rng.normal(size=(n, d))
    G = rng.normal(size=(n, d, d))
    L = np.linalg.cholesky(G @ G.transpose(0, 2, 1) / d + 0.1 * np.eye(d))
    return z, y, m, C, loc, L


@settings(max_examples=3)
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 6), st.integers(1, 4))
def test_whitened_density_equals_the_user_density(seed, n, S, d):
    rng = np.random.default_rng(seed)
    z, y, m, C, loc, L = _random_units(rng, n, S, d)
    units = whiten_units(z, m, C, loc, L)
    xi = rng.normal(size=(n, d))
    theta = loc + np.einsum("nij,nj->ni", L, xi)
    lw, trace = log_density(whitened_units, (units,), {"y": y}, {"xi": xi})
    prior = MixturePrior(np.ones((n, 1)), m[:, None], C[:, None])
    lu, _ = log_density(user_utilities, (z, prior), {"y": y}, {"theta": theta})
    np.testing.assert_allclose(float(lw), float(lu), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.asarray(trace["theta"]["value"]), theta, atol=1e-12)
