"""Point estimates of a user's (or a cluster's) theta used by the frequentist competitors.

`ridge_logistic`: argmin_theta sum_t [log(1 + e^{eta_t}) - y_t eta_t] + lam/2 ||theta||^2,
eta_t = theta . z_t, by Newton with backtracking from a warm start (the previous estimate:
one click changes it little, so a few steps suffice). `ridge_least_squares`: the linear
regression of the centred outcome 2y - 1 on z with the same ridge, from sufficient statistics.
"""
from __future__ import annotations

import numpy as np


def _objective(theta, Z, y, lam):
    eta = Z @ theta
    return float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * lam * theta @ theta)


def ridge_logistic(Z: np.ndarray, y: np.ndarray, lam: float, init: np.ndarray | None = None,
                   iters: int = 25, tol: float = 1e-8) -> np.ndarray:
    """Ridge-regularised logistic MLE [d] from rows Z [n, d] and outcomes y [n] in {0, 1}."""
    d = Z.shape[1]
    theta = np.zeros(d) if init is None else np.array(init, dtype=float)
    if len(Z) == 0:
        return np.zeros(d)
    ridge = lam * np.eye(d)
    f = _objective(theta, Z, y, lam)
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(Z @ theta)))
        grad = Z.T @ (p - y) + lam * theta
        H = Z.T @ (Z * (p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(H, grad)
        t = 1.0
        while True:                    # halve while the objective rises; f ends at the accepted point
            trial = theta - t * step
            f_trial = _objective(trial, Z, y, lam)
            if not (f_trial > f + 1e-12 * (1.0 + abs(f)) and t > 1e-8):
                break
            t *= 0.5
        theta, f = trial, f_trial
        if np.max(np.abs(t * step)) < tol:
            break
    return theta


def ridge_least_squares(gram: np.ndarray, moment: np.ndarray, lam: float) -> np.ndarray:
    """(lam I + sum z z^T)^{-1} sum z (2y - 1), from gram = sum z z^T [d, d] and moment = sum z (2y - 1) [d]."""
    return np.linalg.solve(gram + lam * np.eye(len(moment)), moment)
