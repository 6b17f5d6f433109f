"""Split-merge and label-swap moves of the population model's exact sampler.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.kernels.gibbs_conjugate import log_assignment_prior, log_marginal
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def _shift(T1s, T2s, cnt, side, x, sign):
    d = x.shape[0]
    cnt[side] += sign
    for i in range(d):
        T1s[side, i] += sign * x[i]
        for j in range(d):
            T2s[side, i, j] += sign * x[i] * x[j]


@njit(cache=CACHE)
def _with_x(T1s, T2s, cnt, side, x, nu0, psi, kappa0, Psi, L):
    """log marginal of side `side` with x added (the stats are restored)."""
    _shift(T1s, T2s, cnt, side, x, 1)
    out = log_marginal(cnt[side], T1s[side], T2s[side], nu0, psi, kappa0, Psi, L)
    _shift(T1s, T2s, cnt, side, x, -1)
    return out


@njit(cache=CACHE)
def _allocate(rng, theta, u, T1s, T2s, cnt, lm, nu0, psi, kappa0, Psi, L, force):
    """Allocate theta[u] (not in either side) to side 0 or 1 with probability ~ count x predictive;
    force >= 0 takes that side. Updates the sides' stats and log marginals; returns (side, log prob)."""
    x = theta[u]
    l0 = _with_x(T1s, T2s, cnt, 0, x, nu0, psi, kappa0, Psi, L)
    l1 = _with_x(T1s, T2s, cnt, 1, x, nu0, psi, kappa0, Psi, L)
    a = math.log(cnt[0]) + l0 - lm[0]
    b = math.log(cnt[1]) + l1 - lm[1]
    top = max(a, b)
    lz = top + math.log(math.exp(a - top) + math.exp(b - top))
    if force >= 0:
        side = force
    else:
        side = 1 if rng.random() < math.exp(b - lz) else 0
    _shift(T1s, T2s, cnt, side, x, 1)
    lm[side] = l1 if side == 1 else l0
    return side, (b if side == 1 else a) - lz


