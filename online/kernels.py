"""Compiled (numba) kernels for CODuel's hot path: one click into a mixture belief, the pair
rules, batches of Laplace fits, and the recalibration fit.

Each kernel computes exactly what its NumPy counterpart computes (``online.mixture_belief``,
``online.pair_rules``, ``inference.laplace.laplace_fit_batch``,
``inference.recalibration_fit``): same Newton iterations, same tolerances, same tie-breaks,
so the two engines agree to rounding (tests/online/test_kernels.py). Kernels never write
to their inputs; they allocate and return new arrays, which keeps the functional core pure.

Why compiled loops and not JAX: shapes are tiny (17 components, d = 7, 6 personas), and
XLA on CPU spends more on dispatch than on the arithmetic (NOTES-inference.md: jitted
steps 3x slower than numba for this learner). Hand-written 7x7 Cholesky beats LAPACK
calls at this size.

Components are fixed slots; `active[c]` says which hold a component. Inactive slots are
skipped everywhere (their log weight is -inf).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

NEWTON_ITERS = 100            # scalar one-click step, as inference.laplace
NEWTON_RTOL = 1e-12
PRUNE_NATS = 20.0             # lookahead: components under exp(-20) of the heaviest are left out
RESP_FLOOR = 1e-12            # E-step: responsibilities below this are set to 0 (moments not stored)
LOOKAHEAD_RTOL = 1e-6         # lookahead: only means after a hypothetical click are needed
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@njit(cache=True)
def _sigmoid(x):
    return 0.5 * (1.0 + math.tanh(0.5 * x))


@njit(cache=True)
def _log_sigmoid(x):
    # -log(1 + exp(-x)), stable both ways
    if x >= 0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(cache=True)
def _softplus(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


@njit(cache=True)
def click_mode(a, s, y, rtol=NEWTON_RTOL, p_a=-1.0):
    """Mode of N(eta; a, s) x Bernoulli(y; sigmoid(eta)); the algorithm of inference.laplace.click_mode.
    p_a = sigmoid(a) when the caller has it (both outcomes start from the same point)."""
    if s <= 0.0:
        return a
    eta = a
    if y:
        lo, hi = a, a + s
    else:
        lo, hi = a - s, a
    dx_old = 2.0 * s
    for it in range(NEWTON_ITERS):
        p = p_a if it == 0 and p_a >= 0.0 else _sigmoid(eta)
        g = (y - p) - (eta - a) / s
        if g > 0:
            lo = eta
        else:
            hi = eta
        dx = g / (p * (1.0 - p) + 1.0 / s)
        if abs(dx) < rtol * (1.0 + abs(eta)):
            return eta + dx
        if lo < eta + dx < hi and abs(dx) <= 0.5 * abs(dx_old):
            eta = eta + dx
        else:
            dx = 0.5 * (lo + hi) - eta
            eta = 0.5 * (lo + hi)
        dx_old = dx
    return eta


@njit(cache=True)
def probit_log_predictive(a, s, y):
    x = a / math.sqrt(1.0 + math.pi * s / 8.0)
    return _log_sigmoid(x if y else -x)


@njit(cache=True)
def mixture_update(log_w, means, covs, active, z, y):
    """One click into a mixture belief; returns (log_w, means, covs, log p(y | belief)).

    log_w [C], means [C, d], covs [C, d, d], active [C] bool, z [d], y in {0, 1}.
    """
    C, d = means.shape
    new_w = np.full(C, -np.inf)
    new_m = means.copy()
    new_S = covs.copy()
    lp = np.empty(C)
    top = -np.inf
    Sz = np.empty(d)
    for c in range(C):
        if not active[c]:
            continue
        a = 0.0
        s = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += covs[c, i, j] * z[j]
            Sz[i] = acc
            a += means[c, i] * z[i]
        for i in range(d):
            s += Sz[i] * z[i]
        s = max(s, 0.0)
        lp[c] = log_w[c] + probit_log_predictive(a, s, y)
        top = max(top, lp[c])
        eta = click_mode(a, s, y)
        p = _sigmoid(eta)
        w = p * (1.0 - p)
        shift = (eta - a) / s if s > 0.0 else 0.0
        k = w / (1.0 + w * s)
        for i in range(d):
            new_m[c, i] += Sz[i] * shift
            for j in range(d):
                new_S[c, i, j] -= Sz[i] * Sz[j] * k
    tot = 0.0
    for c in range(C):
        if active[c]:
            tot += math.exp(lp[c] - top)
    log_pred = top + math.log(tot)
    for c in range(C):
        if active[c]:
            new_w[c] = lp[c] - log_pred
    return new_w, new_m, new_S, log_pred


@njit(cache=True)
def update_both(log_w, means, covs, active, alone_log_w, alone_means, alone_covs, z, y):
    """One click into the population belief and the no-transfer belief (one call from Python)."""
    one = np.ones(alone_log_w.shape[0], dtype=np.bool_)
    w1, m1, S1, lp1 = mixture_update(log_w, means, covs, active, z, y)
    w2, m2, S2, lp2 = mixture_update(alone_log_w, alone_means, alone_covs, one, z, y)
    return w1, m1, S1, lp1, w2, m2, S2, lp2


@njit(cache=True)
def _mean_theta(log_w, means, active):
    C, d = means.shape
    out = np.zeros(d)
    for c in range(C):
        if active[c]:
            w = math.exp(log_w[c])
            for i in range(d):
                out[i] += w * means[c, i]
    return out


@njit(cache=True)
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


@njit(cache=True)
def _utilities(P, theta):
    K, d = P.shape
    u = np.empty(K)
    for p in range(K):
        acc = 0.0
        for i in range(d):
            acc += P[p, i] * theta[i]
        u[p] = acc
    return u


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def mixture_greedy(log_w, means, active, P):
    return greedy_pair(_utilities(P, _mean_theta(log_w, means, active)))


@njit(cache=True)
def lookahead_scores(log_w, means, covs, active, P, bank, remaining):
    """Knowledge-gradient scores of the unordered pairs (i < j, lexicographic), lower is better.

    P [K, d] this question's recalibrated features, bank [B, K, d] recalibrated recent
    questions. As ``online.pair_rules.lookahead_scores``: only the mean of the belief after
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
            for y in range(2):
                py = p1 if y == 1 else 1.0 - p1
                for t in range(d):
                    mbar[y, t] = 0.0
                for k in range(nk):
                    c = keep[k]
                    wc = wk[k] * (q1[k] if y == 1 else 1.0 - q1[k]) / py
                    eta = click_mode(a[k], s[k], y, LOOKAHEAD_RTOL, pa[k])
                    shift = (eta - a[k]) / s[k] if s[k] > 0.0 else 0.0
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


