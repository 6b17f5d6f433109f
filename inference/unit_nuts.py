"""NUTS on many independent units at once, each with its own step size, mass matrix and trees.

A run's per-user reference is thousands of small posteriors (``inference.unit_model``: one user's
clicks under one Gaussian component, in whitened coordinates close to N(0, I)). One NUTS over
all of them shares one step size and one tree depth, set by the hardest unit, and holds every
unit's draws and the sampler's intermediates at once. Here every (unit, chain) is a *lane*: its
own chain of NumPyro's NUTS (``numpyro.infer.hmc.hmc``, the kernel ``MCMC`` runs), with its own
dual-averaging step size and diagonal mass matrix, on the potential of the NumPyro model
``whitened_units`` restricted to that unit. Lanes are vectorised (``jax.vmap``), SHARD_LANES to a
device, and spread over the host devices (``jax.pmap``; ``inference.nuts.configure_jax`` gives one
per core), a chunk of units at a time, so memory holds one chunk's draws and a run's time grows
with its units.

Vectorised lanes wait for the longest tree among them at each draw, so the first pass caps the
tree depth at UNIT_TREE_DEPTH (7 leapfrog steps: a whitened unit turns back after about 6); the cap changes
the sampler's efficiency, never its target. A unit whose own diagnostics miss a threshold
(``inference.health``) is sampled again with RETRY_TREE_DEPTH, twice the warm-up and twice the
draws thinned by two (divergences and E-BFMI over every iteration), and the second run's draws
replace the first's.

Each lane's random key is derived from (seed, user, component, chain) alone, and every device
runs the same compiled program on SHARD_LANES lanes, so a unit's draws do not depend on the chunk
it was sampled in, the other units or the number of devices (XLA's vectorised arithmetic rounds
differently for batches of other sizes, which NUTS's accept/reject steps turn into other chains).
"""
from __future__ import annotations

from functools import lru_cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc import hmc
from numpyro.infer.util import potential_energy

from inference.convergence import rhat_and_bulk_ess, tail_ess
from inference.health import MAX_RHAT, MIN_BFMI, MIN_ESS_PER_CHAIN, Health
from inference.unit_model import WhitenedUnits, whitened_units

UNIT_TREE_DEPTH = 3          # first pass: at most 2**3 - 1 leapfrog steps a draw
RETRY_TREE_DEPTH = 10        # a unit that misses a threshold: NumPyro's default depth
TARGET_ACCEPT = 0.8
SHARD_LANES = 64             # lanes vectorised together on one device: one compiled shape for every run
INIT_RADIUS = 2.0            # chains start uniform in [-2, 2]^d (NumPyro's init_to_uniform), whitened


class UnitSample(NamedTuple):
    """Draws and per-unit diagnostics of n units sampled by `sample_units`."""
    xi: np.ndarray           # [chain, draw, n, d] whitened draws (theta = loc + L xi)
    diverging: np.ndarray    # [n] divergent transitions among the kept draws, all chains
    saturated: np.ndarray    # [n] kept draws whose tree reached the depth cap, all chains
    mean_steps: np.ndarray   # [n] leapfrog steps per draw, mean over chains and draws
    step_size: np.ndarray    # [n, chain] the adapted step sizes
    bfmi: np.ndarray         # [n, chain] E-BFMI of each chain
    tree_depth: np.ndarray   # [n] the depth cap the kept draws were sampled under


class UnitHealth(NamedTuple):
    """Each unit's own diagnostics ([n] each): the worst of its d coordinates."""
    rhat: np.ndarray
    rhat_over: np.ndarray    # coordinates with R-hat above MAX_RHAT
    ess_bulk: np.ndarray
    ess_tail: np.ndarray
    divergences: np.ndarray
    bfmi: np.ndarray

    def failing(self, chains: int) -> np.ndarray:
        """[n] bool: the units that miss a threshold of ``inference.health``."""
        floor = MIN_ESS_PER_CHAIN * chains
        return ~(self.rhat <= MAX_RHAT) | (self.divergences > 0) | ~(self.bfmi >= MIN_BFMI) | \
            ~(np.minimum(self.ess_bulk, self.ess_tail) >= floor)


