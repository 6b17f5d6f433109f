"""Strong regret and the benchmark score.

For one question with reference utilities U [K] (U* = max U):
- strong regret of showing (i, j): r = (U* - U_i) + (U* - U_j);
- the floor G: the best distinct pair's regret, U* - U_second;
- random pairs: the exact mean of r over the K(K-1)/2 distinct pairs, 2 U* - 2 mean(U);
- score = 100 (R_rand - R) / (R_rand - G), with all three summed over a whole run.
All functions broadcast over leading axes.
"""
from __future__ import annotations

import numpy as np


def strong_regret(U: np.ndarray, i, j) -> np.ndarray:
    """r = (U* - U_i) + (U* - U_j); U [..., K], i and j index arrays broadcasting with U[..., 0]."""
    U = np.asarray(U, dtype=float)
    K = U.shape[-1]
    i, j = np.asarray(i), np.asarray(j)
    for name, a in (("i", i), ("j", j)):
        if a.dtype.kind not in "iu" or a.size and (a.min() < 0 or a.max() >= K):
            raise ValueError(f"strong_regret: persona indices {name} must be integers in [0, {K}), got {a!r}")
    top = U.max(axis=-1)
    Ui = np.take_along_axis(U, i[..., None], axis=-1)[..., 0]
    Uj = np.take_along_axis(U, j[..., None], axis=-1)[..., 0]
    return 2.0 * top - Ui - Uj


def floor_regret(U: np.ndarray) -> np.ndarray:
    """G per question: U* - U_second (what the best distinct pair pays)."""
    s = np.sort(np.asarray(U, dtype=float), axis=-1)
    return s[..., -1] - s[..., -2]


def random_regret(U: np.ndarray) -> np.ndarray:
    """Exact expected regret of a uniformly random distinct pair: 2 U* - 2 mean(U)."""
    U = np.asarray(U, dtype=float)
    return 2.0 * U.max(axis=-1) - 2.0 * U.mean(axis=-1)


def pair_regrets(U: np.ndarray) -> np.ndarray:
    """Regret of every ordered pair [..., K, K] (diagonal is the regret of showing i twice)."""
    U = np.asarray(U, dtype=float)
    top = U.max(axis=-1)[..., None, None]
    return 2.0 * top - U[..., :, None] - U[..., None, :]


def benchmark_score(R, G, R_rand):
    """100 (R_rand - R) / (R_rand - G): 0 for random pairs, 100 at the floor. Defined where R_rand > G and
    R >= G (regret is never below the floor); the formula is applied as it is, so callers check the
    domain (``online.verify`` names an undefined score, ``diagnostics.segments.masked_score`` gives NaN)."""
    R, G, R_rand = (np.asarray(x, dtype=float) for x in (R, G, R_rand))
    return 100.0 * (R_rand - R) / (R_rand - G)