@njit(cache=True)
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


# ----------------------------------------------------------------------------- Laplace fits

@njit(cache=True)
def _cholesky(A, L):
    """Lower Cholesky factor of A into L; False if A is not positive definite."""
    d = A.shape[0]
    for i in range(d):
        for j in range(i + 1):
            acc = A[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                if acc <= 0.0:
                    return False
                L[i, i] = math.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
        for j in range(i + 1, d):
            L[i, j] = 0.0
    return True


@njit(cache=True)
def _chol_solve(L, b, out):
    d = L.shape[0]
    for i in range(d):
        acc = b[i]
        for k in range(i):
            acc -= L[i, k] * out[k]
        out[i] = acc / L[i, i]
    for i in range(d - 1, -1, -1):
        acc = out[i]
        for k in range(i + 1, d):
            acc -= L[k, i] * out[k]
        out[i] = acc / L[i, i]


@njit(cache=True)
def _objective(Zu, yu, theta, m, P, eta, ex):
    """Negative log posterior at theta; fills eta [S] = Zu theta and ex [S] = exp(-|eta|)."""
    S, d = Zu.shape
    f = 0.0
    for i in range(d):
        ri = theta[i] - m[i]
        for j in range(d):
            f += 0.5 * ri * P[i, j] * (theta[j] - m[j])
    for t in range(S):
        e = 0.0
        for i in range(d):
            e += Zu[t, i] * theta[i]
        eta[t] = e
        x = math.exp(-abs(e))
        ex[t] = x
        f += max(e, 0.0) + math.log1p(x) - yu[t] * e
    return f


@njit(cache=True)
def _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H):
    """Gradient of the log posterior and Hessian of the negative one, from eta and ex = exp(-|eta|)."""
    S, d = Zu.shape
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc -= P[i, j] * (theta[j] - m[j])
            H[i, j] = P[i, j]
        grad[i] = acc
    for t in range(S):
        x = ex[t]
        p = 1.0 / (1.0 + x) if eta[t] >= 0 else x / (1.0 + x)
        w = x / ((1.0 + x) * (1.0 + x))
        r = yu[t] - p
        for i in range(d):
            grad[i] += Zu[t, i] * r
            wi = w * Zu[t, i]
            for j in range(d):
                H[i, j] += wi * Zu[t, j]


