"""One Gaussian population over theta with a low-rank covariance, fitted by Laplace EM on sessions' clicks.

Model: theta_u ~ N(mean, cov) for every user u, clicks y_us ~ Bernoulli(sigmoid(theta_u . z_us)).
The covariance is probabilistic PCA's: `rank` principal directions with their own variances and one
shared variance for the rest, in the manner of the low-rank shared bases of LoRe, PReF and PAL
(a few coordinates per user on a basis learned across users), with the basis and the users'
coordinates kept as one Gaussian.

One EM iteration:

- E-step: every session's Laplace posterior N(m_u, S_u) under N(mean, cov)
  (``inference.laplace.laplace_fit_batch``);
- M-step, shrunk by `pseudo` sessions: the mean towards 0 and the covariance towards prior_var I,
  mean = sum_u m_u / (n + pseudo),
  cov = (sum_u S_u + (m_u - mean)(m_u - mean)^T + pseudo prior_var I) / (n + pseudo),
  then the covariance's eigenvalues beyond the first `rank` replaced by their mean (PPCA). The two
  shrinkages are separate (a normal-inverse-Wishart prior would also add the shrunk mean's own spread,
  pseudo n / (n + pseudo) mean mean^T, to the covariance); with the mean near 0, as on worlds whose
  features are persona indicators and a centred rater, they differ little.

Only directions that some click design spans are fitted: with persona indicators among the
features, adding a constant to every persona's coordinate changes no click, so that direction
(and the rater's, on a world without a rater) keeps the prior N(0, prior_var) and never takes one
of the `rank` principal directions.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.laplace import laplace_fit_batch
from tdmodels.errors import InputError

IDENTIFIED_RTOL = 1e-9    # a direction is spanned when the designs' Gram eigenvalue exceeds this times the largest


class GaussianPopulation(NamedTuple):
    """The fitted population and each session's posterior mode (the next fit's warm start)."""
    mean: np.ndarray         # [d]
    cov: np.ndarray          # [d, d]
    modes: np.ndarray        # [n, d]


def identified_basis(gram: np.ndarray, rtol: float = IDENTIFIED_RTOL) -> np.ndarray:
    """An orthonormal basis [d, r] of the directions the click designs span, from their Gram sum z z^T [d, d]."""
    w, V = np.linalg.eigh(gram)
    if not w.size or w[-1] <= 0:
        return V[:, :0]
    return V[:, w > rtol * w[-1]]


def ppca_covariance(cov: np.ndarray, rank: int) -> np.ndarray:
    """`cov` [r, r] with its eigenvalues beyond the largest `rank` replaced by their mean (unchanged if
    rank >= r)."""
    r = cov.shape[0]
    if rank >= r:
        return cov
    w, V = np.linalg.eigh(cov)
    w, V = w[::-1], V[:, ::-1]
    rest = w[rank:].mean()
    top = V[:, :rank]
    return (top * (w[:rank] - rest)) @ top.T + rest * np.eye(r)


def _check(Z, y, gram, start, rank, prior_var, pseudo, em_iters) -> None:
    """InputError naming the first argument that is not what `fit_gaussian_population` needs."""
    if np.ndim(Z) != 3:
        raise InputError(f"Gaussian population: Z must be [n, S, d], got shape {np.shape(Z)}")
    n, S, d = np.shape(Z)
    for name, a, shape in (("y", y, (n, S)), ("gram", gram, (d, d)), ("start.mean", start.mean, (d,)),
                           ("start.cov", start.cov, (d, d)), ("start.modes", start.modes, (n, d))):
        if np.shape(a) != shape:
            raise InputError(f"Gaussian population: {name} has shape {np.shape(a)}, expected {shape}")
        if not np.isfinite(a).all():
            raise InputError(f"Gaussian population: {name} has non-finite entries")
    for name, v, ok in (("rank", rank, isinstance(rank, (int, np.integer)) and rank >= 1),
                        ("em_iters", em_iters, isinstance(em_iters, (int, np.integer)) and em_iters >= 1),
                        ("prior_var", prior_var, np.isfinite(prior_var) and prior_var > 0),
                        ("pseudo", pseudo, np.isfinite(pseudo) and pseudo >= 0)):
        if isinstance(v, bool) or not ok:
            raise InputError(f"Gaussian population: {name}={v!r} is not allowed (rank and em_iters integers >= 1, "
                             "prior_var > 0, pseudo >= 0)")


def fit_gaussian_population(Z: np.ndarray, y: np.ndarray, gram: np.ndarray, start: GaussianPopulation,
                            rank: int, prior_var: float, pseudo: float, em_iters: int) -> GaussianPopulation:
    """`em_iters` Laplace EM iterations from `start` (see the module docstring).

    Parameters
    ----------
    Z : array [n, S, d]
        Sessions' click designs phi_first - phi_second (zero rows for rounds without a click).
    y : array [n, S]
        Clicks, 1 where the first shown won.
    gram : array [d, d]
        sum of z z^T over every click in Z (which directions are identified).
    start : GaussianPopulation
        Mean [d] and cov [d, d] to start from; modes [n, d] warm-start the E-step.
    rank : int
        Principal directions kept (at least 1).
    prior_var, pseudo : float
        The shrinkage target's variance, and the weight of both shrinkages in sessions.
    em_iters : int
        EM iterations (at least 1).

    Returns
    -------
    GaussianPopulation
        The fitted mean [d] and cov [d, d], and each session's E-step mode [n, d].

    Raises
    ------
    InputError
        A shape that does not match Z, a non-finite entry, or a setting out of its domain.
    """
    _check(Z, y, gram, start, rank, prior_var, pseudo, em_iters)
    n, _, d = Z.shape
    Q = identified_basis(gram)
    r = Q.shape[1]
    unseen = np.eye(d) - Q @ Q.T
    if n == 0 or r == 0:
        return GaussianPopulation(np.zeros(d), prior_var * np.eye(d), start.modes)
    Zq, modes_q = Z @ Q, start.modes @ Q
    mean_q, cov_q = start.mean @ Q, Q.T @ start.cov @ Q
    for _ in range(em_iters):
        modes_q, covs, _ = laplace_fit_batch(np.broadcast_to(mean_q, (n, r)), np.broadcast_to(cov_q, (n, r, r)),
                                             Zq, y, init=modes_q)
        mean_q = modes_q.sum(axis=0) / (n + pseudo)
        dev = modes_q - mean_q
        cov_q = (covs.sum(axis=0) + dev.T @ dev + pseudo * prior_var * np.eye(r)) / (n + pseudo)
        cov_q = ppca_covariance(0.5 * (cov_q + cov_q.T), rank)
    return GaussianPopulation(Q @ mean_q, Q @ cov_q @ Q.T + prior_var * unseen, modes_q @ Q.T + start.modes @ unseen)
