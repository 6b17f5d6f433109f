"""Kernels of the population model's exact sampler (``inference.population_gibbs``): sweeps of the
collapsed sampler over users' assignments and theta.

State: assignments c [U] (slot K is the broad component) and theta [U, d]; each
learned slot's sufficient statistics n [K + 1] (counts, the broad one's too), T1 [K, d] = sum
theta, T2 [K, d, d] = sum theta theta^T are recomputed from them. A learned component's mean and
covariance are integrated out under their Normal-inverse-Wishart prior (nu0, psi I, kappa0; mean 0),
so a user's density under slot k is the multivariate-t predictive given the other members; the
stick fractions are integrated out too (``log_assignment_prior``). Stored draws get the stick
fractions, means and covariances from their exact conditionals.

Every draw comes from the ``numpy.random.Generator`` passed in: a chain is reproducible given its
generator's seed and the sequence of calls, and no global random state is read or changed.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from inference.kernels.gibbs_conjugate import draw_components, draw_fractions, recompute_stats
from inference.kernels.gibbs_moves import dilate_clusters, scale_clusters, translate_clusters, user_moves
from inference.kernels.gibbs_split_merge import label_swaps, split_merge
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest


class Clicks(NamedTuple):
    """The users' clicks and the Gaussian surrogates of their likelihoods (read off broad-prior Laplace fits)."""
    Z: np.ndarray            # [U, S, d] designs
    Y: np.ndarray            # [U, S] clicks
    lik_prec: np.ndarray     # [U, d, d]
    lik_lin: np.ndarray      # [U, d]
    lik_const: np.ndarray    # [U]


class Target(NamedTuple):
    """The constants of the posterior the sampler targets."""
    alpha: float             # stick-breaking concentration
    broad_var: float         # the broad component's variance
    nu0: float               # Normal-inverse-Wishart: degrees of freedom
    psi: float               # ... scale (psi I)
    kappa0: float            # ... mean precision factor


class Moves(NamedTuple):
    """How the sampler moves (``inference.population_gibbs.GibbsSettings``, resolved for the data)."""
    proposal_df: float
    refine_nats: float
    newton_iters: int
    split_merge: int         # attempts per sweep
    label_swaps: int         # attempts per sweep
    scale_step: float
    rw_scale: float
    pair_bandwidth: float
    translation_newton: int
    dilate_step: float


class ChainState(NamedTuple):
    """Where a chain stands: the sweeps change these arrays in place."""
    c: np.ndarray            # [U] int64 assignments (K: the broad component)
    theta: np.ndarray        # [U, d]


class Draws(NamedTuple):
    """Stored draws, D of them."""
    theta: np.ndarray        # [D, U, d]
    c: np.ndarray            # [D, U]
    v: np.ndarray            # [D, K] stick fractions
    mu: np.ndarray           # [D, K, d]
    cov_chol: np.ndarray     # [D, K, d, d]


class MoveCounts(NamedTuple):
    """Per sweep, how often each move was proposed or accepted: [sweeps] int64 arrays."""
    user_moves_accepted: np.ndarray
    splits_proposed: np.ndarray
    splits_accepted: np.ndarray
    merges_proposed: np.ndarray
    merges_accepted: np.ndarray
    label_swaps_accepted: np.ndarray
    translations_accepted: np.ndarray
    scalings_accepted: np.ndarray
    dilations_accepted: np.ndarray


def no_draws(U: int, K: int, d: int, D: int = 0) -> Draws:
    """Room for D draws (none by default: warm-up)."""
    return Draws(np.zeros((D, U, d)), np.zeros((D, U), np.int64), np.zeros((D, K)), np.zeros((D, K, d)),
                 np.zeros((D, K, d, d)))


def move_counts(sweeps: int) -> MoveCounts:
    """Zeroed counts for `sweeps` sweeps."""
    return MoveCounts(*(np.zeros(sweeps, np.int64) for _ in MoveCounts._fields))


@njit(cache=CACHE)
def run_sweeps(clicks, target, moves, state, rng, sweeps, thin, draws, counts):
    """`sweeps` sweeps of the sampler on `state` (a ChainState, changed in place), drawing from `rng`;
    every `thin`-th sweep's state goes to `draws` (a Draws) while it has room, with the stick fractions,
    means and covariances drawn from their conditionals; `counts` (MoveCounts) gets each sweep's moves.
    Returns the number of draws stored.

    One sweep: joint (c_u, theta_u) moves for every user; a translation, a scaling and a dilation move
    of every learned component; `moves.split_merge` split-merge and `moves.label_swaps` label moves.
    """
    Z, Y = clicks.Z, clicks.Y
    c, theta = state.c, state.theta
    t, m = target, moves
    U, S, d = Z.shape
    K = draws.v.shape[1]
    n = np.zeros(K + 1, dtype=np.int64)
    T1, T2 = np.zeros((K, d)), np.zeros((K, d, d))
    v = np.empty(K)
    D = draws.theta.shape[0]
    stored = 0
    for s in range(sweeps):
        recompute_stats(c, theta, K, n, T1, T2)
        counts.user_moves_accepted[s] = user_moves(
            rng, Z, Y, c, theta, n, T1, T2, clicks.lik_prec, clicks.lik_lin, clicks.lik_const, t.alpha, t.broad_var,
            t.nu0, t.psi, t.kappa0, m.proposal_df, m.refine_nats, m.newton_iters, m.rw_scale)
        counts.translations_accepted[s] = translate_clusters(
            rng, Z, Y, c, theta, n, T1, T2, clicks.lik_prec, clicks.lik_lin, t.nu0, t.psi, t.kappa0, m.proposal_df,
            m.translation_newton)
        counts.scalings_accepted[s] = scale_clusters(rng, Z, Y, c, theta, n, T1, T2, t.nu0, t.psi, t.kappa0,
                                                     m.scale_step)
        counts.dilations_accepted[s] = dilate_clusters(rng, Z, Y, c, theta, n, T1, T2, t.nu0, t.psi, t.kappa0,
                                                       m.dilate_step)
        for _ in range(m.split_merge):
            r = split_merge(rng, c, theta, n, T1, T2, t.alpha, t.nu0, t.psi, t.kappa0, m.pair_bandwidth)
            if r == 1 or r == 2:
                counts.splits_proposed[s] += 1
            if r == 2:
                counts.splits_accepted[s] += 1
            if r == 3 or r == 4:
                counts.merges_proposed[s] += 1
            if r == 4:
                counts.merges_accepted[s] += 1
        counts.label_swaps_accepted[s] = label_swaps(rng, c, n, T1, T2, t.alpha, m.label_swaps)
        if (s + 1) % thin == 0 and stored < D:
            draw_fractions(rng, n, t.alpha, v)
            draw_components(rng, n, T1, T2, t.nu0, t.psi, t.kappa0, draws.mu[stored], draws.cov_chol[stored])
            draws.theta[stored] = theta
            draws.c[stored] = c
            draws.v[stored] = v
            stored += 1
    return stored
