"""Reference utilities U from a ridge Bradley-Terry fit to the judge's pair probabilities.

For one (student, question), one score per persona is fitted to the 15 order-averaged
pairwise probabilities by ridge-regularised maximum likelihood (a convex problem; Newton
in float64, batched over all cells), then mapped to U = 1 + (s - max s) / scale, clipped
at 0, with a common scale of 8 logits. On the reference's real sample, ridge 0.05 and
scale 8 reproduce its published U to within 0.001 (measured in tests/tdmodels).

Everything here is computed with ``tdmodels.portable_math`` (no BLAS, LAPACK or C-library
transcendental), so U has the same bits on every machine, and so does the digest of a world.
"""
from __future__ import annotations

import numpy as np

from .portable_math import expit, logit, solve_spd

BT_RIDGE = 0.05
U_SCALE = 8.0


def order_averaged(probs: np.ndarray) -> np.ndarray:
    """[..., K, K] order-aware P(first wins) -> [..., K, K] order-averaged P(row beats col).

    Averages the two display orders on the log-odds scale, as the judge averages its picks:
    pbar[a, b] = sigmoid((logit P[a, b] + logit(1 - P[b, a])) / 2); the diagonal is 0.5.
    """
    lo = logit(np.clip(probs, 1e-12, 1 - 1e-12))
    avg = 0.5 * (lo - np.swapaxes(lo, -1, -2))
    K = probs.shape[-1]
    avg[..., np.arange(K), np.arange(K)] = 0.0
    return expit(avg)


def fit_bt_scores(pbar: np.ndarray, ridge: float = BT_RIDGE, iters: int = 50, tol: float = 1e-12) -> np.ndarray:
    """Ridge Bradley-Terry scores for a batch of comparison matrices.

    pbar: [..., K, K], pbar[a, b] = P(a beats b) (only a < b is read).
    Returns scores [..., K] in logits minimising
    -sum_{a<b} [pbar_ab log sig(s_a - s_b) + (1 - pbar_ab) log sig(s_b - s_a)] + ridge/2 |s|^2.
    """
    batch = pbar.shape[:-2]
    K = pbar.shape[-1]
    P = np.asarray(pbar, dtype=np.float64).reshape(-1, K, K)
    pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
    ia, ib = np.array(pairs).T
    p = P[:, ia, ib]                                    # [n, pairs]
    s = np.zeros((P.shape[0], K))
    for _ in range(iters):
        sig = expit(s[:, ia] - s[:, ib])
        resid, w = sig - p, sig * (1.0 - sig)
        grad = ridge * s
        H = np.zeros((P.shape[0], K, K))
        for n, (a, b) in enumerate(pairs):              # one pair at a time, in a fixed order: no BLAS
            grad[:, a] = grad[:, a] + resid[:, n]
            grad[:, b] = grad[:, b] - resid[:, n]
            H[:, a, a] = H[:, a, a] + w[:, n]
            H[:, b, b] = H[:, b, b] + w[:, n]
            H[:, a, b] = H[:, a, b] - w[:, n]
            H[:, b, a] = H[:, b, a] - w[:, n]
        for a in range(K):
            H[:, a, a] = H[:, a, a] + ridge
        step = solve_spd(H, grad)
        s = s - step
        if np.max(np.abs(step)) < tol:
            break
    else:   # plain Newton can cycle; never hand out utilities from a failed fit
        raise RuntimeError(f"Bradley-Terry fit did not converge in {iters} Newton steps (last step {np.max(np.abs(step)):.2e})")
    return s.reshape(*batch, K)


def utilities_from_scores(scores: np.ndarray, scale: float = U_SCALE) -> np.ndarray:
    """Map BT scores [..., K] to U in [0, 1]: best persona 1, one unit per `scale` logits."""
    return np.clip(1.0 + (scores - scores.max(axis=-1, keepdims=True)) / scale, 0.0, 1.0)


def reference_utilities(probs: np.ndarray, ridge: float = BT_RIDGE, scale: float = U_SCALE) -> np.ndarray:
    """Order-aware probs [..., K, K] -> reference utilities U [..., K]."""
    return utilities_from_scores(fit_bt_scores(order_averaged(probs), ridge), scale)
