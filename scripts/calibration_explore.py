"""An exploratory ABC-SMC fit of some of the simulator's free parameters to the calibration targets.

    python scripts/calibration_explore.py [--particles 100] [--generations 3] [--jobs 2] [--out fit.npz]

Not the calibration of issue 19 (no posterior predictive page, no new generator): a first look at
whether the parameter family can reach the targets of ``tutorduel worlds targets``. Fits the student
scale, the demand gain and the six shared persona offsets (box priors) by ``inference.abc_smc`` to
the published world-level rows (scale 3 points) and, when the real sample is imported, its session
statistics (scale: half their 95% bootstrap interval); our figures from seed 0 of each roster.
Prints the tolerances, the posterior means and 90% intervals, and every figure at the posterior mean.
"""
from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from diagnostics.calibration_targets import SAMPLE_ROSTER, bootstrap_means, session_statistics, world_targets
from diagnostics.leaderboard_report import PUBLISHED_ROSTERS
from inference.abc_smc import abc_smc
from tdmodels.rosters import open_world, world_file
from tdmodels.simulator import build_roster
from tdmodels.simulator_params import DEFAULT_PARAMS

FITTED = (("student_scale", 1.5, 5.0), ("demand_gain", 1.0, 4.0)) + tuple(
    (f"offset_{p}", -2.0, 2.0) for p in ("prover", "examples", "socratic", "intuition", "concise", "coach"))
_SAMPLE_KEYS: list = []


def _params(theta):
    return DEFAULT_PARAMS._replace(**{name: float(v) for (name, _, _), v in zip(FITTED, theta)})


def figures(theta, seed=0, sample_keys=()):
    worlds = {r: build_roster(r, params=_params(theta)) for r in PUBLISHED_ROSTERS}
    out = [t.ours for t in world_targets(worlds, [0])]
    if sample_keys:
        mine = session_statistics(worlds[SAMPLE_ROSTER])
        out += [float(mine[k].mean()) for k in sample_keys]
    return out


class Simulate:
    def __init__(self, sample_keys):
        self.sample_keys = tuple(sample_keys)

    def __call__(self, theta, seed):
        return figures(theta, seed, self.sample_keys)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--particles", type=int, default=100)
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="calibration-explore.npz")
    a = ap.parse_args()
    base = {r: build_roster(r) for r in PUBLISHED_ROSTERS}
    targets = world_targets(base, [0])
    names = [t.figure for t in targets]
    observed = [t.target for t in targets]
    scales = [3.0] * len(targets)
    keys = []
    if world_file("sample").exists():
        boot = bootstrap_means(session_statistics(open_world("sample")))
        keys = list(boot)
        names += [f"sample: {k}" for k in keys]
        observed += [boot[k][0] for k in keys]
        scales += [(boot[k][2] - boot[k][1]) / 2 for k in keys]
    with ProcessPoolExecutor(a.jobs) as ex:
        res = abc_smc(Simulate(keys), observed, [(lo, hi) for _, lo, hi in FITTED], scales, particles=a.particles,
                      generations=a.generations, seed=0, map_fn=lambda fn, xs: list(ex.map(fn, xs, chunksize=4)))
    np.savez(a.out, particles=res.particles, weights=res.weights, distances=res.distances, statistics=res.statistics,
             names=np.array([n for n, _, _ in FITTED]), figures=np.array(names), observed=np.array(observed))
    print(f"{res.simulations} simulations; tolerances {np.round(res.tolerances, 2).tolist()}; acceptance "
          f"{np.round(res.acceptance, 3).tolist()}; ESS {res.ess():.0f}")
    mean = res.weights @ res.particles
    for (n, lo, hi), m, (a90, b90) in zip(FITTED, mean, res.interval(0.9)):
        print(f"  {n:18s} prior [{lo}, {hi}]  posterior mean {m:+.3f}  90% [{a90:+.3f}, {b90:+.3f}]")
    at_mean = figures(mean, 0, keys)
    start = figures([getattr(DEFAULT_PARAMS, n) for n, _, _ in FITTED], 0, keys)
    print(f"  {'figure':52s} {'target':>8s} {'sim-1':>8s} {'fitted':>8s}  (scale)")
    for n, o, s0, s1, sc in zip(names, observed, start, at_mean, scales):
        print(f"  {n[:52]:52s} {o:8.3f} {s0:8.3f} {s1:8.3f}  ({sc:.3f}){'  within' if abs(s1 - o) <= sc else ''}")


if __name__ == "__main__":
    main()
