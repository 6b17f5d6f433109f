"""The hierarchical population model and the rater-recalibration model, as NumPyro functions.

Population: users' theta come from a Dirichlet-process-style Gaussian mixture,
truncated stick-breaking with concentration alpha over `n_learned` learned components
plus one broad isotropic component N(0, broad_var I) that takes the rest of the stick
(the mass kept for users unlike any seen so far). Assignments are marginalised
(MixtureSameFamily). Learned components have means mu_k ~ N(0, mean_scale^2 I) and
covariances diag(sd_k) R_k diag(sd_k), sd_k ~ LogNormal(log sd_scale, 0.5), R_k ~ LKJ(lkj).
The sd prior vanishes at 0: under a HalfNormal the mixture density has spikes where a
component collapses onto one user's theta (sd -> 0, integrable but a funnel), and NUTS on
40 dev users ran at step size 0.001-0.005 with every tree at the depth limit (1,023
steps); with the log-normal prior, step size 0.023-0.029 and 151-255 steps per draw.
Component labels are exchangeable, so compare fits on theta, weights sorted, or
densities, never on component k itself.

Recalibration: the rater column of Phi is replaced by A g(q), A = a I + A', shared by all
users, with theta_u ~ a given prior. The ridge of strength lambda on A' (penalty
lambda/2 ||A'||_F^2) is the Gaussian prior A'_pq ~ N(0, 1/lambda); a ~ LogNormal(0, 0.5)
keeps A's overall sign and scale away from the mirror solution (A, theta_g) -> (-A, -theta_g),
to which the likelihood alone is blind.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from tdmodels.click_model import btl_clicks
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, prior_distribution, stick_breaking

ALPHA = 20.0
N_LEARNED = 16
RIDGE = 10.0


def population(z, y=None, alpha: float = ALPHA, n_learned: int = N_LEARNED, broad_var: float = DEFAULT_PRIOR_VAR,
               mean_scale: float = 2.0, sd_scale: float = 1.0, lkj: float = 2.0):
    """Users' theta from a truncated DP-style mixture; z [U, S, d], y [U, S] or None.

    Sites: "v" [n_learned] stick fractions, "mu" [n_learned, d], "sd" [n_learned, d],
    "L_corr" [n_learned, d, d], "theta" [U, d], "y" [U, S]; deterministic "weights"
    [n_learned + 1] (the last is the broad component's).
    """
    U, S, d = z.shape
    v = numpyro.sample("v", dist.Beta(1.0, alpha).expand([n_learned]).to_event(1))
    w = numpyro.deterministic("weights", stick_breaking(v))
    with numpyro.plate("components", n_learned):
        mu = numpyro.sample("mu", dist.Normal(0.0, mean_scale).expand([d]).to_event(1))
        sd = numpyro.sample("sd", dist.LogNormal(jnp.log(sd_scale), 0.5).expand([d]).to_event(1))
        L_corr = numpyro.sample("L_corr", dist.LKJCholesky(d, lkj))
    locs = jnp.concatenate([mu, jnp.zeros((1, d))])
    trils = jnp.concatenate([sd[..., :, None] * L_corr, jnp.sqrt(broad_var) * jnp.eye(d)[None]])
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
