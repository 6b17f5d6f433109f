"""Plain NumPy statements of what the compiled kernels compute: the test oracles, run by no policy or fit.

Each states the computation of one kernel of ``inference.kernels`` as readably as NumPy allows; the
tests check the kernel against it (tests/inference/test_kernels.py), and the library runs the kernel.

    update_belief_reference          ``kernels.mixture_update`` (``inference.mixture_belief.update_belief``)
    laplace_fit_batch_reference      ``kernels.laplace_units`` (``inference.laplace.laplace_fit_batch``)
    fit_recalibration_map_reference  ``kernels.recalibration_newton`` (``inference.recalibration_fit``)
    ridge_logistic_reference         ``kernels.ridge_logistic.ridge_logistic_mode`` (``inference.estimators.ridge_logistic``)

the last two through one penalised logistic Newton (`penalised_logistic_newton`); and the change-point view's
closed forms (``inference.change_point``):

    type_run_evidence_reference      ``kernels.type_run_evidence`` (each session's `type_terms`, then each run)
    mixture_log_evidence_reference   ``kernels.mixture_log_evidence``
    run_posterior_reference          ``kernels.run_posterior``

The lookahead pair rule's statement is ``online.lookahead_reference``.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from inference.constants import (BACKTRACK_MIN_STEP, BACKTRACK_RTOL, NEWTON_RTOL, RIDGE_LOGISTIC_ITERS,
                                 RIDGE_LOGISTIC_TOL)
from inference.laplace import click_mode, log_sigmoid, sigmoid
from inference.mixture_belief import MixtureBelief, probit_log_predictive
from inference.recalibration_fit import RIDGE_A, Recalibration
from tdmodels.population_hyper import RIDGE


def update_belief_reference(belief: MixtureBelief, z: np.ndarray, y: int, rtol: float = NEWTON_RTOL) -> tuple[MixtureBelief, float]:
    """Fold one click (z = phi_first - phi_second, y in {0, 1}) in; returns (belief, log p(y | belief)).
    `rtol` is the one-click Newton's tolerance (looser in the lookahead, which needs means only)."""
    Sz = belief.covs @ z                           # [C, d]
    s = np.maximum(Sz @ z, 0.0)                    # [C] prior variance of eta
    a = belief.means @ z                           # [C] prior mean of eta
    log_pred_k = probit_log_predictive(a, s, y)
    log_pred = float(logsumexp(belief.log_w + log_pred_k))
    log_w = belief.log_w + log_pred_k - log_pred
    eta = click_mode(a, s, int(y), rtol=rtol)
    safe_s = np.where(s > 0, s, 1.0)
    p = sigmoid(eta)
    w = p * (1.0 - p)
    means = belief.means + Sz * np.where(s > 0, (eta - a) / safe_s, 0.0)[:, None]
    covs = belief.covs - np.einsum("ci,cj->cij", Sz, Sz) * (w / (1.0 + w * s))[:, None, None]
    return MixtureBelief(log_w, means, covs), log_pred


