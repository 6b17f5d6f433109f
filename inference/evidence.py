"""Marginal likelihoods p(y | component) of one user's clicks, by importance sampling.

For a unit (user u under Gaussian prior component k) the proposal is a multivariate
Student-t (5 degrees of freedom) with the mean and covariance of that unit's NUTS
draws, so it covers the posterior with heavier tails. The estimate is
log mean_i p(y | theta_i) N(theta_i; prior) / q(theta_i); the PSIS k-hat of the log
weights says whether it can be trusted (< 0.7).
"""
from __future__ import annotations

import warnings

import arviz as az
import numpy as np
from scipy.special import gammaln, logsumexp

T_DOF = 5.0
MAX_KHAT = 0.7


def mvt_logpdf(x, mean, cov, nu=T_DOF):
    """log density [B, n] of multivariate t(nu, mean [B, d], cov [B, d, d]) at x [B, n, d]."""
    d = mean.shape[-1]
    L = np.linalg.cholesky(cov)
    sol = np.einsum("bij,bnj->bni", np.linalg.inv(L), x - mean[:, None])
    logdet = np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), -1)[:, None]
    return (gammaln((nu + d) / 2) - gammaln(nu / 2) - 0.5 * d * np.log(nu * np.pi) - logdet
            - 0.5 * (nu + d) * np.log1p(np.sum(sol ** 2, -1) / nu))


def mvt_sample(rng, mean, cov, n, nu=T_DOF):
    """n draws [B, n, d] of multivariate t(nu, mean [B, d], cov [B, d, d]) and their log densities [B, n]. `rng`:
    one generator for all, or a list of B, one per batch member (its draws then depend on its generator alone)."""
    B, d = mean.shape
    L = np.linalg.cholesky(cov)
    if isinstance(rng, list):
        g = np.stack([r.standard_normal((n, d)) for r in rng])
        w = np.stack([r.chisquare(nu, size=(n, 1)) for r in rng]) / nu
    else:
        g = rng.standard_normal((B, n, d))
        w = rng.chisquare(nu, size=(B, n, 1)) / nu
    x = mean[:, None] + np.einsum("bij,bnj->bni", L, g) / np.sqrt(w)
    return x, mvt_logpdf(x, mean, cov, nu)


def log_joint(theta, prior_means, prior_covs, Z, y):
    """log N(theta; prior) + log p(y | theta) for theta [B, n, d], Z [B, S, d], y [B, S] -> [B, n]."""
    d = theta.shape[-1]
    L = np.linalg.cholesky(prior_covs)
    sol = np.einsum("bij,bnj->bni", np.linalg.inv(L), theta - prior_means[:, None])   # one inverse per unit
    logprior = (-0.5 * np.sum(sol ** 2, -1) - np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), -1)[:, None]
                - 0.5 * d * np.log(2 * np.pi))
    eta = np.einsum("bsd,bnd->bns", Z, theta)
    y = np.asarray(y, dtype=float)[:, None]
    loglik = np.sum(y * eta - np.logaddexp(0.0, eta), -1)     # log sigmoid(eta) y + log sigmoid(-eta) (1 - y)
    return logprior + loglik


def importance_log_evidence(draws: np.ndarray, prior_means: np.ndarray, prior_covs: np.ndarray, Z: np.ndarray,
                            y: np.ndarray, n: int = 4000, seed: int = 0, chunk: int = 256,
                            unit_seeds: np.ndarray | None = None):
    """log p(y | unit) [B] and PSIS k-hat [B] for B units; draws [B, M, d] are that unit's posterior draws.
    With `unit_seeds` [B, k] (integers, e.g. user and component), each unit's proposal draws come from its own
    generator (seed, *unit_seeds[b]), so its estimate does not depend on the other units of the batch."""
    rng = np.random.default_rng(seed)
    B, _, d = draws.shape
    out, khat = np.empty(B), np.empty(B)
    for lo in range(0, B, chunk):
        sl = slice(lo, min(B, lo + chunk))
        mean = draws[sl].mean(1)
        cov = np.einsum("bmi,bmj->bij", draws[sl] - mean[:, None], draws[sl] - mean[:, None]) / draws.shape[1]
        cov = cov + 1e-9 * np.eye(d)
        own = None if unit_seeds is None else [np.random.default_rng([seed, *map(int, s)]) for s in unit_seeds[sl]]
        x, logq = mvt_sample(rng if own is None else own, mean, cov, n)
        logw = log_joint(x, prior_means[sl], prior_covs[sl], Z[sl], y[sl]) - logq
        out[sl] = logsumexp(logw, axis=-1) - np.log(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            khat[sl] = az.psislw(logw - logw.max(-1, keepdims=True))[1]
    return out, khat
