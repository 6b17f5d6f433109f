"""Sampler settings and draws a sampler or a diagnostic cannot use get one error naming them, before any work."""
import math

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


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_non_finite_log_ratio_is_an_error_not_a_khat(value):
    """NaN ratios had given k-hat = inf, read as a verdict."""
    lr = np.random.default_rng(1).standard_normal(400)
    lr[7] = value
    with pytest.raises(InputError, match="1 of 400 log ratios are NaN or \\+inf \\(first at index 7\\)"):
        psis_khat(lr)
    with pytest.raises(InputError, match="all 400 log ratios are -inf"):
        psis_khat(np.full(400, -np.inf))
    lr[7] = -np.inf                                   # a draw the target gives no mass: a weight of zero
    assert np.isfinite(psis_khat(lr))


@pytest.mark.parametrize("target", [lambda t: np.full(len(t), np.nan), lambda t: np.zeros(3),
                                    lambda t: np.where(t[:, 0] > 0, np.inf, 0.0)])
def test_check_posterior_refuses_a_target_that_is_not_a_finite_log_density(target):
    from diagnostics.posterior_checks import check_posterior

    ref = np.random.default_rng(1).standard_normal((100, 2))
    with pytest.raises(InputError, match="log_target"):
        check_posterior(ref, np.ones(1), np.zeros((1, 2)), np.eye(2)[None], target, np.random.default_rng(0))
    with pytest.raises(InputError, match="non-finite"):
        check_posterior(ref, np.array([np.nan]), np.zeros((1, 2)), np.eye(2)[None], lambda t: -0.5 * (t ** 2).sum(1),
                        np.random.default_rng(0))


@pytest.mark.parametrize("name, value", [("users", 0), ("components", -3), ("chains", 0), ("draws", -10),
                                         ("chunk", 0), ("rounds", -30), ("dim", 0), ("is_draws", 2.5),
                                         ("users", True), ("validate", "no")])
def test_reference_memory_refuses_a_count_that_is_not_positive(name, value):
    """Negative counts had given smaller, or negative, estimates (and passed the memory check)."""
    from inference.memory_estimate import reference_memory

    args = {"users": 3, "components": 2, "chains": 2, "draws": 10, "chunk": 1, "rounds": 24, "dim": 7,
            "is_draws": 100, "validate": False, name: value}
    with pytest.raises(InputError, match=f"reference_memory: {name}"):
        reference_memory(**args)
    assert reference_memory(**{**args, name: 1 if name != "validate" else True}).total > 0


def test_a_strict_that_is_not_a_bool_is_refused_before_any_sampling():
    """fit_users(..., strict='no') had sampled every unit, then been refused."""
    from inference.joint_reference import fit_users_joint
    from inference.model_fits import fit_recalibration

    for fit in (lambda: fit_users(Z, Y, PRIOR, strict="no", draws=10**6),
                lambda: fit_users_joint(Z, Y, PRIOR, strict="no", draws=10**6),
                lambda: fit_recalibration(np.zeros((3, 4), int), np.ones((3, 4), int), np.zeros((3, 4, 3)), Y, PRIOR,
                                          strict="no", draws=10**6)):
        with pytest.raises(InputError, match="strict='no': give True or False"):
            fit()


@pytest.mark.parametrize("max_seconds", [math.nan, math.inf, 0, -5.0, True, "60"])
def test_a_time_budget_is_a_finite_positive_number_of_seconds(max_seconds):
    with pytest.raises(InputError, match="max_seconds"):
        fit_population(Z, Y, max_seconds=max_seconds)
