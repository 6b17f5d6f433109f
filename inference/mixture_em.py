"""Batch EM for the Gaussian-mixture population prior over users' theta, with Laplace inside.

The mixture has `n_components` learned Gaussians plus one fixed broad isotropic component
N(0, broad_var I) whose weight never falls below alpha / (alpha + U), the DP-style mass
for users unlike any seen. Users' thetas are never observed, only their clicks, so the
E-step weighs component k for user u by the Laplace approximation of p(y_u | k), and the
M-step moment-matches each component to its users' Laplace posteriors N(m_uk, S_uk):

    mu_k    = sum_u r_uk m_uk / N_k
    Sigma_k = sum_u r_uk (S_uk + (m_uk - mu_k)(m_uk - mu_k)^T) / N_k + ridge I

This is the same per-(user, component) Laplace math the online learner uses
(``inference.laplace``). Starts from k-means++ seeds on the users' broad-prior Laplace
modes. Component births and removals are the online learner's business, not done here.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from inference.laplace import laplace_fit_batch
from tdmodels.population_model import ALPHA, N_LEARNED
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior

COV_RIDGE = 1e-2


class EMResult(NamedTuple):
    """A batch EM fit of the population prior: the mixture, each user's responsibilities, the Laplace log evidence and whether EM converged."""
    prior: MixturePrior            # learned components first, the broad component last
    responsibilities: np.ndarray   # [U, C + 1]
    log_evidence: float            # sum_u log sum_k w_k p(y_u | k), Laplace approximation
    iterations: int
    converged: bool


def _kmeanspp(x: np.ndarray, k: int, rng) -> np.ndarray:
    centers = [x[rng.integers(len(x))]]
    for _ in range(1, k):
        d2 = np.min(((x[:, None] - np.array(centers)[None]) ** 2).sum(-1), 1)
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(len(x), 1 / len(x))
        centers.append(x[rng.choice(len(x), p=p)])
    return np.array(centers)


def component_laplace(z, y, prior: MixturePrior, init: np.ndarray | None = None):
    """Laplace fits of every user under every component: modes [U, C, d], covs [U, C, d, d], log ev [U, C].

    `init` [U, C, d] warm-starts Newton (e.g. the previous EM iteration's modes).
    """
    U, S, d = z.shape
    C = prior.n_components
    m = np.broadcast_to(prior.means, (U, C, d)).reshape(U * C, d)
    P = np.broadcast_to(prior.covs, (U, C, d, d)).reshape(U * C, d, d)
    modes, covs, ev = laplace_fit_batch(m, P, np.repeat(z, C, 0), np.repeat(y, C, 0),
                                        init=None if init is None else init.reshape(U * C, d))
    return modes.reshape(U, C, d), covs.reshape(U, C, d, d), ev.reshape(U, C)


def fit_mixture_em(z, y, n_components: int = N_LEARNED, alpha: float = ALPHA, broad_var: float = DEFAULT_PRIOR_VAR,
                   iters: int = 100, tol: float = 1e-4, seed: int = 0, ridge: float = COV_RIDGE) -> EMResult:
    """Fit the mixture prior to clicks z [U, S, d], y [U, S]; returns the prior and diagnostics.

    Stops when the Laplace log evidence changes by less than `tol` nats per user between
    iterations (`converged`), else after `iters`.
    """
    z, y = np.asarray(z, dtype=float), np.asarray(y)
    U, S, d = z.shape
    k = min(n_components, U)
    broad = (np.zeros(d), broad_var * np.eye(d))
    m0, S0, _ = laplace_fit_batch(np.zeros((U, d)), np.broadcast_to(broad[1], (U, d, d)).copy(), z, y)
    rng = np.random.default_rng(seed)
    w_floor = alpha / (alpha + U)
    spread = np.cov(m0.T) + ridge * np.eye(d) if U > 1 else np.eye(d)
    means = np.concatenate([_kmeanspp(m0, k, rng), broad[0][None]])
    covs = np.concatenate([np.repeat(spread[None], k, 0), broad[1][None]])
    weights = np.concatenate([np.full(k, (1 - w_floor) / k), [w_floor]])
    prev, converged, modes = -np.inf, False, None
    for it in range(1, iters + 1):
        modes, pc, ev = component_laplace(z, y, MixturePrior(weights, means, covs), init=modes)
        joint = np.log(np.maximum(weights, 1e-300)) + ev
        total = float(logsumexp(joint, axis=1).sum())
        r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        if abs(total - prev) < tol * U:
            converged = True
            break
        prev = total
        Nk = r[:, :k].sum(0)
        live = Nk > 1e-8
        mu = np.einsum("uk,ukd->kd", r[:, :k], modes[:, :k]) / np.maximum(Nk, 1e-300)[:, None]
        dev = modes[:, :k] - mu[None]
        cov = (np.einsum("uk,ukij->kij", r[:, :k], pc[:, :k])
               + np.einsum("uk,uki,ukj->kij", r[:, :k], dev, dev)) / np.maximum(Nk, 1e-300)[:, None, None]
        means[:k][live] = mu[live]
        covs[:k][live] = cov[live] + ridge * np.eye(d)
        w_broad = max(r[:, k].sum() / U, w_floor)
        wl = Nk / max(Nk.sum(), 1e-300)
        weights = np.concatenate([(1 - w_broad) * wl, [w_broad]])
    return EMResult(MixturePrior(weights, means, covs), r, total, it, converged)
