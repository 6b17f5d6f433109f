"""Calibration figures of a world, comparable between the simulator and the real sample.

Computed over the sessions of one seed's schedule (all arrivals), so a simulated roster
and the 48-arrival sample are summarised the same way.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from diagnostics.table_cell import cell
import xarray as xr

from online.schedule import make_schedule
from online.scoring import floor_regret, random_regret
from tdmodels import ties
from tdmodels.bradley_terry import order_averaged
from tdmodels.run_inputs import check_pair_memory, checked_arrivals, checked_seed, checked_world


def world_figures(world: xr.Dataset, seed: int = 0, arrivals: int | None = None) -> dict:
    """Calibration figures of a world on one seed's schedule, as {figure name: value}: how the click
    probabilities spread, the floor gap and random regret per question and session, how often each
    persona is best, how profiles recur among the first 48 arrivals, and the click scale."""
    world, seed, arrivals = checked_world(world), checked_seed(seed), checked_arrivals(arrivals)
    sched = make_schedule(world, seed, arrivals)
    check_pair_memory(world, len(sched.student), "the world figures")
    U = world["utilities"].values[sched.student[:, None], sched.question]                  # [N, S, K]
    P = world["probs"].values[sched.student[:, None], sched.question]
    K = U.shape[-1]
    iu, ju = np.triu_indices(K, 1)
    pb = np.round(order_averaged(P)[..., iu, ju], 6)
    gap = floor_regret(U)
    names = list(map(str, world["persona"].values))
    best = Counter(names[k] for k in ties.argmax(U).ravel())
    profiles = np.asarray(world["student_profile"].values).astype(str)[sched.student]
    first48 = profiles[:48]
    n = len(sched.student)
    return {
        "arrivals": n,
        "P at 0.1 (share)": float(np.mean(pb <= 0.1 + 1e-6)),
        "P at 0.9 (share)": float(np.mean(pb >= 0.9 - 1e-6)),
        "distinct P values": int(len(np.unique(np.round(pb, 3)))),
        "floor gap mean": float(gap.mean()),
        "floor gap median": float(np.median(gap)),
        "random regret / question": float(random_regret(U).mean()),
        "floor / session": float(gap.sum(1).mean()),
        "random excess / session": float((random_regret(U) - gap).sum(1).mean()),
        "min U median": float(np.median(U.min(-1))),
        "best persona share": {k: round(best[k] / U[..., 0].size, 3) for k in names},
        "profiles in first 48 arrivals": int(len(set(first48))),
        "arrivals per profile (first 48)": float(len(first48) / max(len(set(first48)), 1)),
        "click scale beta": float(world.attrs["beta"]),
    }


def format_side_by_side(a: dict, b: dict | None, name_a: str, name_b: str = "sample") -> str:
    """Markdown table of two `world_figures` dicts side by side (`b` may be None: shown as -)."""
    keys = [k for k in a if k != "best persona share"]
    lines = [f"| figure | {cell(name_a)} | {cell(name_b)} |", "|---|---|---|"]
    fmt = lambda v: "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
    for k in keys:
        lines.append(f"| {k} | {fmt(a[k])} | {fmt(b.get(k) if b else None)} |")
    for p, v in a["best persona share"].items():
        lines.append(f"| best persona: {cell(p)} | {v:.3f} | {fmt(b['best persona share'].get(p) if b else None)} |")
    return "\n".join(lines)
