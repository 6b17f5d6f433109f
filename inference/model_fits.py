"""NUTS fits of the population and recalibration models on a run's click log.

Both return InferenceData with health checked and recorded (``inference.health``).
Population: component labels switch between chains and the posterior is multimodal over
partitions, so health is judged on label-invariant quantities (``inference.population_diagnostics``:
users' theta, the population predictive's log density at fixed test points, co-clustering, the
number of occupied components, the log likelihood; stored as the "label_invariant" group with
their R-hat and ESS in its attrs); the sorted weights and the per-label mu and sd are recorded
beside it for information only.
"""
from __future__ import annotations

import warnings

import arviz as az
import jax.numpy as jnp
import numpy as np

from inference.health import FitHealthError, FitHealthWarning, check_health, fit_health, record_health
from inference.laplace import laplace_fit_batch
from inference.population_diagnostics import LabelInvariantHealth, label_invariant_draws, label_invariant_health
from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP, run_nuts
from inference.user_reference import check_design
from tdmodels.population_model import ALPHA, N_LEARNED, RIDGE, population, recalibration
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, validate_prior


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
    health = fit_health(idata, ["theta", "weights_sorted"])
    record_health(idata, health)
    record_health(idata, fit_health(idata, ["mu", "sd"]), label="labelled")
    li = add_label_invariant(idata, z, y, model_kwargs.get("broad_var", DEFAULT_PRIOR_VAR))
    problems = list(dict.fromkeys(health.problems + li.problems))
    if problems:
        msg = "population NUTS fit: " + "; ".join(problems)
        if strict:
            raise FitHealthError(msg)
        warnings.warn(msg, FitHealthWarning, stacklevel=2)
    return idata


def population_test_points(z, y, broad_var: float = DEFAULT_PRIOR_VAR) -> np.ndarray:
    """Fixed points at which a population fit's predictive density is tracked: each user's
    broad-prior Laplace mode [U, d] (data-derived, the same for every chain)."""
    U, _, d = z.shape
    modes, _, _ = laplace_fit_batch(np.zeros((U, d)), np.broadcast_to(broad_var * np.eye(d), (U, d, d)).copy(),
                                    np.asarray(z, float), np.asarray(y, float))
    return modes


def add_label_invariant(idata: az.InferenceData, z, y, broad_var: float = DEFAULT_PRIOR_VAR,
                        test_points: np.ndarray | None = None) -> LabelInvariantHealth:
    """Compute a population fit's label-invariant draws and their health; store both in `idata`
    (group "label_invariant", health in its attrs) and return the health."""
    points = population_test_points(z, y, broad_var) if test_points is None else test_points
    draws = label_invariant_draws(idata.posterior, z, y, points, broad_var)
    draws["test_points"] = (("point", "dim"), points)
    li = label_invariant_health(draws, idata.posterior["theta"])
    draws.attrs.update(li.as_attrs())
    if "label_invariant" in idata.groups():
        del idata["label_invariant"]
    idata.add_groups({"label_invariant": draws})
    return li


def stored_label_invariant(idata: az.InferenceData) -> LabelInvariantHealth | None:
    """The label-invariant health stored with a population fit (None for fits made before it existed)."""
    if "label_invariant" not in idata.groups():
        return None
    return LabelInvariantHealth.from_attrs(idata["label_invariant"].attrs)


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
