"""NUTS runs of the tdmodels models, returned as ArviZ InferenceData, in float64.

Every run computes in float64 inside a scoped ``jax.enable_x64(True)``; importing this module
changes nothing in JAX. Chains run in parallel, one host device each, when the program has
called :func:`configure_jax` before JAX's first computation (the command line and the tests
do): each chain then runs its own trajectories, where vectorised chains wait for the slowest
chain's tree at every draw. Otherwise chains run vectorised, with other draws.
"""
from __future__ import annotations

import os
import warnings

import arviz as az
import jax
import numpyro
from numpyro.infer import MCMC, NUTS

from tdmodels.run_inputs import checked_count, checked_seed
from tdmodels.errors import check_flag

DEFAULT_CHAINS = 4
DEFAULT_WARMUP = 1000
DEFAULT_DRAWS = 1000


def configure_jax(chains: int = DEFAULT_CHAINS) -> None:
    """Give JAX one host device per chain (at least `chains`, at least the cores) and 64-bit floats,
    for the whole program. Call it once, at the start of a program, before JAX computes anything;
    it is what the command line does. Library functions never call it."""
    numpyro.set_host_device_count(max(os.cpu_count() or 1, int(chains)))
    numpyro.enable_x64()


def check_sampler_settings(seed=0, chains=1, warmup=0, draws=1, thin=1) -> None:
    """One InputError naming the first sampler setting out of its domain: the seed as every run's seed
    (``tdmodels.run_inputs.checked_seed``), chains >= 1, warmup >= 0, draws >= 1, thin >= 1, each an integer
    (bools and floats refused, numpy integers taken) of at most 2**31 - 1."""
    checked_seed(seed)
    for name, value, lo in (("chains", chains, 1), ("warmup", warmup, 0), ("draws", draws, 1), ("thin", thin, 1)):
        checked_count(value, f"sampler setting {name}", lo, 2**31 - 1)


def run_nuts(model, *args, seed: int = 0, chains: int = DEFAULT_CHAINS, warmup: int = DEFAULT_WARMUP,
             draws: int = DEFAULT_DRAWS, target_accept: float = 0.8, dense_mass: bool = False,
             max_tree_depth: int = 10, coords: dict | None = None, dims: dict | None = None,
             drop: tuple[str, ...] = (), **kwargs) -> az.InferenceData:
    """NUTS on `model(*args, **kwargs)`; returns InferenceData with posterior, sample_stats, observed_data.

    Sample stats include diverging, energy and tree depth, so `inference.health` can check
    the fit. `coords`/`dims` label the posterior variables (e.g. theta: ["user", "dim"]);
    `drop` names sites left out of the posterior (e.g. the standardised coordinates).
    """
    dense_mass = check_flag("dense_mass", dense_mass)
    check_sampler_settings(seed, chains, warmup, draws)
    kernel = NUTS(model, target_accept_prob=target_accept, dense_mass=dense_mass, max_tree_depth=max_tree_depth)
    # pmap'd chains, one device each, beat vectorised chains (see the module docstring).
    method = "parallel" if jax.local_device_count() >= chains else "vectorized"
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method=method,
                progress_bar=False)
    with jax.enable_x64(True):
        mcmc.run(jax.random.PRNGKey(seed), *args, extra_fields=("diverging", "energy", "num_steps",
                                                                "adapt_state.step_size"), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = az.from_numpyro(mcmc, coords=coords, dims=dims, log_likelihood=False)
    if drop:
        idata.posterior = idata.posterior.drop_vars([v for v in drop if v in idata.posterior])
    idata.sample_stats.attrs.update({"warmup": warmup, "target_accept": target_accept, "chain_method": method})
    return idata
