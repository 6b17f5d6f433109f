"""The population model's settings and the recalibrated design, without JAX.

`PopulationHyper` and its defaults are the one source for the NumPyro model
(``tdmodels.population_model``), the samplers and the online learner, which reads them, and
builds its recalibrated design rows, without importing JAX or NumPyro.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tdmodels.errors import InputError
from tdmodels.priors import DEFAULT_PRIOR_VAR

ALPHA = 20.0
N_LEARNED = 16
RIDGE = 10.0
MEAN_SCALE = 2.0             # prior sd of a component mean, per coordinate (logits)
COV_SCALE = 1.0              # prior mean of a component covariance, times I (logits^2)
COV_DF_EXTRA = 3             # nu0 = d + COV_DF_EXTRA


class PopulationHyper(NamedTuple):
    """Hyperparameters of the population model, the one source for the NumPyro model and the samplers.

    alpha: stick-breaking concentration; n_learned: learned components (the broad one is extra);
    broad_var: the broad component's variance; mean_scale, cov_scale, cov_df_extra: the learned
    components' Normal-inverse-Wishart prior (see ``tdmodels.population_model``'s docstring).
    """
    alpha: float = ALPHA
    n_learned: int = N_LEARNED
    broad_var: float = DEFAULT_PRIOR_VAR
    mean_scale: float = MEAN_SCALE
    cov_scale: float = COV_SCALE
    cov_df_extra: int = COV_DF_EXTRA

    def cov_df(self, d: int) -> float:
        """nu0, the inverse-Wishart degrees of freedom."""
        return float(d + self.cov_df_extra)

    def cov_prior_scale(self, d: int) -> float:
        """psi with Psi0 = psi I, so that E[Sigma_k] = cov_scale I."""
        return self.cov_scale * (self.cov_df_extra - 1)

    @property
    def kappa0(self) -> float:
        """Prior precision scale of a mean: mu_k | Sigma_k ~ N(0, Sigma_k / kappa0), E[Var mu] = mean_scale^2."""
        return self.cov_scale / self.mean_scale ** 2

    def validate(self) -> "PopulationHyper":
        """Check every value; return self (a ValueError names the first bad one)."""
        for name in ("alpha", "broad_var", "mean_scale", "cov_scale"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise InputError(f"population model: {name} must be a positive finite number, got {v!r}")
        for name, lo in (("n_learned", 1), ("cov_df_extra", 2)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise InputError(f"population model: {name} must be an integer >= {lo}, got {v!r}")
        return self


def recalibrated_design(A, first, second, rater):
    """Design rows z [U, S, K + 1] with the rater column replaced by A g(q).

    A [K, K]; first, second [U, S] persona indices; rater [U, S, K] = g(., q) of each round.
    NumPy in, NumPy out (the online learner); JAX in, JAX out (inside the model).
    """
    if all(isinstance(a, np.ndarray) for a in (A, first, second, rater)):
        xp = np
    else:
        import jax.numpy as xp      # traced inside the model; the online learner never imports JAX
    K = rater.shape[-1]
    ind = xp.eye(K)[first] - xp.eye(K)[second]                 # [U, S, K]: e_first - e_second
    g_diff = xp.sum(xp.einsum("pq,usq->usp", A, rater) * ind, axis=-1, keepdims=True)
    return xp.concatenate([ind, g_diff], axis=-1)
