"""Kernels of the population model's exact sampler (``inference.population_gibbs``): sweeps of the
collapsed sampler over users' assignments and theta.

State: assignments c [U] (slot K is the broad component) and theta [U, d]; each
learned slot's sufficient statistics n [K + 1] (counts, the broad one's too), T1 [K, d] = sum
theta, T2 [K, d, d] = sum theta theta^T are recomputed from them. A learned component's mean and
covariance are integrated out under their Normal-inverse-Wishart prior (nu0, psi I, kappa0; mean 0),
so a user's density under slot k is the multivariate-t predictive given the other members; the
stick fractions are integrated out too (``log_assignment_prior``). Stored draws get the stick
fractions, means and covariances from their exact conditionals.

Random numbers come from numba's generator (seed it with `seed` in the same process); a chain is
reproducible given its seed and the sequence of calls.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.kernels.laplace import _grad_hessian, _surrogate_one, newton_mode
from inference.kernels.linalg import _chol_solve, _cholesky, _inverse_from_chol

LOG_2PI = math.log(2.0 * math.pi)
LOG_PI = math.log(math.pi)
WIDE_SHARE = 0.1             # the proposals' defensive part: its share and scale (see _proposal_logpdf)
WIDE_SCALE = 3.0


@njit(cache=True)
def seed(s):
    """Seed numba's generator in this process (the one the kernels draw from)."""
    np.random.seed(s)


@njit(cache=True)
def _mvlgamma(a, d):
    out = 0.25 * d * (d - 1) * LOG_PI
    for j in range(d):
        out += math.lgamma(a - 0.5 * j)
    return out


@njit(cache=True)
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


@njit(cache=True)
def _psi_n(n, T1k, T2k, psi, kappa0, out):
    """Psi_n = psi I + T2 - T1 T1^T / kappa_n (posterior scale of the NIW, mean 0); returns kappa_n."""
    d = T1k.shape[0]
    kn = kappa0 + n
    for i in range(d):
        for j in range(d):
            out[i, j] = T2k[i, j] - T1k[i] * T1k[j] / kn
        out[i, i] += psi
    return kn


@njit(cache=True)
def _logdet_chol(L):
    d = L.shape[0]
    acc = 0.0
    for i in range(d):
        acc += 2.0 * math.log(L[i, i])
    return acc


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _gauss_iso_logpdf(x, var):
    d = x.shape[0]
    q = 0.0
    for i in range(d):
        q += x[i] * x[i]
    return -0.5 * q / var - 0.5 * d * (math.log(var) + LOG_2PI)


@njit(cache=True)
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


@njit(cache=True)
def _solve_lower_transposed(L, b, out):
    """out = L^-T b for lower-triangular L (back substitution)."""
    d = b.shape[0]
    for i in range(d - 1, -1, -1):
        acc = b[i]
        for k in range(i + 1, d):
            acc -= L[k, i] * out[k]
        out[i] = acc / L[i, i]


@njit(cache=True)
def _proposal_draw(mode, HL, df_q, out, g):
    """A draw of the proposal of `_proposal_logpdf`: mode + f HL^-T g sqrt((df_q - 2) / chi2), with
    f = WIDE_SCALE with probability WIDE_SHARE, else 1."""
    d = mode.shape[0]
    for i in range(d):
        g[i] = np.random.standard_normal()
    chi2 = np.random.chisquare(df_q)
    s = math.sqrt((df_q - 2.0) / chi2)
    if np.random.random() < WIDE_SHARE:
        s *= WIDE_SCALE
    _solve_lower_transposed(HL, g, out)
    for i in range(d):
        out[i] = mode[i] + s * out[i]


@njit(cache=True)
def _proposal_draw_gauss(center, HL, f, out, g):
    """center + f HL^-T g, g standard normal (covariance f^2 H^-1, H = HL HL^T)."""
    d = center.shape[0]
    for i in range(d):
        g[i] = np.random.standard_normal()
    _solve_lower_transposed(HL, g, out)
    for i in range(d):
        out[i] = center[i] + f * out[i]


@njit(cache=True)
def _newton(Zu, yu, theta, m, P, H, L, grad, step, trial, eta, eta_trial, ex, ex_trial, iters, tol):
    """Mode of N(m, P^-1) x the clicks' likelihood from `theta` (in place); leaves the Cholesky factor of
    the negative log posterior's Hessian at the mode in L. False if that factorisation fails."""
    newton_mode(Zu, yu, theta, m, P, H, L, grad, step, trial, eta, eta_trial, ex, ex_trial, iters, tol)
    _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H)
    return _cholesky(H, L)


