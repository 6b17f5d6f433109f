"""NUTS runs of the tdmodels models, returned as ArviZ InferenceData, in float64.

Chains run in parallel on host devices: `numpyro.set_host_device_count` is called at
import, which only takes effect when this module is imported before JAX first runs a
computation (the CLI does so); otherwise chains run one after another, with the same
draws.
"""
from __future__ import annotations

import os
import warnings

import numpyro

numpyro.set_host_device_count(os.cpu_count() or 1)
numpyro.enable_x64()

import arviz as az  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.handlers import reparam  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402
from numpyro.infer.reparam import Reparam  # noqa: E402

DEFAULT_CHAINS = 4
DEFAULT_WARMUP = 1000
DEFAULT_DRAWS = 1000


class AffineReparam(Reparam):
    """Sample a site as theta = loc + L xi with xi unconstrained: an exact change of variables.

    With (loc, L L^T) a Laplace approximation of the posterior, NUTS sees a nearly
    standard-normal target; the site's own log density is kept as a factor, so the
    sampled posterior is unchanged (the Jacobian is constant).
    """

    def __init__(self, loc, scale_tril):
        self.loc, self.scale_tril = jnp.asarray(loc), jnp.asarray(scale_tril)

    def __call__(self, name, fn, obs):
        assert obs is None, "AffineReparam does not apply to observed sites"
        xi = numpyro.sample(f"{name}_std", dist.ImproperUniform(dist.constraints.real_vector, fn.batch_shape,
                                                                fn.event_shape))
        value = self.loc + jnp.einsum("...ij,...j->...i", self.scale_tril, xi)
        numpyro.factor(f"{name}_density", fn.log_prob(value))
        return None, value


def preconditioned(model, loc, scale_tril, site: str = "theta"):
    """`model` with `site` sampled through AffineReparam(loc, scale_tril)."""
    return reparam(model, config={site: AffineReparam(loc, scale_tril)})


def run_nuts(model, *args, seed: int = 0, chains: int = DEFAULT_CHAINS, warmup: int = DEFAULT_WARMUP,
             draws: int = DEFAULT_DRAWS, target_accept: float = 0.8, dense_mass: bool = False,
             max_tree_depth: int = 10, coords: dict | None = None, dims: dict | None = None,
             drop: tuple[str, ...] = (), **kwargs) -> az.InferenceData:
    """NUTS on `model(*args, **kwargs)`; returns InferenceData with posterior, sample_stats, observed_data.

    Sample stats include diverging, energy and tree depth, so `inference.health` can check
    the fit. `coords`/`dims` label the posterior variables (e.g. theta: ["user", "dim"]);
    `drop` names sites left out of the posterior (e.g. the standardised coordinates).
    """
    kernel = NUTS(model, target_accept_prob=target_accept, dense_mass=dense_mass, max_tree_depth=max_tree_depth)
    # pmap'd chains on 2 cores beat one device; more chains than devices run vectorised
    # (measured: sequential 4 chains is slower, and oversubscribed host devices far slower).
    method = "parallel" if jax.local_device_count() >= chains else "vectorized"
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method=method,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *args, extra_fields=("diverging", "energy", "num_steps"), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = az.from_numpyro(mcmc, coords=coords, dims=dims, log_likelihood=False)
    if drop:
        idata.posterior = idata.posterior.drop_vars([v for v in drop if v in idata.posterior])
    idata.sample_stats.attrs.update({"warmup": warmup, "target_accept": target_accept, "chain_method": method})
    return idata
