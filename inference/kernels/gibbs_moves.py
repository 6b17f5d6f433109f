"""Moves of the population model's exact sampler: joint (assignment, theta) moves of each
user, and translations, scalings and dilations of each learned component.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from inference.kernels.gibbs_conjugate import (LOG_2PI, _add, _log_lik, _logdet_chol, _slot_logpdf, _slot_params,
                                              _surrogate_log_lik, log_marginal, predictive_log_weights)
from inference.kernels.gibbs_proposals import _newton, _proposal_draw, _proposal_draw_gauss, _proposal_logpdf
from inference.kernels.laplace import _surrogate_one
from inference.kernels.line_search import backtrack, objective
from inference.kernels.linalg import _chol_solve, _cholesky, _inverse_from_chol
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def user_moves(rng, Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, lik_const, alpha, broad_var, nu0, psi, kappa0,
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
    order = rng.permutation(U)
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
        x = rng.random() * tot
        k1 = C - 1
        acc = 0.0
        for k in range(C):
            acc += math.exp(score[k] - top)
            if x < acc:
                k1 = k
                break
        _proposal_draw(rng, modes[k1], HL[k1], dfq[k1], prop, g)
        new = (logw[k1] + _slot_logpdf(k1, K, prop, tdf, tloc, tL, tconst, broad_var, wv) + _log_lik(Zu, yu, prop)
               - (score[k1] - log_norm) - _proposal_logpdf(prop, modes[k1], HL[k1], hlogdet[k1], dfq[k1], wv))
        old = (logw[k0] + _slot_logpdf(k0, K, th, tdf, tloc, tL, tconst, broad_var, wv) + _log_lik(Zu, yu, th)
               - (score[k0] - log_norm) - _proposal_logpdf(th, modes[k0], HL[k0], hlogdet[k0], dfq[k0], wv))
        if math.log(rng.random()) < new - old:
            c[u] = k1
            th[:] = prop
            accepted += 1
        if rw_scale > 0.0:
            # a random-walk step within the slot, N(0, rw_scale^2 H^-1 / d) (local moves where the
            # independence proposal is poor: the tails of near-separable clicks)
            kk = c[u]
            _proposal_draw_gauss(rng, th, HL[kk], rw_scale / math.sqrt(d), prop, g)
            dlog = (_slot_logpdf(kk, K, prop, tdf, tloc, tL, tconst, broad_var, wv) + _log_lik(Zu, yu, prop)
                    - _slot_logpdf(kk, K, th, tdf, tloc, tL, tconst, broad_var, wv) - _log_lik(Zu, yu, th))
            if math.log(rng.random()) < dlog:
                th[:] = prop
        _add(c[u], K, th, n, T1, T2, 1)
        if c[u] < K:
            _slot_params(c[u], n, T1, T2, nu0, psi, kappa0, tdf, tloc, tL, tconst, pmean, pprec, plogdet, inv, e,
                         col)
    return accepted


@njit(cache=CACHE)
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


class ComponentLocation(NamedTuple):
    """Minus `_location_target` (the line search minimises), for one component's members."""
    Z: np.ndarray            # [U, S, d] every user's designs
    Y: np.ndarray            # [U, S] clicks
    members: np.ndarray      # the component's members (the first `m` entries)
    m: int
    dev: np.ndarray          # [m, d] their deviations from the location
    Ainv: np.ndarray         # [d, d]
    cc: float
    nun: float
    grad: np.ndarray         # work
    H: np.ndarray            # work
    x: np.ndarray            # work


@overload(objective)
def _location_objective(problem, x):
    if getattr(problem, "instance_class", None) is ComponentLocation:
        return lambda problem, x: -_location_target(x, problem.Z, problem.Y, problem.members, problem.m, problem.dev,
                                                    problem.Ainv, problem.cc, problem.nun, problem.grad, problem.H,
                                                    problem.x, 0)
    return None


@njit(cache=CACHE)
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


@njit(cache=CACHE)
def translate_clusters(rng, Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, nu0, psi, kappa0, df_cap, newton_iters):
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
                _, tt = backtrack(ComponentLocation(Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x), mode, step,
                                  -f, trial)
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
        _proposal_draw(rng, mode, LH, df, prop, g)
        log_new = (_location_target(prop, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, 0)
                   - _proposal_logpdf(prop, mode, LH, logdet_H, df, w))
        log_old = (_location_target(xbar, Z, Y, members, m, dev, Ainv, cc, nun, grad, H, x, 0)
                   - _proposal_logpdf(xbar, mode, LH, logdet_H, df, w))
        if math.log(rng.random()) < log_new - log_old:
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


@njit(cache=CACHE)
def scale_clusters(rng, Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, step_scale):
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
        ls = step_scale / math.sqrt(dim) * rng.standard_normal()
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
        if math.log(rng.random()) < val[0] - val[1]:
            accepted += 1
            for t in range(m):
                for i in range(d):
                    theta[members[t], i] = xbar[i] + sc * dev[t, i]
            for i in range(d):
                for j in range(d):
                    T2[k, i, j] = sc * sc * (A[i, j] - (psi if i == j else 0.0)) + nk * xbar[i] * xbar[j]
    return accepted


@njit(cache=CACHE)
def dilate_clusters(rng, Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, step):
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
        sc = math.exp(step * rng.standard_normal())
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
        if math.log(rng.random()) < val[0] - val[1]:
            accepted += 1
            for t in range(m):
                for i in range(d):
                    theta[members[t], i] *= sc
            for i in range(d):
                T1[k, i] *= sc
                for j in range(d):
                    T2[k, i, j] *= sc * sc
    return accepted
