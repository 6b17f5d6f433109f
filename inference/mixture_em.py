"""Batch EM for the Gaussian-mixture population prior over users' theta.

The mixture has `n_components` learned Gaussians plus one fixed broad isotropic component
N(0, broad_var I) whose weight never falls below alpha / (alpha + U), the DP-style mass for
users unlike any seen. Users' thetas are never observed, only their clicks. Each user's click
likelihood is replaced by its Gaussian surrogate, read off the broad-prior Laplace fit
(``inference.population.likelihood_surrogate``: exact for the broad component, the E-step
CODuel's online prior uses by default). Under the surrogate every quantity is closed form, and
this is exact EM (as for a Gaussian mixture observed through known Gaussian noise, "extreme
deconvolution", Bovy, Hogg & Roweis 2011) for the stated objective

    sum_u log sum_k w_k Z_uk  -  (ridge / 2) sum_k tr(Sigma_k^-1),

Z_uk the surrogate evidence of user u under component k, the second term a penalty that keeps
components from collapsing onto one user. The E-step computes each user's Gaussian posterior
N(m_uk, S_uk) under every component and the responsibilities r_uk; the M-step maximises the
expected penalised log joint:

    mu_k    = sum_u r_uk m_uk / N_k
    Sigma_k = (sum_u r_uk (S_uk + (m_uk - mu_k)(m_uk - mu_k)^T) + ridge I) / N_k
    w       = N_k / U, with the broad weight raised to its floor where needed (the constrained optimum)

so the objective never decreases (checked at every iteration). It stops when the objective
changes by less than `tol` nats per user. Several starts (k-means++ seeds on the users'
broad-prior modes) are run and the best objective kept. Component births and removals are the
online learner's business, not done here.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from inference.laplace import laplace_fit_batch
from inference.population import COV_RIDGE, likelihood_surrogate, surrogate_units
from tdmodels.population_hyper import ALPHA, N_LEARNED
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior
from tdmodels.errors import InputError

MONOTONE_SLACK = 1e-8        # nats per user: a decrease larger than this is a bug, not rounding


class EMResult(NamedTuple):
    """A batch EM fit of the population prior."""
    prior: MixturePrior            # learned components first, the broad component last
    responsibilities: np.ndarray   # [U, C + 1]
    log_evidence: float            # sum_u log sum_k w_k Z_uk under the likelihood surrogates (the objective without its penalty)
    iterations: int                # of the best start
    converged: bool                # the best start met the tolerance before the iteration cap
    objective: np.ndarray          # [iterations] the penalised objective of the best start, non-decreasing
    start_objectives: np.ndarray   # [starts] the final objective of every start


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


def broad_surrogates(z, y, broad_var: float = DEFAULT_PRIOR_VAR):
    """Each user's broad-prior Laplace mode [U, d] and Gaussian likelihood surrogate
    (precision [U, d, d], linear [U, d], constant [U]); z [U, S, d], y [U, S]."""
    U, _, d = z.shape
    mode, cov, ev = laplace_fit_batch(np.zeros((U, d)), np.broadcast_to(broad_var * np.eye(d), (U, d, d)).copy(), z, y)
    H = np.linalg.inv(cov)
    return mode, likelihood_surrogate(mode, H, np.linalg.slogdet(H)[1], ev, broad_var)


def _e_step(sur, weights, means, covs):
    lam, lin, const = sur
    U, C = len(const), len(weights)
    users, comps = np.repeat(np.arange(U), C), np.tile(np.arange(C), U)
    modes, pc, ev = surrogate_units(users, comps, lam, lin, const, means, covs)
    with np.errstate(divide="ignore"):
        joint = np.log(weights) + ev.reshape(U, C)
    return modes.reshape(U, C, -1), pc.reshape(U, C, *covs.shape[1:]), joint


def _objective(joint, covs, k, ridge):
    return float(logsumexp(joint, axis=1).sum()) - 0.5 * ridge * float(np.trace(np.linalg.inv(covs[:k]), axis1=1,
                                                                               axis2=2).sum())


def _run(sur, m0, k, w_floor, broad_var, ridge, iters, tol, rng):
    U, d = m0.shape
    spread = np.cov(m0.T) + ridge * np.eye(d) if U > 1 else np.eye(d)
    means = np.concatenate([_kmeanspp(m0, k, rng), np.zeros((1, d))])
    covs = np.concatenate([np.repeat(spread[None], k, 0), broad_var * np.eye(d)[None]])
    weights = np.concatenate([np.full(k, (1 - w_floor) / k), [w_floor]])
    trace, converged = [], False
    for _ in range(iters):
        modes, pc, joint = _e_step(sur, weights, means, covs)
        trace.append(_objective(joint, covs, k, ridge))
        if len(trace) > 1:
            if trace[-1] < trace[-2] - MONOTONE_SLACK * U:
                raise RuntimeError(f"mixture EM: the objective fell by {trace[-2] - trace[-1]:.3g} nats "
                                   f"(iteration {len(trace)}); EM must not decrease it")
            if trace[-1] - trace[-2] < tol * U:
                converged = True
                break
        r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        Nk = r[:, :k].sum(0)
        live = Nk > 1e-10                   # a component with no users keeps its parameters (weight ~ 0)
        mu = np.einsum("uk,ukd->kd", r[:, :k], modes[:, :k]) / np.where(live, Nk, 1.0)[:, None]
        dev = modes[:, :k] - mu[None]
        scatter = np.einsum("uk,ukij->kij", r[:, :k], pc[:, :k]) + np.einsum("uk,uki,ukj->kij", r[:, :k], dev, dev)
        cov = (scatter + ridge * np.eye(d)) / np.where(live, Nk, 1.0)[:, None, None]
        means[:k][live], covs[:k][live] = mu[live], 0.5 * (cov[live] + cov[live].transpose(0, 2, 1))
        w_broad = max(r[:, k].sum() / U, w_floor)
        weights = np.concatenate([(1 - w_broad) * Nk / max(Nk.sum(), 1e-300), [w_broad]])
    r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    return MixturePrior(weights, means, covs), r, float(logsumexp(joint, axis=1).sum()), np.array(trace), converged


def fit_mixture_em(z, y, n_components: int = N_LEARNED, alpha: float = ALPHA, broad_var: float = DEFAULT_PRIOR_VAR,
                   iters: int = 3000, tol: float = 1e-6, seed: int = 0, ridge: float = COV_RIDGE,
                   starts: int = 4) -> EMResult:
    """Fit the mixture prior to clicks by EM under the users' likelihood surrogates (module docstring).

    Parameters
    ----------
    z : array [U, S, d]
        Click designs; y [U, S] the clicks.
    n_components : int
        Learned components (at most U are used); the broad one is added last.
    alpha : float
        The broad component's weight is at least alpha / (alpha + U).
    broad_var : float
        Variance of the broad isotropic component.
    iters, tol : int, float
        Stop when the penalised objective rises by less than `tol` nats per user, else after `iters`.
    seed, starts : int
        `starts` k-means++ initialisations from `seed`; the best final objective is kept.
    ridge : float
        The covariance penalty (see the objective).

    Returns
    -------
    EMResult
    """
    z, y = np.asarray(z, dtype=float), np.asarray(y)
    if starts < 1 or iters < 1:
        raise InputError(f"starts and iters must be at least 1, got {starts} and {iters}")
    if not (np.all(np.isfinite(z)) and np.all(np.isin(y, (0, 1)))):
        raise InputError("fit_mixture_em: designs must be finite and clicks 0 or 1")
    U = z.shape[0]
    k = min(n_components, U)
    m0, sur = broad_surrogates(z, y, broad_var)
    w_floor = alpha / (alpha + U)
    best, finals = None, []
    for s in range(starts):
        out = _run(sur, m0, k, w_floor, broad_var, ridge, iters, tol, np.random.default_rng([seed, s]))
        finals.append(out[3][-1])
        if best is None or out[3][-1] > best[3][-1]:
            best = out
    prior, r, log_ev, trace, converged = best
    return EMResult(prior, r, log_ev, len(trace), converged, trace, np.array(finals))
