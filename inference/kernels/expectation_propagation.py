"""The expectation-propagation belief: after each click, every component's Gaussian is refitted to the
exact component posterior on all of the session's clicks, N(theta; m0_k, S0_k) x prod_t Bernoulli(y_t;
sigmoid(z_t . theta)), by expectation propagation (Minka's EP) with one Gaussian site per click.

Each site is a Gaussian in eta_t = z_t . theta (precision tau_t, shift nu_t). A site update removes the site
from the current Gaussian (its cavity along z_t), takes the exact moments of the cavity times the click's
likelihood (the one-dimensional quadrature of assumed-density filtering, ``moment_matching.click_moments``)
and sets the site so that the Gaussian carries those moments: a rank-one step. The first pass from the
prior over the clicks in order is assumed-density filtering; the passes after it revisit every click with
the others' sites in place, which removes ADF's dependence on the order of the clicks (its drift). After
EP_PASSES passes the Gaussian is recomputed from the prior and the sites (natural parameters) so that the
rank-one steps leave no rounding behind. No random draws: the belief is a deterministic function of the
session's clicks, as every learner's state must be.

The component weights are the prior weights times each component's evidence for the session's clicks, EP's
own estimate (the prior times the sites, each site normalised so that against its cavity it gives the
click's exact predictive probability), so they never accumulate per-click approximations; a component that
is not refitted takes the evidence at its Gaussian's mean (log target - log Gaussian there). Components lighter than EP_MIN_WEIGHT
before the click take the assumed-density step alone (no refit), as the importance-corrected belief's
light components keep the Laplace step.
A site whose cavity is not a proper Gaussian is left as it is (EP's standard safeguard).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.constants import EP_MIN_WEIGHT, EP_NODES, EP_PASSES
from inference.kernels.belief import eta_prior, normalised, rank_one_step
from inference.kernels.importance_laplace import _log_target, gaussian_factors, session_with
from inference.kernels.linalg import _chol_solve, _cholesky, _inverse_from_chol
from inference.kernels.moment_matching import click_moments, mixture_update_adf
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

_X, _W = np.polynomial.hermite.hermgauss(EP_NODES)
EP_X = np.ascontiguousarray(_X)
EP_LOGW = np.ascontiguousarray(np.log(_W) + _X ** 2)    # as moment_matching's nodes, fewer: one site's moments
LOG_MIN_WEIGHT = math.log(EP_MIN_WEIGHT)
TINY = 1e-12             # a cavity or a step denominator below this is not a proper Gaussian: site kept


@njit(cache=CACHE)
def _site_pass(m, S, Zall, yall, n, tau, nu, log_c, Sz):
    """One EP pass over the first n clicks: each site refitted in turn, m [d] and S [d, d] updated in place.
    A site is exp(log_c - tau eta^2 / 2 + nu eta): log_c makes its integral against its cavity the click's
    exact predictive probability under the cavity (the tilted normaliser), as EP's evidence needs."""
    for r in range(n):
        a, s = eta_prior(m, S, Zall[r], Sz)
        if s <= TINY:
            continue
        keep = 1.0 - tau[r] * s
        if keep <= TINY:
            continue
        s_c = s / keep                                  # the cavity along z_r: the site removed
        a_c = s_c * (a / s - nu[r])
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
def ep_component(m0, S0, Zall, yall, n):
    """EP's Gaussian and evidence (mean [d], cov [d, d], log evidence, ok) for N(m0, S0) x the first n clicks
    of Zall [N, d], yall [N]; ok is False when the prior or the final Gaussian is not positive definite.

    The evidence is EP's: the integral of the prior times the sites, log_c summed plus the Gaussian
    normaliser 1/2 (log|S| - log|S0| + m' P m - m0' P0 m0), P = S^-1."""
    d = m0.shape[0]
    m, S = m0.copy(), S0.copy()
    tau, nu, log_c, Sz = np.zeros(n), np.zeros(n), np.zeros(n), np.empty(d)
    for _ in range(EP_PASSES):
        _site_pass(m, S, Zall, yall, n, tau, nu, log_c, Sz)
    L = np.empty((d, d))
    P0 = np.empty((d, d))
    e, col = np.empty(d), np.empty(d)
    if not _cholesky(S0, L):
        return m, S, 0.0, False
    log_z = 0.0
    for i in range(d):
        log_z -= math.log(L[i, i])                    # -1/2 log|S0|
    _inverse_from_chol(L, P0, e, col)
    P = P0.copy()
    h = np.zeros(d)
    for i in range(d):
        for j in range(d):
            h[i] += P0[i, j] * m0[j]
    for r in range(n):
        for i in range(d):
            h[i] += nu[r] * Zall[r, i]
            for j in range(d):
                P[i, j] += tau[r] * Zall[r, i] * Zall[r, j]
    if not _cholesky(P, L):
        return m, S, 0.0, False
    _inverse_from_chol(L, S, e, col)
    _chol_solve(L, h, m)
    for i in range(d):
        log_z -= math.log(L[i, i])                    # +1/2 log|S| = -1/2 log|P|
        log_z += 0.5 * m[i] * h[i]
        acc = 0.0
        for j in range(d):
            acc += P0[i, j] * m0[j]
        log_z -= 0.5 * m0[i] * acc
    for r in range(n):
        log_z += log_c[r]
    return m, S, log_z, _cholesky(S, np.empty((d, d)))


@njit(cache=CACHE)
def mixture_update_ep(log_w, means, covs, active, z, y, prior_log_w, prior_means, prior_covs, Zs, ys, t):
    """One click into a mixture belief by expectation propagation over the session's clicks; returns
    (log_w, means, covs, log p(y | belief before the click)).

    log_w [C], means [C, d], covs [C, d, d], active [C] bool: the belief before the click; z [d], y: the
    click; prior_* the prior the session started from (same slots); Zs [S, d], ys [S]: the session's
    clicks, rows [:t] before this one (this click is added here).
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
        if log_w[c] - top_norm >= LOG_MIN_WEIGHT:
            m, S, log_z, ok = ep_component(prior_means[c], prior_covs[c], Zall, yall, t + 1)
            if ok and math.isfinite(log_z):
                new_m[c], new_S[c] = m, S
                new_w[c] = prior_log_w[c] + log_z
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
