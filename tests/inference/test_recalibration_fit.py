import numpy as np
import pytest

from inference.recalibration_fit import fit_recalibration_map


def _simulate(rng, A, n_users=200, rounds=24, K=6):
    theta = rng.standard_normal((n_users, K + 1)) * np.r_[np.ones(K), 2.0]
    rater = rng.standard_normal((n_users, rounds, K))
    first = rng.integers(K, size=(n_users, rounds))
    second = (first + rng.integers(1, K, size=(n_users, rounds))) % K
    ag = np.einsum("pq,usq->usp", A, rater)
    u = np.arange(n_users)[:, None]
    r = np.arange(rounds)[None]
    eta = (theta[u, first] - theta[u, second]) + theta[:, None, K] * (ag[u, r, first] - ag[u, r, second])
    y = (rng.random(eta.shape) < 1 / (1 + np.exp(-eta))).astype(int)
    th = np.broadcast_to(theta[:, None], (n_users, rounds, K + 1))
    return first, second, rater, th, y


def test_recovers_a_known_recalibration():
    rng = np.random.default_rng(0)
    K = 6
    A = 0.8 * np.eye(K) + 0.3 * np.diag(np.ones(K - 1), 1)
    first, second, rater, th, y = _simulate(rng, A, n_users=400)
    fit = fit_recalibration_map(first, second, rater, th, y, ridge=1e-3)
    assert np.max(np.abs(fit.A - A)) < 0.12


def test_ridge_shrinks_towards_a_scaled_identity():
    rng = np.random.default_rng(1)
    K = 6
    A = np.eye(K) + 0.3 * rng.standard_normal((K, K))
    first, second, rater, th, y = _simulate(rng, A, n_users=100)
    loose = fit_recalibration_map(first, second, rater, th, y, ridge=1e-3)
    tight = fit_recalibration_map(first, second, rater, th, y, ridge=1e5)
    assert np.linalg.norm(tight.A_dev) < 0.01 * np.linalg.norm(loose.A_dev)


def test_users_who_ignore_the_rater_leave_a_at_one():
    rng = np.random.default_rng(2)
    first, second, rater, th, y = _simulate(rng, np.eye(6), n_users=30)
    th = th.copy()
    th[..., 6] = 0.0
    fit = fit_recalibration_map(first, second, rater, th, y)
    assert fit.a == pytest.approx(1.0) and np.allclose(fit.A_dev, 0.0)
