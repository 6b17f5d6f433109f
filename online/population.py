"""The learned population prior: refitted after every session by a few EM steps, with births and removals.

The prior is a Gaussian mixture whose last component is the broad isotropic N(0, tau2 I)
(fixed; its weight never below alpha / (alpha + n) after n sessions, the mass a Dirichlet
process keeps for a new kind of user). After each session:

1. birth: if the new session is better explained by the broad component than by every
   learned one (Laplace evidence times weight) and fewer than `max_learned` components
   exist, a component is born at that session's broad-prior Laplace posterior;
2. `em_iters` EM steps over all completed sessions, the E-step weighting component k for
   user u by the Laplace evidence p(y_u | k) (``inference.mixture_em.component_laplace``,
   Newton warm-started at each session's broad-prior mode), the M-step moment-matching each learned
   component to its users' Laplace posteriors;
3. removal: learned components supported by fewer than `min_support` users' worth of
   responsibility are dropped.

Choices the reference leaves open (covariance ridge 1e-2, min_support 0.5, 2 EM steps,
newborn covariance = the session's Laplace covariance) are stated here and are settings.
Pure functions over a NamedTuple; this NumPy version favours clarity over speed.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from inference.laplace import laplace_fit_batch
from inference.mixture_em import COV_RIDGE, component_laplace
from tdmodels.population_model import ALPHA, N_LEARNED
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, isotropic_prior

EM_ITERS = 2
MIN_SUPPORT = 0.5


class Population(NamedTuple):
    prior: MixturePrior      # learned components first, the broad component last
    n: int                   # completed sessions
    modes: np.ndarray        # [n, d] each session's Laplace mode under the broad prior (Newton's start)


def init_population(d: int, broad_var: float = DEFAULT_PRIOR_VAR) -> Population:
    return Population(isotropic_prior(d, broad_var), 0, np.zeros((0, d)))


def _floor_weights(learned: np.ndarray, broad: float, n: int, alpha: float) -> np.ndarray:
    w_broad = max(broad, alpha / (alpha + n))
    total = learned.sum()
    learned = (1.0 - w_broad) * (learned / total if total > 0 else learned)
    return np.concatenate([learned, [w_broad if total > 0 else 1.0]])


def refit_population(pop: Population, Z: np.ndarray, y: np.ndarray, alpha: float = ALPHA,
                     max_learned: int = N_LEARNED, em_iters: int = EM_ITERS, min_support: float = MIN_SUPPORT,
                     ridge: float = COV_RIDGE) -> tuple[Population, np.ndarray]:
    """The prior after the latest session; Z [n, S, d], y [n, S] are all completed sessions, newest last.

    Returns (population, responsibilities [n, C_old] of the last E-step, before its M-step).
    """
    w, m, C = (np.array(a, dtype=float) for a in pop.prior)
    n, S, d = Z.shape
    k = len(w) - 1                                                     # learned components
    known = pop.modes[: n - 1]                      # broad-prior modes of earlier sessions, when already known
    miss = n - len(known)
    mb, cb, _ = laplace_fit_batch(np.repeat(m[-1:], miss, 0), np.repeat(C[-1:], miss, 0), Z[-miss:], y[-miss:])
    modes_broad, m_new, c_new = np.concatenate([known, mb]), mb[-1:], cb[-1:]
    # 1. birth from the newest session
    if k < max_learned:
        _, _, ev = component_laplace(Z[-1:], y[-1:], MixturePrior(w, m, C))
        joint = np.log(np.maximum(w, 1e-300)) + ev[0]
        if k == 0 or joint[-1] > joint[:k].max():
            m = np.concatenate([m[:k], m_new, m[-1:]])
            C = np.concatenate([C[:k], c_new + ridge * np.eye(d), C[-1:]])
            counts = np.concatenate([w[:k] * max(n - 1, 0), [1.0]])     # effective users per component
            w = _floor_weights(counts, 0.0, n, alpha)                   # broad at its floor until the M-step
            k += 1
        else:
            w = _floor_weights(w[:k], w[-1], n, alpha)
    else:
        w = _floor_weights(w[:k], w[-1], n, alpha)
    # 2. EM over all completed sessions
    r = np.ones((n, 1))
    for _ in range(em_iters):
        modes, covs, ev = component_laplace(Z, y, MixturePrior(w, m, C),
                                            init=np.repeat(modes_broad[:, None], len(w), 1))
        joint = np.log(np.maximum(w, 1e-300)) + ev
        r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        if k == 0:
            break
        Nk = r[:, :k].sum(0)
        safe = np.maximum(Nk, 1e-300)
        mu = np.einsum("uk,ukd->kd", r[:, :k], modes[:, :k]) / safe[:, None]
        dev = modes[:, :k] - mu[None]
        cov = (np.einsum("uk,ukij->kij", r[:, :k], covs[:, :k])
               + np.einsum("uk,uki,ukj->kij", r[:, :k], dev, dev)) / safe[:, None, None]
        live = Nk >= min_support
        # 3. removal of weakly supported components
        m = np.concatenate([mu[live], m[-1:]])
        C = np.concatenate([cov[live] + ridge * np.eye(d), C[-1:]])
        w = _floor_weights(Nk[live] / n, r[:, -1].mean(), n, alpha)
        k = int(live.sum())
    return Population(MixturePrior(w, m, C), n, modes_broad), r
