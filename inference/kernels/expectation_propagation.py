"""The expectation-propagation belief: after each click, every component's Gaussian is refitted to the
exact component posterior on all of the session's clicks, N(theta; m0_k, S0_k) x prod_t Bernoulli(y_t;
sigmoid(z_t . theta)), by expectation propagation (Minka's EP) with one Gaussian site per click.

Each site is a Gaussian in eta_t = z_t . theta (precision tau_t, shift nu_t). A site update removes the site
from the current Gaussian (its cavity along z_t), takes the exact moments of the cavity times the click's
likelihood (the one-dimensional quadrature of assumed-density filtering, ``moment_matching.click_moments``)
and sets the site so that the Gaussian carries those moments: a rank-one step. The first pass from the
prior over the clicks in order is assumed-density filtering; the passes after it revisit every click with
the others' sites in place, which removes ADF's dependence on the order of the clicks (its drift). The sites
are kept between clicks (the learner's state): a component refitted at the click before starts from its
sites, takes the new click's site by one assumed-density step and refits every site once, so that by the
session's end its early sites have been refitted many times; a component that was not refitted starts
from the prior, makes EP_PASSES passes and recomputes the Gaussian from the prior and the sites (natural
parameters) so that the rank-one steps leave no rounding behind; a warm start that no longer gives a
positive definite Gaussian and a finite evidence is refitted that way too. No random draws: the belief is
a deterministic function of the session's clicks, as every learner's state must be.

The component weights are the prior weights times each component's evidence for the session's clicks, EP's
own estimate (the prior times the sites, each site normalised so that against its cavity it gives the
click's exact predictive probability), so they never accumulate per-click approximations; a component that
is not refitted takes the evidence at its Gaussian's mean (log target - log Gaussian there). Components lighter than EP_MIN_WEIGHT
before the click take the assumed-density step alone (no refit), as the importance-corrected belief's
light components keep the Laplace step.
A site whose cavity is not a proper Gaussian is left as it is (EP's standard safeguard).

The pairwise correction (belief ``ep-corrected``). EP matches each site's tilted moments one at a time, so
its Gaussian q = N(m, S) is not the exact posterior's moments: along the clicks' skew its covariance is
too narrow (by several percent against a grid posterior). With xi = S^-1/2 (theta - m) ~ N(0, I) under q,
the exact posterior is q times r = prod_t r_t(u_t), u_t = e_t . xi the standardised eta_t (e_t = S^1/2 z_t
/ sqrt(s_t)), r_t = click / site. Expanding each r_t in the probabilists' Hermite polynomials,
r_t = E_q[r_t] (1 + h_t), h_t = sum_k c_tk He_k(u_t) / k!, c_tk = the tilted distribution's E[He_k(u_t)],
EP's fixed point makes c_t1 = c_t2 = 0: one site alone moves neither moment. Keeping the products of two
sites (r ~ 1 + sum h_t + sum_{t<s} h_t h_s) and using E[He_k(u_t) He_l(u_s)] = delta_kl k! rho_ts^k and
Stein's identities E[f xi] = E[grad f], E[f xi xi'] = E[f] I + E[grad grad f]:

    d xi-mean = sum_t (c_t1 + sum_{s != t} E[h_t' h_s]) e_t
    d xi-cov  = sum_t (c_t2 + sum_{s != t} E[h_t'' h_s]) e_t e_t' + sum_{t != s} E[h_t' h_s'] e_t e_s'
    d log Z   = sum_{t<s} sum_k c_tk c_sk rho_ts^k / k!

with E[h_t' h_s] = sum_j c_t,j+1 c_sj rho^j / j!, E[h_t'' h_s] = sum_j c_t,j+2 c_sj rho^j / j!,
E[h_t' h_s'] = sum_k c_tk c_sk rho^(k-1) / (k-1)!, the orders up to EP_HERMITE_ORDER, and in theta
dm = G mu, dS = G M G' for G's columns S z_t / sqrt(s_t). This is the first term of the perturbative
corrections of EP by Opper, Paquet and Winther (JMLR 2013), derived here for a Gaussian prior and the
logistic click; it costs O(n^2 d + n d^2) for n clicks, no draws. Where the corrected covariance is not
positive definite the component keeps EP's own Gaussian.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.constants import EP_HERMITE_ORDER, EP_MIN_WEIGHT, EP_NODES, EP_PASSES
from inference.kernels.belief import eta_prior, normalised, rank_one_step
from inference.kernels.importance_laplace import _log_target, gaussian_factors, session_with
from inference.kernels.linalg import _chol_solve, _cholesky, _inverse_from_chol
from inference.kernels.moment_matching import click_moments, mixture_update_adf, tilted_rule
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

_X, _W = np.polynomial.hermite.hermgauss(EP_NODES)
EP_X = np.ascontiguousarray(_X)
EP_LOGW = np.ascontiguousarray(np.log(_W) + _X ** 2)    # as moment_matching's nodes, fewer: one site's moments
LOG_MIN_WEIGHT = math.log(EP_MIN_WEIGHT)
TINY = 1e-12             # a cavity or a step denominator below this is not a proper Gaussian: site kept


@njit(cache=CACHE)
def _cavity(m, S, z, tau_r, nu_r, Sz):
    """(ok, a, s, a_c, s_c): eta = z . theta's mean and variance under N(m, S) and under its cavity, the site
    (tau_r, nu_r) removed; Sz [d] := S z. ok is False where either is not a proper Gaussian."""
    a, s = eta_prior(m, S, z, Sz)
    if s <= TINY:
        return False, a, s, a, s
    keep = 1.0 - tau_r * s
    if keep <= TINY:
        return False, a, s, a, s
    s_c = s / keep
    return True, a, s, s_c * (a / s - nu_r), s_c


@njit(cache=CACHE)
def _site_pass(m, S, Zall, yall, lo, hi, tau, nu, log_c, Sz):
    """One EP pass over clicks lo..hi-1: each site refitted in turn, m [d] and S [d, d] updated in place.
    A site is exp(log_c - tau eta^2 / 2 + nu eta): log_c makes its integral against its cavity the click's
    exact predictive probability under the cavity (the tilted normaliser), as EP's evidence needs."""
    for r in range(lo, hi):
        ok, a, s, a_c, s_c = _cavity(m, S, Zall[r], tau[r], nu[r], Sz)
        if not ok:
            continue
        log_z, mu, v = click_moments(a_c, s_c, yall[r], EP_X, EP_LOGW)
        if not (v > TINY) or not math.isfinite(mu):
            continue
        d_tau = (1.0 / v - 1.0 / s_c) - tau[r]
        d_nu = (mu / v - a_c / s_c) - nu[r]
        k = 1.0 + d_tau * s
        if k <= TINY:
            continue
        rank_one_step(m, S, Sz, (d_nu - d_tau * a) / k, d_tau / k)
        tau[r] += d_tau
        nu[r] += d_nu
        log_c[r] = log_z - 0.5 * math.log(v / s_c) - 0.5 * mu * mu / v + 0.5 * a_c * a_c / s_c


