"""Point estimates of a user's (or a cluster's) theta used by the frequentist competitors.

`ridge_logistic`: argmin_theta sum_t [log(1 + e^{eta_t}) - y_t eta_t] + lam/2 ||theta||^2,
eta_t = theta . z_t, by the kernels' Laplace Newton with backtracking from a warm start (the previous
estimate: one click changes it little, so a few steps suffice). `ridge_least_squares`: the linear
regression of the centred outcome 2y - 1 on z with the same ridge, from sufficient statistics.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from inference.constants import RIDGE_LOGISTIC_ITERS, RIDGE_LOGISTIC_TOL
from inference.kernels.ridge_logistic import ridge_logistic_mode
from inference.kernels.linalg import ridge_solve
from tdmodels.errors import InputError


def ridge_logistic(Z: np.ndarray, y: np.ndarray, lam: float, init: np.ndarray | None = None,
                   iters: int = RIDGE_LOGISTIC_ITERS, tol: float = RIDGE_LOGISTIC_TOL) -> np.ndarray:
    """Ridge-regularised logistic MLE.

    Parameters
    ----------
    Z : array [n, d]
        Design rows.
    y : array [n]
        Outcomes in {0, 1}.
    lam : float
        Ridge, > 0.
    init : array [d], optional
        Newton's starting point (zeros).
    iters, tol
        At most `iters` Newton steps; it stops at a step under `tol` (in every coordinate). An
        estimate that has not reached `tol` in `iters` steps is returned as it stands (COLDB caps its
        pooled fit this way).

    Returns
    -------
    array [d]
        The mode of N(0, I / lam) x the logistic likelihood: the compiled Laplace Newton
        (``inference.kernels.laplace.newton_mode``, its backtracking shared with every kernel solver).
    """
    Z = np.ascontiguousarray(Z, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    if Z.ndim != 2 or y.shape != Z.shape[:1]:
        raise InputError(f"ridge_logistic: Z [n, d] and y [n] are required, got shapes {Z.shape} and {y.shape}")
    if not (math.isfinite(lam) and lam > 0):
        raise InputError(f"ridge_logistic: lam must be a finite number > 0, got {lam!r}")
    whole = isinstance(iters, (int, np.integer)) and not isinstance(iters, bool)
    if not (whole and iters >= 1 and math.isfinite(tol) and tol > 0):
        raise InputError(f"ridge_logistic: iters must be an integer >= 1 and tol a finite number > 0, "
                         f"got {iters!r}, {tol!r}")
    d = Z.shape[1]
    theta = np.zeros(d) if init is None else np.array(init, dtype=float)
    if theta.shape != (d,):
        raise InputError(f"ridge_logistic: init must have shape ({d},), got {theta.shape}")
    if not (np.isfinite(Z).all() and np.isfinite(theta).all() and ((y == 0.0) | (y == 1.0)).all()):
        raise InputError("ridge_logistic: Z and init must be finite and y in {0, 1}")
    if len(Z) == 0:
        return np.zeros(d)
    return ridge_logistic_mode(Z, y, float(lam), theta, int(iters), float(tol))[0]


def ridge_least_squares(gram: np.ndarray, moment: np.ndarray, lam: float) -> np.ndarray:
    """(lam I + sum z z^T)^{-1} sum z (2y - 1), from gram = sum z z^T [d, d] and moment = sum z (2y - 1) [d], by
    Cholesky (the compiled ``inference.kernels.linalg.ridge_solve``, which COLDB-LR runs)."""
    gram, moment = np.asarray(gram, dtype=float), np.asarray(moment, dtype=float)
    d = moment.shape[0] if moment.ndim == 1 else -1
    if gram.shape != (d, d) or not (np.isfinite(gram).all() and np.isfinite(moment).all()):
        raise InputError(f"ridge_least_squares: gram [d, d] and moment [d] finite, got {gram.shape} and {moment.shape}")
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not (0 < lam < math.inf):
        raise InputError(f"ridge_least_squares: lam must be a finite number > 0, got {lam!r}")
    return ridge_solve(np.ascontiguousarray(gram), np.ascontiguousarray(moment), float(lam))
