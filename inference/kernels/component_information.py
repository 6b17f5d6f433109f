"""How much one click on each pair would say about which population component the user belongs to: the
mutual information between the click and the component under the user's mixture belief (nats), for the
pairs of a question. Components under exp(-PRUNE_NATS) of the heaviest are left out, as in the lookahead;
each component's click probability is the probit approximation of its logistic-normal predictive."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.constants import PRUNE_NATS
from inference.kernels.belief import eta_prior
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def _entropy(p):
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -p * math.log(p) - (1.0 - p) * math.log1p(-p)


@njit(cache=CACHE)
def component_information(log_w, means, covs, active, P):
    """Mutual information [K (K - 1) / 2] between the click on each unordered pair (i < j, lexicographic, as
    ``lookahead_scores``) of P [K, d] and the user's component under the belief (log_w [C], means [C, d],
    covs [C, d, d], active [C]): H(sum_k w_k q_k) - sum_k w_k H(q_k), q_k = P(first wins | k)."""
    C, d = means.shape
    K = P.shape[0]
    top = -np.inf
    for c in range(C):
        if active[c]:
            top = max(top, log_w[c])
    w = np.zeros(C)
    tot = 0.0
    for c in range(C):
        if active[c] and log_w[c] >= top - PRUNE_NATS:
            w[c] = math.exp(log_w[c] - top)
            tot += w[c]
    out = np.empty(K * (K - 1) // 2)
    z = np.empty(d)
    Sz = np.empty(d)
    n = 0
    for i in range(K):
        for j in range(i + 1, K):
            for t in range(d):
                z[t] = P[i, t] - P[j, t]
            p1 = 0.0
            cond = 0.0
            for c in range(C):
                if w[c] == 0.0:
                    continue
                a, s = eta_prior(means[c], covs[c], z, Sz)
                x = a / math.sqrt(1.0 + math.pi * s / 8.0)
                q = 0.5 * (1.0 + math.tanh(0.5 * x))
                p1 += w[c] / tot * q
                cond += w[c] / tot * _entropy(q)
            out[n] = max(_entropy(p1) - cond, 0.0)
            n += 1
    return out
