"""Sampler settings and draws a sampler or a diagnostic cannot use get one error naming them, before any work."""
import numpy as np
import pytest

from diagnostics.posterior_checks import psis_khat
from inference.convergence import rhat_and_bulk_ess, tail_ess
from inference.model_fits import fit_population
from inference.user_reference import fit_users
from tdmodels.errors import InputError
from tdmodels.priors import MixturePrior

Z = np.random.default_rng(0).standard_normal((3, 4, 2))
Y = np.array([[0, 1, 1, 0]] * 3)
PRIOR = MixturePrior(np.ones(1), np.zeros((1, 2)), np.eye(2)[None] * 4.0)


@pytest.mark.parametrize("kw, name", [({"chains": 0}, "chains"), ({"seed": 1.5}, "seed"), ({"seed": -1}, "seed"),
                                      ({"draws": 0}, "draws"), ({"warmup": 2.5}, "warmup"), ({"warmup": -1}, "warmup"),
                                      ({"chains": True}, "chains"), ({"draws": 2**40}, "draws")])
def test_fit_users_names_a_bad_sampler_setting(kw, name):
    with pytest.raises(InputError, match=f"seed|sampler setting {name}" if name == "seed" else f"sampler setting {name}"):
        fit_users(Z, Y, PRIOR, **kw)


@pytest.mark.parametrize("kw, name", [({"draws": 0}, "draws"), ({"chains": 0}, "chains"), ({"thin": 0}, "thin"),
                                      ({"warmup": -1}, "warmup"), ({"seed": 0.5}, "seed")])
def test_fit_population_names_a_bad_sampler_setting(kw, name):
    with pytest.raises(InputError, match="seed" if name == "seed" else f"sampler setting {name}"):
        fit_population(Z, Y, **kw)


def test_no_users_is_refused_by_both_fits():
    for fit in (lambda z, y: fit_users(z, y, PRIOR), fit_population):
        with pytest.raises(InputError, match="at least one user"):
            fit(np.zeros((0, 4, 2)), np.zeros((0, 4), int))


def test_convergence_needs_a_chain_of_real_numbers():
    for f in (rhat_and_bulk_ess, tail_ess):
        with pytest.raises(ValueError, match="at least one chain"):
            f(np.zeros((0, 100, 2)))
        with pytest.raises(ValueError, match="real numbers"):
            f(np.ones((2, 10, 2)) * (1 + 1j))


def test_psis_khat_needs_a_sample_of_log_ratios():
    for bad in ([], np.zeros((3, 4)), ["a"] * 10):
        with pytest.raises(InputError, match="1-D array of at least 5 numbers"):
            psis_khat(bad)
    assert np.isfinite(psis_khat(np.random.default_rng(1).standard_normal(400)))


def test_a_run_seed_past_2_to_the_31_is_a_sampler_seed():
    """fit and validate pass the run's seed (up to 2**63 - 1); a first version had capped it at 2**31 - 1."""
    from inference.nuts import check_sampler_settings

    check_sampler_settings(seed=3_000_000_000)
    check_sampler_settings(seed=2**63 - 1)
