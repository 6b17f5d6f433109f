"""Scalar pieces shared by the kernels: sigmoids, the one-click Newton, the probit predictive."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.constants import NEWTON_ITERS, NEWTON_RTOL
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def _sigmoid(x):
    return 0.5 * (1.0 + math.tanh(0.5 * x))


@njit(cache=CACHE)
def _log_sigmoid(x):
    # -log(1 + exp(-x)), stable both ways
    if x >= 0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(cache=CACHE)
def _click_step(eta, a, s, y, lo, hi, dx_old, p, rtol):
    """One step of the one-click Newton at eta (p = sigmoid(eta)), kept inside the bracket [lo, hi] of the
    root (bisection where Newton leaves it or does not halve the last step). Returns (eta, lo, hi, the step,
    converged); converged means the step fell under rtol (1 + |eta|), and eta has taken it."""
    g = (y - p) - (eta - a) / s
    if g > 0:
        lo = eta
    else:
        hi = eta
    dx = g / (p * (1.0 - p) + 1.0 / s)
    if abs(dx) < rtol * (1.0 + abs(eta)):
        return eta + dx, lo, hi, dx, True
    if lo < eta + dx < hi and abs(dx) <= 0.5 * abs(dx_old):
        eta = eta + dx
    else:
        dx = 0.5 * (lo + hi) - eta
        eta = 0.5 * (lo + hi)
    return eta, lo, hi, dx, False


@njit(cache=CACHE)
def click_mode(a, s, y, rtol=NEWTON_RTOL, p_a=-1.0, iters=NEWTON_ITERS):
    """Mode of N(eta; a, s) x Bernoulli(y; sigmoid(eta)): the one implementation of the one-click Newton
    (``inference.laplace.click_mode`` documents it and calls this). p_a = sigmoid(a) when the caller has it
    (both outcomes start from the same point). Raises RuntimeError if it does not converge in `iters`."""
    if s <= 0.0:
        return a
    eta = a
    if y:
        lo, hi = a, a + s
    else:
        lo, hi = a - s, a
    dx = 2.0 * s
    for it in range(iters):
        p = p_a if it == 0 and p_a >= 0.0 else _sigmoid(eta)
        eta, lo, hi, dx, done = _click_step(eta, a, s, y, lo, hi, dx, p, rtol)
        if done:
            return eta
    raise RuntimeError("click_mode: the one-click Newton did not converge")


@njit(cache=CACHE)
def click_modes_both(a, s, rtol=NEWTON_RTOL, p_a=-1.0, iters=NEWTON_ITERS):
    """(`click_mode` for y = 0, for y = 1) with the two Newton iterations interleaved: two independent
    chains of the same arithmetic, which the processor overlaps (bit for bit the two calls)."""
    if s <= 0.0:
        return a, a
    e0, lo0, hi0, dx0, done0 = a, a - s, a, 2.0 * s, False
    e1, lo1, hi1, dx1, done1 = a, a, a + s, 2.0 * s, False
    for it in range(iters):
        if not done0:
            p = p_a if it == 0 and p_a >= 0.0 else _sigmoid(e0)
            e0, lo0, hi0, dx0, done0 = _click_step(e0, a, s, 0, lo0, hi0, dx0, p, rtol)
        if not done1:
            p = p_a if it == 0 and p_a >= 0.0 else _sigmoid(e1)
            e1, lo1, hi1, dx1, done1 = _click_step(e1, a, s, 1, lo1, hi1, dx1, p, rtol)
        if done0 and done1:
            return e0, e1
    raise RuntimeError("click_mode: the one-click Newton did not converge")


@njit(cache=CACHE)
def click_modes(a, s, y, rtol=NEWTON_RTOL, iters=NEWTON_ITERS):
    """`click_mode` elementwise over 1-D arrays a, s (one outcome y for all)."""
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = click_mode(a[i], s[i], y, rtol, -1.0, iters)
    return out


@njit(cache=CACHE)
def probit_log_predictive(a, s, y):
    """log p(y) for eta ~ N(a, s) under a logistic click, by the probit approximation (the compiled twin of ``inference.mixture_belief.probit_log_predictive``)."""
    x = a / math.sqrt(1.0 + math.pi * s / 8.0)
    return _log_sigmoid(x if y else -x)