@njit(cache=CACHE)
def _hermite_quadrature(a_c, s_c, y, a, s, out):
    """out[k - 1] = E[He_k(u)], k = 1..K, under N(eta; a_c, s_c) x sigmoid(+-eta) normalised, by the site
    update's adaptive Gauss-Hermite rule at the tilted mode; returns the log normaliser (the click's
    predictive probability under the cavity)."""
    lf = np.empty(EP_X.shape[0])
    mode, c, tot, log_z = tilted_rule(a_c, s_c, y, EP_X, EP_LOGW, lf)
    K = out.shape[0]
    for k in range(K):
        out[k] = 0.0
    root = math.sqrt(s)
    for i in range(lf.shape[0]):
        w = lf[i] / tot
        u = (mode + c * EP_X[i] - a) / root
        h_prev, h = 1.0, u
        out[0] += w * h
        for k in range(2, K + 1):
            h_prev, h = h, u * h - (k - 1) * h_prev
            out[k - 1] += w * h
    return log_z


@njit(cache=CACHE)
def _tilted_hermite(a_c, s_c, y, a, s, out):
    """out[k - 1] = E[He_k(u)] for k = 1..K (K = out.shape[0], He_k the probabilists' Hermite polynomials,
    u = (eta - a) / sqrt(s)) under the tilted distribution N(eta; a_c, s_c) x sigmoid(+-eta). With (a, s)
    EP's marginal of eta, these are the tilted distribution's Hermite moments about the Gaussian that EP
    keeps (k = 1, 2 vanish at EP's fixed point; k = 3, 4 are its standardised skewness and excess kurtosis
    there). Where the click is the likelier outcome, from the complement as ``click_moments`` does: the
    cavity's own moments (in closed form: u ~ N(mu, v + 1) gives E[He_k] = mu E[He_k-1] + (k-1) v E[He_k-2])
    less the unlikelier click's tilted ones, whose mass sits where the click probability bends."""
    sign = 1.0 if y else -1.0
    if sign * a_c <= 0.0:
        _hermite_quadrature(a_c, s_c, y, a, s, out)
        return
    zc = math.exp(_hermite_quadrature(a_c, s_c, 1 - y, a, s, out))      # < 1/2 here
    mu = (a_c - a) / math.sqrt(s)
    v = s_c / s - 1.0
    m_prev, m = 1.0, mu
    for k in range(1, out.shape[0] + 1):
        if k > 1:
            m_prev, m = m, mu * m + (k - 1) * v * m_prev
        out[k - 1] = (m - zc * out[k - 1]) / (1.0 - zc)