def _unit_potential(unit: WhitenedUnits, y):
    """The potential energy of one unit's xi [1, d] under the NumPyro model (unit arrays with n = 1)."""
    return partial(potential_energy, whitened_units, (unit,), {"y": y})


@lru_cache(maxsize=8)
def _lane_runner(warmup: int, draws: int, depth: int):
    """A compiled function: (keys [D, L], units [D, L, 1, ...], y [D, L, 1, S]) -> each lane's draws and stats,
    D devices by L lanes."""
    init_kernel, sample_kernel = hmc(potential_fn_gen=_unit_potential, algo="NUTS")

    def lane(key, unit, y):
        k_init, k_run = jax.random.split(key)
        d = unit.c.shape[-1]
        x0 = jax.random.uniform(k_init, (1, d), minval=-INIT_RADIUS, maxval=INIT_RADIUS)
        state = init_kernel({"xi": x0}, warmup, target_accept_prob=TARGET_ACCEPT, max_tree_depth=depth,
                            model_args=(unit, y), rng_key=k_run)

        def warm(st, _):
            return sample_kernel(st, model_args=(unit, y)), None

        def keep(st, _):
            st = sample_kernel(st, model_args=(unit, y))
            return st, (st.z["xi"][0], st.diverging, st.num_steps, st.energy)

        state, _ = jax.lax.scan(warm, state, None, length=warmup)
        state, out = jax.lax.scan(keep, state, None, length=draws)
        return out, state.adapt_state.step_size

    return jax.pmap(jax.vmap(lane))


def lane_keys(seed: int, users: np.ndarray, components: np.ndarray, chains: int, attempt: int = 0) -> np.ndarray:
    """[n, chain] PRNG keys, one per (unit, chain), from (seed, user, component, chain, attempt) alone."""
    base = jax.random.PRNGKey(seed)
    if attempt:
        base = jax.random.fold_in(base, 1_000_003 + attempt)

    def one(u, k):
        key = jax.random.fold_in(jax.random.fold_in(base, u), k)
        return jax.vmap(lambda c: jax.random.fold_in(key, c))(jnp.arange(chains))

    return np.asarray(jax.vmap(one)(jnp.asarray(users, jnp.uint32), jnp.asarray(components, jnp.uint32)))


def bfmi(energy: np.ndarray) -> np.ndarray:
    """E-BFMI of chains along the last axis: mean squared energy change over the energy's variance."""
    energy = np.asarray(energy, float)
    return np.mean(np.diff(energy, axis=-1) ** 2, -1) / np.var(energy, -1)


