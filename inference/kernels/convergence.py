"""Kernels of ``inference.convergence``: average ranks and Geyer's truncation of the autocorrelations,
one row (one scalar quantity) at a time.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE, parallel=True)
def average_ranks(x, out):
    """out[e] = the ranks (1-based, ties sharing their average) of the values x[e] [E, N]."""
    E, N = x.shape
    for e in prange(E):
        row = x[e]
        order = np.argsort(row, kind="mergesort")
        i = 0
        while i < N:
            j = i
            while j + 1 < N and row[order[j + 1]] == row[order[i]]:
                j += 1
            r = 0.5 * (i + j) + 1.0
            for k in range(i, j + 1):
                out[e, order[k]] = r
            i = j + 1


@njit(cache=CACHE)
def _geyer_tau(rho, n_total):
    """The integrated autocorrelation time from one row's autocorrelations rho [M] (rho[0] = 1), truncated
    by Geyer's initial positive sequence and made monotone; at least 1 / log10(n_total)."""
    M = rho.shape[0]
    t_rho = np.zeros(M)
    t_rho[0] = 1.0
    even, odd = 1.0, rho[1]
    t_rho[1] = odd
    t = 1
    while t < M - 3 and even + odd > 0.0:
        even, odd = rho[t + 1], rho[t + 2]
        if even + odd >= 0.0:
            t_rho[t + 1], t_rho[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0.0:
        t_rho[max_t + 1] = even
    t = 1
    while t <= max_t - 2:
        if t_rho[t + 1] + t_rho[t + 2] > t_rho[t - 1] + t_rho[t]:
            t_rho[t + 1] = 0.5 * (t_rho[t - 1] + t_rho[t])
            t_rho[t + 2] = t_rho[t + 1]
        t += 2
    tau = -1.0
    for k in range(max_t + 1):
        tau += 2.0 * t_rho[k]
    if max_t + 1 < M:
        tau += t_rho[max_t + 1]
    return max(tau, 1.0 / math.log10(n_total))


@njit(cache=CACHE)
def geyer_ess(rho, n_chains):
    """ESS [E] of rows whose autocorrelations pooled over chains are rho [E, M] (M draws a chain)."""
    E, M = rho.shape
    out = np.empty(E)
    for e in range(E):
        out[e] = n_chains * M / _geyer_tau(rho[e], n_chains * M)
    return out
