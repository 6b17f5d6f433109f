"""Conjugate algebra of the population model's exact sampler: a learned component's
Normal-inverse-Wishart statistics and multivariate-t predictive, the stick-breaking prior of the
assignments, and the exact conditionals of a stored draw's fractions, means and covariances.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.kernels.linalg import _cholesky, _inverse_from_chol, whitened_sq_norm
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

LOG_2PI = math.log(2.0 * math.pi)
LOG_PI = math.log(math.pi)


@njit(cache=CACHE)
def _mvlgamma(a, d):
    out = 0.25 * d * (d - 1) * LOG_PI
    for j in range(d):
        out += math.lgamma(a - 0.5 * j)
    return out


@njit(cache=CACHE)
def _log_lik(Zu, yu, theta):
    """log p(y_u | theta) of the BTL clicks."""
    S, d = Zu.shape
    out = 0.0
    for t in range(S):
        e = 0.0
        for i in range(d):
            e += Zu[t, i] * theta[i]
        # log sigmoid(e) if y = 1, log sigmoid(-e) if y = 0
        out += yu[t] * e - max(e, 0.0) - math.log1p(math.exp(-abs(e)))
    return out


@njit(cache=CACHE)
def _psi_n(n, T1k, T2k, psi, kappa0, out):
    """Psi_n = psi I + T2 - T1 T1^T / kappa_n (posterior scale of the NIW, mean 0); returns kappa_n."""
    d = T1k.shape[0]
    kn = kappa0 + n
    for i in range(d):
        for j in range(d):
            out[i, j] = T2k[i, j] - T1k[i] * T1k[j] / kn
        out[i, i] += psi
    return kn


@njit(cache=CACHE)
def _logdet_chol(L):
    d = L.shape[0]
    acc = 0.0
    for i in range(d):
        acc += 2.0 * math.log(L[i, i])
    return acc


@njit(cache=CACHE)
def log_marginal(n, T1k, T2k, nu0, psi, kappa0, Psi, L):
    """log p(theta_1..n) of n thetas in one learned component (sums T1k, T2k), mean and covariance
    integrated out; Psi, L are d x d work arrays. -inf if Psi_n is not positive definite."""
    d = T1k.shape[0]
    kn = _psi_n(n, T1k, T2k, psi, kappa0, Psi)
    if not _cholesky(Psi, L):
        return -np.inf
    nun = nu0 + n
    return (-0.5 * n * d * LOG_PI + _mvlgamma(0.5 * nun, d) - _mvlgamma(0.5 * nu0, d)
            + 0.5 * nu0 * d * math.log(psi) - 0.5 * nun * _logdet_chol(L) + 0.5 * d * (math.log(kappa0) - math.log(kn)))


@njit(cache=CACHE)
def _predictive_t(n, T1k, T2k, nu0, psi, kappa0, loc, L):
    """The multivariate-t predictive of a new theta in a learned component holding n thetas:
    writes its location loc [d] and the Cholesky factor L of its scale matrix; returns
    (df, log det scale), or df = -1 if the scale is not positive definite."""
    d = T1k.shape[0]
    kn = _psi_n(n, T1k, T2k, psi, kappa0, L)
    df = nu0 + n - d + 1.0
    f = (kn + 1.0) / (kn * df)
    for i in range(d):
        loc[i] = T1k[i] / kn
        for j in range(d):
            L[i, j] *= f
    scale = L.copy()
    if not _cholesky(scale, L):
        return -1.0, 0.0
    return df, _logdet_chol(L)


@njit(cache=CACHE)
def _gauss_iso_logpdf(x, var):
    d = x.shape[0]
    q = 0.0
    for i in range(d):
        q += x[i] * x[i]
    return -0.5 * q / var - 0.5 * d * (math.log(var) + LOG_2PI)


@njit(cache=CACHE)
def _surrogate_log_lik(u, x, lik_prec, lik_lin, lik_const):
    """The Gaussian surrogate of user u's log likelihood at x: c_u - x' Lam_u x / 2 + h_u' x."""
    d = x.shape[0]
    out = lik_const[u]
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += lik_prec[u, i, j] * x[j]
        out += lik_lin[u, i] * x[i] - 0.5 * x[i] * acc
    return out


@njit(cache=CACHE)
def _slot_logpdf(k, K, x, tdf, tloc, tL, tconst, broad_var, w):
    """log density of theta = x under slot k given its other members (t for learned, the broad Gaussian);
    tconst [K] the learned slots' t normalising constants."""
    if k == K:
        return _gauss_iso_logpdf(x, broad_var)
    d = x.shape[0]
    L = tL[k]
    loc = tloc[k]
    delta = whitened_sq_norm(L, x, loc, w)
    return tconst[k] - 0.5 * (tdf[k] + d) * math.log1p(delta / tdf[k])


@njit(cache=CACHE)
def _add(k, K, x, n, T1, T2, sign):
    n[k] += sign
    if k == K:
        return
    d = x.shape[0]
    for i in range(d):
        T1[k, i] += sign * x[i]
        for j in range(d):
            T2[k, i, j] += sign * x[i] * x[j]


