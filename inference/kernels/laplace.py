"""Kernels of the population refit: batches of Laplace fits (twin of
``inference.laplace.laplace_fit_batch``) and the closed-form surrogate E-step (twin of
``inference.population``)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from inference.kernels.line_search import backtrack, objective
from inference.kernels.linalg import _chol_solve, _cholesky, _inverse_from_chol
from inference.constants import RESP_FLOOR
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
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


class LogisticPosterior(NamedTuple):
    """One user's negative log posterior under N(m, P^-1), as the line search evaluates it."""
    Zu: np.ndarray           # [S, d] the user's designs
    yu: np.ndarray           # [S] clicks
    m: np.ndarray            # [d] prior mean
    P: np.ndarray            # [d, d] prior precision
    eta: np.ndarray          # [S] work: Zu x at the point evaluated
    ex: np.ndarray           # [S] work: exp(-|eta|)


@overload(objective)
def _posterior_objective(problem, x):
    if getattr(problem, "instance_class", None) is LogisticPosterior:
        return lambda problem, x: _objective(problem.Zu, problem.yu, x, problem.m, problem.P, problem.eta, problem.ex)
    return None


@njit(cache=CACHE)
def _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H):
    """Gradient of the log posterior and Hessian of the negative one, from eta and ex = exp(-|eta|).
    The Hessian's lower triangle is accumulated and mirrored (every reader factorises it by Cholesky)."""
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
            for j in range(i + 1):
                H[i, j] += wi * Zu[t, j]
    for i in range(d):
        for j in range(i + 1, d):
            H[i, j] = H[j, i]


@njit(cache=CACHE)
def newton_mode(Zu, yu, theta, m, P, H, L, grad, step, trial, eta, eta_trial, ex, ex_trial, iters, tol):
    """Newton with backtracking from `theta` (in place) to the mode of N(m, P^-1) x the clicks'
    likelihood; returns (converged within `iters` to a step under `tol`, negative log posterior).
    eta, ex hold Zu theta and exp(-|eta|) at the returned theta; H, L, grad, step, trial, eta_trial,
    ex_trial are work arrays."""
    d = theta.shape[0]
    f = _objective(Zu, yu, theta, m, P, eta, ex)
    at_trial = LogisticPosterior(Zu, yu, m, P, eta_trial, ex_trial)
    for _ in range(iters):
        _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H)
        if not _cholesky(H, L):
            break
        _chol_solve(L, grad, step)
        f_new, tt = backtrack(at_trial, theta, step, f, trial)
        big = 0.0
        for i in range(d):
            big = max(big, abs(tt * step[i]))
            theta[i] = trial[i]
        for k in range(eta.shape[0]):
            eta[k] = eta_trial[k]
            ex[k] = ex_trial[k]
        f = f_new
        if big < tol:
            return True, f
    return False, f


@njit(cache=CACHE)
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
        ok[b], f = newton_mode(Zu, yu, theta, m, P, H, L, grad, step, trial, eta, eta_trial, ex, ex_trial, iters, tol)
        _grad_hessian(Zu, yu, theta, m, P, eta, ex, grad, H)
        if not _cholesky(H, L):
            ok[b] = False
            log_ev[b] = -np.inf
            continue
        logdet_H = 0.0
        for i in range(d):
            logdet_H += 2.0 * math.log(L[i, i])
        _inverse_from_chol(L, covs[b], e, col)
        # log p(y | theta) + log N(theta; m, P^-1) + d/2 log 2pi - 1/2 log det H
        log_ev[b] = -f - 0.5 * comp_logdets[c] - 0.5 * logdet_H
    return modes, covs, log_ev, ok


@njit(cache=CACHE)
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
        for i in range(d):
            mode[i] = m[i]
        return -np.inf
    _chol_solve(L, rhs, col)
    quad = 0.0
    logdet_Q = 0.0
    for i in range(d):
        mode[i] = col[i]
        quad += rhs[i] * col[i]
        logdet_Q += 2.0 * math.log(L[i, i])
    return lik_const[u] - 0.5 * mPm - 0.5 * comp_logdets[c] - 0.5 * logdet_Q + 0.5 * quad


@njit(cache=CACHE)
def surrogate_units(users, comps, lik_prec, lik_lin, lik_const, comp_means, comp_precs, comp_logdets):
    """Closed-form fits of units under a Gaussian surrogate of each user's likelihood,
    exp(c_u - theta' Lam_u theta / 2 + h_u' theta); as ``inference.population.surrogate_units``.

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


@njit(cache=CACHE)
def surrogate_estep(users, active, log_w, comp_means, comp_precs, comp_logdets, lik_prec, lik_lin, lik_const,
                    resp, unit_modes, unit_covs, T0, T1, T2):
    """The surrogate E-step of ``inference.population._e_step`` for `users`, in place.

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