@njit(cache=True)
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


@njit(cache=True)
def _slot_logpdf(k, K, x, tdf, tloc, tL, tconst, broad_var, w):
    """log density of theta = x under slot k given its other members (t for learned, the broad Gaussian);
    tconst [K] the learned slots' t normalising constants."""
    if k == K:
        return _gauss_iso_logpdf(x, broad_var)
    d = x.shape[0]
    L = tL[k]
    loc = tloc[k]
    for i in range(d):
        acc = x[i] - loc[i]
        for j in range(i):
            acc -= L[i, j] * w[j]
        w[i] = acc / L[i, i]
    delta = 0.0
    for i in range(d):
        delta += w[i] * w[i]
    return tconst[k] - 0.5 * (tdf[k] + d) * math.log1p(delta / tdf[k])


@njit(cache=True)
def _add(k, K, x, n, T1, T2, sign):
    n[k] += sign
    if k == K:
        return
    d = x.shape[0]
    for i in range(d):
        T1[k, i] += sign * x[i]
        for j in range(d):
            T2[k, i, j] += sign * x[i] * x[j]


@njit(cache=True)
def recompute_stats(c, theta, K, n, T1, T2):
    """The slots' counts and sums from scratch (removes the drift of many small updates)."""
    n[:] = 0
    T1[:] = 0.0
    T2[:] = 0.0
    for u in range(c.shape[0]):
        _add(c[u], K, theta[u], n, T1, T2, 1)


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def draw_fractions(n, alpha, v):
    """v_k ~ Beta(1 + n_k, alpha + sum_{j > k} n_j) (the broad slot counted in the rest)."""
    K = v.shape[0]
    m = n[K]
    for k in range(K - 1, -1, -1):
        x = np.random.beta(1.0 + n[k], alpha + m)
        v[k] = min(max(x, 1e-300), 1.0 - 1e-16)
        m += n[k]


@njit(cache=True)
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


