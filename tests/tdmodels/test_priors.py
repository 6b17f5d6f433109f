import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import logsumexp

from tdmodels.click_model import btl_probability
from tdmodels.prior_distributions import prior_distribution, stick_breaking
from tdmodels.priors import MixturePrior, isotropic_prior, validate_prior


@given(st.lists(st.floats(0.001, 0.999), min_size=1, max_size=20))
@settings(max_examples=60, deadline=None)
def test_stick_breaking_weights_are_a_distribution(v):
    w = np.asarray(stick_breaking(jnp.asarray(v)))
    assert w.shape == (len(v) + 1,)
    assert np.all(w >= 0) and np.isclose(w.sum(), 1.0)
    assert np.isclose(w[0], v[0])


@given(st.lists(st.floats(-30, 30), min_size=7, max_size=7), st.lists(st.floats(-3, 3), min_size=7, max_size=7))
@settings(max_examples=60, deadline=None)
def test_btl_probability_in_range_and_antisymmetric(theta, z):
    theta, z = jnp.asarray(theta), jnp.asarray(z)
    p, q = float(btl_probability(theta, z)), float(btl_probability(theta, -z))
    assert 0.0 <= p <= 1.0
    assert abs(p + q - 1.0) < 1e-12


def test_prior_densities_match_scipy():
    rng = np.random.default_rng(0)
    d, C = 7, 3
    A = rng.normal(size=(C, d, d))
    covs = A @ np.swapaxes(A, 1, 2) + d * np.eye(d)
    prior = MixturePrior(np.array([0.5, 0.3, 0.2]), rng.normal(size=(C, d)), covs)
    x = rng.normal(size=(5, d))
    got = np.asarray(prior_distribution(prior).log_prob(jnp.asarray(x)))
    want = logsumexp([np.log(prior.weights[k]) + stats.multivariate_normal(prior.means[k], covs[k]).logpdf(x)
                      for k in range(C)], axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    iso = np.asarray(prior_distribution(isotropic_prior(d, 2.0)).log_prob(jnp.asarray(x)))
    np.testing.assert_allclose(iso, stats.multivariate_normal(np.zeros(d), 2.0 * np.eye(d)).logpdf(x), rtol=1e-10)


@pytest.mark.parametrize("bad, msg", [
    (MixturePrior(np.array([0.5, 0.6]), np.zeros((2, 3)), np.stack([np.eye(3)] * 2)), "sum to 1"),
    (MixturePrior(np.ones(1), np.zeros((1, 3)), -np.eye(3)[None]), "positive definite"),
    (MixturePrior(np.ones(1), np.zeros((1, 3)), np.eye(4)[None]), "shapes"),
    (MixturePrior(np.ones(1), np.full((1, 3), np.nan), np.eye(3)[None]), "non-finite"),
])
def test_bad_priors_are_named(bad, msg):
    with pytest.raises(ValueError, match=msg):
        validate_prior(bad)
