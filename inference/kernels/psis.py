"""Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman, Yao and Gabry), compiled: the largest
weights replaced by quantiles of a generalized Pareto distribution fitted to them, and the fit's shape
k-hat returned as the diagnostic (> 0.7: the weights cannot be trusted). The same tail size, the
Zhang-Stephens fit with its weakly informative prior on k, and the truncation at the largest raw weight
as ArviZ's ``psislw`` (the tests check k-hat and the smoothed weights against it)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

_PRIOR_BS = 3.0
_PRIOR_K = 10.0


@njit(cache=CACHE, error_model="numpy")     # a degenerate tail gives inf or nan, not an exception
def gpd_fit(x):
    """(k, sigma) of a generalized Pareto distribution fitted to x [n] >= 0, sorted ascending
    (Zhang and Stephens' profile-likelihood estimate, k shrunk towards 0.5 by n / (n + 10))."""
    n = x.shape[0]
    m = 30 + int(math.sqrt(n))
    b = np.empty(m)
    kk = np.empty(m)
    ll = np.empty(m)
    q = x[int(n / 4.0 + 0.5) - 1]
    for j in range(m):
        b[j] = (1.0 - math.sqrt(m / (j + 0.5))) / (_PRIOR_BS * q) + 1.0 / x[n - 1]
        acc = 0.0
        for i in range(n):
            acc += math.log1p(-b[j] * x[i])
        kk[j] = acc / n
        ll[j] = n * (math.log(-b[j] / kk[j]) - kk[j] - 1.0)
    w = np.empty(m)
    for j in range(m):
        acc = 0.0
        for i in range(m):
            acc += math.exp(ll[i] - ll[j])
        w[j] = 1.0 / acc
    tot = 0.0
    b_post = 0.0
    for j in range(m):
        if w[j] >= 10.0 * 2.220446049250313e-16:
            tot += w[j]
            b_post += w[j] * b[j]
    b_post /= tot
    acc = 0.0
    for i in range(n):
        acc += math.log1p(-b_post * x[i])
    k = acc / n
    sigma = -k / b_post
    return (n * k + _PRIOR_K * 0.5) / (n + _PRIOR_K), sigma


@njit(cache=CACHE)
def _gpd_quantile(p, k, sigma):
    if k == 0.0:
        return -sigma * math.log1p(-p)
    return sigma * math.expm1(-k * math.log1p(-p)) / k


@njit(cache=CACHE)
def psis_smooth(log_ratios):
    """Pareto-smoothed log importance weights [n], unnormalised (on the scale of log_ratios), and k-hat.

    The tail holds ceil(min(n / 5, 3 sqrt(n))) draws; with 4 or fewer above the cut, or a fit that is not
    finite, k-hat is inf and the weights are returned as given."""
    n = log_ratios.shape[0]
    top = np.max(log_ratios)
    lw = log_ratios - top
    n_tail = int(math.ceil(min(0.2 * n, 3.0 * math.sqrt(n))))
    order = np.argsort(lw)
    cut = lw[order[n - n_tail - 1]]
    start = n - n_tail
    while start < n and lw[order[start]] <= cut:     # ties with the cut stay out of the tail
        start += 1
    m = n - start
    if m <= 4:
        return log_ratios.copy(), np.inf
    exp_cut = math.exp(cut)
    x = np.empty(m)
    for i in range(m):
        x[i] = math.exp(lw[order[start + i]]) - exp_cut
    k, sigma = gpd_fit(x)
    if not (math.isfinite(k) and math.isfinite(sigma)):
        return log_ratios.copy(), np.inf
    for i in range(m):
        v = math.log(_gpd_quantile((i + 0.5) / m, k, sigma) + exp_cut)
        lw[order[start + i]] = min(v, 0.0)
    return lw + top, k
