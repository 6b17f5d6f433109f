"""Time full tempered-KG runs beside CODuel's in the same process, on one core, and print both and their ratio.

    python benchmarks/tempered_kg_speed.py [--world dev] [--repeats 3]

Each figure is the wall time of the replay loop (the policy's five methods and the click
simulation; the row's `wall_s`), best of the repeats over seeds 0.., after the compiled kernels
are warmed up; "per 8400 rounds" rescales to 350 arrivals x 24 rounds. The process is pinned to
one core where the platform allows (os.sched_setaffinity) and numba's threads are limited to one.
Peak memory is the maximum resident set size of a fresh process that runs one full tempered-KG
replay (imports included). The issue's bounds: 3 s per 8400 rounds, 1 GiB.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

ROUNDS_REF = 350 * 24
SPECS = ("coduel", "tempered-kg")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", default="dev")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    os.environ["NUMBA_NUM_THREADS"] = "1"
    from online.replay import replay
    from tdmodels.simulator import build_roster

    world = build_roster(a.world)
    rounds = int(world.attrs["arrivals"]) * 24
    for spec in SPECS:
        replay(world, 0, spec, arrivals=12)                 # compile / load the kernels
    print(f"{a.world}: {rounds} rounds per run, one core; best of {a.repeats} seeds")
    walls = {spec: min(replay(world, seed, spec)["wall_s"] for seed in range(a.repeats)) for spec in SPECS}
    for spec, wall in walls.items():
        print(f"  {spec:12s} {wall:6.2f} s   {wall * ROUNDS_REF / rounds:6.2f} s per 8400 rounds")
    print(f"  ratio tempered-kg / coduel: {walls['tempered-kg'] / walls['coduel']:.2f}")
    code = ("from online.replay import replay; from tdmodels.simulator import build_roster; "
            f"replay(build_roster({a.world!r}), 0, 'tempered-kg')")
    subprocess.run([sys.executable, "-c", code], check=True)
    print(f"  peak memory of one tempered-KG replay process: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
