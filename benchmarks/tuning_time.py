"""Tuning a policy from an empty store (``tutorduel tune``): its wall time against the replay time its
evaluations took, shared among its worker processes, and against the ten minutes issue 61 allows."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.measure import Ratio

COMPETITORS = ("rucb", "pooled", "colstim", "coldb", "coldb-lr", "meta-ts", "hierts")
TARGET_S = 600.0


def measure_tuning(policies=COMPETITORS, jobs: int = 2, budget: int | None = None, seeds=None,
                   arrivals: int | None = None) -> list[Ratio]:
    """Tune each policy on dev at the leaderboard's budget and seeds (unless given) in a new store; per policy,
    its wall time against the sum of its rows' replay times divided by `jobs`, with the time against the target
    in the note."""
    from online.store import RunStore
    from tutorduel.tune import BUDGET, TUNING_SEEDS, tune

    out = []
    for policy in policies:
        with tempfile.TemporaryDirectory() as tmp:
            store = RunStore(Path(tmp) / "store")
            t0 = time.perf_counter()
            t = tune(policy, budget=budget or BUDGET, seeds=seeds or TUNING_SEEDS, store=store, arrivals=arrivals,
                     jobs=jobs, progress=False)
            wall = time.perf_counter() - t0
            replay = sum(float(r["wall_s"]) for r in store.rows())
        out.append(Ratio("tuning", f"tune {policy}, {t.budget} evaluations", wall, f"replay time / {jobs} workers",
                         replay / jobs, note=f"{len(t.seeds)} seeds; wall {wall / 60:.1f} min, "
                                             f"{wall / TARGET_S:.2f} of the {TARGET_S / 60:.0f} min target"))
    return out
