"""The learned population prior judged on what it is for: predicting new users' clicks.

For users held out of the prior's fit, the log predictive density of their clicks,

    log p(y_u | prior) = log sum_k w_k p(y_u | k),

a label-invariant figure (it does not care how components are numbered or split). Each
p(y_u | prior) is importance-sampled (`log_predictive`: defensive importance sampling, PSIS
k-hat recorded), not the Laplace approximation the learner uses.
Priors compared on the same held-out users: the online prior each user arrived under (learned
from earlier sessions only), a batch EM mixture fitted offline to the other users' clicks
(``inference.mixture_em``), and the broad isotropic N(0, 4 I).
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import arviz as az
import numpy as np
from scipy.special import logsumexp

from diagnostics.posterior_checks import mixture_logpdf, sample_mixture
from diagnostics.stats import t_interval
from inference.evidence import T_DOF, mvt_logpdf, mvt_sample
from inference.laplace import laplace_fit_batch
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, isotropic_prior
from tdmodels.errors import InputError


class HeldOut(NamedTuple):
    """Held-out arrivals' log predictive densities under each prior, with the importance sampler's worst k-hat per prior."""
    users: np.ndarray        # [H] held-out arrivals
    log_pred: dict           # prior name -> [H] log p(y_u | prior), nats
    max_khat: dict           # prior name -> largest PSIS k-hat of its importance-sampled evidences

    def summary(self, against: str = "isotropic") -> dict:
        """Mean log predictive per user and the paired mean difference against `against` (with a 95% interval)."""
        out = {}
        base = self.log_pred[against]
        for name, lp in self.log_pred.items():
            diff = lp - base
            half = t_interval(diff)[1]
            out[name] = {"mean": float(lp.mean()), "vs_" + against: float(diff.mean()), "ci95": float(half),
                         "max_khat": self.max_khat[name]}
        return out


def log_predictive(z, y, prior: MixturePrior, n: int = 4000, seed: int = 0, top: int = 8
                   ) -> tuple[np.ndarray, np.ndarray]:
    """log p(y_u | prior) of each user's clicks, by defensive importance sampling: the one estimator of
    held-out log predictive densities (held-out checks and population-fit comparisons alike).

    The proposal has three equal parts (multiple importance sampling, the whole mixture as the
    proposal density): a Student-t (5 degrees of freedom, covariance inflated 1.5x) around the user's
    Laplace fit under N(0, 4 I); a mixture of such t's around the user's Laplace fits under each of
    the prior's `top` components of highest posterior weight for this user (weights w_k times the
    Laplace evidence, renormalised over those), which is where a prior of narrow components puts the
    posterior; and the prior itself, so that the weights p(y | theta) prior(theta) / q(theta) are
    bounded by 3 p(y | theta) <= 3 wherever the t's miss the posterior.

    Parameters
    ----------
    z : array [U, S, d]
        Click designs; y [U, S] the clicks.
    prior : MixturePrior
        Shared by all users (weights [C]) or one per user (weights [U, C], means [U, C, d], ...).
    n : int
        Draws per user.
    top : int
        Components per user in the proposal's middle part.

    Returns
    -------
    (log predictive [U], PSIS k-hat [U] of each estimate)
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise InputError(f"log_predictive: n must be an integer >= 3 (one draw per proposal part), got {n!r}")
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)
    U, S, d = z.shape
    per_user = np.ndim(prior.weights) == 2
    priors = [MixturePrior(*(a[u] for a in prior)) for u in range(U)] if per_user else [prior] * U
    rng = np.random.default_rng(seed)
    mode, cov, _ = laplace_fit_batch(np.zeros((U, d)), np.broadcast_to(DEFAULT_PRIOR_VAR * np.eye(d), (U, d, d)).copy(),
                                     z, y)
    cm, cc, cw = _component_fits(z, y, priors, top)                                # [U, M, d], [U, M, d, d], [U, M]
    n_t, n_c = n // 3, n // 3
    x_t, _ = mvt_sample(rng, mode, 1.5 * cov, n_t)
    x_c = _sample_t_mixture(rng, cm, 1.5 * cc, cw, n_c)
    x_p = np.stack([sample_mixture(rng, *pr, n - n_t - n_c) for pr in priors])
    x = np.concatenate([x_t, x_c, x_p], 1)                                          # [U, n, d]
    if per_user:
        logprior = np.stack([mixture_logpdf(x[u], *priors[u]) for u in range(U)])
    else:
        chunk = max(1, int(2e7 // (U * np.size(prior.weights) * d)))     # about 160 MB of temporaries
        logprior = np.concatenate([mixture_logpdf(x[:, lo:lo + chunk], *prior) for lo in range(0, n, chunk)], 1)
    parts = [mvt_logpdf(x, mode, 1.5 * cov), _t_mixture_logpdf(x, cm, 1.5 * cc, cw), logprior]
    share = np.log(np.array([n_t, n_c, n - n_t - n_c]) / n)
    logq = logsumexp(np.stack(parts) + share[:, None, None], axis=0)
    eta = np.einsum("usd,und->uns", z, x)
    loglik = -np.sum(y[:, None] * np.logaddexp(0.0, -eta) + (1 - y[:, None]) * np.logaddexp(0.0, eta), -1)
    logw = loglik + logprior - logq
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        khat = az.psislw(logw - logw.max(-1, keepdims=True))[1]
    return logsumexp(logw, axis=-1) - np.log(n), np.atleast_1d(khat)


def _component_fits(z, y, priors, top):
    """Each user's Laplace fits under the `top` prior components of highest posterior weight
    (w_k x Laplace evidence): modes [U, M, d], covariances [U, M, d, d], weights [U, M] summing to 1."""
    U, S, d = z.shape
    M = min(top, min(int(np.sum(np.asarray(p.weights) > 0)) for p in priors))
    modes, covs, weights = np.empty((U, M, d)), np.empty((U, M, d, d)), np.empty((U, M))
    for u, pr in enumerate(priors):
        keep = np.flatnonzero(np.asarray(pr.weights) > 0)
        C = len(keep)
        m, c, ev = laplace_fit_batch(np.asarray(pr.means)[keep], np.asarray(pr.covs)[keep],
                                     np.broadcast_to(z[u], (C, S, d)).copy(), np.broadcast_to(y[u], (C, S)).copy())
        lw = np.log(np.asarray(pr.weights)[keep]) + ev
        best = np.argsort(-lw)[:M]
        modes[u], covs[u] = m[best], c[best]
        weights[u] = np.exp(lw[best] - logsumexp(lw[best]))
    return modes, covs, weights


def _sample_t_mixture(rng, means, covs, weights, n):
    """n draws [U, n, d] per user of the mixture of t's (T_DOF) with means [U, M, d], covs [U, M, d, d]."""
    U, M, d = means.shape
    k = np.stack([rng.choice(M, size=n, p=w) for w in weights])                     # [U, n]
    L = np.linalg.cholesky(covs)
    Lk = np.take_along_axis(L, k[:, :, None, None], 1)                              # [U, n, d, d]
    mk = np.take_along_axis(means, k[:, :, None], 1)
    g = rng.standard_normal((U, n, d))
    chi = rng.chisquare(T_DOF, size=(U, n, 1)) / T_DOF
    return mk + np.einsum("unij,unj->uni", Lk, g) / np.sqrt(chi)


def _t_mixture_logpdf(x, means, covs, weights):
    """log density [U, n] at x [U, n, d] of each user's mixture of t's."""
    comp = np.stack([mvt_logpdf(x, means[:, j], covs[:, j]) for j in range(means.shape[1])], -1)
    with np.errstate(divide="ignore"):
        return logsumexp(comp + np.log(weights)[:, None, :], axis=-1)


def held_out_check(log, holdout: int, seed: int = 0, em=None) -> HeldOut:
    """The last `holdout` arrivals of a run, under the online prior each arrived under, a batch EM
    fit to the earlier arrivals (`em`, an ``EMResult``, or fitted here), and the broad prior."""
    from inference.mixture_em import fit_mixture_em

    N = log.n_users
    if not 0 < holdout < N:
        raise InputError(f"holdout must lie in 1..{N - 1}, got {holdout}")
    z, y = log.recalibrated_design()
    train, test = np.arange(N - holdout), np.arange(N - holdout, N)
    if em is None:
        em = fit_mixture_em(z[train], y[train], seed=seed)
    priors = {"isotropic": isotropic_prior(z.shape[-1], DEFAULT_PRIOR_VAR), "batch_em": em.prior}
    if log.priors is not None:
        priors["online"] = MixturePrior(*(a[test] for a in log.priors))
    lp, kh = {}, {}
    for name, prior in priors.items():
        lp[name], k = log_predictive(z[test], y[test], prior, seed=seed)
        kh[name] = float(np.max(k))
    return HeldOut(test, lp, kh)
