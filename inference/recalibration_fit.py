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

from tdmodels.population_model import RIDGE

RIDGE_A = 1e-3


class Recalibration(NamedTuple):
    """A point fit of the rater recalibration A = a I + A_dev, with the Newton iterations it took."""
    a: float
    A_dev: np.ndarray        # [K, K]
    iterations: int

    @property
    def A(self) -> np.ndarray:
        return self.a * np.eye(len(self.A_dev)) + self.A_dev


def _design(first, second, rater, theta):
    """Offsets [n] (persona part of the logit) and the Jacobian [n, 1 + K*K] in (a, vec A')."""
    K = rater.shape[-1]
    n = first.shape[0]
    ind = np.eye(K)[first] - np.eye(K)[second]                    # [n, K]
    offset = np.sum(theta[:, :K] * ind, -1)
    w = theta[:, K]
    g_diff = rater[np.arange(n), first] - rater[np.arange(n), second]
    J_a = w * g_diff
    J_dev = (w[:, None, None] * ind[:, :, None] * rater[:, None, :]).reshape(n, K * K)
    return offset, np.concatenate([J_a[:, None], J_dev], 1)


def fit_recalibration_map(first, second, rater, theta, y, ridge: float = RIDGE, ridge_a: float = RIDGE_A,
                          iters: int = 50, tol: float = 1e-10, init: np.ndarray | None = None) -> Recalibration:
    """MAP (a, A') from clicks. first, second [n] persona indices; rater [n, K] the question's g for
    every persona; theta [n, K + 1] the clicking user's weights; y [n] in {0, 1}; init [1 + K*K]
    a starting (a, vec A') for Newton (default a = 1, A' = 0)."""
    first, second = np.asarray(first).ravel(), np.asarray(second).ravel()
    K = rater.shape[-1]
    rater = np.asarray(rater, dtype=float).reshape(-1, K)
    theta = np.asarray(theta, dtype=float).reshape(-1, K + 1)
    y = np.asarray(y, dtype=float).ravel()
    offset, J = _design(first, second, rater, theta)
    pen = np.concatenate([[ridge_a], np.full(K * K, ridge)])
    target = np.concatenate([[1.0], np.zeros(K * K)])
    w = target.copy() if init is None else np.array(init, dtype=float)

    def objective(w):
        eta = offset + J @ w
        return np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * np.sum(pen * (w - target) ** 2)

    f = objective(w)
    for it in range(1, iters + 1):
        p = 1.0 / (1.0 + np.exp(-(offset + J @ w)))
        grad = J.T @ (p - y) + pen * (w - target)
        H = J.T @ (J * (p * (1 - p))[:, None]) + np.diag(pen)
        step = np.linalg.solve(H, grad)
        t = 1.0
        while objective(w - t * step) > f + 1e-10 * (1.0 + abs(f)) and t > 1e-10:
            t *= 0.5
        w = w - t * step
        f = objective(w)
        if np.max(np.abs(t * step)) < tol:
            return Recalibration(float(w[0]), w[1:].reshape(K, K), it)
    raise RuntimeError(f"recalibration fit: Newton did not converge in {iters} iterations")