@njit(cache=CACHE)
def pairwise_correction(m, S, Zall, yall, n, tau, nu):
    """The first-order correction of EP's Gaussian N(m, S) [d], [d, d] on the first n clicks, with the
    sites (tau, nu) [n] it was made of: (dm [d], dS [d, d], d_log_z), the corrections of its mean, its
    covariance and its log evidence. The module's docstring derives it; a site whose cavity is not a
    proper Gaussian contributes nothing."""
    d = m.shape[0]
    K = EP_HERMITE_ORDER
    G = np.zeros((d, n))                 # column t: S z_t / sqrt(s_t), the site's direction in theta
    hm = np.zeros((n, K))                # row t: the tilted Hermite moments of site t, orders 1..K
    root = np.ones(n)
    used = np.zeros(n, dtype=np.bool_)
    Sz = np.empty(d)
    for t in range(n):
        ok, a, s, a_c, s_c = _cavity(m, S, Zall[t], tau[t], nu[t], Sz)
        if not ok:
            continue
        _tilted_hermite(a_c, s_c, yall[t], a, s, hm[t])
        root[t] = math.sqrt(s)
        for i in range(d):
            G[i, t] = Sz[i] / root[t]
        used[t] = True
    M = np.zeros((n, n))                 # dS = G M G'
    mu = np.zeros(n)                     # dm = G mu
    d_log_z = 0.0
    for t in range(n):
        if used[t]:
            mu[t] = hm[t, 0]
            M[t, t] = hm[t, 1]
    for t in range(n):
        if not used[t]:
            continue
        for r in range(t + 1, n):
            if not used[r]:
                continue
            rho = 0.0
            for i in range(d):
                rho += G[i, t] * Zall[r, i]
            rho /= root[r]               # the correlation of eta_t and eta_r under N(m, S)
            pw = 1.0                     # rho^(k-1) / (k-1)!
            for k in range(1, K + 1):
                nxt = pw * rho / k       # rho^k / k!
                M[t, r] += hm[t, k - 1] * hm[r, k - 1] * pw
                d_log_z += hm[t, k - 1] * hm[r, k - 1] * nxt
                if k < K:
                    mu[t] += hm[t, k] * hm[r, k - 1] * nxt
                    mu[r] += hm[r, k] * hm[t, k - 1] * nxt
                if k + 1 < K:
                    M[t, t] += hm[t, k + 1] * hm[r, k - 1] * nxt
                    M[r, r] += hm[r, k + 1] * hm[t, k - 1] * nxt
                pw = nxt
            M[r, t] = M[t, r]
    GM = G @ M
    dS = GM @ G.T
    for i in range(d):                   # exactly symmetric
        for j in range(i):
            v = 0.5 * (dS[i, j] + dS[j, i])
            dS[i, j] = v
            dS[j, i] = v
    return G @ mu, dS, d_log_z


