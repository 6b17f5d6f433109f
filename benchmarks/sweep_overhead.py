"""What isolating cells in worker processes costs: one sweep of small cells run inline (in this
process, no isolation) against one and two worker processes, each into a fresh store, in the same
run (the ratio is what to compare across machines).

    python benchmarks/sweep_overhead.py [--seeds 0-15] [--policies random,no-transfer] [--arrivals 30]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from online.store import RunStore
from online.sweep import parse_seeds, run_sweep
from tdmodels.rosters import open_world


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0-15")
    ap.add_argument("--policies", default="random,no-transfer")
    ap.add_argument("--arrivals", type=int, default=30)
    a = ap.parse_args()
    seeds, specs = parse_seeds(a.seeds), a.policies.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        worlds = Path(tmp) / "worlds"
        open_world("dev", directory=worlds)
        times = {}
        for label, kw in (("inline", {"inline": True}), ("1 worker", {"jobs": 1}), ("2 workers", {"jobs": 2})):
            t0 = time.perf_counter()
            res = run_sweep(["dev"], seeds, specs, RunStore(Path(tmp) / label.replace(" ", "-")), worlds_dir=worlds,
                            arrivals=a.arrivals, progress=False, **kw)
            times[label] = time.perf_counter() - t0
            assert len(res.done) == len(seeds) * len(specs) and not res.failed
    n = len(seeds) * len(specs)
    print(f"dev, {n} cells of {a.arrivals} arrivals ({', '.join(specs)})")
    for label, t in times.items():
        print(f"  {label:10s} {t:6.2f} s  {t / times['inline']:5.2f} x inline")


if __name__ == "__main__":
    main()
