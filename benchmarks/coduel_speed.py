"""Time full CODuel runs with the compiled kernels beside the plain NumPy implementation of the
same algorithm (``engine="numpy"``), in the same process, and print both and their ratio.

    python benchmarks/coduel_speed.py [--world dev] [--repeats 3] [--numpy-repeats 1]

Each figure is the wall time of the replay loop (the policy's five methods and the click
simulation; the row's `wall_s`), best of the repeats; the loop with random pairs shows what
the harness alone costs; "per 8400 rounds" rescales to the
issue's 350 arrivals x 24 rounds. The compiled kernels are warmed up (compiled or loaded
from numba's cache) before timing. Peak memory is the maximum resident set size of a fresh
process that runs one full CODuel replay (imports included).
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys

from online.replay import replay
from tdmodels.simulator import build_roster

SPECS = (("lookahead", "coduel"), ("greedy", "coduel-greedy"))
ROUNDS_REF = 350 * 24


def best_wall(world, spec, repeats):
    return min(replay(world, seed, spec)["wall_s"] for seed in range(repeats))


def peak_memory_mib(world_name: str) -> float:
    code = ("from online.replay import replay; from tdmodels.simulator import build_roster; "
            f"replay(build_roster({world_name!r}), 0, 'coduel')")
    subprocess.run([sys.executable, "-c", code], check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", default="dev")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--numpy-repeats", type=int, default=1)
    ap.add_argument("--no-memory", action="store_true")
    a = ap.parse_args()
    world = build_roster(a.world)
    rounds = int(world.attrs["arrivals"]) * 24
    for _, spec in SPECS:
        replay(world, 0, spec, arrivals=12)                 # compile / load the kernels
    print(f"{a.world}: {rounds} rounds per run; best of {a.repeats} (compiled) and {a.numpy_repeats} (NumPy)")
    harness = best_wall(world, "random", a.repeats)
    print(f"  the replay loop alone (random pairs): {harness:.2f} s, {harness * ROUNDS_REF / rounds:.2f} s per 8400 rounds")
    print(f"  {'pair rule':10s} {'compiled':>10s} {'NumPy':>10s} {'ratio':>7s}   compiled per 8400 rounds")
    for label, spec in SPECS:
        fast = best_wall(world, spec, a.repeats)
        slow = best_wall(world, spec + '[engine="numpy"]', a.numpy_repeats)
        print(f"  {label:10s} {fast:9.2f}s {slow:9.2f}s {slow / fast:6.1f}x   {fast * ROUNDS_REF / rounds:6.2f} s", flush=True)
    if not a.no_memory:
        print(f"  peak memory of one replay process: {peak_memory_mib(a.world):.0f} MiB")


if __name__ == "__main__":
    main()