@njit(cache=CACHE)
def _from_sites(m0, S0, Zall, n, tau, nu, m, S, L, P0, h):
    """m [d], S [d, d] := the Gaussian N(m0, S0) x the first n sites (natural parameters, no rounding carried
    over from rank-one steps); returns (ok, its log normaliser over the prior's: -1/2 log|S0| - 1/2 log|P|
    + 1/2 m' P m - 1/2 m0' P0 m0, P = S^-1). ok is False where the prior or P is not positive definite."""
    d = m0.shape[0]
    e, col = np.empty(d), np.empty(d)
    if not _cholesky(S0, L):
        return False, 0.0
    log_z = 0.0
    for i in range(d):
        log_z -= math.log(L[i, i])                    # -1/2 log|S0|
    _inverse_from_chol(L, P0, e, col)
    P = P0.copy()
    for i in range(d):
        h[i] = 0.0
        for j in range(d):
            h[i] += P0[i, j] * m0[j]
    for r in range(n):
        for i in range(d):
            h[i] += nu[r] * Zall[r, i]
            for j in range(d):
                P[i, j] += tau[r] * Zall[r, i] * Zall[r, j]
    if not _cholesky(P, L):
        return False, 0.0
    _inverse_from_chol(L, S, e, col)
    _chol_solve(L, h, m)
    for i in range(d):
        log_z -= math.log(L[i, i])                    # +1/2 log|S| = -1/2 log|P|
        log_z += 0.5 * m[i] * h[i]
        acc = 0.0
        for j in range(d):
            acc += P0[i, j] * m0[j]
        log_z -= 0.5 * m0[i] * acc
    return True, log_z


@njit(cache=CACHE)
def _evidence(m0, S0, Zall, n, nu, m, S, L, h):
    """(ok, log normaliser over the prior's) of EP's Gaussian N(m, S) on the first n sites, as `_from_sites`
    gives it, from the Gaussian itself: -1/2 log|S0| + 1/2 log|S| + 1/2 m' h - 1/2 m0' P0 m0, h = P0 m0 +
    the sites' shifts along their clicks. ok is False where S0 or S is not positive definite."""
    d = m0.shape[0]
    if not _cholesky(S0, L):
        return False, 0.0
    log_z = 0.0
    for i in range(d):
        log_z -= math.log(L[i, i])
    _chol_solve(L, m0, h)                              # P0 m0
    for i in range(d):
        log_z -= 0.5 * m0[i] * h[i]
    for r in range(n):
        for i in range(d):
            h[i] += nu[r] * Zall[r, i]
    if not _cholesky(S, L):
        return False, 0.0
    for i in range(d):
        log_z += math.log(L[i, i]) + 0.5 * m[i] * h[i]
    return True, log_z


@njit(cache=CACHE)
def ep_component(m0, S0, Zall, yall, n, corrected, sites, warm, m_ep, S_ep):
    """EP's Gaussian and evidence (mean [d], cov [d, d], log evidence, ok) for N(m0, S0) x the first n clicks
    of Zall [N, d], yall [N]; ok is False when the prior or the final Gaussian is not positive definite.
    `corrected`: with the pairwise correction (`pairwise_correction`) added to all three, where the
    corrected covariance is positive definite (EP's own Gaussian and evidence otherwise).

    sites [3, >= n] (tau, nu, log_c per click), m_ep [d] and S_ep [d, d] receive EP's sites and its own
    Gaussian (before any correction), in place. With warm > 0 they hold those of an earlier fit of the same
    component on the first `warm` clicks: EP starts from them, takes the newer clicks' sites by one
    assumed-density step each and then refits every site once (one pass, the newer last). With warm = 0, or
    where that Gaussian is no longer positive definite, it starts from the prior, makes EP_PASSES passes
    and recomputes the Gaussian from the prior and the sites (natural parameters).

    The evidence is EP's: the integral of the prior times the sites, log_c summed plus the Gaussian
    normaliser 1/2 (log|S| - log|S0| + m' P m - m0' P0 m0), P = S^-1."""
    d = m0.shape[0]
    tau, nu, log_c = sites[0], sites[1], sites[2]
    m, S = np.empty(d), np.empty((d, d))
    L, P0, h, Sz = np.empty((d, d)), np.empty((d, d)), np.empty(d), np.empty(d)
    ok = False
    log_z = 0.0
    if warm > 0 and np.isfinite(m_ep).all() and np.isfinite(S_ep).all():
        m[:], S[:, :] = m_ep, S_ep
        for r in range(warm, n):
            tau[r], nu[r], log_c[r] = 0.0, 0.0, 0.0
        _site_pass(m, S, Zall, yall, warm, n, tau, nu, log_c, Sz)
        _site_pass(m, S, Zall, yall, 0, n, tau, nu, log_c, Sz)
        ok, log_z = _evidence(m0, S0, Zall, n, nu, m, S, L, h)
        ok = ok and math.isfinite(log_z)                 # kept sites that no longer make a Gaussian: refit cold
    if not ok:
        m[:], S[:, :] = m0, S0
        for r in range(n):
            tau[r], nu[r], log_c[r] = 0.0, 0.0, 0.0
        for _ in range(EP_PASSES):
            _site_pass(m, S, Zall, yall, 0, n, tau, nu, log_c, Sz)
        ok, log_z = _from_sites(m0, S0, Zall, n, tau, nu, m, S, L, P0, h)
        if not ok or not _cholesky(S, L):
            return m, S, 0.0, False
    m_ep[:], S_ep[:, :] = m, S
    for r in range(n):
        log_z += log_c[r]
    if corrected:
        dm, dS, d_log_z = pairwise_correction(m, S, Zall, yall, n, tau, nu)
        S_c = S + dS
        if _cholesky(S_c, L) and math.isfinite(d_log_z):
            return m + dm, S_c, log_z + d_log_z, True
    return m, S, log_z, True


