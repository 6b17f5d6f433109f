"""NUTS fits of the population and recalibration models on a run's click log.

Both return InferenceData with health checked and recorded (``inference.health``).
Population: component labels switch between chains, so health is judged on the
label-invariant parameters (every user's theta and the sorted weights); the per-label
R-hat of mu, sd and L_corr is recorded beside it for information only.
"""
from __future__ import annotations

import arviz as az
import jax.numpy as jnp
import numpy as np

from inference.health import check_health, fit_health, record_health
from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP, run_nuts
from inference.user_reference import check_design
from tdmodels.population_model import ALPHA, N_LEARNED, RIDGE, population, recalibration
from tdmodels.priors import MixturePrior, validate_prior


def fit_population(z, y, seed: int = 0, chains: int = DEFAULT_CHAINS, warmup: int = DEFAULT_WARMUP,
                   draws: int = DEFAULT_DRAWS, alpha: float = ALPHA, n_learned: int = N_LEARNED,
                   strict: bool = False, **model_kwargs) -> az.InferenceData:
    """NUTS on the DP-style population model; z [U, S, d], y [U, S]."""
    z, y = check_design(z, y)
    idata = run_nuts(population, z, y=y, seed=seed, chains=chains, warmup=warmup, draws=draws,
                     dims={"theta": ["user", "dim"], "mu": ["component", "dim"], "sd": ["component", "dim"],
                           "L_corr": ["component", "dim", "dim2"], "v": ["component"], "weights": ["slot"]},
                     alpha=alpha, n_learned=n_learned, **model_kwargs)
    post = idata.posterior
    post["weights_sorted"] = (("chain", "draw", "rank"), -np.sort(-post["weights"].values, axis=-1))
    health = check_health(fit_health(idata, ["theta", "weights_sorted"]), "population NUTS fit", strict)
    record_health(idata, health)
    record_health(idata, fit_health(idata, ["mu", "sd"]), label="labelled")
    return idata


def fit_recalibration(first, second, rater, y, prior: MixturePrior, seed: int = 0, chains: int = DEFAULT_CHAINS,
                      warmup: int = DEFAULT_WARMUP, draws: int = DEFAULT_DRAWS, ridge: float = RIDGE,
                      strict: bool = False) -> az.InferenceData:
    """NUTS on the recalibration model; first, second [U, S] ints, rater [U, S, K], y [U, S]."""
    rater = np.asarray(rater, dtype=float)
    U, S, K = rater.shape
    if not np.all(np.isfinite(rater)):
        raise ValueError("rater scores have non-finite entries")
    z_dummy = np.zeros((U, S, K + 1))
    _, y = check_design(z_dummy, y)
    prior = validate_prior(prior, K + 1)
    idata = run_nuts(recalibration, jnp.asarray(first), jnp.asarray(second), rater, prior, y=y, seed=seed,
                     chains=chains, warmup=warmup, draws=draws, ridge=ridge,
                     dims={"theta": ["user", "dim"], "A_dev": ["persona", "persona2"], "A": ["persona", "persona2"]})
    health = check_health(fit_health(idata, ["theta", "a", "A_dev"]), "recalibration NUTS fit", strict)
    record_health(idata, health)
    return idata
