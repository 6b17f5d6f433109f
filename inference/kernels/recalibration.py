"""Kernel of the recalibration fit (twin of ``inference.recalibration_fit``)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from inference.kernels.line_search import backtrack, objective
from inference.kernels.linalg import _chol_solve, _cholesky
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def _recal_objective(w, off, idx, val, y, pen, target, eta, ex):
    """Penalised negative log likelihood at w; fills eta [n] and ex [n] = exp(-|eta|)."""
    f = 0.0
    for k in range(w.shape[0]):
        f += 0.5 * pen[k] * (w[k] - target[k]) ** 2
    for u in range(off.shape[0]):
        e = off[u]
        for k in range(idx.shape[1]):
            e += val[u, k] * w[idx[u, k]]
        eta[u] = e
        x = math.exp(-abs(e))
        ex[u] = x
        f += max(e, 0.0) + math.log1p(x) - y[u] * e
    return f


class RecalibrationLoss(NamedTuple):
    """The recalibration map's penalised negative log likelihood, as the line search evaluates it."""
    off: np.ndarray          # [n] each click's offset theta_first - theta_second
    idx: np.ndarray          # [n, nz] where each click's Jacobian row is nonzero
    val: np.ndarray          # [n, nz] its values there
    y: np.ndarray            # [n] clicks
    pen: np.ndarray          # [D] the ridge on each parameter
    target: np.ndarray       # [D] where the ridge pulls (a = 1, A' = 0)
    eta: np.ndarray          # [n] work: each click's logit at the point evaluated
    ex: np.ndarray           # [n] work: exp(-|eta|)


@overload(objective)
def _recalibration_objective(problem, x):
    if getattr(problem, "instance_class", None) is RecalibrationLoss:
        return lambda problem, x: _recal_objective(x, problem.off, problem.idx, problem.val, problem.y, problem.pen,
                                                   problem.target, problem.eta, problem.ex)
    return None


@njit(cache=CACHE)
def recalibration_newton(first, second, rater, theta, y, ridge, ridge_a, w0, iters=50, tol=1e-10):
    """MAP of w = (a, vec A') as ``inference.recalibration_fit.fit_recalibration_map``, from w0.

    first, second [n] int, rater [n, K], theta [n, K + 1], y [n]. Each click's Jacobian row
    has 2K + 1 nonzeros (a, and rows first and second of A'), which this loop exploits.
    Returns (w [1 + K*K], iterations; -1 when Newton did not converge).
    """
    n, K = rater.shape
    D = 1 + K * K
    nz = 2 * K + 1
    w = w0.copy()
    pen = np.full(D, ridge)
    pen[0] = ridge_a
    target = np.zeros(D)
    target[0] = 1.0
    idx = np.empty((n, nz), dtype=np.int64)
    val = np.empty((n, nz))
    off = np.empty(n)
    for u in range(n):
        i, j = first[u], second[u]
        wk = theta[u, K]
        off[u] = theta[u, i] - theta[u, j]
        idx[u, 0] = 0
        val[u, 0] = wk * (rater[u, i] - rater[u, j])
        for q in range(K):
            idx[u, 1 + q] = 1 + i * K + q
            val[u, 1 + q] = wk * rater[u, q]
            idx[u, 1 + K + q] = 1 + j * K + q
            val[u, 1 + K + q] = -wk * rater[u, q]
    H = np.empty((D, D))
    L = np.empty((D, D))
    grad = np.empty(D)
    step = np.empty(D)
    trial = np.empty(D)
    eta, ex = np.empty(n), np.empty(n)
    eta_t, ex_t = np.empty(n), np.empty(n)
    f = _recal_objective(w, off, idx, val, y, pen, target, eta, ex)
    at_trial = RecalibrationLoss(off, idx, val, y, pen, target, eta_t, ex_t)
    for it in range(1, iters + 1):
        for k in range(D):
            grad[k] = pen[k] * (w[k] - target[k])
            for l in range(D):
                H[k, l] = 0.0
            H[k, k] = pen[k]
        for u in range(n):
            x = ex[u]
            p = 1.0 / (1.0 + x) if eta[u] >= 0 else x / (1.0 + x)
            r = p - y[u]
            v = x / ((1.0 + x) * (1.0 + x))
            for k in range(nz):
                a = idx[u, k]
                grad[a] += val[u, k] * r
                vk = v * val[u, k]
                for l in range(nz):
                    H[a, idx[u, l]] += vk * val[u, l]
        if not _cholesky(H, L):
            return w, -1
        _chol_solve(L, grad, step)
        for k in range(D):                  # grad is the loss's gradient here: descend
            step[k] = -step[k]
        f_new, tt = backtrack(at_trial, w, step, f, trial)
        big = 0.0
        for k in range(D):
            big = max(big, abs(tt * step[k]))
            w[k] = trial[k]
        for k in range(eta.shape[0]):
            eta[k] = eta_t[k]
            ex[k] = ex_t[k]
        f = f_new
        if big < tol:
            return w, it
    return w, -1
