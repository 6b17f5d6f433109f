"""Small NUTS fits: health is checked and stored, InferenceData round-trips, bad fits are reported."""
import warnings

import arviz as az
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from inference.health import FitHealthError, FitHealthWarning, check_health, fit_health, stored_health
from inference.nuts import run_nuts
from inference.sbc import random_designs, sample_prior, simulate_clicks
from inference.user_reference import fit_users, user_draws
from tdmodels.priors import MixturePrior, isotropic_prior


@pytest.fixture(scope="module")
def small_mixture_fit(dev_world):
    rng = np.random.default_rng(0)
    prior = MixturePrior(np.array([0.45, 0.45, 0.1]),
                         np.array([[2.0, 0, 0, -2, 0, 0, 1], [-2.0, 0, 2, 0, 0, 0, -1], np.zeros(7)]),
                         np.stack([0.3 * np.eye(7), 0.3 * np.eye(7), 4 * np.eye(7)]))
    theta = sample_prior(prior, 12, rng)
    z = random_designs(dev_world["features"].values, 12, 24, rng)
    y = simulate_clicks(theta, z, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitHealthWarning)
        return fit_users(z, y, prior, chains=2, warmup=300, draws=300), theta


@pytest.mark.slow
def test_mixture_reference_layout_and_weights(small_mixture_fit):
    idata, theta = small_mixture_fit
    units = idata["units"]
    for u in range(12):
        w = units.posterior_weight.values[units.unit_user.values == u]
        assert np.isclose(w.sum(), 1.0) and np.all(w >= 0)
    assert float(units.pruned_mass.max()) < 1e-3
    assert np.all(units.khat.values < 0.7)
    draws = user_draws(idata)
    assert draws.shape == (2, 300, 12, 7)
    for k in ("health_max_rhat", "health_divergences", "health_min_bfmi", "health_min_ess_bulk", "health_ok"):
        assert k in idata.sample_stats.attrs


@pytest.mark.slow
def test_inference_data_round_trips_through_netcdf(small_mixture_fit, tmp_path):
    idata, _ = small_mixture_fit
    path = tmp_path / "fit.nc"
    idata.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    assert set(back.groups()) == set(idata.groups())
    np.testing.assert_array_equal(back.posterior.theta.values, idata.posterior.theta.values)
    np.testing.assert_array_equal(back["units"].posterior_weight.values, idata["units"].posterior_weight.values)
    assert back.sample_stats.attrs["health_max_rhat"] == idata.sample_stats.attrs["health_max_rhat"]
    np.testing.assert_array_equal(user_draws(back).values, user_draws(idata).values)


def test_isotropic_reference_is_healthy(dev_world):
    rng = np.random.default_rng(5)
    prior = isotropic_prior(7)
    theta = sample_prior(prior, 10, rng)
    z = random_designs(dev_world["features"].values, 10, 24, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitHealthWarning)
        idata = fit_users(z, simulate_clicks(theta, z, rng), prior)      # the defaults: 4 x (1000 + 1000)
    h = stored_health(idata)        # from every unit's own chains
    assert h.ok and h.divergences == 0 and h.max_rhat <= 1.01 and h.min_bfmi > 0.2 and h.n_params == 70
    assert idata.sample_stats.attrs["health_ok"] == 1
    units = idata["units"]
    assert np.all(units.rhat.values <= 1.01) and np.all(units.divergences.values == 0)
    assert np.all(units.ess_bulk.values >= 400) and units.step_size.shape == (10, 4)


def _funnel():
    v = numpyro.sample("v", dist.Normal(0.0, 3.0))
    numpyro.sample("x", dist.Normal(jnp.zeros(9), jnp.exp(v / 2)).to_event(1))


