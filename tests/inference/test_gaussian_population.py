"""The Gaussian population with a PPCA covariance (inference.gaussian_population)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.gaussian_population import (GaussianPopulation, fit_gaussian_population, identified_basis,
                                           ppca_covariance)
from inference.laplace import laplace_fit_batch


def persona_designs(rng, n, S, K, rater=True):
    """Click designs of worlds in the project's format: persona indicators and a centred rater score."""
    g = rng.normal(size=(n, S, K)) if rater else np.zeros((n, S, K))
    g -= g.mean(axis=2, keepdims=True)
    Phi = np.concatenate([np.broadcast_to(np.eye(K), (n, S, K, K)), g[..., None]], axis=3)
    i = rng.integers(0, K, size=(n, S))
    j = (i + rng.integers(1, K, size=(n, S))) % K
    take = lambda k: np.take_along_axis(Phi, k[..., None, None], axis=2)[:, :, 0]
    return take(i) - take(j)


@pytest.mark.parametrize("rater", [True, False])
def test_the_identified_basis_leaves_out_what_no_click_sees(rater):
    rng = np.random.default_rng(0)
    K = 5
    Z = persona_designs(rng, 3, 10, K, rater)
    Q = identified_basis(np.einsum("nsd,nse->de", Z, Z))
    assert Q.shape == (K + 1, K if rater else K - 1)
    assert np.allclose(Q.T @ Q, np.eye(Q.shape[1]))
    shift = np.r_[np.ones(K), 0.0] / np.sqrt(K)
    assert np.allclose(Q.T @ shift, 0)
    assert rater or np.allclose(Q[K], 0)
    assert identified_basis(np.zeros((4, 4))).shape == (4, 0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), r=st.integers(1, 8), rank=st.integers(1, 9))
def test_ppca_keeps_the_leading_directions_and_averages_the_rest(seed, r, rank):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(r, r)) * rng.exponential(size=r)
    C = A @ A.T
    P = ppca_covariance(C, rank)
    if rank >= r:
        assert P is C
        return
    w, V = np.linalg.eigh(C)
    wp = np.linalg.eigvalsh(P)
    assert np.allclose(P, P.T)
    assert np.allclose(wp[::-1][:rank], w[::-1][:rank], atol=1e-9 * w.max())
    assert np.allclose(wp[::-1][rank:], w[::-1][rank:].mean(), atol=1e-9 * w.max())
    assert np.isclose(np.trace(P), np.trace(C))
    top = V[:, ::-1][:, :rank]
    assert np.allclose(P @ top, top * w[::-1][:rank], atol=1e-8 * w.max())   # the leading directions are kept


def test_one_em_iteration_is_the_stated_e_and_m_steps():
    rng = np.random.default_rng(2)
    n, S, d = 7, 12, 3
    Z = rng.normal(size=(n, S, d))
    y = (rng.random((n, S)) < 0.5).astype(float)
    mean, cov = rng.normal(size=d), np.eye(d) * 1.5 + 0.3
    start = GaussianPopulation(mean, cov, np.zeros((n, d)))
    got = fit_gaussian_population(Z, y, np.einsum("nsd,nse->de", Z, Z), start, rank=d, prior_var=4.0, pseudo=2.0,
                                  em_iters=1)
    modes, covs, _ = laplace_fit_batch(np.tile(mean, (n, 1)), np.tile(cov, (n, 1, 1)), Z, y)
    m = modes.sum(0) / (n + 2.0)
    C = (covs.sum(0) + (modes - m).T @ (modes - m) + 8.0 * np.eye(d)) / (n + 2.0)
    assert np.allclose(got.modes, modes, atol=1e-8)
    assert np.allclose(got.mean, m, atol=1e-8)
    assert np.allclose(got.cov, C, atol=1e-8)


def test_em_recovers_a_low_rank_population_from_clicks():
    rng = np.random.default_rng(3)
    n, S, d = 400, 60, 4
    basis = np.linalg.qr(rng.normal(size=(d, 2)))[0]
    true_cov = basis @ np.diag([4.0, 1.0]) @ basis.T + 0.05 * np.eye(d)
    true_mean = np.array([1.0, -0.5, 0.0, 0.5])
    theta = rng.multivariate_normal(true_mean, true_cov, size=n)
    Z = rng.normal(size=(n, S, d))
    y = (rng.random((n, S)) < 1 / (1 + np.exp(-np.einsum("nsd,nd->ns", Z, theta)))).astype(float)
    start = GaussianPopulation(np.zeros(d), 4.0 * np.eye(d), np.zeros((n, d)))
    fit = fit_gaussian_population(Z, y, np.einsum("nsd,nse->de", Z, Z), start, rank=2, prior_var=4.0, pseudo=2.0,
                                  em_iters=25)
    assert np.abs(fit.mean - true_mean).max() < 0.25
    w, V = np.linalg.eigh(fit.cov)
    assert np.allclose(w[::-1][:2], [4.05, 1.05], rtol=0.3)
    overlap = np.linalg.svd(basis.T @ V[:, ::-1][:, :2], compute_uv=False)
    assert overlap.min() > 0.9               # cosines of the principal angles between the true and fitted planes


def test_a_direction_no_click_sees_keeps_the_prior():
    rng = np.random.default_rng(4)
    K, n, S = 4, 30, 20
    Z = persona_designs(rng, n, S, K)
    y = (rng.random((n, S)) < 0.7).astype(float)
    start = GaussianPopulation(np.zeros(K + 1), 4.0 * np.eye(K + 1), np.zeros((n, K + 1)))
    fit = fit_gaussian_population(Z, y, np.einsum("nsd,nse->de", Z, Z), start, rank=1, prior_var=4.0, pseudo=2.0,
                                  em_iters=3)
    shift = np.r_[np.ones(K), 0.0] / np.sqrt(K)
    assert np.isclose(shift @ fit.cov @ shift, 4.0)
    assert np.isclose(shift @ fit.mean, 0.0, atol=1e-12)
    Q = identified_basis(np.einsum("nsd,nse->de", Z, Z))
    w = np.linalg.eigvalsh(Q.T @ fit.cov @ Q)
    assert np.allclose(w[:-1], w[0]) and w[-1] > w[0]     # rank 1 within the identified directions


def test_no_session_or_no_click_gives_the_prior():
    d = 3
    start = GaussianPopulation(np.ones(d), np.eye(d), np.zeros((2, d)))
    fit = fit_gaussian_population(np.zeros((2, 5, d)), np.zeros((2, 5)), np.zeros((d, d)), start, 2, 4.0, 2.0, 3)
    assert np.allclose(fit.mean, 0) and np.allclose(fit.cov, 4.0 * np.eye(d))


@pytest.mark.parametrize("bad", [dict(rank=0), dict(rank=1.5), dict(rank=True), dict(em_iters=0), dict(pseudo=-1.0),
                                 dict(prior_var=0.0), dict(prior_var=float("nan")), dict(y=np.zeros((2, 4))),
                                 dict(Z=np.full((2, 5, 3), np.nan)), dict(Z=np.zeros((5, 3)))])
def test_bad_input_is_one_input_error(bad):
    from tdmodels.errors import InputError
    d = 3
    args = dict(Z=np.zeros((2, 5, d)), y=np.zeros((2, 5)), gram=np.eye(d),
                start=GaussianPopulation(np.zeros(d), np.eye(d), np.zeros((2, d))),
                rank=2, prior_var=4.0, pseudo=2.0, em_iters=3)
    with pytest.raises(InputError):
        fit_gaussian_population(**{**args, **bad})
