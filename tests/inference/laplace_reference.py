"""The plain NumPy statement of batch Laplace: the test oracle of ``inference.kernels.laplace_units``
(which ``inference.laplace.laplace_fit_batch`` runs)."""
import numpy as np

from inference.laplace import log_sigmoid, sigmoid


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
            worse = (f_new > f + 1e-10 * (1.0 + np.abs(f))) & (t > 1e-10)
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
