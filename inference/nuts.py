"""NUTS runs of the tdmodels models, returned as ArviZ InferenceData, in float64.

Chains run in parallel, one host device each: `numpyro.set_host_device_count` is called at
import with at least DEFAULT_CHAINS devices (more than the cores on a 2-core machine: each
chain then runs its own trajectories, where vectorised chains wait for the slowest chain's
tree at every draw; measured on the per-user reference, 60 users, 4 x (300 + 300): 48 s
against 85 s). The call only takes effect when this module is imported before JAX first
runs a computation (the CLI does so); otherwise chains run vectorised, with other draws.
"""
from __future__ import annotations

import os
import warnings

import numpyro

DEFAULT_CHAINS = 4
numpyro.set_host_device_count(max(os.cpu_count() or 1, DEFAULT_CHAINS))
numpyro.enable_x64()

import arviz as az  # noqa: E402
import jax  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402

DEFAULT_WARMUP = 1000
DEFAULT_DRAWS = 1000


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
    # pmap'd chains, one device each, beat vectorised chains (see the module docstring).
    method = "parallel" if jax.local_device_count() >= chains else "vectorized"
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method=method,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *args, extra_fields=("diverging", "energy", "num_steps", "adapt_state.step_size"), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = az.from_numpyro(mcmc, coords=coords, dims=dims, log_likelihood=False)
    if drop:
        idata.posterior = idata.posterior.drop_vars([v for v in drop if v in idata.posterior])
    idata.sample_stats.attrs.update({"warmup": warmup, "target_accept": target_accept, "chain_method": method})
    return idata
