import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.laplace import laplace_update
from inference.mixture_em import component_laplace
from inference.mixture_belief import expected_utilities, init_belief, update_belief
from tdmodels.priors import MixturePrior, isotropic_prior


def _prior(rng, C=4, d=7):
    A = rng.standard_normal((C, d, d)) * 0.3
    return MixturePrior(rng.dirichlet(np.ones(C)), rng.standard_normal((C, d)), A @ A.transpose(0, 2, 1) + 0.2 * np.eye(d))


def test_one_component_is_the_no_transfer_step():
    rng = np.random.default_rng(0)
    b = init_belief(isotropic_prior(7))
    m, S = np.zeros(7), 4.0 * np.eye(7)
    for _ in range(24):
        z, y = rng.standard_normal(7), int(rng.integers(2))
        b, _ = update_belief(b, z, y)
        m, S, _ = laplace_update(m, S, z, y)
        np.testing.assert_allclose(b.means[0], m, atol=1e-10)
        np.testing.assert_allclose(b.covs[0], S, atol=1e-10)


@given(st.integers(0, 10_000), st.integers(1, 30))
@settings(max_examples=25, deadline=None)
def test_weights_stay_a_distribution_and_predictions_are_probabilities(seed, n):
    rng = np.random.default_rng(seed)
    b = init_belief(_prior(rng))
    for _ in range(n):
        z = rng.standard_normal(7) * rng.uniform(0.1, 5)
        b1, lp1 = update_belief(b, z, 1)
        b0, lp0 = update_belief(b, z, 0)
        assert lp1 <= 0 and lp0 <= 0 and np.isclose(np.exp(lp0) + np.exp(lp1), 1.0)
        b = b1 if rng.random() < 0.5 else b0
        assert np.isclose(np.exp(b.log_w).sum(), 1.0)
        assert np.all(np.linalg.eigvalsh(b.covs) > 0)


def test_session_weights_track_batch_laplace_evidence():
    rng = np.random.default_rng(3)
    prior = _prior(rng)
    z = rng.standard_normal((24, 7))
    theta = prior.means[1]
    y = (rng.random(24) < 1 / (1 + np.exp(-z @ theta))).astype(int)
    b = init_belief(prior)
    for t in range(24):
        b, _ = update_belief(b, z[t], y[t])
    _, _, ev = component_laplace(z[None], y[None], prior)
    lw = np.log(prior.weights) + ev[0]
    batch = np.exp(lw - np.logaddexp.reduce(lw))
    np.testing.assert_allclose(np.exp(b.log_w), batch, atol=0.1)
    assert np.argmax(b.log_w) == np.argmax(batch)
    u = expected_utilities(b, np.eye(7)[:6])
    assert u.shape == (6,)
