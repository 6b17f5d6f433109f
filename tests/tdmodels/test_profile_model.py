import jax
import numpy as np
import pytest
from numpyro.infer import Predictive
from numpyro.infer.util import log_density
from scipy import stats

from inference.profile_belief import population_belief
from tdmodels.profile_model import ProfilePrior, default_profile_prior, profile_population

PRIOR = ProfilePrior(np.array([0.0, 1.0, -1.0]), 0.5, 7.0, 3.0 * np.eye(3))


def test_prior_predictive_matches_the_closed_form_t():
    """Prior predictive draws of z_new against the predictive t with no data (quantiles per coordinate)."""
    draws = Predictive(profile_population, num_samples=40_000)(jax.random.PRNGKey(0), None, prior=PRIOR)
    z = np.asarray(draws["z_new"])
    b = population_belief(np.zeros((0, 3)), PRIOR)
    for c in range(3):
        q = np.quantile(z[:, c], [0.1, 0.25, 0.5, 0.75, 0.9])
        expect = b.mean[c] + np.sqrt(b.shape[c, c]) * stats.t.ppf([0.1, 0.25, 0.5, 0.75, 0.9], b.df)
        np.testing.assert_allclose(q, expect, atol=0.06 * np.sqrt(b.shape[c, c]))
    assert draws["Sigma"].shape == (40_000, 3, 3)


@pytest.mark.parametrize("answered", [None, "exact", "noisy"])
def test_log_density_is_the_textbook_joint(answered):
    rng = np.random.default_rng(2)
    Sigma = stats.invwishart.rvs(PRIOR.nu0, PRIOR.psi0, random_state=rng)
    mu = rng.normal(size=3)
    pop = rng.normal(size=(5, 3))
    z = rng.normal(size=3)
    expect = (stats.invwishart.logpdf(Sigma, PRIOR.nu0, PRIOR.psi0)
              + stats.multivariate_normal.logpdf(mu, PRIOR.mu0, Sigma / PRIOR.kappa0)
              + stats.multivariate_normal.logpdf(pop, mu, Sigma).sum()
              + stats.multivariate_normal.logpdf(z, mu, Sigma))
    if answered is None:
        args, params = (pop,), {"Sigma": Sigma, "mu": mu, "z_new": z}
    elif answered == "exact":   # z_new = (answered coordinate 1, free 0 and 2): the same joint
        args, params = (pop, np.array([1]), z[[1]], None), {"Sigma": Sigma, "mu": mu, "z_free": z[[0, 2]]}
    else:
        a = z[[1]] + 0.3
        args, params = (pop, np.array([1]), a, np.array([0.5])), {"Sigma": Sigma, "mu": mu, "z_new": z}
        expect += stats.norm.logpdf(a[0], z[1], 0.5)
    lp, _ = log_density(profile_population, args, {"prior": PRIOR}, params)
    assert float(lp) == pytest.approx(expect, rel=1e-9)


def test_default_prior_shapes():
    p = default_profile_prior(6)
    assert p.mu0.shape == (12,) and p.psi0.shape == (12, 12) and p.nu0 > 12 + 1
    np.testing.assert_allclose(p.mu0[6:], np.log(1 / 6))