def sample_units(units: WhitenedUnits, y: np.ndarray, keys: np.ndarray, warmup: int, draws: int,
                 depth: int = UNIT_TREE_DEPTH, thin: int = 1) -> UnitSample:
    """NUTS draws of n units, every (unit, chain) its own adapted chain.

    Lanes run SHARD_LANES at a time on each host device: every call compiles to the same program whatever the
    number of units or devices, so a unit's draws are the same bits on 1 device or 16 (on one machine).
    With `thin` > 1 the chains run draws x thin iterations and every thin-th draw is kept; divergences, steps and
    E-BFMI are counted over every iteration.

    Parameters
    ----------
    units : WhitenedUnits
        n units (``inference.unit_model.whiten_units``).
    y : array [n, S]
        Each unit's clicks.
    keys : array [n, chain, 2]
        One PRNG key per lane (`lane_keys`).
    warmup, draws, depth, thin
        Warm-up iterations (adapting step size and mass matrix), kept draws, the tree-depth cap, and
        iterations per kept draw.

    Returns
    -------
    UnitSample
    """
    n, chains = keys.shape[:2]
    devices = jax.local_device_count()
    need = n * chains
    per_call = devices * SHARD_LANES
    total = -(-need // per_call) * per_call
    take = np.concatenate([np.repeat(np.arange(n), chains), np.zeros(total - need, int)])
    chain_of = np.concatenate([np.tile(np.arange(chains), n), np.zeros(total - need, int)])
    run = _lane_runner(warmup, draws * thin, depth)
    parts = []
    for lo in range(0, total, per_call):
        idx, ch = take[lo:lo + per_call], chain_of[lo:lo + per_call]
        shard = lambda a: np.asarray(a).reshape((devices, SHARD_LANES) + np.shape(a)[1:])  # noqa: E731
        with jax.enable_x64(True):
            out = run(shard(keys[idx, ch]), WhitenedUnits(*(shard(np.asarray(a)[idx][:, None]) for a in units)),
                      shard(np.asarray(y, float)[idx][:, None]))
        parts.append(jax.tree_util.tree_map(lambda a: np.asarray(a).reshape((per_call,) + a.shape[2:]), out))
    (xi, div, steps, energy), step = jax.tree_util.tree_map(lambda *a: np.concatenate(a)[:need], *parts)
    per_unit = lambda a: a.reshape((n, chains) + a.shape[1:])  # noqa: E731
    xi = np.moveaxis(per_unit(xi), 0, 2)[:, thin - 1::thin]                # [chain, draw, n, d], thinned
    div, steps, energy = per_unit(div), per_unit(steps), per_unit(energy)    # every iteration
    return UnitSample(xi=xi, diverging=div.sum((1, 2)), saturated=(steps >= 2 ** depth - 1).sum((1, 2)),
                      mean_steps=steps.mean((1, 2)), step_size=per_unit(step), bfmi=bfmi(energy),
                      tree_depth=np.full(n, depth))


def unit_health(sample: UnitSample) -> UnitHealth:
    """Each unit's R-hat (rank-normalised split), bulk and tail ESS (worst coordinate), divergences and
    lowest E-BFMI."""
    C, M, n, d = sample.xi.shape
    flat = sample.xi.reshape(C, M, n * d)
    rhat, ess_b = rhat_and_bulk_ess(flat)
    ess_t = tail_ess(flat)
    worst = lambda a, f: f(a.reshape(n, d), axis=1)  # noqa: E731
    rhat = np.nan_to_num(rhat, nan=1.0)
    return UnitHealth(rhat=worst(rhat, np.max), rhat_over=(rhat > MAX_RHAT).reshape(n, d).sum(1),
                      ess_bulk=worst(ess_b, np.min),
                      ess_tail=worst(ess_t, np.min), divergences=sample.diverging, bfmi=sample.bfmi.min(1))


def overall_health(health: UnitHealth, chains: int, draws: int, d: int) -> Health:
    """The run's Health (``inference.health``) from every unit's own figures."""
    n = len(health.rhat)
    fails = lambda a: np.nan_to_num(np.asarray(a, float), nan=0.0)  # noqa: E731  (a NaN figure fails its check)
    return Health(n_params=n * d, max_rhat=float(np.max(health.rhat)) if n else float("nan"),
                  n_rhat_over=int(np.sum(health.rhat_over)),
                  min_ess_bulk=float(np.min(fails(health.ess_bulk), initial=np.inf)),
                  min_ess_tail=float(np.min(fails(health.ess_tail), initial=np.inf)),
                  divergences=int(np.sum(health.divergences)),
                  min_bfmi=float(np.min(fails(health.bfmi), initial=np.inf)), chains=chains, draws=draws)


def replace_units(first: UnitSample, again: UnitSample, which: np.ndarray) -> UnitSample:
    """`first` with the units `which` (indices) replaced by `again`'s draws and figures."""
    out = []
    for a, b in zip(first, again):
        a = a.copy()
        if a.ndim == 4:
            a[:, :, which] = b
        else:
            a[which] = b
        out.append(a)
    return UnitSample(*out)


__all__ = ["RETRY_TREE_DEPTH", "UNIT_TREE_DEPTH", "UnitHealth", "UnitSample", "bfmi", "lane_keys",
           "overall_health", "replace_units", "sample_units", "unit_health"]