@njit(cache=True)
def user_moves(Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, lik_const, alpha, broad_var, nu0, psi, kappa0,
               df_q, refine_nats, newton_iters, rw_scale):
    """One pass of joint (c_u, theta_u) moves over the users, in random order; returns the number accepted.

    For user u, the target is p(c_u = k, theta_u | rest) ~ w_k f_k(theta_u) p(y_u | theta_u),
    w_k = p(c_u = k | c_-u) with the stick fractions integrated out, f_k the slot's density given
    its other members. The proposal depends on the rest only: for every slot a
    Laplace fit of f_k (moment-matched Gaussian) x the clicks, in closed form under the user's
    Gaussian likelihood surrogate and refined by Newton where the slot is within `refine_nats` of the
    best; slot k with probability ~ w_k x its Laplace mass at the exact density, theta_u from a
    multivariate t around that slot's mode with the Laplace covariance and min(df_q, the slot's
    predictive degrees of freedom) (df_q for the broad slot), so that the proposal's tails are
    never lighter than the target's, where the likelihood is flat (the persona indicators' sum). An independence Metropolis-Hastings step on (c_u, theta_u).
    """
    U, S, d = Z.shape
    K = T1.shape[0]
    C = K + 1
    logw = np.empty(C)
    tdf, tconst = np.empty(C), np.empty(C)
    tloc, tL = np.empty((C, d)), np.empty((C, d, d))
    pmean, pprec, plogdet = np.empty((C, d)), np.empty((C, d, d)), np.empty(C)
    modes, HL, hlogdet, score = np.empty((C, d)), np.empty((C, d, d)), np.empty(C), np.empty(C)
    dfq = np.empty(C)
    Q, rhs, col, e, wv, g = np.empty((d, d)), np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    H, grad, step, trial = np.empty((d, d)), np.empty(d), np.empty(d), np.empty(d)
    eta, eta_t, ex, ex_t = np.empty(S), np.empty(S), np.empty(S), np.empty(S)
    inv = np.empty((d, d))
    prop = np.empty(d)
    for i in range(d):                      # the broad slot: N(0, broad_var I)
        pmean[K, i] = 0.0
        for j in range(d):
            pprec[K, i, j] = 0.0
        pprec[K, i, i] = 1.0 / broad_var
    plogdet[K] = d * math.log(broad_var)
    tdf[K] = -1.0
    for k in range(K):
        _slot_params(k, n, T1, T2, nu0, psi, kappa0, tdf, tloc, tL, tconst, pmean, pprec, plogdet, inv, e, col)
    accepted = 0
    order = np.random.permutation(U)
    for idx in range(U):
        u = order[idx]
        Zu, yu, th = Z[u], Y[u], theta[u]
        k0 = c[u]
        _add(k0, K, th, n, T1, T2, -1)
        if k0 < K:                  # slot densities given the other members: only k0 changed
            _slot_params(k0, n, T1, T2, nu0, psi, kappa0, tdf, tloc, tL, tconst, pmean, pprec, plogdet, inv, e, col)
        predictive_log_weights(n, alpha, logw)
        # empty learned slots share one predictive (the prior's), hence one proposal: fit the first only
        e0 = -1
        top = -np.inf
        for k in range(C):
            if k < K and n[k] == 0 and e0 >= 0:
                modes[k] = modes[e0]
                HL[k] = HL[e0]
                score[k] = score[e0] - logw[e0] + logw[k]
            else:
                score[k] = logw[k] + _surrogate_one(u, k, lik_prec, lik_lin, lik_const, pmean, pprec, plogdet,
                                                    modes[k], Q, HL[k], rhs, col)
                if k < K and n[k] == 0:
                    e0 = k
            top = max(top, score[k])
        for k in range(C):
            if k < K and n[k] == 0 and k != e0:
                modes[k] = modes[e0]
                HL[k] = HL[e0]
                hlogdet[k] = hlogdet[e0]
                dfq[k] = dfq[e0]
                score[k] = score[e0] - logw[e0] + logw[k]
                continue
            refined = False
            if score[k] >= top - refine_nats:
                refined = _newton(Zu, yu, modes[k], pmean[k], pprec[k], H, HL[k], grad, step, trial, eta, eta_t,
                                  ex, ex_t, newton_iters, 1e-8)
                if not refined:       # keep the closed-form fit's mode, with its precision
                    _surrogate_one(u, k, lik_prec, lik_lin, lik_const, pmean, pprec, plogdet, modes[k], Q,
                                   HL[k], rhs, col)
            hlogdet[k] = _logdet_chol(HL[k])
            dfq[k] = df_q if k == K else min(df_q, tdf[k])
            # the clicks' log likelihood at the mode: exact where refined, else the surrogate's (cheap;
            # the slot probabilities are part of the proposal, any function of the rest will do)
            ll = _log_lik(Zu, yu, modes[k]) if refined else _surrogate_log_lik(u, modes[k], lik_prec, lik_lin,
                                                                                 lik_const)
            score[k] = (logw[k] + _slot_logpdf(k, K, modes[k], tdf, tloc, tL, tconst, broad_var, wv)
                        + ll + 0.5 * d * LOG_2PI - 0.5 * hlogdet[k])
        top = -np.inf
        for k in range(C):
            top = max(top, score[k])
        tot = 0.0
        for k in range(C):
            tot += math.exp(score[k] - top)
        log_norm = top + math.log(tot)
        x = np.random.random() * tot
        k1 = C - 1
        acc = 0.0
        for k in range(C):
            acc += math.exp(score[k] - top)
            if x < acc:
                k1 = k
                break
        _proposal_draw(modes[k1], HL[k1], dfq[k1], prop, g)
        new = (logw[k1] + _slot_logpdf(k1, K, prop, tdf, tloc, tL, tconst, broad_var, wv) + _log_lik(Zu, yu, prop)
               - (score[k1] - log_norm) - _proposal_logpdf(prop, modes[k1], HL[k1], hlogdet[k1], dfq[k1], wv))
        old = (logw[k0] + _slot_logpdf(k0, K, th, tdf, tloc, tL, tconst, broad_var, wv) + _log_lik(Zu, yu, th)
               - (score[k0] - log_norm) - _proposal_logpdf(th, modes[k0], HL[k0], hlogdet[k0], dfq[k0], wv))
        if math.log(np.random.random()) < new - old:
            c[u] = k1
            th[:] = prop
            accepted += 1
        if rw_scale > 0.0:
            # a random-walk step within the slot, N(0, rw_scale^2 H^-1 / d) (local moves where the
            # independence proposal is poor: the tails of near-separable clicks)
            kk = c[u]
            _proposal_draw_gauss(th, HL[kk], rw_scale / math.sqrt(d), prop, g)
            dlog = (_slot_logpdf(kk, K, prop, tdf, tloc, tL, tconst, broad_var, wv) + _log_lik(Zu, yu, prop)
                    - _slot_logpdf(kk, K, th, tdf, tloc, tL, tconst, broad_var, wv) - _log_lik(Zu, yu, th))
            if math.log(np.random.random()) < dlog:
                th[:] = prop
        _add(c[u], K, th, n, T1, T2, 1)
        if c[u] < K:
            _slot_params(c[u], n, T1, T2, nu0, psi, kappa0, tdf, tloc, tL, tconst, pmean, pprec, plogdet, inv, e,
                         col)
    return accepted