@njit(cache=CACHE)
def mixture_update_ep(log_w, means, covs, active, z, y, prior_log_w, prior_means, prior_covs, Zs, ys, t,
                      corrected, sites, fitted, ep_means, ep_covs):
    """One click into a mixture belief by expectation propagation over the session's clicks; returns
    (log_w, means, covs, log p(y | belief before the click)).

    log_w [C], means [C, d], covs [C, d, d], active [C] bool: the belief before the click; z [d], y: the
    click; prior_* the prior the session started from (same slots); Zs [S, d], ys [S]: the session's
    clicks, rows [:t] before this one (this click is added here); corrected: each refitted component with
    EP's pairwise correction (`ep_component`); sites [C, 3, S], fitted [C], ep_means [C, d] and ep_covs
    [C, d, d] (updated in place): each component's EP sites, how many of the session's clicks they cover (t
    where the component was refitted at the click before, which warm-starts its fit here; 0 where it took
    the assumed-density step) and EP's own Gaussian on them.
    """
    C, d = means.shape
    _, new_m, new_S, log_pred = mixture_update_adf(log_w, means, covs, active, z, y)   # its log p(y) is exact
    Zall, yall = session_with(Zs, ys, t, z, y)
    top_norm = normalised(log_w, active)[1]
    L, L0 = np.empty((d, d)), np.empty((d, d))
    work = np.empty(d)
    new_w = np.full(C, -np.inf)
    for c in range(C):
        if not active[c]:
            continue
        warm = fitted[c] if fitted[c] == t else 0
        fitted[c] = 0
        if log_w[c] - top_norm >= LOG_MIN_WEIGHT:
            m, S, log_z, ok = ep_component(prior_means[c], prior_covs[c], Zall, yall, t + 1, corrected, sites[c],
                                           warm, ep_means[c], ep_covs[c])
            if ok and math.isfinite(log_z):
                new_m[c], new_S[c] = m, S
                new_w[c] = prior_log_w[c] + log_z
                fitted[c] = t + 1
                continue
        ok, logdet0, log_q = gaussian_factors(prior_covs[c], new_S[c], L0, L)
        if not ok:
            raise RuntimeError("expectation propagation: a covariance is not positive definite")
        new_w[c] = prior_log_w[c] + _log_target(new_m[c], prior_means[c], L0, logdet0, Zall, yall, t + 1,
                                                work) - log_q
    out_w = normalised(new_w, active)[0]
    for c in range(C):
        if active[c] and not (math.isfinite(out_w[c]) or out_w[c] == -np.inf):
            raise RuntimeError("expectation propagation: a component's weight is not a number (a state or prior "
                               "that is not finite)")
        if active[c] and not (np.isfinite(new_m[c]).all() and np.isfinite(new_S[c]).all()):
            raise RuntimeError("expectation propagation: a component's Gaussian is not finite (a state or prior "
                               "that is not finite)")
    if not math.isfinite(log_pred):
        raise RuntimeError("expectation propagation: the click's predictive probability is not a number")
    return out_w, new_m, new_S, log_pred
