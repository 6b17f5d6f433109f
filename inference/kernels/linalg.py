"""Small dense linear algebra for d x d symmetric positive definite matrices (d = 7 here):
hand-written Cholesky beats LAPACK calls at this size."""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def _cholesky(A, L):
    """Lower Cholesky factor of A into L; False if A is not positive definite (or holds a NaN where it is read)."""
    d = A.shape[0]
    for i in range(d):
        for j in range(i + 1):
            acc = A[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                if not acc > 0.0:              # NaN too: a NaN matrix has no factor
                    return False
                L[i, i] = math.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
        for j in range(i + 1, d):
            L[i, j] = 0.0
    return True


@njit(cache=CACHE)
def _chol_solve(L, b, out):
    d = L.shape[0]
    for i in range(d):
        acc = b[i]
        for k in range(i):
            acc -= L[i, k] * out[k]
        out[i] = acc / L[i, i]
    for i in range(d - 1, -1, -1):
        acc = out[i]
        for k in range(i + 1, d):
            acc -= L[k, i] * out[k]
        out[i] = acc / L[i, i]


@njit(cache=CACHE)
def _inverse_from_chol(L, out, e, col):
    d = L.shape[0]
    for i in range(d):
        e[:] = 0.0
        e[i] = 1.0
        _chol_solve(L, e, col)
        for j in range(d):
            out[j, i] = col[j]


@njit(cache=CACHE)
def spd_factors(mats):
    """Inverses [B, d, d] and log determinants [B] of symmetric positive definite mats [B, d, d]
    (NaN where a matrix is not positive definite)."""
    B, d, _ = mats.shape
    inv = np.empty((B, d, d))
    logdet = np.empty(B)
    L = np.empty((d, d))
    e, col = np.empty(d), np.empty(d)
    for b in range(B):
        if not _cholesky(mats[b], L):
            inv[b] = np.nan
            logdet[b] = np.nan
            continue
        acc = 0.0
        for i in range(d):
            acc += 2.0 * math.log(L[i, i])
        _inverse_from_chol(L, inv[b], e, col)
        logdet[b] = acc
    return inv, logdet


@njit(cache=CACHE)
def spd_logdet_quad(mats, vecs):
    """Log determinants [B] of symmetric positive definite mats [B, d, d] and the quadratic forms v' M^-1 v [B] of
    vecs [B, d] (NaN where a matrix is not positive definite): one Cholesky each, no inverse."""
    B, d, _ = mats.shape
    logdet, quad = np.empty(B), np.empty(B)
    L, z = np.empty((d, d)), np.empty(d)
    for b in range(B):
        if not _cholesky(mats[b], L):
            logdet[b] = np.nan
            quad[b] = np.nan
            continue
        acc_det, acc_quad = 0.0, 0.0
        for i in range(d):
            acc = vecs[b, i]
            for k in range(i):
                acc -= L[i, k] * z[k]
            z[i] = acc / L[i, i]
            acc_det += math.log(L[i, i])
            acc_quad += z[i] * z[i]
        logdet[b] = 2.0 * acc_det
        quad[b] = acc_quad
    return logdet, quad


@njit(cache=CACHE)
def whitened_sq_norm(L, x, loc, w):
    """||L^-1 (x - loc)||^2, the squared Mahalanobis distance under L L' (L lower triangular [d, d]);
    writes w = L^-1 (x - loc) [d]."""
    d = L.shape[0]
    for i in range(d):
        acc = x[i] - loc[i]
        for j in range(i):
            acc -= L[i, j] * w[j]
        w[i] = acc / L[i, i]
    q = 0.0
    for i in range(d):
        q += w[i] * w[i]
    return q


@njit(cache=CACHE)
def ridge_solve(gram, moment, lam):
    """(gram + lam I)^{-1} moment for gram [d, d] positive semi-definite and lam > 0, by Cholesky (the ridge
    least squares estimate from sufficient statistics)."""
    d = moment.shape[0]
    A = gram.copy()
    for i in range(d):
        A[i, i] += lam
    L = np.empty((d, d))
    if not _cholesky(A, L):
        raise ValueError("ridge_solve: gram + lam I is not positive definite")
    out = np.empty(d)
    _chol_solve(L, moment, out)
    return out
