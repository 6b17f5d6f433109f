"""The PrefDisco profile model: a task's population of preference profiles, as a NumPyro function.

For one task with K relevant attributes, user u's profile coordinates
y_u = (logit v_u [K], log(w_u + WEIGHT_FLOOR) [K]) (D = 2K) are

    Sigma ~ InverseWishart(nu0, Psi0),  mu ~ N(mu0, Sigma / kappa0),  y_u ~ N(mu, Sigma)

(the Normal-Inverse-Wishart population, conjugate: ``inference.profile_belief`` has its exact
posterior predictive, a multivariate t). Values and weights share one covariance because
both follow the user's traits; answers about values then move the expected weights too.
Earlier users' profiles are observed whole; the new user's answers observe some value
coordinates of y_new, exactly (answer sd 0) or as logit(answer) ~ N(y_new_j, tau_j^2).
A Gaussian on log(w + floor) is a rough model of weights that are exactly 0 outside the
profile; the checks measure how rough (``diagnostics.profile_checks``).
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

LOGIT_CLIP = 0.005     # values are clipped to [0.005, 0.995] before the logit (|z| <= 5.3)
WEIGHT_FLOOR = 0.01    # log(w + 0.01): weights of 0 (outside the profile) sit at log 0.01 = -4.6


class ProfilePrior(NamedTuple):
    """Normal-Inverse-Wishart hyperparameters over K value logits."""
    mu0: np.ndarray      # [K]
    kappa0: float
    nu0: float           # > K + 1, so the prior mean of Sigma, Psi0 / (nu0 - K - 1), exists
    psi0: np.ndarray     # [K, K]


def default_profile_prior(K: int, var: float = 4.0, kappa0: float = 0.1) -> ProfilePrior:
    """Weak prior over D = 2K coordinates: mean 0 for value logits and log(1/K) for log-weights,
    E[Sigma] = var I, nu0 = D + 3, a tenth of a user's weight on mu."""
    D = 2 * K
    nu0 = D + 3.0
    mu0 = np.concatenate([np.zeros(K), np.full(K, np.log(1.0 / K))])
    return ProfilePrior(mu0, float(kappa0), nu0, (nu0 - D - 1.0) * var * np.eye(D))


def to_logit(v):
    """logit of values in [0, 1], clipped to [LOGIT_CLIP, 1 - LOGIT_CLIP]."""
    v = np.clip(np.asarray(v, dtype=float), LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(v) - np.log1p(-v)


def profile_coordinates(values, weights) -> np.ndarray:
    """[..., 2K]: value logits then log(weights + WEIGHT_FLOOR), from values and weights [..., K]."""
    return np.concatenate([to_logit(values), np.log(np.asarray(weights, dtype=float) + WEIGHT_FLOOR)], -1)


def profile_population(population, answer_index=None, answers=None, answer_sd=None, prior: ProfilePrior | None = None):
    """Population [N, D] of earlier users' profile coordinates (or None: prior predictive), the new
    user's answered coordinates answer_index [J] (value coordinates, < D / 2) with logits
    answers [J] (None: unobserved) and noise sd answer_sd [J] on the logit scale (None or 0:
    exact answers). `prior` defaults to ``default_profile_prior(D / 2)``.

    Sites: "Sigma" [D, D], "mu" [D], "population" [N, D] (observed), "z_new" [D] when answers
    are noisy or absent; with exact answers "z_answered" [J] (observed) and "z_free" [D - J],
    and the deterministic "z_new" [D].
    """
    if prior is None:
        prior = default_profile_prior(population.shape[-1] // 2)
    K = len(prior.mu0)
    Sigma = numpyro.sample("Sigma", dist.InverseWishart(prior.nu0, scale_matrix=jnp.asarray(prior.psi0)))
    L = jnp.linalg.cholesky(Sigma)
    mu = numpyro.sample("mu", dist.MultivariateNormal(jnp.asarray(prior.mu0), scale_tril=L / jnp.sqrt(prior.kappa0)))
    if population is not None:
        with numpyro.plate("users", population.shape[0]):
            numpyro.sample("population", dist.MultivariateNormal(mu, scale_tril=L), obs=jnp.asarray(population))
    exact = answers is not None and (answer_sd is None or np.all(np.asarray(answer_sd) == 0))
    if not exact:
        z = numpyro.sample("z_new", dist.MultivariateNormal(mu, scale_tril=L))
        if answers is not None:
            numpyro.sample("answers", dist.Normal(z[jnp.asarray(answer_index)], jnp.asarray(answer_sd)).to_event(1),
                           obs=jnp.asarray(answers))
        return z
    # Exact answers: z_new = (answered, free) sampled as marginal x conditional, the same joint.
    idx = np.asarray(answer_index)
    free = np.setdiff1d(np.arange(K), idx)
    S_oo, S_fo, S_ff = Sigma[np.ix_(idx, idx)], Sigma[np.ix_(free, idx)], Sigma[np.ix_(free, free)]
    z_o = numpyro.sample("z_answered", dist.MultivariateNormal(mu[idx], S_oo), obs=jnp.asarray(answers))
    gain = jnp.linalg.solve(S_oo, S_fo.T).T
    z_f = numpyro.sample("z_free", dist.MultivariateNormal(mu[free] + gain @ (z_o - mu[idx]),
                                                           S_ff - gain @ S_fo.T))
    z = jnp.zeros(K).at[idx].set(z_o).at[free].set(z_f)
    return numpyro.deterministic("z_new", z)
