"""The importance-corrected Laplace belief: after each click's Laplace step, every component's Gaussian
is used as an importance proposal for the exact component posterior on all of the session's clicks,
N(theta; m0_k, S0_k) x prod_t Bernoulli(y_t; sigmoid(z_t . theta)), and replaced by the Pareto-smoothed
weighted moments when PSIS k-hat says the weights can be trusted (k-hat < KHAT_TRUST); otherwise the
Laplace step stands. The component weights are the prior weights times each component's evidence for
the session's clicks: the smoothed importance estimate where trusted, the Laplace estimate at the
proposal's mean (log target - log proposal there) elsewhere, so they never accumulate the per-click
approximations.

The draws are fixed standard normals (antithetic pairs, ``base_draws``): the belief is a deterministic
function of the clicks, as every learner's state must be. Components whose
weight is under IS_MIN_WEIGHT before the click are not resampled (the Laplace step and its evidence). The
proposal is the Laplace step's Gaussian widened by IS_SCALE in sd, so that the weights stay bounded where
the exact posterior's tails are heavier than the Gaussian's.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

from inference.constants import IS_DRAWS, IS_MIN_WEIGHT, IS_SCALE, IS_SEED, KHAT_TRUST
from inference.kernels._scalar import _log_sigmoid
from inference.kernels.belief import eta_prior, mixture_update, normalised
from inference.kernels.linalg import _cholesky, whitened_sq_norm
from inference.kernels.moment_matching import click_moments
from inference.kernels.psis import psis_smooth
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

LOG_2PI = math.log(2.0 * math.pi)
LOG_MIN_WEIGHT = math.log(IS_MIN_WEIGHT)


@lru_cache(maxsize=None)
def base_draws(d: int, n: int = IS_DRAWS) -> np.ndarray:
    """Fixed standard-normal draws [n, d] in antithetic pairs (rows n/2.. are minus rows ..n/2), read-only,
    rotated so that their mean is 0 and their second moment, sum x x' / n, is I exactly: with equal weights
    the corrected moments are the proposal's, so the draws' own sampling error cannot compound click after
    click."""
    half = np.random.default_rng(IS_SEED).standard_normal((n // 2, d))
    L = np.linalg.cholesky(half.T @ half / (n // 2))
    half = np.linalg.solve(L, half.T).T
    out = np.ascontiguousarray(np.concatenate([half, -half]))
    out.flags.writeable = False
    return out


@njit(cache=CACHE)
def _log_target(theta, m0, L0, logdet0, Zs, ys, t, work):
    """log N(theta; m0, L0 L0') + sum over the first t clicks of log p(y | theta)."""
    d = theta.shape[0]
    quad = whitened_sq_norm(L0, theta, m0, work)
    out = -0.5 * (quad + d * LOG_2PI) - 0.5 * logdet0
    for r in range(t):
        eta = 0.0
        for i in range(d):
            eta += Zs[r, i] * theta[i]
        out += _log_sigmoid(eta if ys[r] else -eta)
    return out


@njit(cache=CACHE)
def _predictive(log_w, means, covs, active, z, y):
    """log p(y | belief) for the Gaussian mixture, each component's integral by quadrature."""
    C, d = means.shape
    top = -np.inf
    lp = np.full(C, -np.inf)
    Sz = np.empty(d)
    for c in range(C):
        if not active[c]:
            continue
        a, s = eta_prior(means[c], covs[c], z, Sz)
        lp[c] = log_w[c] + click_moments(a, s, y)[0]
        top = max(top, lp[c])
    tot = 0.0
    for c in range(C):
        if active[c]:
            tot += math.exp(lp[c] - top)
    return top + math.log(tot)


@njit(cache=CACHE)
def session_with(Zs, ys, t, z, y):
    """The session's clicks so far, rows [:t] of Zs [S, d] and ys [S], with the click (z [d], y) after them:
    (Zall [t + 1, d], yall [t + 1])."""
    d = Zs.shape[1]
    Zall = np.empty((t + 1, d))
    yall = np.empty(t + 1)
    for r in range(t):
        Zall[r] = Zs[r]
        yall[r] = ys[r]
    Zall[t] = z
    yall[t] = y
    return Zall, yall


@njit(cache=CACHE)
def gaussian_factors(S0, S, L0, L):
    """Cholesky factors of the prior's S0 into L0 and a Gaussian's S into L; (both positive definite, log|S0|,
    the Gaussian's log density at its own mean)."""
    d = S0.shape[0]
    if not (_cholesky(S0, L0) and _cholesky(S, L)):
        return False, 0.0, 0.0
    logdet0 = 0.0
    log_q = -0.5 * d * LOG_2PI
    for i in range(d):
        logdet0 += 2.0 * math.log(L0[i, i])
        log_q -= math.log(L[i, i])
    return True, logdet0, log_q


@njit(cache=CACHE)
def _weighted_moments(lw, draws):
    """(mean [d], cov [d, d], log of the mean weight) of draws [M, d] under log weights lw [M]."""
    M, d = draws.shape
    big = np.max(lw)
    w = np.empty(M)
    tot = 0.0
    for n in range(M):
        w[n] = math.exp(lw[n] - big)
        tot += w[n]
    mean = np.zeros(d)
    for n in range(M):
        for i in range(d):
            mean[i] += w[n] * draws[n, i]
    mean /= tot
    cov = np.zeros((d, d))
    for n in range(M):
        for i in range(d):
            di = draws[n, i] - mean[i]
            for j in range(i + 1):
                cov[i, j] += w[n] * di * (draws[n, j] - mean[j])
    for i in range(d):
        for j in range(i + 1):
            cov[i, j] /= tot
            cov[j, i] = cov[i, j]
    return mean, cov, big + math.log(tot) - math.log(M)


@njit(cache=CACHE)
def _correct(m, L, m0, L0, logdet0, log_q0, Zall, yall, base, draws, lr, theta, work):
    """Importance-correct one component: draws of N(m, (IS_SCALE L)(IS_SCALE L)') against its exact posterior.
    Returns (trusted, mean, cov, log evidence); trusted is False when PSIS k-hat is over KHAT_TRUST or the
    weighted covariance is not positive definite."""
    M, d = base.shape
    for n in range(M):
        sq = 0.0
        for i in range(d):
            acc = m[i]
            for k in range(i + 1):
                acc += IS_SCALE * L[i, k] * base[n, k]
            theta[i] = acc
            draws[n, i] = acc
            sq += base[n, i] * base[n, i]
        lr[n] = (_log_target(theta, m0, L0, logdet0, Zall, yall, Zall.shape[0], work)
                 - (log_q0 - d * math.log(IS_SCALE) - 0.5 * sq))
    lw, khat = psis_smooth(lr)
    mean, cov, log_ev = _weighted_moments(lw, draws)
    ok = khat < KHAT_TRUST and _cholesky(cov, np.empty((d, d)))   # too few effective draws: not trusted
    return ok, mean, cov, log_ev


@njit(cache=CACHE)
def mixture_update_is(log_w, means, covs, active, z, y, prior_log_w, prior_means, prior_covs, Zs, ys, t, base):
    """One click into a mixture belief, the Laplace step corrected by importance sampling; returns
    (log_w, means, covs, log p(y | belief before the click)).

    log_w [C], means [C, d], covs [C, d, d], active [C] bool: the belief before the click; z [d], y: the
    click; prior_* the prior the session started from (same slots); Zs [S, d], ys [S]: the session's
    clicks, rows [:t] before this one (this click is added here); base [M, d] fixed standard normals.
    """
    C, d = means.shape
    M = base.shape[0]
    log_pred = _predictive(log_w, means, covs, active, z, y)
    _, new_m, new_S, _ = mixture_update(log_w, means, covs, active, z, y)
    Zall, yall = session_with(Zs, ys, t, z, y)
    top_norm = normalised(log_w, active)[1]
    L, L0 = np.empty((d, d)), np.empty((d, d))
    work, theta = np.empty(d), np.empty(d)
    lr, draws = np.empty(M), np.empty((M, d))
    new_w = np.full(C, -np.inf)
    for c in range(C):
        if not active[c]:
            continue
        ok, logdet0, log_q0 = gaussian_factors(prior_covs[c], new_S[c], L0, L)
        if not ok:
            raise RuntimeError("importance-corrected Laplace: a covariance is not positive definite")
        ev = _log_target(new_m[c], prior_means[c], L0, logdet0, Zall, yall, t + 1, work) - log_q0   # Laplace's
        if log_w[c] - top_norm >= LOG_MIN_WEIGHT:
            ok, mean, cov, log_ev = _correct(new_m[c], L, prior_means[c], L0, logdet0, log_q0, Zall, yall, base,
                                             draws, lr, theta, work)
            if ok:
                new_m[c], new_S[c], ev = mean, cov, log_ev
        new_w[c] = prior_log_w[c] + ev
    return normalised(new_w, active)[0], new_m, new_S, log_pred
