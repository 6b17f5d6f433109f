"""Kernels of the per-user belief and the pair rules: one click into a mixture belief,
greedy pairs and the knowledge-gradient lookahead (twins of ``inference.mixture_belief`` and
``online.lookahead_reference``)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.constants import LOOKAHEAD_RTOL, PRUNE_NATS
from inference.kernels._scalar import _sigmoid, click_mode, click_modes_both, probit_log_predictive
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def eta_prior(m, S, z, Sz):
    """Mean a and variance s >= 0 of eta = z . theta under N(theta; m, S); fills Sz [d] = S z."""
    d = m.shape[0]
    a = 0.0
    s = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += S[i, j] * z[j]
        Sz[i] = acc
        a += m[i] * z[i]
    for i in range(d):
        s += Sz[i] * z[i]
    return a, max(s, 0.0)


@njit(cache=CACHE)
def rank_one_step(m, S, Sz, shift, k):
    """A Gaussian's one-click step along Sz = S z, in place: m += Sz shift, S -= Sz Sz' k."""
    d = m.shape[0]
    for i in range(d):
        m[i] += Sz[i] * shift
        for j in range(d):
            S[i, j] -= Sz[i] * Sz[j] * k


@njit(cache=CACHE)
def normalised(lp, active):
    """(lp minus its log-sum-exp over the active slots, -inf elsewhere; that log-sum-exp)."""
    top = -np.inf
    for c in range(lp.shape[0]):
        if active[c]:
            top = max(top, lp[c])
    tot = 0.0
    for c in range(lp.shape[0]):
        if active[c]:
            tot += math.exp(lp[c] - top)
    norm = top + math.log(tot)
    out = np.full(lp.shape[0], -np.inf)
    for c in range(lp.shape[0]):
        if active[c]:
            out[c] = lp[c] - norm
    return out, norm


@njit(cache=CACHE)
def mixture_update(log_w, means, covs, active, z, y):
    """One click into a mixture belief; returns (log_w, means, covs, log p(y | belief)).

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
        lp[c] = log_w[c] + probit_log_predictive(a, s, y)
        eta = click_mode(a, s, y)
        p = _sigmoid(eta)
        w = p * (1.0 - p)
        shift = (eta - a) / s if s > 0.0 else 0.0
        rank_one_step(new_m[c], new_S[c], Sz, shift, w / (1.0 + w * s))
    new_w, log_pred = normalised(lp, active)
    return new_w, new_m, new_S, log_pred


@njit(cache=CACHE)
def update_both(log_w, means, covs, active, alone_log_w, alone_means, alone_covs, z, y):
    """One click into the population belief and the no-transfer belief (one call from Python)."""
    one = np.ones(alone_log_w.shape[0], dtype=np.bool_)
    w1, m1, S1, lp1 = mixture_update(log_w, means, covs, active, z, y)
    w2, m2, S2, lp2 = mixture_update(alone_log_w, alone_means, alone_covs, one, z, y)
    return w1, m1, S1, lp1, w2, m2, S2, lp2


@njit(cache=CACHE)
def _mean_theta(log_w, means, active):
    C, d = means.shape
    out = np.zeros(d)
    for c in range(C):
        if active[c]:
            w = math.exp(log_w[c])
            for i in range(d):
                out[i] += w * means[c, i]
    return out


@njit(cache=CACHE)
def recalibrated(Phi, A):
    """Phi [K, d] with its rater column g replaced by A g."""
    K = Phi.shape[0]
    P = Phi.copy()
    for p in range(K):
        acc = 0.0
        for q in range(K):
            acc += A[p, q] * Phi[q, -1]
        P[p, -1] = acc
    return P


@njit(cache=CACHE)
def _utilities(P, theta):
    K, d = P.shape
    u = np.empty(K)
    for p in range(K):
        acc = 0.0
        for i in range(d):
            acc += P[p, i] * theta[i]
        u[p] = acc
    return u


