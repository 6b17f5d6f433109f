"""Point fit of the rater recalibration A = a I + A' by ridge logistic regression, users' theta held fixed.

With every user's weights theta_u fixed (e.g. at posterior means), the click logit

    theta_u[:K] . (e_i - e_j) + theta_u[K] ((A g)_i - (A g)_j)

is linear in (a, A'), so fitting A on all choices of completed sessions is a convex
logistic regression: Newton's method, penalty ridge/2 ||A'||_F^2 (ridge 10 in CODuel) and
a weak pull ridge_a/2 (a - 1)^2 so that a stays identified when no user weighs the rater.
The same objective is the negative log posterior of ``tdmodels.population_model.
recalibration`` with theta fixed, up to the prior on a.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.kernels.recalibration import recalibration_newton
from tdmodels.errors import InputError
from tdmodels.population_hyper import RIDGE

RIDGE_A = 1e-3


class Recalibration(NamedTuple):
    """A point fit of the rater recalibration A = a I + A_dev, with the Newton iterations it took."""
    a: float
    A_dev: np.ndarray        # [K, K]
    iterations: int

    @property
    def A(self) -> np.ndarray:
        return self.a * np.eye(len(self.A_dev)) + self.A_dev


def fit_recalibration_map(first, second, rater, theta, y, ridge: float = RIDGE, ridge_a: float = RIDGE_A,
                          iters: int = 50, tol: float = 1e-10, init: np.ndarray | None = None) -> Recalibration:
    """MAP (a, A') from clicks. first, second [n] persona indices; rater [n, K] the question's g for
    every persona; theta [n, K + 1] the clicking user's weights; y [n] in {0, 1}; init [1 + K*K]
    a starting (a, vec A') for Newton (default a = 1, A' = 0). Newton with backtracking in the compiled
    ``inference.kernels.recalibration_newton``; RuntimeError if it does not converge in `iters`."""
    first = np.ascontiguousarray(np.asarray(first).ravel(), dtype=np.int64)
    second = np.ascontiguousarray(np.asarray(second).ravel(), dtype=np.int64)
    K = rater.shape[-1]
    rater = np.ascontiguousarray(np.asarray(rater, dtype=float).reshape(-1, K))
    theta = np.ascontiguousarray(np.asarray(theta, dtype=float).reshape(-1, K + 1))
    y = np.ascontiguousarray(np.asarray(y, dtype=float).ravel())
    w0 = np.r_[1.0, np.zeros(K * K)] if init is None else np.array(init, dtype=float).ravel()
    n = len(first)
    if not (len(second) == len(rater) == len(theta) == len(y) == n):
        raise InputError(f"recalibration fit: first, second, rater, theta and y must have one row per click, got "
                         f"{len(first)}, {len(second)}, {len(rater)}, {len(theta)}, {len(y)}")
    if n and not (0 <= min(first.min(), second.min()) and max(first.max(), second.max()) < K):
        raise InputError(f"recalibration fit: persona indices must lie in 0..{K - 1}")
    if w0.shape != (1 + K * K,):
        raise InputError(f"recalibration fit: init must have {1 + K * K} entries, got {w0.shape}")
    if not all(np.isfinite(a).all() for a in (rater, theta, y, w0)):
        raise InputError("recalibration fit: non-finite input")
    w, it = recalibration_newton(first, second, rater, theta, y, float(ridge), float(ridge_a), w0, iters, tol)
    if it < 0:
        raise RuntimeError(f"recalibration fit: Newton did not converge in {iters} iterations")
    return Recalibration(float(w[0]), w[1:].reshape(K, K), int(it))