@njit(cache=True)
def _location_target(loc, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, derivs):
    """log p(m | deviations) up to a constant, at m = loc, for one component's members (see
    `translate_clusters`); derivs >= 1: its gradient in grad; derivs = 2: also a positive definite
    curvature in H (the clicks' Fisher information plus the marginal's curvature without its
    negative part)."""
    d = loc.shape[0]
    S = Z.shape[1]
    q = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += Ainv[i, j] * loc[j]
        q += loc[i] * acc
    val = -0.5 * nun * math.log1p(cc * q)
    if derivs >= 1:
        f = nun * cc / (1.0 + cc * q)
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += Ainv[i, j] * loc[j]
                if derivs == 2:
                    H[i, j] = f * Ainv[i, j]
            grad[i] = -f * acc
    for t in range(m):
        u = members[t]
        Zu, yu = Z[u], Y[u]
        for i in range(d):
            x[i] = loc[i] + dev[t, i]
        for r in range(S):
            e = 0.0
            for i in range(d):
                e += Zu[r, i] * x[i]
            ex = math.exp(-abs(e))
            val += yu[r] * e - max(e, 0.0) - math.log1p(ex)
            if derivs >= 1:
                p = 1.0 / (1.0 + ex) if e >= 0 else ex / (1.0 + ex)
                for i in range(d):
                    grad[i] += (yu[r] - p) * Zu[r, i]
                if derivs == 2:
                    wgt = p * (1.0 - p)
                    for i in range(d):
                        for j in range(d):
                            H[i, j] += wgt * Zu[r, i] * Zu[r, j]
    return val


@njit(cache=True)
def _cluster_geometry(k, c, theta, n, T1, T2, psi, members, dev, xbar, A):
    """Members of slot k (count), their mean xbar, deviations dev and A = Psi0 + scatter."""
    U, d = theta.shape
    nk = n[k]
    m = 0
    for u in range(U):
        if c[u] == k:
            members[m] = u
            m += 1
    for i in range(d):
        xbar[i] = T1[k, i] / nk
    for i in range(d):
        for j in range(d):
            A[i, j] = T2[k, i, j] - nk * xbar[i] * xbar[j]
        A[i, i] += psi
    for t in range(m):
        for i in range(d):
            dev[t, i] = theta[members[t], i] - xbar[i]
    return m


