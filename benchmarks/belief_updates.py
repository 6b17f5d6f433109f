"""The online beliefs' cost (``inference.online_beliefs``), each against the Laplace step in the same
process: one click into the belief, on the clicks of CODuel's dev seed-0 run under the priors its users
arrived under, and whole CODuel and no-transfer replays holding each belief."""
from __future__ import annotations

import time

import numpy as np

from benchmarks.measure import Ratio
from inference import kernels as kn
from inference.constants import BELIEFS
from inference.kernels.importance_laplace import base_draws
from inference.online_beliefs import new_sites
from benchmarks.replay_speed import best_replay_times
from online.replay import replay_logged


def _fold_all(kind: int, sessions) -> tuple[float, int]:
    """Seconds spent in the belief kernel over every click of every session, and the clicks."""
    spent, clicks = 0.0, 0
    base = base_draws(sessions[0][4].shape[1])
    for log_w0, m0, S0, active, z, y in sessions:
        log_w, m, S = log_w0, m0, S0
        sites = new_sites(len(log_w0), len(y), m0.shape[1])
        t0 = time.perf_counter()
        for t in range(len(y)):
            log_w, m, S, _ = kn.belief_update(kind, log_w, m, S, active, z[t], int(y[t]), log_w0, m0, S0, z, y, t,
                                              base, *sites)
        spent += time.perf_counter() - t0
        clicks += len(y)
    return spent, clicks


def measure_beliefs(world, users: int = 100, repeats: int = 3, arrivals: int | None = None) -> list[Ratio]:
    """Per click, each belief's update against the Laplace step's (best of `repeats`, interleaved), and each
    belief's CODuel and no-transfer replay against the Laplace one's (seed 0; `arrivals` truncates)."""
    _, log = replay_logged(world, 0, "coduel")
    n = min(users, log.n_users)
    z, y = log.recalibrated_design(np.arange(n))
    sessions = []
    for u in range(n):
        w = log.priors.weights[u]
        with np.errstate(divide="ignore"):
            sessions.append((np.log(w), log.priors.means[u], log.priors.covs[u], w > 0, z[u], y[u].astype(float)))
    for kind in range(len(BELIEFS)):
        _fold_all(kind, sessions[:2])                                   # compile or load the kernels
    best = {b: float("inf") for b in BELIEFS}
    for _ in range(repeats):
        for kind, b in enumerate(BELIEFS):
            spent, clicks = _fold_all(kind, sessions)
            best[b] = min(best[b], spent / clicks)
    rows = [Ratio("beliefs", f"one click, {b}", 1e6 * best[b], "one click, laplace", 1e6 * best["laplace"], unit="us",
                  note=f"microseconds a click, over {n} users' sessions") for b in BELIEFS if b != "laplace"]
    for policy in ("coduel", "no-transfer"):
        specs = [policy] + [f'{policy}[belief="{b}"]' for b in BELIEFS if b != "laplace"]
        times = best_replay_times(world, specs, repeats, arrivals)
        rows += [Ratio("beliefs", spec, times[spec], policy, times[policy]) for spec in specs[1:]]
    return rows