@pytest.mark.slow
def test_a_divergent_fit_is_reported_not_hidden():
    """Neal's funnel, centred, short warmup: divergences (and poor mixing) surface as a warning or an error."""
    idata = run_nuts(_funnel, chains=2, warmup=100, draws=200, seed=2)
    h = fit_health(idata)
    assert h.divergences > 0 and not h.ok
    assert int(idata.sample_stats.diverging.sum()) == h.divergences
    with pytest.warns(FitHealthWarning, match="divergent"):
        check_health(h, "funnel")
    with pytest.raises(FitHealthError, match="divergent"):
        check_health(h, "funnel", strict=True)


def test_nan_features_are_refused():
    z = np.zeros((2, 3, 7))
    z[1, 2, 4] = np.nan
    with pytest.raises(ValueError, match="non-finite features.*user 1, round 2"):
        fit_users(z, np.zeros((2, 3), int), isotropic_prior(7))


@pytest.mark.slow
def test_nuts_reference_agrees_with_importance_sampling(small_mixture_fit):
    """An independent check of the per-user reference: self-normalised importance sampling with a
    mixture of Student-t proposals (400k draws) gives each user's posterior mean, against NUTS's
    within its Monte Carlo error plus 0.03 posterior sd."""
    from inference.user_reference import importance_moments

    idata, _ = small_mixture_fit
    draws = user_draws(idata)
    z = idata.constant_data["z"].values
    y = idata.observed_data["y"].values
    cd = idata.constant_data
    for u in (0, 5, 11):
        prior = MixturePrior(*(cd[k].values[u] for k in ("prior_weights", "prior_means", "prior_covs")))
        mean, sd, ess = importance_moments(z[u], y[u], prior, seed=u)
        assert ess > 20_000
        th = draws.isel(user=u)
        mcse = az.mcse(th.to_dataset(name="t"), method="mean")["t"].values
        err = np.abs(th.mean(("chain", "draw")).values - mean)
        assert np.all(err <= 4 * mcse + 0.03 * sd), (u, err / sd, mcse / sd)


def test_chains_stuck_at_different_values_are_reported_not_hidden():
    """Chains that never move, each at its own value: the within-chain variance is 0 and R-hat infinite.
    That parameter counts, and fails (R-hat huge or infinite). ArviZ's R-hat is NaN there, so it was left out as a constant and the
    fit called healthy."""

    rng = np.random.default_rng(0)
    theta = rng.standard_normal((2, 1000, 3))
    theta[:, :, 1] = np.array([[0.5], [1.5]])                      # stuck, at a different value per chain
    idata = az.from_dict(posterior={"theta": theta}, sample_stats={"diverging": np.zeros((2, 1000), bool)})
    assert np.isnan(az.rhat(idata)["theta"].values[1])             # ArviZ's own figure here (its variance rounds)
    h = fit_health(idata)
    assert h.max_rhat > 1e6 and h.n_params == 3 and not h.ok
    assert h.min_ess_bulk < 10
    assert any(p.startswith("R-hat inf") for p in h._replace(max_rhat=np.inf).problems)


def test_health_figures_are_arviz_minima_over_every_variable():
    """R-hat, bulk and tail ESS come from ``inference.convergence`` in one pass over all variables: the same
    figures as ArviZ's per variable, the worst of each taken."""
    rng = np.random.default_rng(1)
    e = rng.standard_normal((4, 400, 6))
    ar = np.zeros((4, 400))
    for t in range(1, 400):
        ar[:, t] = 0.9 * ar[:, t - 1] + e[:, t, 5]
    post = {"a": e[..., :2], "b": e[..., 2:5].reshape(4, 400, 3, 1) ** 3, "c": ar}
    idata = az.from_dict(posterior=post, sample_stats={"diverging": np.zeros((4, 400), bool)})
    h = fit_health(idata)
    want = {m: np.concatenate([np.ravel(v) for v in az.ess(idata, method=m).data_vars.values()])
            for m in ("bulk", "tail")}
    rhat = np.concatenate([np.ravel(v) for v in az.rhat(idata).data_vars.values()])
    assert h.n_params == 6
    np.testing.assert_allclose([h.max_rhat, h.min_ess_bulk, h.min_ess_tail],
                               [rhat.max(), want["bulk"].min(), want["tail"].min()], rtol=1e-8)
