"""Where the variation of the utilities lies: a sequential decomposition over a schedule's cells.

Each scheduled (arrival, round) cell gives the question's utilities U[K], centred over the personas
(what a pair's regret depends on). Their sum of squares over the cells is split, by least squares per
persona with nested designs, into

1. the persona main effect (one mean per persona: what one pair for everyone can use);
2. profile x persona (each student profile's own mean: what a per-user best pair can use);
3. kind and cue, shared (question kind and cue effects per persona, the same for every profile:
   what a rater feature read by everyone can carry);
4. profile x kind and cue (each profile's own response to kind and cue);
5. the residual (question-level variation none of the above explains).

The shares depend on how many cells each profile has (a design fitted to few cells explains more of
them by chance), so a simulated roster is compared with the real sample on the same number of
arrivals. In the real sample the shares are about 10 / 51 / 5 / 8 / 25%.
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from online.schedule import make_schedule, session_utilities
from tdmodels.run_inputs import checked_arrivals, checked_seed, checked_world

PARTS = ("persona main effect", "profile x persona", "kind and cue (shared)", "profile x kind and cue", "residual")


def _dummies(labels: np.ndarray) -> np.ndarray:
    """[n, levels] indicator columns of `labels` [n]."""
    _, inverse = np.unique(labels, return_inverse=True)
    out = np.zeros((len(labels), int(inverse.max()) + 1))
    out[np.arange(len(labels)), inverse] = 1.0
    return out


def _explained(design: np.ndarray, X: np.ndarray) -> float:
    """Sum of squares of the least-squares fit of every column of X [n, K] on `design` [n, m]."""
    coef, *_ = np.linalg.lstsq(design, X, rcond=None)
    return float(np.sum(np.square(design @ coef)))


def decompose(U: np.ndarray, profile: np.ndarray, kind: np.ndarray, cue: np.ndarray) -> dict[str, float]:
    """The shares (summing to 1) of the five parts of `PARTS` for cells with utilities U [n, K] and labels
    profile, kind and cue [n]."""
    X = np.asarray(U, dtype=float)
    X = X - X.mean(1, keepdims=True)
    total = float(np.sum(X * X))
    if total == 0:
        return {p: float("nan") for p in PARTS}
    P, Kd, Cd = _dummies(profile), _dummies(kind), _dummies(cue)
    inter = np.concatenate([P[:, :, None] * Kd[:, None, :], P[:, :, None] * Cd[:, None, :]], axis=2)
    designs = [np.ones((len(X), 1)), P, np.concatenate([P, Kd, Cd], 1),
               np.concatenate([P, Kd, Cd, inter.reshape(len(X), -1)], 1)]
    fitted = [_explained(d, X) for d in designs]
    parts = [fitted[0], fitted[1] - fitted[0], fitted[2] - fitted[1], fitted[3] - fitted[2], total - fitted[3]]
    return {name: max(v, 0.0) / total for name, v in zip(PARTS, parts)}


def variance_shares(world: xr.Dataset, seed: int = 0, arrivals: int | None = None) -> dict[str, float]:
    """`decompose` over the cells of one seed's schedule of `world` (its first `arrivals` arrivals)."""
    world, seed, arrivals = checked_world(world), checked_seed(seed), checked_arrivals(arrivals)
    sched = make_schedule(world, seed, arrivals)
    U = session_utilities(world, sched)
    n, S, K = U.shape
    profile = np.asarray(world["student_profile"].values).astype(str)[sched.student]
    kind = np.asarray(world["question_kind"].values).astype(str)[sched.question]
    cue = np.asarray(world["question_cue"].values)[sched.question]
    return decompose(U.reshape(n * S, K), np.repeat(profile, S), kind.ravel(), cue.ravel())


__all__ = ["PARTS", "decompose", "variance_shares"]