@njit(cache=True)
def translate_clusters(Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, nu0, psi, kappa0, df_cap, newton_iters):
    """For every occupied learned component, a Metropolis-Hastings move of its members' common
    location m (theta_u = m + d_u with the deviations d_u fixed): the conditional
    p(m | d) ~ p({m + d_u}) prod_u p(y_u | m + d_u) (translation has Jacobian 1; the first factor is
    the component's marginal, a t in m), from an independence proposal, a t at its mode with the
    curvature there: the optimum under the users' Gaussian likelihood surrogates (a function of the
    deviations only, so the proposal never depends on the current m), refined by `newton_iters`
    Newton steps on the exact clicks. Without it the members' common location moves one user at a
    time, and where the clicks say little (e.g. the persona indicators' sum, to which clicks are
    blind) the component drifts slowly. Returns the number accepted."""
    U, S, d = Z.shape
    K = T1.shape[0]
    members = np.empty(U, dtype=np.int64)
    dev = np.empty((U, d))
    A, LA, Ainv, H, LH = np.empty((d, d)), np.empty((d, d)), np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    xbar, mode, trial, prop = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    grad, step, w, x, e, col, g = np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    accepted = 0
    for k in range(K):
        nk = n[k]
        if nk == 0:
            continue
        m = _cluster_geometry(k, c, theta, n, T1, T2, psi, members, dev, xbar, A)
        cc = kappa0 * nk / (kappa0 + nk)
        nun = nu0 + nk
        if not _cholesky(A, LA):
            continue
        _inverse_from_chol(LA, Ainv, e, col)
        for i in range(d):                       # start: the optimum under the likelihood surrogates
            step[i] = 0.0
            for j in range(d):
                H[i, j] = nun * cc * Ainv[i, j]
        for t in range(m):
            u = members[t]
            for i in range(d):
                acc = lik_lin[u, i]
                for j in range(d):
                    acc -= lik_prec[u, i, j] * dev[t, j]
                    H[i, j] += lik_prec[u, i, j]
                step[i] += acc
        if not _cholesky(H, LH):
            continue
        _chol_solve(LH, step, mode)
        # Newton steps from there (none: the surrogates' optimum and curvature are the proposal's)
        if newton_iters > 0:
            f = _location_target(mode, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, 2)
            for _ in range(newton_iters):
                if not _cholesky(H, LH):
                    break
                _chol_solve(LH, grad, step)
                tt = 1.0
                while True:
                    for i in range(d):
                        trial[i] = mode[i] + tt * step[i]
                    f_new = _location_target(trial, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, 0)
                    if f_new < f - 1e-10 * (1.0 + abs(f)) and tt > 1e-10:
                        tt *= 0.5
                    else:
                        break
                big = 0.0
                for i in range(d):
                    big = max(big, abs(tt * step[i]))
                    mode[i] = trial[i]
                f = _location_target(mode, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, 2)
                if big < 1e-8:
                    break
            if not _cholesky(H, LH):
                continue
        logdet_H = _logdet_chol(LH)
        df = min(df_cap, nun - d)
        _proposal_draw(mode, LH, df, prop, g)
        log_new = (_location_target(prop, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, 0)
                   - _proposal_logpdf(prop, mode, LH, logdet_H, df, w))
        log_old = (_location_target(xbar, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, 0)
                   - _proposal_logpdf(xbar, mode, LH, logdet_H, df, w))
        if math.log(np.random.random()) < log_new - log_old:
            accepted += 1
            for t in range(m):
                for i in range(d):
                    theta[members[t], i] = prop[i] + dev[t, i]
            for i in range(d):
                T1[k, i] = nk * prop[i]
                for j in range(d):
                    T2[k, i, j] = A[i, j] + nk * prop[i] * prop[j]
                T2[k, i, i] -= psi
    return accepted


@njit(cache=True)
def scale_clusters(Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, step_scale):
    """For every learned component with two or more members, a Metropolis-Hastings move that scales
    the members' deviations from their mean, theta_u -> xbar + s (theta_u - xbar): log s from a
    symmetric random walk (step_scale / sqrt((n - 1) d)), accepted with the density ratio times the
    Jacobian s^((n - 1) d) (a move on the multiplicative group, Liu & Sabatti 2000). It moves a
    component's spread, which users' one-at-a-time moves change slowly when the clicks say little.
    Returns the number accepted."""
    U, S, d = Z.shape
    K = T1.shape[0]
    members = np.empty(U, dtype=np.int64)
    dev = np.empty((U, d))
    A, Psi, L = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    xbar, x = np.empty(d), np.empty(d)
    accepted = 0
    for k in range(K):
        nk = n[k]
        if nk < 2:
            continue
        m = _cluster_geometry(k, c, theta, n, T1, T2, psi, members, dev, xbar, A)
        dim = (nk - 1) * d
        ls = step_scale / math.sqrt(dim) * np.random.standard_normal()
        sc = math.exp(ls)
        kn = kappa0 + nk
        cc = kappa0 * nk / kn
        nun = nu0 + nk
        val = np.empty(2)
        for which in range(2):
            f = sc if which == 0 else 1.0
            for i in range(d):
                for j in range(d):
                    Psi[i, j] = f * f * (A[i, j] - (psi if i == j else 0.0)) + cc * xbar[i] * xbar[j]
                Psi[i, i] += psi
            if not _cholesky(Psi, L):
                val[which] = -np.inf
                continue
            v = -0.5 * nun * _logdet_chol(L)
            for t in range(m):
                u = members[t]
                for i in range(d):
                    x[i] = xbar[i] + f * dev[t, i]
                v += _log_lik(Z[u], Y[u], x)
            val[which] = v + dim * math.log(f)
        if math.log(np.random.random()) < val[0] - val[1]:
            accepted += 1
            for t in range(m):
                for i in range(d):
                    theta[members[t], i] = xbar[i] + sc * dev[t, i]
            for i in range(d):
                for j in range(d):
                    T2[k, i, j] = sc * sc * (A[i, j] - (psi if i == j else 0.0)) + nk * xbar[i] * xbar[j]
    return accepted