@njit(cache=True)
def spd_factors(mats):
    """Inverses [B, d, d] and log determinants [B] of symmetric positive definite mats [B, d, d]
    (NaN where a matrix is not positive definite)."""
    B, d, _ = mats.shape
    inv = np.empty((B, d, d))
    logdet = np.empty(B)
    L = np.empty((d, d))
    e, col = np.empty(d), np.empty(d)
    for b in range(B):
        if not _cholesky(mats[b], L):
            inv[b] = np.nan
            logdet[b] = np.nan
            continue
        acc = 0.0
        for i in range(d):
            acc += 2.0 * math.log(L[i, i])
            e[:] = 0.0
            e[i] = 1.0
            _chol_solve(L, e, col)
            for j in range(d):
                inv[b, j, i] = col[j]
        logdet[b] = acc
    return inv, logdet


@njit(cache=True)
def laplace_units(Z, y, users, comps, comp_means, comp_precs, comp_logdets, init, iters=50, tol=1e-10):
    """Laplace fits of units b: user users[b] under the prior N(comp_means[c], inv(comp_precs[c])),
    c = comps[b].

    Z [n, S, d], y [n, S]; comp_logdets [C] = log det of the prior covariances; init [B, d].
    Returns (modes [B, d], covs [B, d, d], log_evidence [B], converged [B] bool); the same
    Newton with backtracking and stopping rule as ``inference.laplace.laplace_fit_batch``.
    """
    B, d = init.shape
    S = Z.shape[1]
    modes = init.copy()
    covs = np.empty((B, d, d))
    log_ev = np.empty(B)
    ok = np.zeros(B, dtype=np.bool_)
    H = np.empty((d, d))
    L = np.empty((d, d))
    grad = np.empty(d)
    step = np.empty(d)
    trial = np.empty(d)
    eta = np.empty(S)
    eta_trial = np.empty(S)
    ex = np.empty(S)
    ex_trial = np.empty(S)
    e = np.empty(d)
    col = np.empty(d)
    for b in range(B):
        Zu = Z[users[b]]
        yu = y[users[b]]
        c = comps[b]
        m = comp_means[c]
        P = comp_precs[c]
        theta = modes[b]
        f = _objective(Zu, yu, theta, m, P, eta, ex)
        for _ in range(iters):
            _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H)
            if not _cholesky(H, L):
                break
            _chol_solve(L, grad, step)
            tt = 1.0
            while True:      # backtracking: Newton alone can cycle on flat logistic tails
                for i in range(d):
                    trial[i] = theta[i] + tt * step[i]
                f_new = _objective(Zu, yu, trial, m, P, eta_trial, ex_trial)
                if f_new > f + 1e-10 * (1.0 + abs(f)) and tt > 1e-10:
                    tt *= 0.5
                else:
                    break
            big = 0.0
            for i in range(d):
                big = max(big, abs(tt * step[i]))
                theta[i] = trial[i]
            eta[:] = eta_trial
            ex[:] = ex_trial
            f = f_new
            if big < tol:
                ok[b] = True
                break
        _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H)
        if not _cholesky(H, L):
            ok[b] = False
            log_ev[b] = -np.inf
            continue
        logdet_H = 0.0
        for i in range(d):
            logdet_H += 2.0 * math.log(L[i, i])
            e[:] = 0.0
            e[i] = 1.0
            _chol_solve(L, e, col)
            for j in range(d):
                covs[b, j, i] = col[j]
        # log p(y | theta) + log N(theta; m, P^-1) + d/2 log 2pi - 1/2 log det H
        log_ev[b] = -f - 0.5 * comp_logdets[c] - 0.5 * logdet_H
    return modes, covs, log_ev, ok


@njit(cache=True)
def _inverse_from_chol(L, out, e, col):
    d = L.shape[0]
    for i in range(d):
        e[:] = 0.0
        e[i] = 1.0
        _chol_solve(L, e, col)
        for j in range(d):
            out[j, i] = col[j]


