"""Calibration of the NUTS references on simulated users with known theta (slow: minutes).

Run with: bash scripts/test.sh -m slow
"""
import warnings

import numpy as np
import pytest
from scipy import stats

from diagnostics.sbc_plots import plot_sbc_ecdf
from inference.health import FitHealthWarning
from inference.sbc import CHECK_MIXTURE, coverage, rank_uniformity, run_sbc
from tdmodels.priors import isotropic_prior

pytestmark = pytest.mark.slow

MIXTURE = CHECK_MIXTURE


def _sbc(prior, features, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitHealthWarning)   # health is asserted below, not hidden
        return run_sbc(prior, features, n_sims=200, rounds=24, L=99, seed=seed, chains=4, warmup=500, draws=500)


@pytest.fixture(scope="module")
def sbc_users(dev_world):
    return _sbc(isotropic_prior(7), dev_world["features"].values, seed=11)


@pytest.fixture(scope="module")
def sbc_mixture(dev_world):
    return _sbc(MIXTURE, dev_world["features"].values, seed=12)


@pytest.mark.parametrize("which", ["sbc_users", "sbc_mixture"])
def test_nuts_90_percent_intervals_cover_at_the_nominal_rate(which, request):
    res = request.getfixturevalue(which)
    cov = coverage(res.theta, res.draws, 0.9)                   # per coordinate, 200 users each
    hits = int(round(cov.mean() * res.theta.size))
    # two-sided binomial test over all 1,400 (user, coordinate) intervals
    assert stats.binomtest(hits, res.theta.size, 0.9).pvalue > 0.001, cov
    assert np.all(np.abs(cov - 0.9) < 0.08), cov


@pytest.mark.parametrize("which", ["sbc_users", "sbc_mixture"])
def test_sbc_ranks_are_uniform(which, request, tmp_path):
    res = request.getfixturevalue(which)
    plot_sbc_ecdf(res, tmp_path / "sbc.png")
    assert (tmp_path / "sbc.png").stat().st_size > 0
    p, combined = rank_uniformity(res.ranks, res.L, bins=10)
    assert combined > 0.001, p
    assert res.ranks.min() >= 0 and res.ranks.max() <= res.L


@pytest.fixture(scope="module")
def sbc_population(dev_world):
    """The population sampler on 100 simulated data sets of 30 users with 24 clicks each, drawn from a
    small instance of the model itself (6 learned components, alpha = 0.5), each fit run until healthy."""
    from inference.sbc import run_population_sbc
    from online.process_pool import map_in_workers

    return run_population_sbc(dev_world["features"].values, n_sims=100, users=30, rounds=24, L=99, seed=21,
                              chains=2, warmup=300, draws=1000, max_seconds=120.0,
                              map_chains=lambda fn, items: map_in_workers(fn, items, 2))


def test_population_sampler_sbc_ranks_are_uniform(sbc_population, tmp_path):
    res = sbc_population
    plot_sbc_ecdf(res, tmp_path / "sbc-population.png")
    assert (tmp_path / "sbc-population.png").stat().st_size > 0
    p, combined = rank_uniformity(res.ranks, res.L, bins=10)
    assert combined > 0.001, dict(zip(res.names, p.round(4)))
    assert res.ranks.min() >= 0 and res.ranks.max() <= res.L
    assert res.healthy.mean() >= 0.95, res.healthy.mean()      # the fits pass their own diagnostics
