"""Proposals of the population model's exact sampler: a user's theta from a defensive t
mixture around its Laplace mode (and its log density), Gaussian steps, the Newton refinement.
"""
from __future__ import annotations

import math

from numba import njit

from inference.constants import WIDE_SCALE, WIDE_SHARE
from inference.kernels.gibbs_conjugate import LOG_PI
from inference.kernels.laplace import _grad_hessian, newton_mode
from inference.kernels.linalg import _cholesky
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def _proposal_logpdf(x, mode, HL, logdet_H, df_q, w):
    """log density of the proposal: the defensive mixture (1 - WIDE_SHARE) t_df_q(mode, V) +
    WIDE_SHARE t_df_q(mode, WIDE_SCALE^2 V), V = H^-1 (df_q - 2) / df_q (covariance H^-1), H = HL HL^T.
    The wide part bounds the importance ratio where the target's tails are wider than the
    curvature at the mode says (near-separable clicks), so an independence chain does not stick there."""
    d = x.shape[0]
    q = 0.0                                   # |HL^T (x - mode)|^2
    for i in range(d):
        acc = 0.0
        for k in range(i, d):
            acc += HL[k, i] * (x[k] - mode[k])
        q += acc * acc
    delta = q * df_q / (df_q - 2.0)
    logdet_v = -logdet_H + d * math.log((df_q - 2.0) / df_q)
    const = math.lgamma(0.5 * (df_q + d)) - math.lgamma(0.5 * df_q) - 0.5 * d * (math.log(df_q) + LOG_PI)
    narrow = math.log1p(-WIDE_SHARE) + const - 0.5 * logdet_v - 0.5 * (df_q + d) * math.log1p(delta / df_q)
    wide = (math.log(WIDE_SHARE) + const - 0.5 * logdet_v - d * math.log(WIDE_SCALE)
            - 0.5 * (df_q + d) * math.log1p(delta / (df_q * WIDE_SCALE * WIDE_SCALE)))
    top = max(narrow, wide)
    return top + math.log(math.exp(narrow - top) + math.exp(wide - top))


@njit(cache=CACHE)
def _solve_lower_transposed(L, b, out):
    """out = L^-T b for lower-triangular L (back substitution)."""
    d = b.shape[0]
    for i in range(d - 1, -1, -1):
        acc = b[i]
        for k in range(i + 1, d):
            acc -= L[k, i] * out[k]
        out[i] = acc / L[i, i]


@njit(cache=CACHE)
def _proposal_draw(rng, mode, HL, df_q, out, g):
    """A draw of the proposal of `_proposal_logpdf`: mode + f HL^-T g sqrt((df_q - 2) / chi2), with
    f = WIDE_SCALE with probability WIDE_SHARE, else 1."""
    d = mode.shape[0]
    for i in range(d):
        g[i] = rng.standard_normal()
    chi2 = rng.chisquare(df_q)
    s = math.sqrt((df_q - 2.0) / chi2)
    if rng.random() < WIDE_SHARE:
        s *= WIDE_SCALE
    _solve_lower_transposed(HL, g, out)
    for i in range(d):
        out[i] = mode[i] + s * out[i]


@njit(cache=CACHE)
def _proposal_draw_gauss(rng, center, HL, f, out, g):
    """center + f HL^-T g, g standard normal (covariance f^2 H^-1, H = HL HL^T)."""
    d = center.shape[0]
    for i in range(d):
        g[i] = rng.standard_normal()
    _solve_lower_transposed(HL, g, out)
    for i in range(d):
        out[i] = center[i] + f * out[i]


@njit(cache=CACHE)
def _newton(Zu, yu, theta, m, P, H, L, grad, step, trial, eta, eta_trial, ex, ex_trial, iters, tol):
    """Mode of N(m, P^-1) x the clicks' likelihood from `theta` (in place); leaves the Cholesky factor of
    the negative log posterior's Hessian at the mode in L. False if that factorisation fails."""
    newton_mode(Zu, yu, theta, m, P, H, L, grad, step, trial, eta, eta_trial, ex, ex_trial, iters, tol)
    _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H)
    return _cholesky(H, L)
