import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from diagnostics.profile_checks import sbc_profile
from inference.profile_belief import (ProfileBelief, condition, covariance, expected_pref_align, population_belief,
                                   question_gains)
from tdmodels.profile_model import ProfilePrior, default_profile_prior, profile_coordinates


def random_belief(rng, D=6, df=12.0):
    A = rng.normal(size=(D, D))
    return ProfileBelief(rng.normal(size=D), A @ A.T + 0.5 * np.eye(D), df)


def test_population_belief_is_the_niw_predictive():
    """The predictive of N earlier users equals the textbook NIW update (Murphy 2007, eq. 232-258)."""
    rng = np.random.default_rng(0)
    prior = default_profile_prior(2)
    z = rng.normal(size=(30, 4)) + 1.0
    b = population_belief(z, prior)
    n = len(z)
    kn, nun = prior.kappa0 + n, prior.nu0 + n
    S = ((z - z.mean(0)).T @ (z - z.mean(0)))
    psin = prior.psi0 + S + prior.kappa0 * n / kn * np.outer(z.mean(0) - prior.mu0, z.mean(0) - prior.mu0)
    np.testing.assert_allclose(b.mean, (prior.kappa0 * prior.mu0 + n * z.mean(0)) / kn)
    np.testing.assert_allclose(b.df, nun - 4 + 1)
    np.testing.assert_allclose(b.shape, psin * (kn + 1) / (kn * (nun - 3)))
    # With no data the predictive is the prior's.
    b0 = population_belief(np.zeros((0, 4)), prior)
    np.testing.assert_allclose(b0.mean, prior.mu0)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_conditioning_is_order_free_and_matches_the_joint_formula(seed):
    rng = np.random.default_rng(seed)
    b = random_belief(rng)
    a = rng.normal(size=2)
    one = condition(condition(b, 1, a[0]), 4, a[1])
    two = condition(condition(b, 4, a[1]), 1, a[0])
    for x, y in zip(one, two):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)
    # Joint conditioning of a multivariate t on coordinates o = (1, 4).
    o, f = np.array([1, 4]), np.array([0, 2, 3, 5])
    S = b.shape
    Soo_inv = np.linalg.inv(S[np.ix_(o, o)])
    r = a - b.mean[o]
    d2 = r @ Soo_inv @ r
    np.testing.assert_allclose(one.mean[f], b.mean[f] + S[np.ix_(f, o)] @ Soo_inv @ r, rtol=1e-9)
    np.testing.assert_allclose(one.shape[np.ix_(f, f)], (b.df + d2) / (b.df + 2) *
                               (S[np.ix_(f, f)] - S[np.ix_(f, o)] @ Soo_inv @ S[np.ix_(o, f)]), rtol=1e-8, atol=1e-10)
    assert one.df == b.df + 2
    np.testing.assert_allclose(one.mean[o], a)                  # answered exactly
    assert np.all(np.abs(np.diag(one.shape)[o]) < 1e-9)


def test_conditioning_is_exact_monte_carlo():
    """Exact answers: the conditioned t matches draws of the joint t near the answer (rejection)."""
    rng = np.random.default_rng(3)
    b = ProfileBelief(np.array([0.0, 1.0]), np.array([[1.0, 0.7], [0.7, 2.0]]), 6.0)
    n = 4_000_000
    u = rng.chisquare(b.df, n) / b.df
    x = rng.standard_normal((n, 2)) @ np.linalg.cholesky(b.shape).T / np.sqrt(u)[:, None] + b.mean
    near = x[np.abs(x[:, 0] - 1.2) < 0.01, 1]
    c = condition(b, 0, 1.2)
    assert near.mean() == pytest.approx(c.mean[1], abs=0.05)
    assert near.var() == pytest.approx(covariance(c)[1, 1], rel=0.08)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_question_gains_are_nonnegative_and_vanish_when_nothing_can_change(seed):
    rng = np.random.default_rng(seed)
    K = 3
    b = random_belief(rng, 2 * K, df=15.0)
    styles = rng.random((8, K))
    g = question_gains(b, styles, np.arange(K))
    assert g.shape == (K,) and np.all(g > -1e-3)          # Jensen, up to the quadrature's error
    same = np.repeat(styles[:1], 8, 0)                     # every response alike: no answer changes the choice
    np.testing.assert_allclose(question_gains(b, same, np.arange(K)), 0.0, atol=1e-12)
    pa = expected_pref_align(b, styles)
    assert pa.shape == (8,) and np.all((pa >= 0) & (pa <= 1))


def test_sbc_of_the_conjugate_belief_is_uniform():
    """Simulation-based calibration: PIT of the truth under the updated belief is uniform."""
    prior = ProfilePrior(np.zeros(4), 0.5, 8.0, 3.0 * np.eye(4))
    pit = sbc_profile(prior, n_population=15, n_answered=2, sims=400, rng=np.random.default_rng(1))
    assert np.all(np.isnan(pit[:, :2]))
    for c in (2, 3):
        assert stats.kstest(pit[:, c], "uniform").pvalue > 0.001
    # A belief fitted under a prior 100 times too wide, with no population to correct it, is
    # visibly miscalibrated on the same kind of draws (PITs pile up near 1/2).
    bad = sbc_profile(prior, 0, 0, 400, np.random.default_rng(1), fit_prior=prior._replace(psi0=300.0 * np.eye(4)))
    assert stats.kstest(bad[:, 0], "uniform").pvalue < 1e-6
    good = sbc_profile(prior, 0, 0, 400, np.random.default_rng(1))
    assert stats.kstest(good[:, 0], "uniform").pvalue > 0.001


def test_profile_coordinates():
    y = profile_coordinates(np.array([0.5, 0.0, 1.0]), np.array([0.5, 0.5, 0.0]))
    np.testing.assert_allclose(y[:3], [0.0, np.log(0.005 / 0.995), np.log(0.995 / 0.005)])
    np.testing.assert_allclose(y[3:], np.log([0.51, 0.51, 0.01]))