@njit(cache=CACHE)
def _top2(u):
    a = -np.inf
    b = -np.inf
    for x in u:
        if x > a:
            b = a
            a = x
        elif x > b:
            b = x
    return a + b


@njit(cache=CACHE)
def greedy_pair(u):
    """Top two of u [K], best first; the lower index wins ties (as a stable argsort)."""
    i = 0
    for p in range(1, u.shape[0]):
        if u[p] > u[i]:
            i = p
    j = -1
    for p in range(u.shape[0]):
        if p != i and (j < 0 or u[p] > u[j]):
            j = p
    return i, j


@njit(cache=CACHE)
def mixture_greedy(log_w, means, active, P):
    """The greedy pair under the belief's mean theta (active components only): the top two utilities of P, the larger first."""
    return greedy_pair(_utilities(P, _mean_theta(log_w, means, active)))


@njit(cache=CACHE)
def lookahead_scores(log_w, means, covs, active, P, bank, remaining):
    """Knowledge-gradient scores of the unordered pairs (i < j, lexicographic), lower is better.

    P [K, d] this question's recalibrated features, bank [B, K, d] recalibrated recent
    questions. As ``online.lookahead_reference.lookahead_scores``: only the mean of the belief after
    the click is needed, so covariances are not updated, and components under
    exp(-PRUNE_NATS) of the heaviest are left out of the future term.
    """
    C, d = means.shape
    K = P.shape[0]
    B = bank.shape[0]
    mu = _utilities(P, _mean_theta(log_w, means, active))
    scores = np.empty(K * (K - 1) // 2)
    top_w = -np.inf
    for c in range(C):
        if active[c]:
            top_w = max(top_w, log_w[c])
    keep = np.empty(C, dtype=np.int64)
    nk = 0
    for c in range(C):
        if active[c] and log_w[c] >= top_w - PRUNE_NATS:
            keep[nk] = c
            nk += 1
    # per kept component: S_c P_p [K, d], m_c . P_p [K], P_p' S_c P_q [K, K]
    SP = np.empty((nk, K, d))
    mP = np.empty((nk, K))
    PSP = np.empty((nk, K, K))
    for k in range(nk):
        c = keep[k]
        for p in range(K):
            acc_m = 0.0
            for r in range(d):
                acc = 0.0
                for t in range(d):
                    acc += covs[c, r, t] * P[p, t]
                SP[k, p, r] = acc
                acc_m += means[c, r] * P[p, r]
            mP[k, p] = acc_m
        for p in range(K):
            for q in range(K):
                acc = 0.0
                for r in range(d):
                    acc += P[p, r] * SP[k, q, r]
                PSP[k, p, q] = acc
    a = np.empty(nk)
    s = np.empty(nk)
    pa = np.empty(nk)
    q1 = np.empty(nk)
    mbar = np.empty((2, d))
    etas = np.empty((nk, 2))      # each kept component's mode of eta after a click of 0, of 1
    wk = np.empty(nk)            # kept components' weights, normalised over the kept ones
    tot = 0.0
    for k in range(nk):
        wk[k] = math.exp(log_w[keep[k]] - top_w)
        tot += wk[k]
    for k in range(nk):
        wk[k] /= tot
    n = 0
    for i in range(K):
        for j in range(i + 1, K):
            now = -(mu[i] + mu[j])
            if remaining <= 0 or B == 0:
                scores[n] = now
                n += 1
                continue
            for k in range(nk):
                a[k] = mP[k, i] - mP[k, j]
                s[k] = max(PSP[k, i, i] - PSP[k, i, j] - PSP[k, j, i] + PSP[k, j, j], 0.0)
            for k in range(nk):          # p(y = 1 | k), probit-approximated, from one exp
                x = a[k] / math.sqrt(1.0 + math.pi * s[k] / 8.0)
                ex = math.exp(-abs(x))
                q1[k] = 1.0 / (1.0 + ex) if x >= 0 else ex / (1.0 + ex)
                pa[k] = _sigmoid(a[k])
            p1 = 0.0
            for k in range(nk):
                p1 += wk[k] * q1[k]
            for k in range(nk):
                etas[k, 0], etas[k, 1] = click_modes_both(a[k], s[k], LOOKAHEAD_RTOL, pa[k])
            for y in range(2):
                py = p1 if y == 1 else 1.0 - p1
                for t in range(d):
                    mbar[y, t] = 0.0
                for k in range(nk):
                    c = keep[k]
                    wc = wk[k] * (q1[k] if y == 1 else 1.0 - q1[k]) / py
                    shift = (etas[k, y] - a[k]) / s[k] if s[k] > 0.0 else 0.0
                    for t in range(d):
                        mbar[y, t] += wc * (means[c, t] + (SP[k, i, t] - SP[k, j, t]) * shift)
            p0 = 1.0 - p1
            fut = 0.0
            for q in range(B):
                a1 = -np.inf
                b1 = -np.inf
                a0 = -np.inf
                b0 = -np.inf
                am = -np.inf
                bm = -np.inf
                for p in range(K):
                    x1 = 0.0
                    x0 = 0.0
                    for t in range(d):
                        x1 += bank[q, p, t] * mbar[1, t]
                        x0 += bank[q, p, t] * mbar[0, t]
                    xm = p1 * x1 + p0 * x0
                    if x1 > a1:
                        b1 = a1
                        a1 = x1
                    elif x1 > b1:
                        b1 = x1
                    if x0 > a0:
                        b0 = a0
                        a0 = x0
                    elif x0 > b0:
                        b0 = x0
                    if xm > am:
                        bm = am
                        am = xm
                    elif xm > bm:
                        bm = xm
                fut += p1 * (a1 + b1) + p0 * (a0 + b0) - (am + bm)
            scores[n] = now - remaining * fut / B
            n += 1
    return scores, mu


@njit(cache=CACHE)
def lookahead_pair(log_w, means, covs, active, P, bank, remaining):
    """Argmin of the lookahead scores (the earliest pair on ties), the larger mean utility shown first."""
    scores, mu = lookahead_scores(log_w, means, covs, active, P, bank, remaining)
    K = P.shape[0]
    best = 0
    for n in range(1, scores.shape[0]):
        if scores[n] < scores[best]:
            best = n
    n = 0
    bi, bj = 0, 1
    for i in range(K):
        for j in range(i + 1, K):
            if n == best:
                bi, bj = i, j
            n += 1
    if mu[bj] > mu[bi]:
        return bj, bi
    return bi, bj


@njit(cache=CACHE)
def lookahead_bank(bank, n_bank, P):
    """The lookahead's bank [min(n_bank, B - 1) + 1, K, d]: the newest min(n_bank, B - 1) rows of
    bank [B, K, d] (its newest last), then this question P [K, d]."""
    B = bank.shape[0]
    keep = min(n_bank, B - 1)
    K, d = P.shape
    out = np.empty((keep + 1, K, d))
    for b in range(keep + 1):       # element by element: a slice assignment compiles numba's shape-error text
        src = bank[B - keep + b] if b < keep else P
        for k in range(K):
            for j in range(d):
                out[b, k, j] = src[k, j]
    return out


@njit(cache=CACHE)
def coduel_pair(log_w, means, covs, active, Phi, A, bank_P, n_bank, remaining, lookahead):
    """CODuel's pair for the question Phi [K, d] under recalibration A [K, K]: the lookahead pair over
    the bank of recalibrated recent questions with this one last (`lookahead_bank`), or the greedy
    pair. One call from Python for `recalibrated`, `lookahead_bank` and `lookahead_pair` /
    `mixture_greedy`."""
    P = recalibrated(Phi, A)
    if lookahead:
        return lookahead_pair(log_w, means, covs, active, P, lookahead_bank(bank_P, n_bank, P), remaining)
    return mixture_greedy(log_w, means, active, P)
