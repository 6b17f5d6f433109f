"""The priors of ``tdmodels.priors`` as NumPyro distributions, and the stick-breaking weights of the
population model: the JAX side of the priors, kept apart so that reading a prior imports no JAX."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from tdmodels.priors import MixturePrior


def _cholesky(cov):
    # Concrete arrays are factorised once in NumPy: inside a traced log density a batched
    # XLA Cholesky would be recomputed at every gradient evaluation.
    if isinstance(cov, np.ndarray):
        return jnp.asarray(np.linalg.cholesky(cov))
    return jnp.linalg.cholesky(jnp.asarray(cov))


def prior_distribution(prior: MixturePrior) -> dist.Distribution:
    """The prior as a NumPyro distribution over theta [..., d]; assignments marginalised."""
    w, m = jnp.asarray(prior.weights), jnp.asarray(prior.means)
    L = _cholesky(prior.covs)
    if w.shape[-1] == 1:
        return dist.MultivariateNormal(m[..., 0, :], scale_tril=L[..., 0, :, :])
    comps = dist.MultivariateNormal(m, scale_tril=L)
    return dist.MixtureSameFamily(dist.Categorical(probs=w), comps)


def stick_breaking(v):
    """Weights [..., K + 1] of a truncated stick-breaking process from fractions v [..., K] in (0, 1).

    w_k = v_k prod_{j<k} (1 - v_j) for k < K; the last entry is the remaining stick prod_j (1 - v_j).
    """
    v = jnp.asarray(v)
    rest = jnp.cumprod(1.0 - v, axis=-1)
    before = jnp.concatenate([jnp.ones_like(v[..., :1]), rest[..., :-1]], axis=-1)
    return jnp.concatenate([v * before, rest[..., -1:]], axis=-1)
