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
from inference.evidence import mvt_logpdf, mvt_sample
from inference.laplace import laplace_fit_batch
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, isotropic_prior


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


def log_predictive(z, y, prior: MixturePrior, n: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """log p(y_u | prior) of each user's clicks, by defensive importance sampling: the one estimator of
    held-out log predictive densities (held-out checks and population-fit comparisons alike).

    Half the draws come from a Student-t (5 degrees of freedom, covariance inflated 1.5x) around the
    user's Laplace fit under N(0, 4 I), half from the prior itself, and the two-part mixture is the
    proposal density, so the weights p(y | theta) prior(theta) / q(theta) are bounded by
    2 p(y | theta) <= 2 wherever the t misses the posterior.

    Parameters
    ----------
    z : array [U, S, d]
        Click designs; y [U, S] the clicks.
    prior : MixturePrior
        Shared by all users (weights [C]) or one per user (weights [U, C], means [U, C, d], ...).
    n : int
        Draws per user.

    Returns
    -------
    (log predictive [U], PSIS k-hat [U] of each estimate)
    """
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)
    U, S, d = z.shape
    per_user = np.ndim(prior.weights) == 2
    priors = [MixturePrior(*(a[u] for a in prior)) for u in range(U)] if per_user else [prior] * U
    rng = np.random.default_rng(seed)
    mode, cov, _ = laplace_fit_batch(np.zeros((U, d)), np.broadcast_to(DEFAULT_PRIOR_VAR * np.eye(d), (U, d, d)).copy(),
                                     z, y)
    x_t, _ = mvt_sample(rng, mode, 1.5 * cov, n // 2)
    x_p = np.stack([sample_mixture(rng, *pr, n - n // 2) for pr in priors])
    x = np.concatenate([x_t, x_p], 1)                                               # [U, n, d]
    if per_user:
        logprior = np.stack([mixture_logpdf(x[u], *priors[u]) for u in range(U)])
    else:
        chunk = max(1, int(2e7 // (U * np.size(prior.weights) * d)))     # about 160 MB of temporaries
        logprior = np.concatenate([mixture_logpdf(x[:, lo:lo + chunk], *prior) for lo in range(0, n, chunk)], 1)
    logq = np.logaddexp(mvt_logpdf(x, mode, 1.5 * cov), logprior) - np.log(2.0)
    eta = np.einsum("usd,und->uns", z, x)
    loglik = -np.sum(y[:, None] * np.logaddexp(0.0, -eta) + (1 - y[:, None]) * np.logaddexp(0.0, eta), -1)
    logw = loglik + logprior - logq
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        khat = az.psislw(logw - logw.max(-1, keepdims=True))[1]
    return logsumexp(logw, axis=-1) - np.log(n), np.atleast_1d(khat)


def held_out_check(log, holdout: int, seed: int = 0, em=None) -> HeldOut:
    """The last `holdout` arrivals of a run, under the online prior each arrived under, a batch EM
    fit to the earlier arrivals (`em`, an ``EMResult``, or fitted here), and the broad prior."""
    from inference.mixture_em import fit_mixture_em

    N = log.n_users
    if not 0 < holdout < N:
        raise ValueError(f"holdout must lie in 1..{N - 1}, got {holdout}")
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
