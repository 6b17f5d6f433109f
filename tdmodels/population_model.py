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

The settings (`PopulationHyper`, the defaults) and the recalibrated design rows live in
``tdmodels.population_hyper``, which the online learner reads without importing JAX; they are
imported here under the same names.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from tdmodels.click_model import btl_clicks
from tdmodels.population_hyper import (ALPHA, COV_DF_EXTRA, COV_SCALE, MEAN_SCALE, N_LEARNED, RIDGE, PopulationHyper,
                                       recalibrated_design)
from tdmodels.prior_distributions import prior_distribution, stick_breaking
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior

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
