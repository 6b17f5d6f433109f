"""A user's exact posterior mixture to Monte Carlo precision, by importance sampling: in every component, the
weight (the prior weight times the component's evidence for the clicks), the mean and the covariance of
N(theta; m0_k, S0_k) x prod_t Bernoulli(y_t; sigmoid(z_t . theta)), each from many draws of a Student-t
proposal around a Gaussian close to it (an online belief's).

What this is for: the reference's own component moments (``diagnostics.belief_comparison.exact_moments_mixture``)
come from a few thousand NUTS draws, whose sample covariance spreads by several percent in its extreme
directions; a bound on what a Gaussian at the exact moments can reach must not carry that spread. With N
draws a component the spread is about sqrt(7 / ESS) instead, and each component's effective sample size is
returned so the caller can say how precise it is.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln, log_expit, logsumexp

from tdmodels.errors import InputError

PROPOSAL_DF = 5          # the Student-t proposal's degrees of freedom: tails heavier than any Gaussian posterior's
PROPOSAL_SCALE = 1.5     # its scale matrix over the Gaussian it is centred on: wider than the posterior in every direction
MIN_WEIGHT = 1e-5        # components the Gaussian gives less weight are left out (weight 0, the Gaussian's moments)
LIGHT = 1e-2             # components the Gaussian gives less weight take a tenth of the draws
CHUNK = 100_000          # draws evaluated at once (memory: CHUNK x clicks floats)
MIN_DRAWS, MAX_DRAWS = 1_000, 10_000_000


class ImportanceMixture(NamedTuple):
    weights: np.ndarray      # [C] the exact component weights (0 where left out)
    means: np.ndarray        # [C, d]
    covs: np.ndarray         # [C, d, d]
    ess: np.ndarray          # [C] each component's effective sample size (nan where left out)


def _student_t_logpdf(x: np.ndarray, loc: np.ndarray, chol: np.ndarray, df: float) -> np.ndarray:
    d = loc.shape[0]
    r = np.linalg.solve(chol, (x - loc).T)
    q = np.sum(r * r, 0)
    return (gammaln((df + d) / 2) - gammaln(df / 2) - 0.5 * d * np.log(df * np.pi) - np.log(np.diag(chol)).sum()
            - 0.5 * (df + d) * np.log1p(q / df))


def _gauss_logpdf(x: np.ndarray, loc: np.ndarray, chol: np.ndarray) -> np.ndarray:
    d = loc.shape[0]
    r = np.linalg.solve(chol, (x - loc).T)
    return -0.5 * np.sum(r * r, 0) - np.log(np.diag(chol)).sum() - 0.5 * d * np.log(2 * np.pi)


def importance_mixture(prior, z: np.ndarray, y: np.ndarray, around, draws: int,
                       rng: np.random.Generator) -> ImportanceMixture:
    """The exact posterior mixture of one user's clicks, by importance sampling in every component.

    Parameters
    ----------
    prior : MixturePrior
        (weights [C], means [C, d], covs [C, d, d]): the prior the session started from.
    z : array [T, d]
        The clicks' design rows (first minus second option's features, as read).
    y : array [T]
        1 where the first option won.
    around : (weights [C], means [C, d], covs [C, d, d])
        A Gaussian mixture close to the posterior (an online belief after the clicks): each component's
        proposal is a Student-t at its mean with PROPOSAL_SCALE times its covariance; components it weighs
        under MIN_WEIGHT are left out.
    draws : int
        Draws a component (a tenth, at least MIN_DRAWS, for those `around` weighs under LIGHT).
    rng : numpy.random.Generator

    Returns
    -------
    ImportanceMixture
        weights [C], means [C, d], covs [C, d, d], ess [C].
    """
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or not MIN_DRAWS <= draws <= MAX_DRAWS:
        raise InputError(f"importance draws must be an integer from {MIN_DRAWS} to {MAX_DRAWS}, got {draws!r}")
    w0, m0, S0 = (np.asarray(a, dtype=float) for a in prior)
    wq, mq, Sq = (np.asarray(a, dtype=float) for a in around)
    z, y = np.asarray(z, dtype=float), np.asarray(y)
    C, d = m0.shape
    if mq.shape != (C, d) or Sq.shape != (C, d, d) or wq.shape != (C,) or z.ndim != 2 or z.shape[1] != d \
            or y.shape != (z.shape[0],):
        raise InputError(f"importance moments: a prior of {C} components in {d} dimensions needs a mixture of the "
                         f"same shapes and clicks [T, {d}], [T]; got {mq.shape}, {Sq.shape}, {z.shape}, {y.shape}")
    for name, a in (("prior", (w0, m0, S0)), ("proposal mixture", (wq, mq, Sq)), ("clicks", (z,))):
        if not all(np.all(np.isfinite(x)) for x in a):
            raise InputError(f"importance moments: the {name} has entries that are not finite numbers")
    sign = np.where(y > 0, 1.0, -1.0)
    log_w = np.full(C, -np.inf)
    means, covs, ess = mq.copy(), Sq.copy(), np.full(C, np.nan)
    for c in range(C):
        if not (w0[c] > 0 and wq[c] >= MIN_WEIGHT):
            continue
        try:
            Lq = np.linalg.cholesky(PROPOSAL_SCALE * Sq[c])
            L0 = np.linalg.cholesky(S0[c])
        except np.linalg.LinAlgError:
            raise InputError(f"importance moments: component {c}'s covariance (prior or proposal) is not "
                             "positive definite") from None
        n_c = draws if wq[c] >= LIGHT else max(MIN_DRAWS, draws // 10)
        chunks = []
        for start in range(0, n_c, CHUNK):
            n = min(CHUNK, n_c - start)
            x = mq[c] + (rng.standard_normal((n, d)) @ Lq.T) / np.sqrt(rng.chisquare(PROPOSAL_DF, n) / PROPOSAL_DF)[:, None]
            log_r = (_gauss_logpdf(x, m0[c], L0) + log_expit(sign * (x @ z.T)).sum(1)
                     - _student_t_logpdf(x, mq[c], Lq, PROPOSAL_DF))
            chunks.append((x, log_r))
        x = np.concatenate([a for a, _ in chunks])
        log_r = np.concatenate([b for _, b in chunks])
        log_w[c] = np.log(w0[c]) + logsumexp(log_r) - np.log(n_c)
        r = np.exp(log_r - log_r.max())
        r /= r.sum()
        ess[c] = 1.0 / np.sum(r * r)
        means[c] = r @ x
        dx = x - means[c]
        covs[c] = dx.T @ (dx * r[:, None])
    if not np.isfinite(log_w).any():
        raise InputError("importance moments: no component is left (the proposal mixture weighs none over "
                         f"{MIN_WEIGHT})")
    return ImportanceMixture(np.exp(log_w - logsumexp(log_w)), means, covs, ess)


__all__ = ["ImportanceMixture", "importance_mixture"]
