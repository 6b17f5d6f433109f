"""Each user's theta fitted in hindsight on a whole session: what the per-user linear oracle and the
combined mode's simulated answers use (never available to a policy).

Phi [N, S, K, d] are the session's feature matrices; the fits are ridge-regularised.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

ORACLE_RIDGE = 1e-2


def fit_btl_hindsight(Phi: np.ndarray, pbar: np.ndarray, ridge: float = ORACLE_RIDGE, iters: int = 30) -> np.ndarray:
    """Per-user BTL MLE theta [N, d] on soft labels pbar over all pairs a < b of each question."""
    N, S, K, d = Phi.shape
    iu, ju = np.triu_indices(K, 1)
    Z = (Phi[:, :, iu] - Phi[:, :, ju]).reshape(N, -1, d)                   # [N, S*15, d]
    y = pbar[:, :, iu, ju].reshape(N, -1)
    theta = np.zeros((N, d))
    for _ in range(iters):
        m = expit(np.einsum("nod,nd->no", Z, theta))
        grad = np.einsum("no,nod->nd", m - y, Z) + ridge * theta
        H = np.einsum("no,nod,noe->nde", m * (1 - m), Z, Z) + ridge * np.eye(d)
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    else:   # plain Newton can cycle on flat logistic tails; never report an oracle from a failed fit
        raise RuntimeError(f"hindsight BTL fit did not converge in {iters} Newton steps (last step {np.abs(step).max():.2e})")
    return theta


def fit_ls_hindsight(Phi: np.ndarray, U: np.ndarray, ridge: float = ORACLE_RIDGE) -> np.ndarray:
    """Per-user least squares of per-question-centred U on per-question-centred Phi."""
    X = Phi - Phi.mean(axis=2, keepdims=True)
    y = U - U.mean(axis=2, keepdims=True)
    N, S, K, d = Phi.shape
    X = X.reshape(N, -1, d)
    A = np.einsum("nod,noe->nde", X, X) + ridge * np.eye(d)
    b = np.einsum("nod,no->nd", X, y.reshape(N, -1))
    return np.linalg.solve(A, b[..., None])[..., 0]
