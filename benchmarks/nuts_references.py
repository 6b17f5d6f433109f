"""The per-user NUTS references of one run's users against batch Laplace of the same units (what the
exact reference costs over the approximation it checks). Needs ``inference.configure_jax`` first."""
from __future__ import annotations

import time

import numpy as np

from benchmarks.measure import Ratio
from inference.health import stored_health
from inference.laplace import laplace_fit_batch
from inference.user_reference import fit_users
from online.replay import replay_logged
from tdmodels.rosters import open_world
from tutorduel.cell_fit import policy_prior


def measure_nuts(world: str = "dev", seed: int = 0, policy: str = "no-transfer", users: int | None = None,
                 warmup: int = 1000, draws: int = 1000) -> list[Ratio]:
    _, log = replay_logged(open_world(world), seed, policy)
    z, y = log.design(slice(None, users))
    U, S, d = z.shape
    prior = policy_prior(policy, d)
    K = prior.n_components
    t = time.perf_counter()
    laplace_fit_batch(np.repeat(prior.means[None], U, 0).reshape(U * K, d),
                      np.repeat(prior.covs[None], U, 0).reshape(U * K, d, d), np.repeat(z, K, 0), np.repeat(y, K, 0))
    t_lap = time.perf_counter() - t
    t = time.perf_counter()
    idata = fit_users(z, y, prior, seed=seed, warmup=warmup, draws=draws)
    t_nuts = time.perf_counter() - t
    return [Ratio("nuts", f"NUTS, {U} users of {policy}", t_nuts, "batch Laplace, same units", t_lap,
                  note=f"{world} seed {seed}; health: {stored_health(idata).line()}")]
