"""NUTS reference for the PrefDisco profile model: the new user's profile coordinates given the
earlier users' profiles and the new user's answers, sampled from ``tdmodels.profile_model``
with Sigma and mu integrated out by MCMC rather than by conjugacy."""
from __future__ import annotations

import arviz as az
import numpy as np

from inference.health import fit_health, record_health
from inference.nuts import DEFAULT_CHAINS, run_nuts
from tdmodels.profile_model import ProfilePrior, profile_population


def profile_nuts(population: np.ndarray, answer_index, answers, answer_sd=None, prior: ProfilePrior | None = None,
                 seed: int = 0, chains: int = DEFAULT_CHAINS, warmup: int = 500, draws: int = 500) -> az.InferenceData:
    """NUTS on the profile model; posterior holds "z_new" [chain, draw, coord] (and Sigma, mu).
    Health (R-hat, ESS, divergences, E-BFMI over every sampled site) is stored in sample_stats attrs."""
    D = population.shape[-1]
    asked = len(answer_index) > 0
    exact = asked and (answer_sd is None or np.all(np.asarray(answer_sd) == 0))
    idata = run_nuts(profile_population, np.asarray(population, dtype=float),
                     np.asarray(answer_index, dtype=int) if asked else None,
                     np.asarray(answers, dtype=float) if asked else None,
                     None if exact or not asked else np.asarray(answer_sd, dtype=float), prior,
                     seed=seed, chains=chains, warmup=warmup, draws=draws,
                     coords={"coord": np.arange(D), "coord_row": np.arange(D), "coord_col": np.arange(D)},
                     dims={"z_new": ["coord"], "mu": ["coord"], "Sigma": ["coord_row", "coord_col"]})
    sampled = ["Sigma", "mu"] + (["z_free"] if len(answer_index) < D else []) if exact else ["Sigma", "mu", "z_new"]
    record_health(idata, fit_health(idata, [v for v in sampled if v in idata.posterior]))
    return idata


def z_new_draws(idata: az.InferenceData) -> np.ndarray:
    """Draws [chain * draw, D] of the new user's profile coordinates."""
    z = idata.posterior["z_new"].values
    return z.reshape(-1, z.shape[-1])
