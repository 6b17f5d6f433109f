"""What isolating cells in worker processes costs: one sweep inline against one and two workers."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.measure import Ratio
from online.store import RunStore
from online.sweep import run_sweep
from tdmodels.rosters import open_world


def measure_sweep(world: str, seeds: list[int], policies: list[str], arrivals: int) -> list[Ratio]:
    """One sweep of len(seeds) x len(policies) cells of `arrivals` arrivals on `world`, each into a fresh store."""
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        worlds = Path(tmp) / "worlds"
        open_world(world, directory=worlds)
        for label, kw in (("inline", {"inline": True}), ("1 worker", {"jobs": 1}), ("2 workers", {"jobs": 2})):
            t0 = time.perf_counter()
            res = run_sweep([world], seeds, policies, RunStore(Path(tmp) / label.replace(" ", "-")),
                            worlds_dir=worlds, arrivals=arrivals, progress=False, **kw)
            times[label] = time.perf_counter() - t0
            if len(res.done) != len(seeds) * len(policies) or res.failed:
                raise RuntimeError(f"sweep benchmark: {len(res.failed)} cells failed ({label})")
    note = f"{len(seeds) * len(policies)} cells of {arrivals} arrivals"
    return [Ratio("sweep", f"sweep, {label}", times[label], "sweep, inline", times["inline"], note=note)
            for label in ("1 worker", "2 workers")]