@njit(cache=True)
def dilate_clusters(Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, step):
    """For every occupied learned component, a Metropolis-Hastings move that scales its members about
    the origin, theta_u -> s theta_u: log s from a symmetric random walk of sd `step`, accepted with the
    density ratio times the Jacobian s^(n d). Where clicks are near-separable the likelihood is flat
    along theta's own direction (any larger theta predicts them as well), so a component of such users
    drifts along a ridge that translations and users' moves cross slowly. Returns the number accepted."""
    U, S, d = Z.shape
    K = T1.shape[0]
    members = np.empty(U, dtype=np.int64)
    Psi, L, T2k = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    T1k, x, val = np.empty(d), np.empty(d), np.empty(2)
    accepted = 0
    for k in range(K):
        nk = n[k]
        if nk == 0:
            continue
        m = 0
        for u in range(U):
            if c[u] == k:
                members[m] = u
                m += 1
        sc = math.exp(step * np.random.standard_normal())
        for which in range(2):
            f = sc if which == 0 else 1.0
            for i in range(d):
                T1k[i] = f * T1[k, i]
                for j in range(d):
                    T2k[i, j] = f * f * T2[k, i, j]
            v = log_marginal(nk, T1k, T2k, nu0, psi, kappa0, Psi, L) + nk * d * math.log(f)
            for t in range(m):
                u = members[t]
                for i in range(d):
                    x[i] = f * theta[u, i]
                v += _log_lik(Z[u], Y[u], x)
            val[which] = v
        if math.log(np.random.random()) < val[0] - val[1]:
            accepted += 1
            for t in range(m):
                for i in range(d):
                    theta[members[t], i] *= sc
            for i in range(d):
                T1[k, i] *= sc
                for j in range(d):
                    T2[k, i, j] *= sc * sc
    return accepted


@njit(cache=True)
def _shift(T1s, T2s, cnt, side, x, sign):
    d = x.shape[0]
    cnt[side] += sign
    for i in range(d):
        T1s[side, i] += sign * x[i]
        for j in range(d):
            T2s[side, i, j] += sign * x[i] * x[j]


@njit(cache=True)
def _with_x(T1s, T2s, cnt, side, x, nu0, psi, kappa0, Psi, L):
    """log marginal of side `side` with x added (the stats are restored)."""
    _shift(T1s, T2s, cnt, side, x, 1)
    out = log_marginal(cnt[side], T1s[side], T2s[side], nu0, psi, kappa0, Psi, L)
    _shift(T1s, T2s, cnt, side, x, -1)
    return out


@njit(cache=True)
def _allocate(theta, u, T1s, T2s, cnt, lm, nu0, psi, kappa0, Psi, L, force):
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
        side = 1 if np.random.random() < math.exp(b - lz) else 0
    _shift(T1s, T2s, cnt, side, x, 1)
    lm[side] = l1 if side == 1 else l0
    return side, (b if side == 1 else a) - lz


@njit(cache=True)
def split_merge(c, theta, n, T1, T2, alpha, nu0, psi, kappa0, bandwidth):
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
    i = np.random.randint(U)
    if np.random.random() < 0.5 or bandwidth <= 0.0:
        j = np.random.randint(U - 1)
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
        x = np.random.random() * tot
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
    members = members[:m][np.random.permutation(m)]
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
        side[t], lp = _allocate(theta, members[t], T1s, T2s, cnt, lm, nu0, psi, kappa0, Psi, L, force)
        log_q += lp
    n_new = n.copy()
    if is_split:
        pick = np.random.randint(empties)
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
        if math.log(np.random.random()) >= log_acc:
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
    if math.log(np.random.random()) >= log_acc:
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


