"""PrefAlign and NormAlign for the simulated PrefDisco world (``tdmodels.prefdisco_world``).

    PrefAlign(r; p, i) = sum_{j in F(i)} w_j g_j(r, v_j),   g_j(r, v) = 1 - |s_rj - v|

Conditions: baseline (no user information: the response with the largest PrefAlign averaged
over the world's personas for that task, i.e. the Bayes answer under the population),
oracle (the response with the largest PrefAlign under the true profile), and discovery (the
response a policy picks after asking). NormAlign = 100 (discovery - baseline) /
(oracle - baseline) per scenario; scenarios where the oracle is no better than the baseline
(denominator below `eps`) have no NormAlign (NaN) and are counted apart.
"""
from __future__ import annotations

import numpy as np
import xarray as xr

EPS = 1e-9


def pref_align(world: xr.Dataset, persona: int, task: int) -> np.ndarray:
    """PrefAlign [R] of every candidate response of `task` under persona's true profile."""
    w = world["weights"].values[persona, task]
    v = world["values"].values[persona, task]
    s = world["styles"].values[task]
    rel = world["relevant"].values[task]
    g = 1.0 - np.abs(s[:, rel] - v[rel])
    return g @ w[rel]


def population_align(world: xr.Dataset, task: int) -> np.ndarray:
    """PrefAlign [R] of every response of `task` averaged over the world's personas."""
    return np.mean([pref_align(world, p, task) for p in range(world.sizes["persona"])], 0)


def baseline_response(world: xr.Dataset, task: int) -> int:
    return int(np.argmax(population_align(world, task)))


def norm_align(discovery: float, baseline: float, oracle: float, eps: float = EPS) -> float:
    """100 (discovery - baseline) / (oracle - baseline); NaN when the oracle does not beat the baseline."""
    gap = oracle - baseline
    return float(100.0 * (discovery - baseline) / gap) if gap > eps else float("nan")


def scenario_scores(world: xr.Dataset, persona: int, task: int, response: int) -> dict:
    """Baseline, oracle and discovery PrefAlign and NormAlign of one (persona, task) when a policy answers `response`."""
    align = pref_align(world, persona, task)
    base, orc, disc = float(align[baseline_response(world, task)]), float(align.max()), float(align[response])
    return {"baseline": base, "oracle": orc, "discovery": disc, "norm_align": norm_align(disc, base, orc)}