def laplace_fit_batch_reference(prior_means: np.ndarray, prior_covs: np.ndarray, Z: np.ndarray, y: np.ndarray,
                      iters: int = 50, tol: float = 1e-10, init: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`laplace_fit` for B independent units at once, plus the Laplace log evidence of each.

    prior_means [B, d], prior_covs [B, d, d], Z [B, S, d], y [B, S]. Returns (modes [B, d],
    covs [B, d, d], log_evidence [B]) with log p(y | unit) ~= log p(y | mode) + log N(mode;
    prior) + d/2 log 2 pi + 1/2 log det cov. Newton with per-unit backtracking; raises
    RuntimeError naming the units that did not converge. `init` [B, d] warm-starts Newton
    (default: the prior means).
    """
    B, S, d = Z.shape
    y = np.asarray(y, dtype=float)
    P0 = np.linalg.inv(prior_covs)

    def neg_log_post(t):
        eta = np.einsum("bsd,bd->bs", Z, t)
        r = t - prior_means
        return 0.5 * np.einsum("bi,bij,bj->b", r, P0, r) + np.sum(np.logaddexp(0.0, eta) - y * eta, -1)

    theta = np.array(prior_means if init is None else init, dtype=float)
    f = neg_log_post(theta)
    done = np.zeros(B, dtype=bool)
    for _ in range(iters):
        p = sigmoid(np.einsum("bsd,bd->bs", Z, theta))
        grad = np.einsum("bsd,bs->bd", Z, y - p) - np.einsum("bij,bj->bi", P0, theta - prior_means)
        H = np.einsum("bsd,bse->bde", Z, Z * (p * (1 - p))[..., None]) + P0
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        t = np.ones(B)
        while True:   # per-unit backtracking: Newton alone can cycle on flat logistic tails
            f_new = neg_log_post(theta + t[:, None] * step)
            worse = (f_new > f + BACKTRACK_RTOL * (1.0 + np.abs(f))) & (t > BACKTRACK_MIN_STEP)
            if not worse.any():
                break
            t = np.where(worse, 0.5 * t, t)
        theta = theta + t[:, None] * step
        f = f_new
        done = np.max(np.abs(t[:, None] * step), -1) < tol
        if done.all():
            break
    if not done.all():
        raise RuntimeError(f"batch Laplace: Newton did not converge for unit(s) {np.flatnonzero(~done)[:10].tolist()}")
    p = sigmoid(np.einsum("bsd,bd->bs", Z, theta))
    H = np.einsum("bsd,bse->bde", Z, Z * (p * (1 - p))[..., None]) + P0
    cov = np.linalg.inv(H)
    eta = np.einsum("bsd,bd->bs", Z, theta)
    loglik = np.sum(y * log_sigmoid(eta) + (1 - y) * log_sigmoid(-eta), -1)
    r = theta - prior_means
    logprior = -0.5 * (np.einsum("bi,bij,bj->b", r, P0, r) + np.linalg.slogdet(prior_covs)[1] + d * np.log(2 * np.pi))
    log_ev = loglik + logprior + 0.5 * d * np.log(2 * np.pi) + 0.5 * np.linalg.slogdet(cov)[1]
    return theta, cov, log_ev


def _design(first, second, rater, theta):
    """Offsets [n] (persona part of the logit) and the Jacobian [n, 1 + K*K] in (a, vec A')."""
    K = rater.shape[-1]
    n = first.shape[0]
    ind = np.eye(K)[first] - np.eye(K)[second]                    # [n, K]
    offset = np.sum(theta[:, :K] * ind, -1)
    w = theta[:, K]
    g_diff = rater[np.arange(n), first] - rater[np.arange(n), second]
    J_a = w * g_diff
    J_dev = (w[:, None, None] * ind[:, :, None] * rater[:, None, :]).reshape(n, K * K)
    return offset, np.concatenate([J_a[:, None], J_dev], 1)


def fit_recalibration_map_reference(first, second, rater, theta, y, ridge: float = RIDGE, ridge_a: float = RIDGE_A,
                          iters: int = 50, tol: float = 1e-10, init: np.ndarray | None = None) -> Recalibration:
    """MAP (a, A') from clicks. first, second [n] persona indices; rater [n, K] the question's g for
    every persona; theta [n, K + 1] the clicking user's weights; y [n] in {0, 1}; init [1 + K*K]
    a starting (a, vec A') for Newton (default a = 1, A' = 0)."""
    first, second = np.asarray(first).ravel(), np.asarray(second).ravel()
    K = rater.shape[-1]
    rater = np.asarray(rater, dtype=float).reshape(-1, K)
    theta = np.asarray(theta, dtype=float).reshape(-1, K + 1)
    y = np.asarray(y, dtype=float).ravel()
    offset, J = _design(first, second, rater, theta)
    pen = np.concatenate([[ridge_a], np.full(K * K, ridge)])
    target = np.concatenate([[1.0], np.zeros(K * K)])
    w0 = target.copy() if init is None else np.array(init, dtype=float)
    w, it = penalised_logistic_newton(J, y, offset, pen, target, w0, iters, tol)
    if it < 0:
        raise RuntimeError(f"recalibration fit: Newton did not converge in {iters} iterations")
    return Recalibration(float(w[0]), w[1:].reshape(K, K), it)


def penalised_logistic_newton(J, y, offset, pen, target, w, iters, tol):
    """argmin_w sum_t [log(1 + e^eta_t) - y_t eta_t] + 1/2 sum_i pen_i (w_i - target_i)^2, eta = offset + J w:
    Newton from w, halving a step while the objective rises beyond rounding (the kernels' rule,
    ``inference.kernels.line_search``). Returns (w, the steps taken, or -1 if no step fell under `tol`
    in every coordinate within `iters`)."""
    def objective(w):
        eta = offset + J @ w
        return np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * np.sum(pen * (w - target) ** 2)

    f = objective(w)
    for it in range(1, iters + 1):
        p = 1.0 / (1.0 + np.exp(-(offset + J @ w)))
        grad = J.T @ (p - y) + pen * (w - target)
        H = J.T @ (J * (p * (1 - p))[:, None]) + np.diag(pen)
        step = np.linalg.solve(H, grad)
        t = 1.0
        while objective(w - t * step) > f + BACKTRACK_RTOL * (1.0 + abs(f)) and t > BACKTRACK_MIN_STEP:
            t *= 0.5
        w = w - t * step
        f = objective(w)
        if np.max(np.abs(t * step)) < tol:
            return w, it
    return w, -1


def ridge_logistic_reference(Z: np.ndarray, y: np.ndarray, lam: float, init: np.ndarray | None = None,
                             iters: int = RIDGE_LOGISTIC_ITERS, tol: float = RIDGE_LOGISTIC_TOL) -> np.ndarray:
    """argmin_theta sum_t [log(1 + e^eta_t) - y_t eta_t] + lam/2 ||theta||^2, eta = Z theta, by Newton from
    `init` (zeros); the estimate after `iters` steps if none fell under `tol`."""
    d = Z.shape[1]
    w0 = np.zeros(d) if init is None else np.array(init, dtype=float)
    return penalised_logistic_newton(Z, y, np.zeros(len(y)), np.full(d, float(lam)), np.zeros(d), w0, iters, tol)[0]


def _spd(mats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(inverses, log determinants) of SPD matrices [B, d, d], by NumPy."""
    return np.linalg.inv(mats), np.linalg.slogdet(mats)[1]


def type_terms(lik_prec, lik_lin, lik_const, width: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each session's likelihood of a type mean m once its own theta ~ N(m, width I) is integrated out:
    log p(y_u | m) = e_u - m' J_u m / 2 + k_u' m. Returns (J [B, d, d], k [B, d], e [B]) for the surrogates
    [B, d, d], [B, d], [B]."""
    B, d = lik_lin.shape
    P = np.eye(d) / width
    inv, logdet = _spd(lik_prec + P[None])                       # (Lam_u + P)^-1
    Bh = np.einsum("bij,bj->bi", inv, lik_lin)
    J = P[None] - np.einsum("ij,bjk,kl->bil", P, inv, P)
    J = 0.5 * (J + J.transpose(0, 2, 1))
    k = Bh / width
    e = lik_const - 0.5 * d * np.log(width) - 0.5 * logdet + 0.5 * np.einsum("bi,bi->b", lik_lin, Bh)
    return J, k, e


def type_run_evidence_reference(lik_prec, lik_lin, lik_const, widths, broad_var: float):
    """(log_ev [H, R + 1, R + 1], post_mean [H, R, d], post_cov [H, R, d, d]): the log evidence of sessions
    s .. t - 1 as one type of each width (0 where t <= s), and the next user's predictive after each run that ends
    with the newest session."""
    R, d = lik_lin.shape
    starts, ends = np.triu_indices(R + 1, 1)
    log_ev, post_mean, post_cov = [], [], []
    for width in widths:
        J_u, k_u, e_u = type_terms(lik_prec, lik_lin, lik_const, width)
        CJ = np.concatenate([np.zeros((1, d, d)), np.cumsum(J_u, axis=0)])
        Ck, Ce = np.concatenate([np.zeros((1, d)), np.cumsum(k_u, axis=0)]), np.r_[0.0, np.cumsum(e_u)]
        J = np.eye(d)[None] / broad_var + CJ[ends] - CJ[starts]
        k = Ck[ends] - Ck[starts]
        Jinv, logdetJ = _spd(J)
        ev = np.zeros((R + 1, R + 1))
        ev[starts, ends] = (Ce[ends] - Ce[starts] - 0.5 * d * np.log(broad_var) - 0.5 * logdetJ
                            + 0.5 * np.einsum("bi,bij,bj->b", k, Jinv, k))
        log_ev.append(ev)
        last = np.flatnonzero(ends == R)
        post_mean.append(np.einsum("pij,pj->pi", Jinv[last], k[last]))
        post_cov.append(Jinv[last] + width * np.eye(d)[None])
    return np.array(log_ev), np.array(post_mean), np.array(post_cov)


def mixture_log_evidence_reference(lik_prec, lik_lin, lik_const, weights, means, covs) -> np.ndarray:
    """[B] each session's log evidence under a Gaussian mixture prior (weights [C], means [C, d], covs [C, d, d])."""
    out = []
    for w, m, S in zip(weights, means, covs):
        P = np.linalg.inv(S)
        inv, logdet = _spd(lik_prec + P[None])
        lin = lik_lin + (P @ m)[None]
        quad = np.einsum("bi,bij,bj->b", lin, inv, lin)
        out.append(np.log(w) + lik_const - 0.5 * np.linalg.slogdet(S)[1] - 0.5 * logdet + 0.5 * quad - 0.5 * m @ P @ m)
    return logsumexp(np.array(out), axis=0)


def run_posterior_reference(base: np.ndarray, log_ev: np.ndarray, hazard: float) -> np.ndarray:
    """[1 + H, R] the run-length and kind posterior of ``kernels.run_posterior``, one session at a time."""
    H, R = log_ev.shape[0], len(base)
    log_kind = np.log(np.r_[0.5, np.full(H, 0.5 / H)])
    log_run = np.full((1 + H, R), -np.inf)
    s = np.arange(R)
    for t in range(R):
        if t:
            total = logsumexp(log_run[:, :t])
            log_run[:, :t] += np.log1p(-hazard)
            log_run[:, t] = total + np.log(hazard) + log_kind
        else:
            log_run[0, 0] = 0.0                               # the oldest session is the population's
        log_run[0, :t + 1] += base[t]
        log_run[1:, :t + 1] += log_ev[:, s[:t + 1], t + 1] - log_ev[:, s[:t + 1], t]
        log_run -= logsumexp(log_run[:, :t + 1])
    return np.exp(log_run)
