"""The hierarchical population model and the rater-recalibration model, as NumPyro functions.

Population: users' theta come from a Dirichlet-process-style Gaussian mixture,
truncated stick-breaking with concentration alpha over `n_learned` learned components
plus one broad isotropic component N(0, broad_var I) that takes the rest of the stick
(the mass kept for users unlike any seen so far). Assignments are marginalised
(MixtureSameFamily). Learned components have the conjugate Normal-inverse-Wishart prior
Sigma_k ~ IW(nu0, Psi0), mu_k | Sigma_k ~ N(0, Sigma_k / kappa0), with the hyperparameters of
`PopulationHyper`: E[Sigma_k] = cov_scale I, the prior variance of a mean mean_scale^2 per
coordinate, nu0 = d + 3 (the fewest degrees of freedom with a finite prior mean and a
predictive t with 4 degrees of freedom).

Why conjugate: the exact reference (``inference.population_gibbs``) integrates each component's
mean and covariance out in closed form, so users move between components and components split
and merge without proposing component parameters; NUTS on the marginalised mixture does not
converge on this posterior, which is multimodal over partitions of users. The inverse-Wishart
density vanishes as Sigma -> 0 (exp(-tr(Psi0 Sigma^-1) / 2)), so the mixture density has no
spikes where a component collapses onto one user's theta (a HalfNormal sd prior had them, and
NUTS ran at step sizes of 0.001-0.005). Component labels of a stick-breaking prior are not
exchangeable, but the posterior puts the same partitions under every labelling, so compare fits
on theta, weights sorted, densities or co-clustering, never on component k itself.

Recalibration: the rater column of Phi is replaced by A g(q), A = a I + A', shared by all
users, with theta_u ~ a given prior. The ridge of strength lambda on A' (penalty
lambda/2 ||A'||_F^2) is the Gaussian prior A'_pq ~ N(0, 1/lambda); a ~ LogNormal(0, 0.5)
keeps A's overall sign and scale away from the mirror solution (A, theta_g) -> (-A, -theta_g),
to which the likelihood alone is blind.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from tdmodels.click_model import btl_clicks
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, prior_distribution, stick_breaking
from tdmodels.errors import InputError

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
    components' Normal-inverse-Wishart prior (see the module docstring).
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


def population(z, y=None, alpha: float = ALPHA, n_learned: int = N_LEARNED, broad_var: float = DEFAULT_PRIOR_VAR,
               mean_scale: float = MEAN_SCALE, cov_scale: float = COV_SCALE, cov_df_extra: int = COV_DF_EXTRA):
    """Users' theta from a truncated DP-style mixture; z [U, S, d], y [U, S] or None.

    Sites: "v" [n_learned] stick fractions, "cov_chol" [n_learned, d, d] (Cholesky factors of
    the components' covariances), "mu" [n_learned, d], "theta" [U, d], "y" [U, S];
    deterministic "weights" [n_learned + 1] (the last is the broad component's).
    """
    U, S, d = z.shape
    hyper = PopulationHyper(alpha, n_learned, broad_var, mean_scale, cov_scale, cov_df_extra)
    v = numpyro.sample("v", dist.Beta(1.0, alpha).expand([n_learned]).to_event(1))
    w = numpyro.deterministic("weights", stick_breaking(v))
    with numpyro.plate("components", n_learned):
        cov_chol = numpyro.sample("cov_chol", dist.InverseWishartCholesky(
            hyper.cov_df(d), scale_matrix=hyper.cov_prior_scale(d) * jnp.eye(d)))
        mu = numpyro.sample("mu", dist.MultivariateNormal(jnp.zeros(d), scale_tril=cov_chol / jnp.sqrt(hyper.kappa0)))
    locs = jnp.concatenate([mu, jnp.zeros((1, d))])
    trils = jnp.concatenate([cov_chol, jnp.sqrt(broad_var) * jnp.eye(d)[None]])
    mix = dist.MixtureSameFamily(dist.Categorical(probs=w), dist.MultivariateNormal(locs, scale_tril=trils))
    with numpyro.plate("users", U):
        theta = numpyro.sample("theta", mix)
        return btl_clicks(theta, z, y)


def recalibrated_design(A, first, second, rater):
    """Design rows z [U, S, K + 1] with the rater column replaced by A g(q).

    A [K, K]; first, second [U, S] persona indices; rater [U, S, K] = g(., q) of each round.
    NumPy in, NumPy out (the online learner); JAX in, JAX out (inside the model).
    """
    xp = np if all(isinstance(a, np.ndarray) for a in (A, first, second, rater)) else jnp
    K = rater.shape[-1]
    ind = xp.eye(K)[first] - xp.eye(K)[second]                 # [U, S, K]: e_first - e_second
    g_diff = xp.sum(xp.einsum("pq,usq->usp", A, rater) * ind, axis=-1, keepdims=True)
    return xp.concatenate([ind, g_diff], axis=-1)


def recalibration(first, second, rater, prior: MixturePrior, y=None, ridge: float = RIDGE):
    """Users' theta under `prior` and a shared recalibration A = a I + A' of the rater scores.

    Sites: "a", "A_dev" [K, K], "theta" [U, K + 1], "y" [U, S]; deterministic "A" [K, K].
    """
    K = rater.shape[-1]
    a = numpyro.sample("a", dist.LogNormal(0.0, 0.5))
    A_dev = numpyro.sample("A_dev", dist.Normal(0.0, 1.0 / jnp.sqrt(ridge)).expand([K, K]).to_event(2))
    A = numpyro.deterministic("A", a * jnp.eye(K) + A_dev)
    z = recalibrated_design(A, first, second, rater)
    with numpyro.plate("users", first.shape[0]):
        theta = numpyro.sample("theta", prior_distribution(prior))
        return btl_clicks(theta, z, y)
