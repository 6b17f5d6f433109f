"""PrefAlign and NormAlign for the simulated PrefDisco world (``tdmodels.prefdisco_world``).

    PrefAlign(r; p, i) = sum_{j in F(i)} w_j g_j(r, v_j),   g_j(r, v) = 1 - |s_rj - v|

Conditions: baseline (no user information: the response with the largest PrefAlign averaged
over the world's other personas for that task, i.e. the Bayes answer under the population,
leaving the user out),
oracle (the response with the largest PrefAlign under the true profile), and discovery (the
response a policy picks after asking). NormAlign = 100 (discovery - baseline) /
(oracle - baseline) per scenario; scenarios where the oracle beats the baseline by less than
`eps` = 0.01 PrefAlign have no NormAlign (NaN) and are counted apart: below that the ratio is
noise (with eps = 1e-9, ask-random's mean NormAlign over 8 worlds was -99 +- 189).
"""
from __future__ import annotations

import numpy as np
import xarray as xr

EPS = 0.01


def pref_align(world: xr.Dataset, persona: int, task: int) -> np.ndarray:
    """PrefAlign [R] of every candidate response of `task` under persona's true profile."""
    w = world["weights"].values[persona, task]
    v = world["values"].values[persona, task]
    s = world["styles"].values[task]
    rel = world["relevant"].values[task]
    g = 1.0 - np.abs(s[:, rel] - v[rel])
    return g @ w[rel]


def expected_align(world: xr.Dataset, persona: int, task: int, answers: dict | None = None) -> np.ndarray:
    """Expected PrefAlign [R] of every response of `task` for `persona`, knowing only `answers`
    ({attribute index: stated value}) and the other personas' profiles of this task: an answered
    attribute counts with its stated value and the others' mean weight; the rest with the others'
    mean of w_j g_j(r, v_j)."""
    answers = answers or {}
    others = np.arange(world.sizes["persona"]) != persona
    rel = world["relevant"].values[task]
    W = world["weights"].values[others, task]            # [P - 1, A]
    V = world["values"].values[others, task]
    S = world["styles"].values[task]                      # [R, A]
    asked = np.zeros_like(rel)
    asked[list(answers)] = True
    free = rel & ~asked
    grades = 1.0 - np.abs(S[None][:, :, free] - V[:, None, free])     # [P - 1, R, free]
    out = np.einsum("pra,pa->r", grades, W[:, free]) / W.shape[0]
    for j, v in answers.items():
        out = out + W[:, j].mean() * (1.0 - np.abs(S[:, j] - v))
    return out


def baseline_response(world: xr.Dataset, persona: int, task: int) -> int:
    """The answer with no user information (the population's Bayes answer, the user left out)."""
    return int(np.argmax(expected_align(world, persona, task)))


def norm_align(discovery: float, baseline: float, oracle: float, eps: float = EPS) -> float:
    """100 (discovery - baseline) / (oracle - baseline); NaN when the oracle does not beat the baseline."""
    gap = oracle - baseline
    return float(100.0 * (discovery - baseline) / gap) if gap > eps else float("nan")


def scenario_scores(world: xr.Dataset, persona: int, task: int, response: int) -> dict:
    """Baseline, oracle and discovery PrefAlign and NormAlign of one (persona, task) when a policy answers `response`."""
    align = pref_align(world, persona, task)
    base, orc, disc = float(align[baseline_response(world, persona, task)]), float(align.max()), float(align[response])
    return {"baseline": base, "oracle": orc, "discovery": disc, "norm_align": norm_align(disc, base, orc)}
