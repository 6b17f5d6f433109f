"""Time the population model's exact reference (the Gibbs sampler) to a healthy fit, at several sizes.

    python benchmarks/population_reference.py [--users 50,100,200,300] [--chains 4] [--jobs 2]
        [--warmup 2000] [--draws 2000] [--minutes 30]

The clicks are CODuel's on dev seed 0 (the first N arrivals), fitted as `tutorduel fit --model
population` fits them: the chains (in `jobs` worker processes) run in rounds until every
label-invariant diagnostic passes or the budget would be passed. For each size: wall time to the
verdict (diagnostics of every round included), sweeps per chain, the time per sweep, the verdict
and one line per quantity. The last lines say how time grows: per sweep (the cost of one pass)
and to a healthy fit (cost x the sweeps the slowest quantity needs), each against the smallest
size, beside the ratio of the sizes, all measured in this run. Issue 17 asks for a healthy fit on
100 users in under 10 minutes and on 300 in under 30 on a 2-core machine.
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
    ap.add_argument("--users", default="50,100,200,300", help="comma-separated sizes")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for the chains")
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=2000, help="draws kept per chain per round")
    ap.add_argument("--minutes", type=float, default=30.0, help="budget per size")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    configure_jax(a.chains)
    sizes = sorted(int(s) for s in a.users.split(","))
    _, log = replay_logged(build_roster("dev"), a.seed, "coduel", arrivals=max(sizes))
    z, y = log.recalibrated_design()
    fit_population(z[:8], y[:8], chains=2, warmup=2, draws=2)          # compile the kernels once, not in the timings
    times, per_sweep = {}, {}
    for n in sizes:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitHealthWarning)
            idata = fit_population(z[:n], y[:n], seed=a.seed, chains=a.chains, warmup=a.warmup, draws=a.draws,
                                   max_seconds=60 * a.minutes, progress=lambda m: print(f"  {m}", flush=True),
                                   map_chains=lambda fn, items: map_in_workers(fn, items, a.jobs))
        times[n] = time.perf_counter() - t0
        attrs = idata.sample_stats.attrs
        sweeps = attrs["sweeps_per_chain"]
        per_sweep[n] = sum(attrs["seconds_per_chain"]) / (a.chains * sweeps)
        li = stored_label_invariant(idata)
        print(f"{n} users, {a.chains} chains, {a.jobs} processes: {times[n]:.0f} s to the verdict, {sweeps} sweeps "
              f"per chain in {attrs['rounds']} rounds ({1000 * per_sweep[n]:.2f} ms a sweep); healthy: {li.ok}")
        print("\n".join("  " + line for line in li.lines()), flush=True)
    base = sizes[0]
    for what, t in (("per sweep", per_sweep), ("to the verdict", times)):
        print(f"time growth {what}: " + ", ".join(f"{n} users {t[n] / t[base]:.2f}x for {n / base:.1f}x the users"
                                                for n in sizes[1:]) if len(sizes) > 1 else "")


if __name__ == "__main__":
    main()