@njit(cache=True)
def _surrogate_one(u, c, lik_prec, lik_lin, lik_const, comp_means, comp_precs, comp_logdets, mode, Q, L, rhs, col):
    """One unit of `surrogate_units`: writes mode [d] and the Cholesky factor L of the posterior
    precision, returns the log evidence (-inf if the precision is not positive definite)."""
    d = comp_means.shape[1]
    P = comp_precs[c]
    m = comp_means[c]
    mPm = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            Q[i, j] = lik_prec[u, i, j] + P[i, j]
            acc += P[i, j] * m[j]
        rhs[i] = lik_lin[u, i] + acc
        mPm += m[i] * acc
    if not _cholesky(Q, L):
        mode[:] = m
        return -np.inf
    _chol_solve(L, rhs, col)
    quad = 0.0
    logdet_Q = 0.0
    for i in range(d):
        mode[i] = col[i]
        quad += rhs[i] * col[i]
        logdet_Q += 2.0 * math.log(L[i, i])
    return lik_const[u] - 0.5 * mPm - 0.5 * comp_logdets[c] - 0.5 * logdet_Q + 0.5 * quad


@njit(cache=True)
def surrogate_units(users, comps, lik_prec, lik_lin, lik_const, comp_means, comp_precs, comp_logdets):
    """Closed-form fits of units under a Gaussian surrogate of each user's likelihood,
    exp(c_u - theta' Lam_u theta / 2 + h_u' theta); as ``online.population.surrogate_units``.

    Returns (modes [B, d], covs [B, d, d], log_evidence [B]).
    """
    B = users.shape[0]
    d = comp_means.shape[1]
    modes = np.empty((B, d))
    covs = np.empty((B, d, d))
    log_ev = np.empty(B)
    Q, L = np.empty((d, d)), np.empty((d, d))
    rhs, e, col = np.empty(d), np.empty(d), np.empty(d)
    for b in range(B):
        log_ev[b] = _surrogate_one(users[b], comps[b], lik_prec, lik_lin, lik_const, comp_means, comp_precs,
                                   comp_logdets, modes[b], Q, L, rhs, col)
        if np.isfinite(log_ev[b]):
            _inverse_from_chol(L, covs[b], e, col)
        else:
            covs[b] = 0.0
    return modes, covs, log_ev


@njit(cache=True)
def surrogate_estep(users, active, log_w, comp_means, comp_precs, comp_logdets, lik_prec, lik_lin, lik_const,
                    resp, unit_modes, unit_covs, T0, T1, T2):
    """The surrogate E-step of ``online.population._e_step`` for `users`, in place.

    Refits every active unit of each user in closed form, replaces the user's responsibilities
    resp [n, C] and moments unit_modes [n, C, d], unit_covs [n, C, d, d], and moves its share
    of the running totals T0 [C], T1 [C, d], T2 [C, d, d] (sums of r, r m, r (S + m m^T)).
    Returns log w_k + log p(y_u | k) [len(users), C], -inf on inactive slots.
    """
    C, d = comp_means.shape
    nu = users.shape[0]
    joint = np.full((nu, C), -np.inf)
    act = np.empty(C, dtype=np.int64)
    na = 0
    for c in range(C):
        if active[c]:
            act[na] = c
            na += 1
    Q = np.empty((d, d))
    Ls = np.empty((C, d, d))
    rhs, e, col = np.empty(d), np.empty(d), np.empty(d)
    for b in range(nu):
        u = users[b]
        for c in range(C):            # take the user's old share out of the totals
            r = resp[u, c]
            if r != 0.0:
                T0[c] -= r
                for i in range(d):
                    T1[c, i] -= r * unit_modes[u, c, i]
                    for j in range(d):
                        T2[c, i, j] -= r * (unit_covs[u, c, i, j] + unit_modes[u, c, i] * unit_modes[u, c, j])
            resp[u, c] = 0.0
        top = -np.inf
        for k in range(na):
            c = act[k]
            ev = _surrogate_one(u, c, lik_prec, lik_lin, lik_const, comp_means, comp_precs, comp_logdets,
                                unit_modes[u, c], Q, Ls[c], rhs, col)
            joint[b, c] = log_w[c] + ev
            top = max(top, joint[b, c])
        tot = 0.0
        for k in range(na):
            tot += math.exp(joint[b, act[k]] - top)
        kept = 0.0
        for k in range(na):
            c = act[k]
            r = math.exp(joint[b, c] - top) / tot
            if r >= RESP_FLOOR:
                resp[u, c] = r
                kept += r
        for k in range(na):
            c = act[k]
            if resp[u, c] == 0.0:
                continue
            r = resp[u, c] / kept
            resp[u, c] = r
            _inverse_from_chol(Ls[c], unit_covs[u, c], e, col)
            T0[c] += r
            for i in range(d):
                T1[c, i] += r * unit_modes[u, c, i]
                for j in range(d):
                    T2[c, i, j] += r * (unit_covs[u, c, i, j] + unit_modes[u, c, i] * unit_modes[u, c, j])
    return joint


