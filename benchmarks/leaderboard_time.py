"""The leaderboard at the paper's seed counts from an empty store: its wall time against the replay time
its cells took, shared among its worker processes."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.measure import Ratio


def measure_leaderboard(jobs: int = 2, rosters: list[str] | None = None, seeds: list[int] | None = None,
                        policies: list[str] | None = None) -> list[Ratio]:
    """Run ``tutorduel.leaderboard.run_leaderboard`` in a new store (held-out rosters included) and
    return its wall time against the sum of its rows' replay times divided by `jobs` (what perfect
    sharing among the workers, with nothing else to do, would take)."""
    from online.store import RunStore
    from tutorduel.leaderboard import run_leaderboard

    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "store")
        t0 = time.perf_counter()
        rc = run_leaderboard(store, Path(tmp) / "out", rosters=rosters, seeds=seeds, specs=policies,
                             allow_test=True, jobs=jobs)
        wall = time.perf_counter() - t0
        if rc != 0:
            raise RuntimeError("leaderboard benchmark: a cell failed (see the output above)")
        rows = list(store.rows())
        replay = sum(float(r["wall_s"]) for r in rows)
    return [Ratio("leaderboard", f"leaderboard, {len(rows)} cells", wall, f"replay time / {jobs} workers",
                  replay / jobs, note=f"{jobs} worker processes, wall {wall / 60:.1f} min")]
