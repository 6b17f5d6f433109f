"""The learned population prior judged on what it is for: predicting new users' clicks.

For users held out of the prior's fit, the log predictive density of their clicks,

    log p(y_u | prior) = log sum_k w_k p(y_u | k),

a label-invariant figure (it does not care how components are numbered or split). Each
p(y_u | k) is importance-sampled (``inference.evidence``, a Student-t proposal around the
unit's Laplace fit, PSIS k-hat recorded), not the Laplace approximation the learner uses.
Priors compared on the same held-out users: the online prior each user arrived under (learned
from earlier sessions only), a batch EM mixture fitted offline to the other users' clicks
(``inference.mixture_em``), and the broad isotropic N(0, 4 I).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from diagnostics.stats import t_interval
from inference.evidence import importance_log_evidence
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


def log_predictive(z, y, prior: MixturePrior, draws: int = 200, seed: int = 0) -> tuple[np.ndarray, float]:
    """log p(y_u | prior) [U] for clicks y [U, S] on designs z [U, S, d] under a mixture prior shared by
    all users (weights [C]) or one per user (weights [U, C]); also the largest k-hat."""
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)
    U, S, d = z.shape
    w = np.broadcast_to(np.asarray(prior.weights, dtype=float), (U, np.shape(prior.weights)[-1]))
    C = w.shape[1]
    m = np.broadcast_to(prior.means, (U, C, d)).reshape(U * C, d)
    cv = np.broadcast_to(prior.covs, (U, C, d, d)).reshape(U * C, d, d)
    live = w.reshape(-1) > 0
    Z, Y = np.repeat(z, C, 0)[live], np.repeat(y, C, 0)[live]
    mode, cov, _ = laplace_fit_batch(m[live], cv[live], Z, Y)
    rng = np.random.default_rng(seed)
    pseudo = mode[:, None] + np.einsum("bij,bnj->bni", np.linalg.cholesky(cov), rng.standard_normal((len(mode), draws, d)))
    ev, khat = importance_log_evidence(pseudo, m[live], cv[live], Z, Y, seed=seed)
    full = np.full(U * C, -np.inf)
    full[live] = ev
    with np.errstate(divide="ignore"):
        return logsumexp(np.log(w) + full.reshape(U, C), axis=1), float(np.max(khat))


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
        lp[name], kh[name] = log_predictive(z[test], y[test], prior, seed=seed)
    return HeldOut(test, lp, kh)