# ----------------------------------------------------------------------------- recalibration

@njit(cache=True)
def _recal_objective(w, off, idx, val, y, pen, target, eta, ex):
    """Penalised negative log likelihood at w; fills eta [n] and ex [n] = exp(-|eta|)."""
    f = 0.0
    for k in range(w.shape[0]):
        f += 0.5 * pen[k] * (w[k] - target[k]) ** 2
    for u in range(off.shape[0]):
        e = off[u]
        for k in range(idx.shape[1]):
            e += val[u, k] * w[idx[u, k]]
        eta[u] = e
        x = math.exp(-abs(e))
        ex[u] = x
        f += max(e, 0.0) + math.log1p(x) - y[u] * e
    return f


@njit(cache=True)
def recalibration_newton(first, second, rater, theta, y, ridge, ridge_a, w0, iters=50, tol=1e-10):
    """MAP of w = (a, vec A') as ``inference.recalibration_fit.fit_recalibration_map``, from w0.

    first, second [n] int, rater [n, K], theta [n, K + 1], y [n]. Each click's Jacobian row
    has 2K + 1 nonzeros (a, and rows first and second of A'), which this loop exploits.
    Returns (w [1 + K*K], iterations; -1 when Newton did not converge).
    """
    n, K = rater.shape
    D = 1 + K * K
    nz = 2 * K + 1
    w = w0.copy()
    pen = np.full(D, ridge)
    pen[0] = ridge_a
    target = np.zeros(D)
    target[0] = 1.0
    idx = np.empty((n, nz), dtype=np.int64)
    val = np.empty((n, nz))
    off = np.empty(n)
    for u in range(n):
        i, j = first[u], second[u]
        wk = theta[u, K]
        off[u] = theta[u, i] - theta[u, j]
        idx[u, 0] = 0
        val[u, 0] = wk * (rater[u, i] - rater[u, j])
        for q in range(K):
            idx[u, 1 + q] = 1 + i * K + q
            val[u, 1 + q] = wk * rater[u, q]
            idx[u, 1 + K + q] = 1 + j * K + q
            val[u, 1 + K + q] = -wk * rater[u, q]
    H = np.empty((D, D))
    L = np.empty((D, D))
    grad = np.empty(D)
    step = np.empty(D)
    trial = np.empty(D)
    eta, ex = np.empty(n), np.empty(n)
    eta_t, ex_t = np.empty(n), np.empty(n)
    f = _recal_objective(w, off, idx, val, y, pen, target, eta, ex)
    for it in range(1, iters + 1):
        for k in range(D):
            grad[k] = pen[k] * (w[k] - target[k])
            for l in range(D):
                H[k, l] = 0.0
            H[k, k] = pen[k]
        for u in range(n):
            x = ex[u]
            p = 1.0 / (1.0 + x) if eta[u] >= 0 else x / (1.0 + x)
            r = p - y[u]
            v = x / ((1.0 + x) * (1.0 + x))
            for k in range(nz):
                a = idx[u, k]
                grad[a] += val[u, k] * r
                vk = v * val[u, k]
                for l in range(nz):
                    H[a, idx[u, l]] += vk * val[u, l]
        if not _cholesky(H, L):
            return w, -1
        _chol_solve(L, grad, step)
        tt = 1.0
        while True:
            for k in range(D):
                trial[k] = w[k] - tt * step[k]
            f_new = _recal_objective(trial, off, idx, val, y, pen, target, eta_t, ex_t)
            if f_new > f + 1e-10 * (1.0 + abs(f)) and tt > 1e-10:
                tt *= 0.5
            else:
                break
        big = 0.0
        for k in range(D):
            big = max(big, abs(tt * step[k]))
            w[k] = trial[k]
        eta[:] = eta_t
        ex[:] = ex_t
        f = f_new
        if big < tol:
            return w, it
    return w, -1