@njit(cache=CACHE)
def recompute_stats(c, theta, K, n, T1, T2):
    """The slots' counts and sums from scratch (removes the drift of many small updates)."""
    n[:] = 0
    T1[:] = 0.0
    T2[:] = 0.0
    for u in range(c.shape[0]):
        _add(c[u], K, theta[u], n, T1, T2, 1)


@njit(cache=CACHE)
def log_assignment_prior(n, alpha):
    """log p(c) of assignments with the stick fractions integrated out: counts n [K + 1] (the broad
    slot, which takes the rest of the stick, last)."""
    K = n.shape[0] - 1
    out = 0.0
    m = n[K]
    base = math.lgamma(1.0) + math.lgamma(alpha) - math.lgamma(1.0 + alpha)
    for k in range(K - 1, -1, -1):
        a, b = 1.0 + n[k], alpha + m
        out += math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b) - base
        m += n[k]
    return out


@njit(cache=CACHE)
def predictive_log_weights(n, alpha, out):
    """log p(c_u = k | c_-u) [K + 1] with the stick fractions integrated out, from the others' counts
    n [K + 1]: E[v_k] prod_{j<k} E[1 - v_j] under v_j ~ Beta(1 + n_j, alpha + sum_{l > j} n_l)."""
    K = n.shape[0] - 1
    m = n[K]
    tail = np.empty(K)
    for k in range(K - 1, -1, -1):
        tail[k] = m
        m += n[k]
    rest = 0.0
    for k in range(K):
        a, b = 1.0 + n[k], alpha + tail[k]
        out[k] = rest + math.log(a / (a + b))
        rest += math.log(b / (a + b))
    out[K] = rest


@njit(cache=CACHE)
def draw_fractions(rng, n, alpha, v):
    """v_k ~ Beta(1 + n_k, alpha + sum_{j > k} n_j) (the broad slot counted in the rest)."""
    K = v.shape[0]
    m = n[K]
    for k in range(K - 1, -1, -1):
        x = rng.beta(1.0 + n[k], alpha + m)
        v[k] = min(max(x, 1e-300), 1.0 - 1e-16)
        m += n[k]


@njit(cache=CACHE)
def _slot_params(k, n, T1, T2, nu0, psi, kappa0, tdf, tloc, tL, tconst, pmean, pprec, plogdet, inv, e, col):
    """Learned slot k's predictive t given its members (tdf, tloc, tL, and tconst its log normalising
    constant) and the Gaussian with its mean and covariance (pmean, pprec = the precision, plogdet =
    log det of the covariance)."""
    d = T1.shape[1]
    df, ld = _predictive_t(n[k], T1[k], T2[k], nu0, psi, kappa0, tloc[k], tL[k])
    tdf[k] = df
    tconst[k] = (math.lgamma(0.5 * (df + d)) - math.lgamma(0.5 * df) - 0.5 * d * (math.log(df) + LOG_PI)
                 - 0.5 * ld)
    _inverse_from_chol(tL[k], inv, e, col)          # (L L^T)^-1
    r = (df - 2.0) / df
    for i in range(d):
        pmean[k, i] = tloc[k, i]
        for j in range(d):
            pprec[k, i, j] = r * inv[i, j]
    plogdet[k] = ld - d * math.log(r)


@njit(cache=CACHE)
def draw_components(rng, n, T1, T2, nu0, psi, kappa0, mu, chol):
    """Each learned slot's mean mu [K, d] and covariance Cholesky factor chol [K, d, d] from their
    Normal-inverse-Wishart conditional given the members (the prior for an empty slot)."""
    K, d = T1.shape
    Psi, L, A = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    Ainv, M, Sig = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    e = np.empty(d)
    for k in range(K):
        kn = _psi_n(n[k], T1[k], T2[k], psi, kappa0, Psi)
        _cholesky(Psi, L)
        nun = nu0 + n[k]
        # Bartlett: W = L^-T A A^T L^-1 ~ Wishart(nun, Psi^-1), so Sigma = W^-1 = (L A^-T)(L A^-T)^T ~ IW(nun, Psi)
        for i in range(d):
            for j in range(d):
                A[i, j] = 0.0
            A[i, i] = math.sqrt(rng.chisquare(nun - i))
            for j in range(i):
                A[i, j] = rng.standard_normal()
        # Ainv = A^-1 (lower triangular)
        for j in range(d):
            for i in range(d):
                acc = 1.0 if i == j else 0.0
                for t in range(i):
                    acc -= A[i, t] * Ainv[t, j]
                Ainv[i, j] = acc / A[i, i]
        for i in range(d):                   # M = L Ainv^T
            for j in range(d):
                acc = 0.0
                for t in range(d):
                    acc += L[i, t] * Ainv[j, t]
                M[i, j] = acc
        for i in range(d):
            for j in range(d):
                acc = 0.0
                for t in range(d):
                    acc += M[i, t] * M[j, t]
                Sig[i, j] = acc
        _cholesky(Sig, chol[k])
        s = 1.0 / math.sqrt(kn)
        for i in range(d):
            e[i] = rng.standard_normal()
        for i in range(d):
            acc = T1[k, i] / kn
            for t in range(i + 1):
                acc += s * chol[k, i, t] * e[t]
            mu[k, i] = acc