@njit(cache=CACHE)
def split_merge(rng, c, theta, n, T1, T2, alpha, nu0, psi, kappa0, bandwidth):
    """One sequentially-allocated split-merge move (Dahl 2003) between learned components, stick
    fractions integrated out. The pair (i, j) is i uniform and j, with probability 1/2, uniform, else
    drawn by a Gaussian kernel of `bandwidth` in theta; the move leaves theta unchanged, so the pair's
    probability is the same forwards and backwards and cancels. A split allocates the others of c_i
    one at a time to i's or j's side (probability ~ count x predictive); a merge's reverse is that
    allocation reaching the current two components. Returns 0 (no move possible), 1 / 2 (split proposed, rejected / accepted), 3 / 4 (merge proposed,
    rejected / accepted)."""
    U, d = theta.shape
    K = T1.shape[0]
    if U < 2:
        return 0
    i = rng.integers(0, U)
    if rng.random() < 0.5 or bandwidth <= 0.0:
        j = rng.integers(0, U - 1)
        if j >= i:
            j += 1
    else:                          # a neighbour of i in theta: a merge worth proposing, or a close pair split
        kern = np.empty(U)
        tot = 0.0
        for u in range(U):
            if u == i:
                kern[u] = 0.0
                continue
            q = 0.0
            for a in range(d):
                q += (theta[u, a] - theta[i, a]) ** 2
            kern[u] = math.exp(-0.5 * q / (bandwidth * bandwidth))
            tot += kern[u]
        x = rng.random() * tot
        j = U - 1 if i != U - 1 else U - 2
        acc = 0.0
        for u in range(U):
            acc += kern[u]
            if kern[u] > 0.0 and x < acc:
                j = u
                break
    ki, kj = c[i], c[j]
    if ki == K or kj == K:
        return 0
    empties = 0
    for k in range(K):
        if n[k] == 0:
            empties += 1
    is_split = ki == kj
    if is_split and empties == 0:
        return 0
    Psi, L = np.empty((d, d)), np.empty((d, d))
    m = 0
    members = np.empty(U, dtype=np.int64)
    for u in range(U):
        if (c[u] == ki or c[u] == kj) and u != i and u != j:
            members[m] = u
            m += 1
    members = members[:m][rng.permutation(m)]
    T1s, T2s = np.zeros((2, d)), np.zeros((2, d, d))
    cnt = np.zeros(2, dtype=np.int64)
    _shift(T1s, T2s, cnt, 0, theta[i], 1)
    _shift(T1s, T2s, cnt, 1, theta[j], 1)
    lm = np.empty(2)
    for sd in range(2):
        lm[sd] = log_marginal(1, T1s[sd], T2s[sd], nu0, psi, kappa0, Psi, L)
    side = np.empty(m, dtype=np.int64)
    log_q = 0.0
    for t in range(m):                 # a split draws each side; a merge's reverse takes the current one
        force = -1 if is_split else (1 if c[members[t]] == kj else 0)
        side[t], lp = _allocate(rng, theta, members[t], T1s, T2s, cnt, lm, nu0, psi, kappa0, Psi, L, force)
        log_q += lp
    n_new = n.copy()
    if is_split:
        pick = rng.integers(0, empties)
        l = -1
        for k in range(K):
            if n[k] == 0:
                if pick == 0:
                    l = k
                    break
                pick -= 1
        lm_all = log_marginal(n[ki], T1[ki], T2[ki], nu0, psi, kappa0, Psi, L)
        n_new[ki] = cnt[0]
        n_new[l] = cnt[1]
        log_acc = (log_assignment_prior(n_new, alpha) - log_assignment_prior(n, alpha) + lm[0] + lm[1] - lm_all
                   - log_q + math.log(empties))
        if math.log(rng.random()) >= log_acc:
            return 1
        c[j] = l
        for t in range(m):
            if side[t] == 1:
                c[members[t]] = l
        n[ki] = cnt[0]
        n[l] = cnt[1]
        T1[ki] = T1s[0]
        T2[ki] = T2s[0]
        T1[l] = T1s[1]
        T2[l] = T2s[1]
        return 2
    lmA, lmB = lm[0], lm[1]
    T1m = T1[ki] + T1[kj]
    T2m = T2[ki] + T2[kj]
    lm_all = log_marginal(n[ki] + n[kj], T1m, T2m, nu0, psi, kappa0, Psi, L)
    n_new[ki] = n[ki] + n[kj]
    n_new[kj] = 0
    log_acc = (log_assignment_prior(n_new, alpha) - log_assignment_prior(n, alpha) + lm_all - lmA - lmB + log_q
               - math.log(empties + 1))
    if math.log(rng.random()) >= log_acc:
        return 3
    for u in range(U):
        if c[u] == kj:
            c[u] = ki
    n[ki] = n_new[ki]
    n[kj] = 0
    T1[ki] = T1m
    T2[ki] = T2m
    T1[kj] = 0.0
    T2[kj] = 0.0
    return 4


@njit(cache=CACHE)
def label_swaps(rng, c, n, T1, T2, alpha, tries):
    """`tries` Metropolis moves that swap the labels of two learned slots (the partition unchanged),
    stick fractions integrated out (the stick-breaking prior is not exchangeable); returns the number accepted."""
    K = T1.shape[0]
    U = c.shape[0]
    accepted = 0
    if K < 2:
        return 0
    for _ in range(tries):
        k = rng.integers(0, K)
        l = rng.integers(0, K - 1)
        if l >= k:
            l += 1
        if n[k] == n[l]:
            continue
        lp0 = log_assignment_prior(n, alpha)
        nk = n[k]
        n[k] = n[l]
        n[l] = nk
        if math.log(rng.random()) >= log_assignment_prior(n, alpha) - lp0:
            n[l] = n[k]
            n[k] = nk
            continue
        accepted += 1
        for u in range(U):
            if c[u] == k:
                c[u] = l
            elif c[u] == l:
                c[u] = k
        a1 = T1[k].copy()
        a2 = T2[k].copy()
        T1[k] = T1[l]
        T2[k] = T2[l]
        T1[l] = a1
        T2[l] = a2
    return accepted
