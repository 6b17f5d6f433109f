"""Time the population model's exact reference (the Gibbs sampler) to a healthy fit, at several sizes.

    python benchmarks/population_reference.py [--users 50,100,300] [--chains 4] [--jobs 2]
        [--warmup 2000] [--draws 5000] [--thin 1] [--sweeps-per-user 0]

The clicks are CODuel's on dev seed 0 (the first N arrivals), as `tutorduel fit --model population`
fits them. For each size: wall time of the fit (chains in `jobs` worker processes, label-invariant
diagnostics included), the time per sweep, whether every label-invariant diagnostic passed, and one
line per quantity. With --sweeps-per-user S > 0 the sampling sweeps grow with the users,
draws x thin = S x N (warm-up stays fixed), since the slowest label-invariant quantities (partitions
of overlapping students' arrivals) need more sweeps with more users. The last lines say how time
grows: per sweep (the cost of one pass, measured) and per healthy fit, each against the smallest
size, beside the ratio of the sizes, measured in this run. Issue 17 asks for a healthy fit on 100
users in under 10 minutes and on 300 in under 30 on a 2-core machine.
"""
from __future__ import annotations

import argparse
import time
import warnings

from inference.health import FitHealthWarning
from inference.model_fits import fit_population, stored_label_invariant
from inference.nuts import configure_jax
from online.process_pool import map_in_workers
from online.replay import replay_logged
from tdmodels.simulator import build_roster


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", default="50,100,300", help="comma-separated sizes")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for the chains")
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=5000)
    ap.add_argument("--thin", type=int, default=1)
    ap.add_argument("--sweeps-per-user", type=float, default=0.0,
                    help="if > 0, draws = sweeps-per-user x N / thin (sampling sweeps grow with the users)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    configure_jax(a.chains)
    sizes = sorted(int(s) for s in a.users.split(","))
    _, log = replay_logged(build_roster("dev"), a.seed, "coduel", arrivals=max(sizes))
    z, y = log.recalibrated_design()
    fit_population(z[:8], y[:8], chains=2, warmup=2, draws=2)          # compile the kernels once, not in the timings
    times, per_sweep = {}, {}
    for n in sizes:
        draws = int(round(a.sweeps_per_user * n / a.thin)) if a.sweeps_per_user > 0 else a.draws
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitHealthWarning)
            idata = fit_population(z[:n], y[:n], seed=a.seed, chains=a.chains, warmup=a.warmup, draws=draws,
                                   thin=a.thin, map_chains=lambda fn, items: map_in_workers(fn, items, a.jobs))
        times[n] = time.perf_counter() - t0
        sweeps = a.warmup + draws * a.thin
        per_sweep[n] = sum(idata.sample_stats.attrs["seconds_per_chain"]) / (a.chains * sweeps)
        li = stored_label_invariant(idata)
        print(f"{n} users, {a.chains} chains x ({a.warmup} + {draws} x {a.thin}) sweeps, {a.jobs} processes: "
              f"{times[n]:.1f} s ({1000 * per_sweep[n]:.2f} ms a sweep); healthy: {li.ok}")
        print("\n".join("  " + line for line in li.lines()), flush=True)
    base = sizes[0]
    for what, t in (("per sweep", per_sweep), ("per fit", times)):
        print(f"time growth {what}: " + ", ".join(f"{n} users {t[n] / t[base]:.2f}x for {n / base:.1f}x the users"
                                                for n in sizes[1:]) if len(sizes) > 1 else "")


if __name__ == "__main__":
    main()
