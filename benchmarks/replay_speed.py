"""Time full replays of one roster and print each policy's time against random pairs
measured in the same process (the ratio is what to compare across machines).

    python benchmarks/replay_speed.py [--world dev] [--repeats 3] [--policies no-transfer]
"""
from __future__ import annotations

import argparse
import time

from online.replay import replay
from tdmodels.simulator import build_roster


def best_time(world, spec, repeats):
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        replay(world, r, spec)
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", default="dev")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--policies", default="no-transfer,pooled")
    a = ap.parse_args()
    world = build_roster(a.world)
    n = int(world.attrs["arrivals"]) * 24
    ref = best_time(world, "random", a.repeats)
    print(f"{a.world}: {n} rounds per run, best of {a.repeats}")
    print(f"  {'random':14s} {ref:7.3f} s/run  (reference)")
    for spec in a.policies.split(","):
        t = best_time(world, spec, a.repeats)
        print(f"  {spec:14s} {t:7.3f} s/run  {t / ref:5.2f} x random")


if __name__ == "__main__":
    main()
