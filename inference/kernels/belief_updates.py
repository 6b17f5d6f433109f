"""One click into a mixture belief by any of the online beliefs (``inference.online_beliefs``), and
CODuel's click into both of its beliefs under one of them.

Beliefs are coded by their index in ``inference.constants.BELIEFS``: 0 the Laplace step
(``belief.mixture_update``), 1 assumed-density filtering (``moment_matching.mixture_update_adf``), 2 the
importance-corrected Laplace step (``importance_laplace.mixture_update_is``), 3 expectation propagation
(``expectation_propagation.mixture_update_ep``), 4 expectation propagation with its pairwise correction
(the same, ``corrected``); 2, 3 and 4 read the session's earlier clicks and the prior it started from.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from inference.kernels.belief import mixture_update, recalibrated, update_both
from inference.kernels.expectation_propagation import mixture_update_ep
from inference.kernels.importance_laplace import mixture_update_is
from inference.kernels.moment_matching import mixture_update_adf
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


@njit(cache=CACHE)
def belief_update(kind, log_w, means, covs, active, z, y, prior_log_w, prior_means, prior_covs, Zs, ys, t, base,
                  sites, fitted, ep_means, ep_covs):
    """One click (z [d], y) into the belief (log_w [C], means [C, d], covs [C, d, d], active [C]) by belief
    `kind`; returns (log_w, means, covs, log p(y | belief)). The prior the session started from (same
    slots) and the session's earlier clicks Zs [S, d], ys [S] (rows [:t]) are read by the importance-corrected
    step and expectation propagation, the base draws [M, d] by the former only; expectation propagation's
    sites, fitted, ep_means and ep_covs (``online_beliefs.Sites``) are its state, updated in place (the
    caller's copies), which no other belief reads."""
    if kind == 1:
        return mixture_update_adf(log_w, means, covs, active, z, y)
    if kind == 2:
        return mixture_update_is(log_w, means, covs, active, z, y, prior_log_w, prior_means, prior_covs, Zs, ys,
                                 t, base)
    if kind == 3 or kind == 4:
        return mixture_update_ep(log_w, means, covs, active, z, y, prior_log_w, prior_means, prior_covs, Zs, ys, t,
                                 kind == 4, sites, fitted, ep_means, ep_covs)
    return mixture_update(log_w, means, covs, active, z, y)


@njit(cache=CACHE)
def coduel_click(log_w, means, covs, active, alone_log_w, alone_means, alone_covs, Phi, A, i, j, y):
    """`coduel_click_belief` for the Laplace step, without the arguments only other beliefs read (CODuel's
    default path: fewer arguments for the dispatcher to check on every click). Returns (P, z, the population
    belief and log p(y), the no-transfer belief and log p(y))."""
    P = recalibrated(Phi, A)
    z = P[i] - P[j]
    w1, m1, S1, lp1, w2, m2, S2, lp2 = update_both(log_w, means, covs, active, alone_log_w, alone_means,
                                                   alone_covs, z, y)
    return P, z, w1, m1, S1, lp1, w2, m2, S2, lp2


@njit(cache=CACHE)
def coduel_click_belief(log_w, means, covs, active, alone_log_w, alone_means, alone_covs, Phi, A, i, j, y, kind,
                        prior_log_w, prior_means, prior_covs, Zs, ys, t, base, sites, fitted, ep_means, ep_covs,
                        alone_sites, alone_fitted, alone_ep_means, alone_ep_covs):
    """One click on the question Phi [K, d] under recalibration A into CODuel's two beliefs, the population
    belief (prior: prior_* over the population's slots) and the no-transfer one (prior: the last slot, the
    broad component), by belief `kind` on z = P_i - P_j, P = `recalibrated`; the two beliefs' EP sites
    (`belief_update`) updated in place. Returns (P, z, the population belief and log p(y), the no-transfer
    belief and log p(y))."""
    P = recalibrated(Phi, A)
    z = P[i] - P[j]
    w1, m1, S1, lp1 = belief_update(kind, log_w, means, covs, active, z, y, prior_log_w, prior_means, prior_covs,
                                    Zs, ys, t, base, sites, fitted, ep_means, ep_covs)
    one = np.ones(alone_log_w.shape[0], dtype=np.bool_)
    w2, m2, S2, lp2 = belief_update(kind, alone_log_w, alone_means, alone_covs, one, z, y, np.zeros(1),
                                    prior_means[-1:], prior_covs[-1:], Zs, ys, t, base, alone_sites, alone_fitted,
                                    alone_ep_means, alone_ep_covs)
    return P, z, w1, m1, S1, lp1, w2, m2, S2, lp2
