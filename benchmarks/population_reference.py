"""Time the population model's NUTS reference and report its label-invariant health, at several sizes.

    python benchmarks/population_reference.py [--users 20,40] [--chains 4] [--warmup 500] [--draws 500]

The clicks are CODuel's on dev seed 0 (the first N arrivals), as `tutorduel fit --model population`
fits them. For each size: wall time of the fit (label-invariant diagnostics included), the
sampler's health line and one line per label-invariant quantity (``inference.population_diagnostics``).
The last line is how time grows with users: the ratio of each size's time to the smallest's,
beside the ratio of the sizes, measured in this run. Every time includes compiling the model for its
shape, and the first also JAX's start-up, so short runs say little about growth. Issue 17 asks for a healthy fit on 100 users in
under 10 minutes and on 300 in under 30 on a 2-core machine; no fit has been healthy yet.
"""
from __future__ import annotations

import argparse
import time
import warnings

from inference.health import FitHealthWarning, stored_health
from inference.model_fits import fit_population, stored_label_invariant
from inference.nuts import configure_jax
from online.replay import replay_logged
from tdmodels.simulator import build_roster


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", default="20,40", help="comma-separated sizes")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    configure_jax(a.chains)
    sizes = sorted(int(s) for s in a.users.split(","))
    _, log = replay_logged(build_roster("dev"), a.seed, "coduel", arrivals=max(sizes))
    z, y = log.recalibrated_design()
    times = {}
    for n in sizes:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitHealthWarning)
            idata = fit_population(z[:n], y[:n], seed=a.seed, chains=a.chains, warmup=a.warmup, draws=a.draws)
        times[n] = time.perf_counter() - t0
        li = stored_label_invariant(idata)
        print(f"{n} users, {a.chains} x ({a.warmup} + {a.draws}): {times[n]:.1f} s; healthy: {li.ok and stored_health(idata).ok}")
        print(f"  NUTS: {stored_health(idata).line()}")
        print("\n".join("  " + line for line in li.lines()), flush=True)
    base = sizes[0]
    print("time growth: " + ", ".join(f"{n} users {times[n] / times[base]:.2f}x the time for {n / base:.1f}x the users"
                                      for n in sizes[1:]) if len(sizes) > 1 else "")


if __name__ == "__main__":
    main()
