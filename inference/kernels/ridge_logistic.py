"""The competitors' ridge logistic estimate (``inference.estimators.ridge_logistic``, CoLSTIM, COLDB): Newton
with backtracking to the mode of N(0, I / lam) x the clicks' likelihood, each point's objective, gradient and
Hessian in one pass over the rows.

The arithmetic is ``inference.kernels.laplace.newton_mode``'s, in the same order, fused: the line search's
objective at a trial point also accumulates the gradient and the Hessian there, which the next Newton step
reads once the trial is accepted; and, at a tolerance of at most SHORTCUT_TOL, a Newton step already under it
in every coordinate is taken whole without the search (the search accepts the whole of such a step: along a
Newton step that short the objective cannot rise by the search's tolerance). The estimates are newton_mode's
(tested bit for bit, at tolerances from 1e-12 to 30), in three passes over the
rows where it made seven (a warm-started refit typically takes three steps, the last under `tol`). COLDB's
refits within a session step under the Hessian this kernel returns (``coldb_kernels.cluster_fit``). The NumPy
statement is the oracle ``inference.reference.ridge_logistic_reference``.
"""
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

SHORTCUT_TOL = 1e-8      # the largest tolerance at which a step under it is taken without the line search: along a
                         # Newton step s that short the objective changes by -s'Hs/2 + O(|s|^3), far inside the
                         # search's allowance of 1e-10 (1 + |f|) for rounding (at tol = 20 it was not: a test)


class RidgeLogistic(NamedTuple):
    """The negative log posterior of rows Z under N(m, P^-1), as the line search evaluates it, with the work
    arrays its evaluation fills at the point evaluated."""
    Z: np.ndarray          # [n, d] designs
    y: np.ndarray          # [n] clicks
    m: np.ndarray          # [d] prior mean (0)
    P: np.ndarray          # [d, d] prior precision (lam I)
    eta: np.ndarray        # [n] work: Z x
    ex: np.ndarray         # [n] work: exp(-|eta|)
    grad: np.ndarray       # [d] work: the log posterior's gradient
    H: np.ndarray          # [d, d] work: the negative log posterior's Hessian


@njit(cache=CACHE)
def fused_pass(Z, y, theta, m, P, eta, ex, grad, H):
    """The negative log posterior at theta, filling eta, ex, the gradient of the log posterior and the Hessian
    of the negative one (lower triangle accumulated, then mirrored): ``laplace._objective`` and
    ``laplace._grad_hessian`` in one loop, each sum in their order."""
    n, d = Z.shape
    f = 0.0
    for i in range(d):
        ri = theta[i] - m[i]
        for j in range(d):
            f += 0.5 * ri * P[i, j] * (theta[j] - m[j])
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc -= P[i, j] * (theta[j] - m[j])
            H[i, j] = P[i, j]
        grad[i] = acc
    for t in range(n):
        e = 0.0
        for i in range(d):
            e += Z[t, i] * theta[i]
        eta[t] = e
        x = math.exp(-abs(e))
        ex[t] = x
        f += max(e, 0.0) + math.log1p(x) - y[t] * e
        p = 1.0 / (1.0 + x) if e >= 0 else x / (1.0 + x)
        w = x / ((1.0 + x) * (1.0 + x))
        r = y[t] - p
        for i in range(d):
            grad[i] += Z[t, i] * r
            wi = w * Z[t, i]
            for j in range(i + 1):
                H[i, j] += wi * Z[t, j]
    for i in range(d):
        for j in range(i + 1, d):
            H[i, j] = H[j, i]
    return f


@overload(objective)
def _ridge_logistic_objective(problem, x):
    if getattr(problem, "instance_class", None) is RidgeLogistic:
        return lambda problem, x: fused_pass(problem.Z, problem.y, x, problem.m, problem.P, problem.eta, problem.ex,
                                             problem.grad, problem.H)
    return None


@njit(cache=CACHE)
def ridge_logistic_mode(Z, y, lam, init, iters, tol):
    """The ridge logistic MLE of rows Z [n, d], clicks y [n] with ridge lam > 0, by Newton with backtracking from
    `init` [d], stopping at a step under `tol` in every coordinate or after `iters` steps. Returns (theta [d],
    converged, H [d, d]): H the negative log posterior's Hessian at the last point evaluated (theta, or the
    point one step under `tol` before it), which a later refit may keep (``coldb_kernels.cluster_fit``)."""
    n, d = Z.shape
    theta = init.copy()
    m = np.zeros(d)
    P = np.zeros((d, d))
    for i in range(d):
        P[i, i] = lam
    grad, H = np.empty(d), np.empty((d, d))
    L, step, trial = np.empty((d, d)), np.empty(d), np.empty(d)
    f = fused_pass(Z, y, theta, m, P, np.empty(n), np.empty(n), grad, H)
    at_trial = RidgeLogistic(Z, y, m, P, np.empty(n), np.empty(n), np.empty(d), np.empty((d, d)))
    for _ in range(iters):
        if not _cholesky(H, L):
            break
        _chol_solve(L, grad, step)
        big = 0.0
        for i in range(d):
            big = max(big, abs(step[i]))
        if big < tol and tol <= SHORTCUT_TOL:
            for i in range(d):
                theta[i] = theta[i] + step[i]
            return theta, True, H
        f, tt = backtrack(at_trial, theta, step, f, trial)
        big = 0.0
        for i in range(d):
            big = max(big, abs(tt * step[i]))
            theta[i] = trial[i]
            grad[i] = at_trial.grad[i]
            for j in range(d):
                H[i, j] = at_trial.H[i, j]
        if big < tol:
            return theta, True, H
    return theta, False, H
