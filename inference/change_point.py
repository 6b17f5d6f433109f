"""A change-point view of the population: have the last users come from a new type the population lacks?

After each completed session u, the population keeps a Gaussian surrogate of that user's click likelihood,
log L_u(theta) ~= c_u - theta' Lam_u theta / 2 + h_u' theta (``inference.population.likelihood_surrogate``).
Over the last `window` sessions this module weighs, in the manner of Bayesian online change-point detection
(Adams & MacKay 2007), the hypotheses

- H_0: every one of them came from the population prior (the learned mixture and its broad component);
- H_(r, W): the population changed r sessions ago (r = 1 .. window): the last r users share a new type,
  theta_u ~ N(m, W) with m ~ N(0, broad_var I), for W in a grid of type widths `WIDTHS` (times I); the
  sessions before them came from the population,

with prior P(H_(r, .)) = hazard (1 - hazard)^(r - 1), spread evenly over the widths, and P(H_0) the rest.
Every evidence is closed-form under the surrogates (no Newton, no draws). A session with no likelihood in
some direction (Lam_u singular, as along the persona-sum direction every click leaves unseen) is handled in
information form, without inverting Lam_u.

The next user continues the new type with probability 1 - hazard under H_(r, W); the type's predictive is
N(J^-1 k, J^-1 + W), J, k the posterior precision and linear term of m. A type is only a type once at least
`MIN_SESSIONS` users agree on it: one user who fits no learned type is as often on their own (the broad
component's business) as the first of a new kind, so `recent_type` returns the probability that the next user
is of a new type shared by at least that many of the last users, and those hypotheses' predictives
moment-matched into one Gaussian: the component a session's belief can add to the population prior
(``online.policies.coduel``'s `change_hazard`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference import kernels
from inference.constants import CHANGE_MIN_SESSIONS as MIN_SESSIONS
from inference.constants import CHANGE_WIDTHS as WIDTHS


class RecentType(NamedTuple):
    """What the last sessions say about a new type: its probability for the next user, and its predictive."""
    weight: float            # P(the next user is of the new type the last sessions share)
    mean: np.ndarray         # [d] the type's predictive mean for the next user
    cov: np.ndarray          # [d, d] and covariance
    sessions: float          # the posterior mean of r given a change shared by >= MIN_SESSIONS users (0: none)


def _spd(mats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(inverses, log determinants) of SPD matrices [B, d, d] (the kernels' own Cholesky: no BLAS)."""
    inv, logdet = kernels.spd_factors(np.ascontiguousarray(mats, dtype=float))
    if not np.isfinite(logdet).all():
        raise FloatingPointError("change point: a matrix that should be positive definite is not")
    return inv, logdet