@njit(cache=True)
def label_swaps(c, n, T1, T2, alpha, tries):
    """`tries` Metropolis moves that swap the labels of two learned slots (the partition unchanged),
    stick fractions integrated out (the stick-breaking prior is not exchangeable); returns the number accepted."""
    K = T1.shape[0]
    U = c.shape[0]
    accepted = 0
    if K < 2:
        return 0
    for _ in range(tries):
        k = np.random.randint(K)
        l = np.random.randint(K - 1)
        if l >= k:
            l += 1
        if n[k] == n[l]:
            continue
        lp0 = log_assignment_prior(n, alpha)
        nk = n[k]
        n[k] = n[l]
        n[l] = nk
        if math.log(np.random.random()) >= log_assignment_prior(n, alpha) - lp0:
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


@njit(cache=True)
def draw_components(n, T1, T2, nu0, psi, kappa0, mu, chol):
    """Each learned slot's mean mu [K, d] and covariance Cholesky factor chol [K, d, d] from their
    Normal-inverse-Wishart conditional given the members (the prior for an empty slot)."""
    K, d = T1.shape
    Psi, L, A = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    Ainv, M, Sig = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    e, col = np.empty(d), np.empty(d)
    for k in range(K):
        kn = _psi_n(n[k], T1[k], T2[k], psi, kappa0, Psi)
        _cholesky(Psi, L)
        nun = nu0 + n[k]
        # Bartlett: W = L^-T A A^T L^-1 ~ Wishart(nun, Psi^-1), so Sigma = W^-1 = (L A^-T)(L A^-T)^T ~ IW(nun, Psi)
        for i in range(d):
            for j in range(d):
                A[i, j] = 0.0
            A[i, i] = math.sqrt(np.random.chisquare(nun - i))
            for j in range(i):
                A[i, j] = np.random.standard_normal()
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
            e[i] = np.random.standard_normal()
        for i in range(d):
            acc = T1[k, i] / kn
            for t in range(i + 1):
                acc += s * chol[k, i, t] * e[t]
            mu[k, i] = acc


@njit(cache=True)
def run_sweeps(Z, Y, c, theta, lik_prec, lik_lin, lik_const, alpha, broad_var, nu0, psi, kappa0, df_q, refine_nats,
               newton_iters, n_split_merge, n_swaps, scale_step, rw_scale, bandwidth, translation_newton, dilate_step,
               sweeps, thin,
               out_theta, out_c,
               out_v, out_mu, out_chol, stats):
    """`sweeps` sweeps of the sampler on the state (c [U], theta [U, d], in place); every `thin`-th
    sweep's state goes to out_* (if they have room): theta [D, U, d], c [D, U], and v [D, K],
    mu [D, K, d], chol [D, K, d, d] drawn from their conditionals. stats [sweeps, 9]: users' moves
    accepted, splits proposed / accepted, merges proposed / accepted, label swaps accepted,
    translations accepted, scalings accepted, dilations accepted. Returns the draws stored.

    One sweep: joint (c_u, theta_u) moves for every user; a translation, a scaling and a dilation move
    of every learned component; `n_split_merge` split-merge and `n_swaps` label moves.
    """
    U, S, d = Z.shape
    K = out_v.shape[1]
    n = np.zeros(K + 1, dtype=np.int64)
    T1, T2 = np.zeros((K, d)), np.zeros((K, d, d))
    v = np.empty(K)
    D = out_theta.shape[0]
    stored = 0
    for s in range(sweeps):
        recompute_stats(c, theta, K, n, T1, T2)
        stats[s, 0] = user_moves(Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, lik_const, alpha, broad_var, nu0, psi,
                                 kappa0, df_q, refine_nats, newton_iters, rw_scale)
        stats[s, 6] = translate_clusters(Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, nu0, psi, kappa0, df_q,
                                         translation_newton)
        stats[s, 7] = scale_clusters(Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, scale_step)
        stats[s, 8] = dilate_clusters(Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, dilate_step)
        for _ in range(n_split_merge):
            r = split_merge(c, theta, n, T1, T2, alpha, nu0, psi, kappa0, bandwidth)
            if r == 1 or r == 2:
                stats[s, 1] += 1
            if r == 2:
                stats[s, 2] += 1
            if r == 3 or r == 4:
                stats[s, 3] += 1
            if r == 4:
                stats[s, 4] += 1
        stats[s, 5] = label_swaps(c, n, T1, T2, alpha, n_swaps)
        if (s + 1) % thin == 0 and stored < D:
            draw_fractions(n, alpha, v)
            draw_components(n, T1, T2, nu0, psi, kappa0, out_mu[stored], out_chol[stored])
            out_theta[stored] = theta
            out_c[stored] = c
            out_v[stored] = v
            stored += 1
    return stored
