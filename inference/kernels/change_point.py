"""The change-point view's closed forms (``inference.change_point``), compiled: the evidence of every run of
sessions as one new type, the sessions' evidence under a Gaussian mixture prior, and the run-length recursion.

Each is stated in plain NumPy in ``inference.reference`` and checked against it to rounding
(tests/inference/test_change_point.py). A matrix that should be positive definite and is not gives NaN; the
callers turn NaN into one named error.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.kernel_cache import disk_cache
from inference.kernels.linalg import _chol_solve, _cholesky, _inverse_from_chol

CACHE = disk_cache()


@njit(cache=CACHE)
def _logsumexp(x):
    m = -np.inf
    for v in x:
        if v > m:
            m = v
    if m == -np.inf:
        return m
    acc = 0.0
    for v in x:
        acc += math.exp(v - m)
    return m + math.log(acc)


@njit(cache=CACHE)
def _logsumexp_columns(a, n):
    """log sum exp of a[:, :n]."""
    m = -np.inf
    for c in range(a.shape[0]):
        for s in range(n):
            if a[c, s] > m:
                m = a[c, s]
    if m == -np.inf:
        return m
    acc = 0.0
    for c in range(a.shape[0]):
        for s in range(n):
            acc += math.exp(a[c, s] - m)
    return m + math.log(acc)


@njit(cache=CACHE)
def _type_terms_summed(lik_prec, lik_lin, lik_const, w, CJ, Ck, Ce):
    """Each session's likelihood of the type mean m once its theta ~ N(m, w I) is integrated out,
    e_u - m' J_u m / 2 + k_u' m, summed over sessions 0 .. u - 1 into CJ[u] [d, d], Ck[u] [d], Ce[u]
    (row 0 is zero); False if some Lam_u + I / w is not positive definite."""
    R, d = lik_lin.shape
    M, L, inv = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    e_vec, col, Bh = np.empty(d), np.empty(d), np.empty(d)
    for u in range(R):
        for i in range(d):
            for j in range(d):
                M[i, j] = lik_prec[u, i, j]
            M[i, i] += 1.0 / w
        if not _cholesky(M, L):
            return False
        logdet = 0.0
        for i in range(d):
            logdet += 2.0 * math.log(L[i, i])
        _inverse_from_chol(L, inv, e_vec, col)
        _chol_solve(L, lik_lin[u], Bh)
        hb = 0.0
        for i in range(d):
            hb += lik_lin[u, i] * Bh[i]
        for i in range(d):
            for j in range(d):
                J_ij = -0.5 * (inv[i, j] + inv[j, i]) / (w * w)
                if i == j:
                    J_ij += 1.0 / w
                CJ[u + 1, i, j] = CJ[u, i, j] + J_ij
            Ck[u + 1, i] = Ck[u, i] + Bh[i] / w
        Ce[u + 1] = Ce[u] + lik_const[u] - 0.5 * d * math.log(w) - 0.5 * logdet + 0.5 * hb
    return True


@njit(cache=CACHE)
def type_run_evidence(lik_prec, lik_lin, lik_const, widths, broad_var):
    """The evidence of each run of sessions as users of one new type, theta_u ~ N(m, W I), m ~ N(0, broad_var I).

    Parameters
    ----------
    lik_prec, lik_lin, lik_const : arrays [R, d, d], [R, d], [R]
        The sessions' likelihood surrogates, oldest first (R >= 1).
    widths : array [H]
        The type widths W.
    broad_var : float
        The prior variance of the type mean per coordinate.

    Returns
    -------
    log_ev : array [H, R + 1, R + 1]
        log_ev[h, s, t] the log evidence of sessions s .. t - 1 as one type of width h (0 where t <= s).
    post_mean, post_cov : arrays [H, R, d], [H, R, d, d]
        For the run of sessions s .. R - 1: the next user's predictive under that type, N(J^-1 k, J^-1 + W I).
    """
    R, d = lik_lin.shape
    H = widths.shape[0]
    log_ev = np.zeros((H, R + 1, R + 1))
    post_mean = np.empty((H, R, d))
    post_cov = np.empty((H, R, d, d))
    M, L, inv = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    e_vec, col, z, Bh = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    CJ, Ck, Ce = np.zeros((R + 1, d, d)), np.zeros((R + 1, d)), np.zeros(R + 1)
    for h in range(H):
        w = widths[h]
        if not _type_terms_summed(lik_prec, lik_lin, lik_const, w, CJ, Ck, Ce):
            log_ev[:] = np.nan
            return log_ev, post_mean, post_cov
        for s in range(R):
            for t in range(s + 1, R + 1):
                for i in range(d):
                    for j in range(d):
                        M[i, j] = CJ[t, i, j] - CJ[s, i, j]
                    M[i, i] += 1.0 / broad_var
                    Bh[i] = Ck[t, i] - Ck[s, i]
                if not _cholesky(M, L):
                    log_ev[:] = np.nan
                    return log_ev, post_mean, post_cov
                logdet, quad = 0.0, 0.0
                for i in range(d):
                    acc = Bh[i]
                    for k in range(i):
                        acc -= L[i, k] * z[k]
                    z[i] = acc / L[i, i]
                    logdet += 2.0 * math.log(L[i, i])
                    quad += z[i] * z[i]
                log_ev[h, s, t] = Ce[t] - Ce[s] - 0.5 * d * math.log(broad_var) - 0.5 * logdet + 0.5 * quad
                if t == R:
                    _inverse_from_chol(L, inv, e_vec, col)
                    for i in range(d):
                        acc = 0.0
                        for j in range(d):
                            acc += inv[i, j] * Bh[j]
                            post_cov[h, s, i, j] = inv[i, j]
                        post_mean[h, s, i] = acc
                        post_cov[h, s, i, i] += w
    return log_ev, post_mean, post_cov


@njit(cache=CACHE)
def mixture_log_evidence(lik_prec, lik_lin, lik_const, weights, means, covs):
    """[B] each session's log evidence under the Gaussian mixture prior (weights [C], means [C, d], covs
    [C, d, d]), under the likelihood surrogates [B, d, d], [B, d], [B] (NaN where a matrix is not positive
    definite)."""
    B, d = lik_lin.shape
    C = weights.shape[0]
    terms = np.empty((C, B))
    out = np.empty(B)
    M, L, P = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    e_vec, col, lin, z = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    for c in range(C):
        if not _cholesky(covs[c], L):
            out[:] = np.nan
            return out
        logdet_S = 0.0
        for i in range(d):
            logdet_S += 2.0 * math.log(L[i, i])
        _inverse_from_chol(L, P, e_vec, col)
        mPm = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += P[i, j] * means[c, j]
            z[i] = acc
            mPm += means[c, i] * acc
        for b in range(B):
            for i in range(d):
                for j in range(d):
                    M[i, j] = lik_prec[b, i, j] + P[i, j]
                lin[i] = lik_lin[b, i] + z[i]
            if not _cholesky(M, L):
                out[:] = np.nan
                return out
            logdet, quad = 0.0, 0.0
            for i in range(d):
                acc = lin[i]
                for k in range(i):
                    acc -= L[i, k] * col[k]
                col[i] = acc / L[i, i]
                logdet += 2.0 * math.log(L[i, i])
                quad += col[i] * col[i]
            terms[c, b] = (math.log(weights[c]) + lik_const[b] - 0.5 * logdet_S - 0.5 * logdet + 0.5 * quad
                           - 0.5 * mPm)
    for b in range(B):
        out[b] = _logsumexp(terms[:, b])
    return out


@njit(cache=CACHE)
def run_posterior(base, log_ev, hazard):
    """P(the run the newest session is in started at session s, and is of kind c) [1 + H, R]: Bayesian online
    change-point detection over the sessions, oldest first (``inference.change_point``): the oldest is in a
    population run; then a run continues (1 - hazard) or a new one starts (hazard), of the population (half) or
    of a new type of each of the H kinds (the other half, evenly). A session's predictive is `base` [R] in a
    population run and the increase of its run's evidence `log_ev` [H, R + 1, R + 1] in a type run."""
    H, R = log_ev.shape[0], base.shape[0]
    log_kind = np.empty(1 + H)
    log_kind[0] = math.log(0.5)
    log_kind[1:] = math.log(0.5 / H)
    log_run = np.full((1 + H, R), -np.inf)
    stay, move = math.log1p(-hazard), math.log(hazard)
    for t in range(R):
        if t:
            total = _logsumexp_columns(log_run, t)
            for c in range(1 + H):
                for s in range(t):
                    log_run[c, s] += stay
                log_run[c, t] = total + move + log_kind[c]
        else:
            log_run[0, 0] = 0.0
        for s in range(t + 1):
            log_run[0, s] += base[t]
            for h in range(H):
                log_run[1 + h, s] += log_ev[h, s, t + 1] - log_ev[h, s, t]
        norm = _logsumexp_columns(log_run, t + 1)
        for c in range(1 + H):
            for s in range(t + 1):
                log_run[c, s] -= norm
    return np.exp(log_run)
