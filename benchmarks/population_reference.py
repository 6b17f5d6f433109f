"""The population model's exact reference (the Gibbs sampler) to a healthy fit, at several sizes, each
against the smallest. The clicks are CODuel's on dev seed `seed` (the first N arrivals), fitted as
`tutorduel fit --model population` fits them: chains in `jobs` worker processes, in rounds until every
label-invariant diagnostic passes or the budget would be passed. Sizes past the roster's arrivals replay
its students arriving for longer (drawn with replacement over the whole run where the sizes outnumber them).
Each size's note gives the peak resident memory of this process (which holds every draw and computes the
diagnostics; reset per size where Linux allows) and of the largest worker so far. Needs
``inference.configure_jax`` first."""
from __future__ import annotations

import resource
import time
import warnings

from benchmarks.measure import Ratio
from inference.health import FitHealthWarning
from inference.model_fits import fit_population, stored_label_invariant
from online.process_pool import map_in_workers
from online.replay import replay_logged
from tdmodels.simulator import build_roster


def measure_population(sizes: list[int], chains: int = 4, jobs: int = 2, warmup: int = 2000, draws: int = 2000,
                       minutes: float = 30.0, seed: int = 0) -> list[Ratio]:
    sizes = sorted(sizes)
    world = build_roster("dev")
    if max(sizes) > int(world.attrs["arrivals"]):
        world.attrs["arrivals"] = max(sizes)
    if max(sizes) > world.sizes["student"] and str(world.attrs["arrival_mode"]) in ("distinct", "ordered"):
        world.attrs["arrival_mode"] = "uniform"      # more arrivals than students: they come back
    _, log = replay_logged(world, seed, "coduel", arrivals=max(sizes))
    z, y = log.recalibrated_design()
    fit_population(z[:8], y[:8], chains=2, warmup=2, draws=2)          # compile the kernels once, not in the timings
    times, per_sweep, notes = {}, {}, {}
    for n in sizes:
        reset = _reset_peak()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitHealthWarning)
            idata = fit_population(z[:n], y[:n], seed=seed, chains=chains, warmup=warmup, draws=draws,
                                   max_seconds=60 * minutes,
                                   map_chains=lambda fn, items: map_in_workers(fn, items, jobs))
        times[n] = time.perf_counter() - t0
        attrs = idata.sample_stats.attrs
        per_sweep[n] = sum(attrs["seconds_per_chain"]) / (chains * attrs["sweeps_per_chain"])
        notes[n] = (f"{chains} chains in {jobs} processes, {attrs['sweeps_per_chain']} sweeps per chain; "
                    f"healthy: {stored_label_invariant(idata).ok}; peak memory {_peak_mib(reset):.0f} MiB here, "
                    f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MiB in a worker")
        problems = stored_label_invariant(idata).problems
        if problems:
            notes[n] += " (" + "; ".join(problems) + ")"
    base = sizes[0]
    rows = []
    for n in sizes:
        rows.append(Ratio("population", f"{n} users, to the verdict", times[n], f"{base} users", times[base],
                          note=notes[n]))
        rows.append(Ratio("population", f"{n} users, a sweep", per_sweep[n], f"{base} users", per_sweep[base],
                          note=f"{n / base:.1f}x the users"))
    return rows


def _reset_peak() -> bool:
    """Reset this process's resident-set high-water mark (Linux); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_mib(reset: bool) -> float:
    """This process's peak resident set in MiB (since the last reset, if `reset`)."""
    if reset:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