def type_terms(lik_prec, lik_lin, lik_const, width: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each session's likelihood of a type mean m once its own theta ~ N(m, width I) is integrated out:
    log p(y_u | m) = e_u - m' J_u m / 2 + k_u' m.

    Parameters
    ----------
    lik_prec, lik_lin, lik_const : arrays [B, d, d], [B, d], [B]
        The sessions' likelihood surrogates.
    width : float
        The type's variance per coordinate.

    Returns
    -------
    (J [B, d, d], k [B, d], e [B])
    """
    B, d = lik_lin.shape
    P = np.eye(d) / width
    inv, logdet = _spd(lik_prec + P[None])                       # (Lam_u + P)^-1
    Bh = np.einsum("bij,bj->bi", inv, lik_lin)
    J = P[None] - np.einsum("ij,bjk,kl->bil", P, inv, P)
    J = 0.5 * (J + J.transpose(0, 2, 1))
    k = Bh / width
    e = lik_const - 0.5 * d * np.log(width) - 0.5 * logdet + 0.5 * np.einsum("bi,bi->b", lik_lin, Bh)
    return J, k, e


def population_log_evidence(lik_prec, lik_lin, lik_const, weights, means, covs) -> np.ndarray:
    """[B] each session's log evidence under a Gaussian mixture prior (weights [C], means [C, d], covs [C, d, d]),
    under the likelihood surrogates."""
    out = []
    for w, m, S in zip(weights, means, covs):
        Pinv, logdetS = _spd(S[None])
        P = Pinv[0]
        inv, logdet = _spd(lik_prec + P[None])
        lin = lik_lin + np.einsum("ij,j->i", P, m)[None]
        quad = np.einsum("bi,bij,bj->b", lin, inv, lin)
        out.append(np.log(w) + lik_const - 0.5 * logdetS[0] - 0.5 * logdet + 0.5 * quad
                   - 0.5 * float(np.einsum("i,ij,j->", m, P, m)))
    return np.logaddexp.reduce(np.array(out), axis=0)


def recent_type(lik_prec, lik_lin, lik_const, weights, means, covs, hazard: float, broad_var: float) -> RecentType:
    """The new type the last sessions may share (see the module docstring).

    Parameters
    ----------
    lik_prec, lik_lin, lik_const : arrays [R, d, d], [R, d], [R]
        The likelihood surrogates of the last R sessions, oldest first (R may be 0).
    weights, means, covs : arrays [C], [C, d], [C, d, d]
        The population prior now (its active components, the broad one included).
    hazard : float
        In (0, 1): the prior probability that the population changes at a given session.
    broad_var : float
        The prior variance of a new type's mean, per coordinate.

    Returns
    -------
    RecentType
        Weight 0 (and the broad prior as its predictive) where no session is given.
    """
    R, d = lik_lin.shape if len(lik_lin) else (0, len(means[0]))
    if R < MIN_SESSIONS:
        return RecentType(0.0, np.zeros(d), broad_var * np.eye(d), 0.0)
    base = population_log_evidence(lik_prec, lik_lin, lik_const, weights, means, covs)[::-1]   # newest first
    log_prior_r = np.log(hazard) + np.arange(R) * np.log1p(-hazard) - np.log(len(WIDTHS))
    log_post, pred_mean, pred_cov = [], [], []
    for width in WIDTHS:
        J_u, k_u, e_u = (x[::-1] for x in type_terms(lik_prec, lik_lin, lik_const, width))
        J = np.eye(d)[None] / broad_var + np.cumsum(J_u, axis=0)          # [R, d, d]: the last r = 1 .. R sessions
        k, e = np.cumsum(k_u, axis=0), np.cumsum(e_u)
        Jinv, logdetJ = _spd(J)
        mean = np.einsum("rij,rj->ri", Jinv, k)
        log_ev = e - 0.5 * d * np.log(broad_var) - 0.5 * logdetJ + 0.5 * np.einsum("ri,ri->r", k, mean)
        log_post.append(log_prior_r + log_ev - np.cumsum(base))             # against H_0, per r
        pred_mean.append(mean)
        pred_cov.append(Jinv + width * np.eye(d)[None])
    log_post = np.array(log_post)                                            # [widths, R]
    log_h0 = R * np.log1p(-hazard)
    top = max(float(log_post.max()), log_h0)
    p = np.exp(log_post - top)
    shared = p[:, MIN_SESSIONS - 1:]                                          # r >= MIN_SESSIONS
    p_change = float(shared.sum() / (p.sum() + np.exp(log_h0 - top)))
    if not shared.sum() > 0:
        return RecentType(0.0, np.zeros(d), broad_var * np.eye(d), 0.0)
    q = (shared / shared.sum()).ravel()
    m = np.concatenate([x[MIN_SESSIONS - 1:] for x in pred_mean])
    mean = np.einsum("h,hi->i", q, m)
    dev = m - mean[None]
    cov = (np.einsum("h,hij->ij", q, np.concatenate([x[MIN_SESSIONS - 1:] for x in pred_cov]))
           + np.einsum("h,hi,hj->ij", q, dev, dev))
    r = np.tile(np.arange(MIN_SESSIONS, R + 1), len(WIDTHS))
    return RecentType((1.0 - hazard) * p_change, mean, 0.5 * (cov + cov.T), float(np.dot(q, r)))


__all__ = ["RecentType", "MIN_SESSIONS", "WIDTHS", "type_terms", "population_log_evidence", "recent_type"]
