"""Assumed-density filtering of one click: the Gaussian belief replaced by the moments of the tilted
distribution N(theta; m, S) x Bernoulli(y; sigmoid(z . theta)), inside every mixture component, the
component weights reweighted by each component's exact one-click predictive probability.

The tilted distribution differs from the Gaussian only along eta = z . theta, so its moments come from
a one-dimensional integral: adaptive Gauss-Hermite quadrature centred at the tilted mode (the same
safeguarded Newton as the Laplace step, ``click_mode``) with the Laplace scale there. The integrand is
log-concave and smooth, so a few tens of nodes give the normaliser and both moments to about machine
precision. Then (Minka's ADF / EP update without the refinement passes)

    m' = m + S z (mu - a) / s,    S' = S - S z z' S (s - v) / s^2,

where a, s are eta's prior mean and variance and mu, v its tilted mean and variance (v <= s).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.constants import GH_NODES
from inference.kernels._scalar import _log_sigmoid, _sigmoid, click_mode
from inference.kernels.belief import eta_prior, normalised, rank_one_step
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

_X, _W = np.polynomial.hermite.hermgauss(GH_NODES)
GH_X = np.ascontiguousarray(_X)
GH_LOGW = np.ascontiguousarray(np.log(_W) + _X ** 2)    # log weight x e^{x^2}: the nodes integrate f itself
LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=CACHE)
def tilted_rule(a, s, y, nodes, log_weights, lf):
    """The adaptive Gauss-Hermite rule of N(eta; a, s) x sigmoid(+-eta) at its mode with the Laplace scale
    there: fills lf [n] with the nodes' weights (largest 1) and returns (mode, scale c, the weights' sum, log
    normaliser); node i sits at mode + c nodes[i]."""
    sign = 1.0 if y else -1.0
    mode = click_mode(a, s, y)
    p = _sigmoid(mode)
    c = math.sqrt(2.0 / (1.0 / s + p * (1.0 - p)))
    n = nodes.shape[0]
    top = -np.inf
    for i in range(n):
        eta = mode + c * nodes[i]
        r = eta - a
        lf[i] = log_weights[i] - 0.5 * (r * r / s + LOG_2PI + math.log(s)) + _log_sigmoid(sign * eta)
        top = max(top, lf[i])
    tot = 0.0
    for i in range(n):
        lf[i] = math.exp(lf[i] - top)
        tot += lf[i]
    return mode, c, tot, top + math.log(tot) + math.log(c)


@njit(cache=CACHE)
def _tilted(a, s, y, nodes, log_weights):
    """(log normaliser, mean, variance) of N(eta; a, s) x sigmoid(+-eta) by adaptive Gauss-Hermite at the mode."""
    n = nodes.shape[0]
    lf = np.empty(n)
    mode, c, tot, log_z = tilted_rule(a, s, y, nodes, log_weights, lf)
    m1 = 0.0
    for i in range(n):
        m1 += lf[i] * nodes[i]
    m1 /= tot
    m2 = 0.0
    for i in range(n):
        dx = nodes[i] - m1
        m2 += lf[i] * dx * dx
    return log_z, mode + c * m1, min(c * c * m2 / tot, s)


@njit(cache=CACHE)
def click_moments(a, s, y, nodes=GH_X, log_weights=GH_LOGW):
    """Log normaliser, mean and variance of N(eta; a, s) x Bernoulli(y; sigmoid(eta)).

    Returns (log p(y), E[eta], Var[eta]) under the tilted distribution; p(y) = integral of the Gaussian
    times the click probability (the exact predictive probability of the click). s = 0: (log sigmoid(+-a), a, 0).
    Where the click is the likelier outcome (+-a > 0) the click probability is flat over most of the
    Gaussian and bends in its tail, which a quadrature at the mode resolves poorly; there the moments
    come from the complement, sigmoid(+-eta) = 1 - sigmoid(-+eta), whose tilted mass sits where it bends.
    """
    sign = 1.0 if y else -1.0
    if s <= 0.0:
        return _log_sigmoid(sign * a), a, 0.0
    if sign * a <= 0.0:
        return _tilted(a, s, y, nodes, log_weights)
    log_zc, mu_c, v_c = _tilted(a, s, 1 - y, nodes, log_weights)
    zc = math.exp(log_zc)                   # < 1/2 here, so 1 - zc loses nothing
    dc = mu_c - a
    shift = -zc * dc / (1.0 - zc)
    second = (s - zc * (v_c + dc * dc)) / (1.0 - zc)      # E[(eta - a)^2] under the click's tilt
    return math.log1p(-zc), a + shift, min(max(second - shift * shift, 0.0), s)


@njit(cache=CACHE)
def mixture_update_adf(log_w, means, covs, active, z, y):
    """One click into a mixture belief by assumed-density filtering; returns (log_w, means, covs,
    log p(y | belief)), as ``inference.kernels.mixture_update`` does for the Laplace step.

    log_w [C], means [C, d], covs [C, d, d], active [C] bool, z [d], y in {0, 1}.
    """
    C, d = means.shape
    new_m = means.copy()
    new_S = covs.copy()
    lp = np.empty(C)
    Sz = np.empty(d)
    for c in range(C):
        if not active[c]:
            continue
        a, s = eta_prior(means[c], covs[c], z, Sz)
        log_z, mu, v = click_moments(a, s, y)
        lp[c] = log_w[c] + log_z
        if s > 0.0:
            rank_one_step(new_m[c], new_S[c], Sz, (mu - a) / s, (s - v) / (s * s))
    new_w, log_pred = normalised(lp, active)
    return new_w, new_m, new_S, log_pred
