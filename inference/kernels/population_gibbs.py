"""Kernels of the population model's exact sampler (``inference.population_gibbs``): sweeps of the
collapsed sampler over users' assignments and theta.

State: assignments c [U] (slot K is the broad component) and theta [U, d]; each
learned slot's sufficient statistics n [K + 1] (counts, the broad one's too), T1 [K, d] = sum
theta, T2 [K, d, d] = sum theta theta^T are recomputed from them. A learned component's mean and
covariance are integrated out under their Normal-inverse-Wishart prior (nu0, psi I, kappa0; mean 0),
so a user's density under slot k is the multivariate-t predictive given the other members; the
stick fractions are integrated out too (``log_assignment_prior``). Stored draws get the stick
fractions, means and covariances from their exact conditionals.

Random numbers come from numba's generator (seed it with `seed` in the same process); a chain is
reproducible given its seed and the sequence of calls.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from inference.kernels.gibbs_conjugate import draw_components, draw_fractions, recompute_stats
from inference.kernels.gibbs_moves import dilate_clusters, scale_clusters, translate_clusters, user_moves
from inference.kernels.gibbs_split_merge import label_swaps, split_merge


@njit(cache=True)
def seed(s):
    """Seed numba's generator in this process (the one the kernels draw from)."""
    np.random.seed(s)


@njit(cache=True)
def run_sweeps(Z, Y, c, theta, lik_prec, lik_lin, lik_const, alpha, broad_var, nu0, psi, kappa0, df_q, refine_nats,
               newton_iters, n_split_merge, n_swaps, scale_step, rw_scale, bandwidth, translation_newton, dilate_step,
               sweeps, thin,
               out_theta, out_c,
               out_v, out_mu, out_chol, stats):
    """`sweeps` sweeps of the sampler on the state (c [U], theta [U, d], in place); every `thin`-th
    sweep's state goes to out_* (if they have room): theta [D, U, d], c [D, U], and v [D, K],
    mu [D, K, d], chol [D, K, d, d] drawn from their conditionals. stats [sweeps, 9]: users' moves
    accepted, splits proposed / accepted, merges proposed / accepted, label swaps accepted,
    translations accepted, scalings accepted, dilations accepted. Returns the draws stored.

    One sweep: joint (c_u, theta_u) moves for every user; a translation, a scaling and a dilation move
    of every learned component; `n_split_merge` split-merge and `n_swaps` label moves.
    """
    U, S, d = Z.shape
    K = out_v.shape[1]
    n = np.zeros(K + 1, dtype=np.int64)
    T1, T2 = np.zeros((K, d)), np.zeros((K, d, d))
    v = np.empty(K)
    D = out_theta.shape[0]
    stored = 0
    for s in range(sweeps):
        recompute_stats(c, theta, K, n, T1, T2)
        stats[s, 0] = user_moves(Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, lik_const, alpha, broad_var, nu0, psi,
                                 kappa0, df_q, refine_nats, newton_iters, rw_scale)
        stats[s, 6] = translate_clusters(Z, Y, c, theta, n, T1, T2, lik_prec, lik_lin, nu0, psi, kappa0, df_q,
                                         translation_newton)
        stats[s, 7] = scale_clusters(Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, scale_step)
        stats[s, 8] = dilate_clusters(Z, Y, c, theta, n, T1, T2, nu0, psi, kappa0, dilate_step)
        for _ in range(n_split_merge):
            r = split_merge(c, theta, n, T1, T2, alpha, nu0, psi, kappa0, bandwidth)
            if r == 1 or r == 2:
                stats[s, 1] += 1
            if r == 2:
                stats[s, 2] += 1
            if r == 3 or r == 4:
                stats[s, 3] += 1
            if r == 4:
                stats[s, 4] += 1
        stats[s, 5] = label_swaps(c, n, T1, T2, alpha, n_swaps)
        if (s + 1) % thin == 0 and stored < D:
            draw_fractions(n, alpha, v)
            draw_components(n, T1, T2, nu0, psi, kappa0, out_mu[stored], out_chol[stored])
            out_theta[stored] = theta
            out_c[stored] = c
            out_v[stored] = v
            stored += 1
    return stored
