"""The online beliefs' one-click updates against brute-force posteriors (grid quadrature in one and two
dimensions), their purity and fixed shapes, and the compiled PSIS against ArviZ's."""
from __future__ import annotations

import arviz as az
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.special import log_expit, logsumexp

from inference import kernels as kn
from inference.constants import BELIEFS
from inference.kernels.importance_laplace import base_draws
from inference.kernels.moment_matching import click_moments
from inference.kernels.psis import psis_smooth
from inference.online_beliefs import check_belief, fold_session, new_sites
from tdmodels.errors import InputError
from tdmodels.priors import MixturePrior


def _grid(d, lo=-12.0, hi=12.0, n=None):
    n = n or (20001 if d == 1 else 801)
    g = np.linspace(lo, hi, n)
    pts = np.stack(np.meshgrid(*([g] * d), indexing="ij"), -1).reshape(-1, d)
    return pts, (g[1] - g[0]) ** d


def _log_gauss(x, m, S):
    L = np.linalg.cholesky(S)
    r = np.linalg.solve(L, (x - m).T).T
    return -0.5 * np.sum(r ** 2, -1) - np.log(np.diag(L)).sum() - 0.5 * len(m) * np.log(2 * np.pi)


def _exact(prior: MixturePrior, z, y):
    """Per component: log evidence of the clicks, posterior mean and covariance, on a grid."""
    d = prior.means.shape[1]
    pts, vol = _grid(d)
    out = []
    for w, m, S in zip(*prior):
        lp = _log_gauss(pts, m, S)
        for zt, yt in zip(z, y):
            lp = lp + log_expit((pts @ zt) * (1 if yt else -1))
        log_z = logsumexp(lp) + np.log(vol)
        p = np.exp(lp - lp.max())
        p /= p.sum()
        mean = p @ pts
        cov = (pts - mean).T @ ((pts - mean) * p[:, None])
        out.append((np.log(w) + log_z, mean, cov))
    lw = np.array([o[0] for o in out])
    return np.exp(lw - logsumexp(lw)), np.array([o[1] for o in out]), np.array([o[2] for o in out]), logsumexp(lw)


def _prior(rng, C, d):
    A = rng.normal(size=(C, d, d)) * 0.6
    covs = A @ np.swapaxes(A, 1, 2) + 0.5 * np.eye(d)
    return MixturePrior(rng.dirichlet(np.ones(C) * 2), rng.normal(size=(C, d)), covs)


@pytest.mark.parametrize("d,C,seed", [(1, 1, 0), (1, 2, 1), (2, 1, 2), (2, 2, 3)])
def test_adf_one_click_is_the_exact_posterior_moments(d, C, seed):
    """After one click from a Gaussian (per component), assumed-density filtering is exact in its first two
    moments, its component weights and its predictive probability."""
    rng = np.random.default_rng(seed)
    prior = _prior(rng, C, d)
    z, y = rng.normal(size=(1, d)) * 1.5, np.array([seed % 2])
    folded = fold_session(prior, z, y, "adf")
    w, m, S, log_p = _exact(prior, z, y)
    np.testing.assert_allclose(folded.belief.weights, w, atol=1e-7)
    np.testing.assert_allclose(folded.belief.means, m, atol=1e-6)
    np.testing.assert_allclose(folded.belief.covs, S, atol=1e-6)
    p1 = folded.p_first[0]
    np.testing.assert_allclose(np.log(p1 if y[0] else 1 - p1), log_p, atol=1e-7)


@pytest.mark.parametrize("d,seed", [(1, 0), (2, 1)])
def test_laplace_one_click_is_the_exact_posteriors_mode_and_curvature(d, seed):
    """The Laplace step is the mode of the exact posterior and the inverse of its Hessian there."""
    rng = np.random.default_rng(seed)
    prior = _prior(rng, 1, d)
    z, y = rng.normal(size=(1, d)) * 1.5, np.array([1])
    b = fold_session(prior, z, y, "laplace").belief

    def log_post(x):
        return _log_gauss(np.atleast_2d(x), prior.means[0], prior.covs[0]) + log_expit(np.atleast_2d(x) @ z[0])

    pts, _ = _grid(d, n=200001 if d == 1 else 1201)
    lp = log_post(pts)
    spacing = 24.0 / ((200001 if d == 1 else 1201) - 1)
    np.testing.assert_allclose(b.means[0], pts[np.argmax(lp)], atol=spacing)
    h = 1e-4
    H = np.empty((d, d))
    for i in range(d):
        for j in range(d):
            e_i, e_j = np.eye(d)[i] * h, np.eye(d)[j] * h
            m = b.means[0]
            H[i, j] = -(log_post(m + e_i + e_j) - log_post(m + e_i - e_j) - log_post(m - e_i + e_j)
                        + log_post(m - e_i - e_j))[0] / (4 * h * h)
    np.testing.assert_allclose(b.covs[0], np.linalg.inv(H), rtol=1e-5)


def _check_against_exact(belief, baseline, d, C, seed, clicks, mean_tol, sd_tol, weight_tol):
    """`belief` after `clicks` random clicks against the grid posterior: means within mean_tol sd, sds within
    sd_tol, weights within weight_tol, and means closer than `baseline`'s."""
    rng = np.random.default_rng(seed)
    prior = _prior(rng, C, d)
    z, y = rng.normal(size=(clicks, d)) * 1.5, rng.integers(0, 2, clicks)
    b = fold_session(prior, z, y, belief).belief
    w, m, S, _ = _exact(prior, z, y)
    sd = np.sqrt(np.einsum("cii->ci", S))
    assert np.all(np.abs(b.means - m) / sd < mean_tol)
    assert np.all(np.abs(np.sqrt(np.einsum("cii->ci", b.covs)) / sd - 1) < sd_tol)
    np.testing.assert_allclose(b.weights, w, atol=weight_tol)
    assert np.abs(b.means - m).max() < np.abs(fold_session(prior, z, y, baseline).belief.means - m).max()


@pytest.mark.parametrize("d,C,seed", [(1, 1, 0), (2, 2, 1)])
def test_importance_corrected_laplace_after_clicks_is_the_exact_posterior_within_its_monte_carlo_error(d, C, seed):
    _check_against_exact("laplace-is", "laplace", d, C, seed, clicks=4, mean_tol=0.08, sd_tol=0.1, weight_tol=0.03)


@pytest.mark.parametrize("d,C,seed", [(1, 1, 0), (1, 2, 1), (2, 1, 2), (2, 2, 3)])
def test_expectation_propagation_after_clicks_is_the_exact_posterior(d, C, seed):
    """No draws: EP's Gaussian carries the exact posterior's mean to a few hundredths of its sd, closer than
    assumed-density filtering's, its sd within EP's own error (its fixed point, 4% here at worst, not the
    passes: four give the same), and its weights the exact evidence's (EP's own evidence)."""
    _check_against_exact("ep", "adf", d, C, seed, clicks=6, mean_tol=0.03, sd_tol=0.05, weight_tol=0.005)


def test_expectation_propagation_of_one_click_is_assumed_density_filtering():
    """With one site its refit against its own cavity (the prior) is the ADF step: the same Gaussian."""
    rng = np.random.default_rng(4)
    prior = _prior(rng, 1, 3)
    z, y = rng.normal(size=(1, 3)), np.array([1])
    ep, adf = fold_session(prior, z, y, "ep").belief, fold_session(prior, z, y, "adf").belief
    sd = np.sqrt(np.diag(adf.covs[0]))                      # the same up to the quadrature's nodes (fewer)
    assert np.all(np.abs(ep.means - adf.means) / sd < 1e-3)
    assert np.all(np.abs(ep.covs[0] - adf.covs[0]) / np.outer(sd, sd) < 3e-3)


@pytest.mark.parametrize("seed", range(8))
def test_eps_pairwise_correction_brings_its_covariance_to_the_exact_one(seed):
    """EP's own covariance is too narrow along the clicks' skew (here by up to 20% in variance, against the
    grid posterior of a broad prior cut by ten clicks); the pairwise correction leaves at most 4% in any
    direction, under half of EP's own error, and keeps the mean within 5% of an sd."""
    rng = np.random.default_rng(seed)
    prior = _prior(rng, 1, 2)
    prior = prior._replace(covs=prior.covs * 3)
    z, y = rng.normal(size=(10, 2)) * 1.5, rng.integers(0, 2, 10)
    _, m, S, _ = _exact(prior, z, y)
    Li = np.linalg.inv(np.linalg.cholesky(S[0]))
    dev = {}
    for b in ("ep", "ep-corrected"):
        g = fold_session(prior, z, y, b).belief
        dev[b] = np.abs(np.linalg.eigvalsh(Li @ g.covs[0] @ Li.T) - 1).max()
        if b == "ep-corrected":
            assert np.abs(Li @ (g.means[0] - m[0])).max() < 0.05
    assert dev["ep-corrected"] < 0.04
    assert dev["ep-corrected"] < 0.5 * dev["ep"]


@given(a_c=st.floats(-6, 6), log_s_c=st.floats(np.log(0.05), np.log(12)), y=st.integers(0, 1),
       shift=st.floats(-0.5, 0.5), shrink=st.floats(0.3, 1.0))
@example(a_c=-3.0, log_s_c=2.0, y=0, shift=0.0, shrink=1.0)     # the likelier click, a wide cavity
@example(a_c=-4.1, log_s_c=2.44, y=1, shift=0.42, shrink=0.5)
@settings(deadline=None, max_examples=60)
def test_the_tilted_hermite_moments_agree_with_fine_quadrature(a_c, log_s_c, y, shift, shrink):
    """The correction's Hermite moments of a site's tilted distribution, about a Gaussian (a, s) near it,
    on EP's ten nodes against a fine trapezoid rule, to 3e-3 of the moment's own size (EP's sites take their
    variances to 5e-3 on these nodes)."""
    from numpy.polynomial.hermite_e import hermeval
    from inference.constants import EP_HERMITE_ORDER
    from inference.kernels.expectation_propagation import _tilted_hermite
    s_c = float(np.exp(log_s_c))
    a, s = a_c + shift * np.sqrt(s_c), shrink * s_c
    eta = np.linspace(a_c - 16 * np.sqrt(s_c), a_c + 16 * np.sqrt(s_c), 40001)
    lf = -0.5 * (eta - a_c) ** 2 / s_c + log_expit(eta if y else -eta)
    p = np.exp(lf - lf.max())
    p /= np.trapezoid(p, eta)
    u = (eta - a) / np.sqrt(s)
    got = np.empty(EP_HERMITE_ORDER)
    _tilted_hermite(a_c, s_c, y, a, s, got)
    for k in range(1, EP_HERMITE_ORDER + 1):
        want = np.trapezoid(p * hermeval(u, np.eye(k + 1)[k]), eta)
        scale = np.sqrt(np.trapezoid(p * hermeval(u, np.eye(k + 1)[k]) ** 2, eta))   # the moment's own size
        assert abs(got[k - 1] - want) < 3e-3 * max(scale, 1.0), k


@given(a=st.floats(-8, 8), log_s=st.floats(np.log(0.01), np.log(12)), y=st.integers(0, 1))
@settings(deadline=None, max_examples=60)
def test_an_ep_sites_moments_agree_with_fine_quadrature(a, log_s, y):
    """EP's sites take the tilted moments on fewer nodes than ADF's first step (EP_NODES)."""
    from inference.kernels.expectation_propagation import EP_LOGW, EP_X
    s = float(np.exp(log_s))
    sd = np.sqrt(s)
    eta = np.linspace(a - 14 * sd, a + 14 * sd, 20001)
    lf = -0.5 * (eta - a) ** 2 / s + log_expit(eta if y else -eta)
    p = np.exp(lf - lf.max())
    mean = np.trapezoid(p * eta, eta) / np.trapezoid(p, eta)
    var = np.trapezoid(p * (eta - mean) ** 2, eta) / np.trapezoid(p, eta)
    got = click_moments(a, s, y, EP_X, EP_LOGW)
    assert abs(got[1] - mean) < 2e-3 * np.sqrt(var)
    assert abs(got[2] / var - 1) < 5e-3


def test_importance_corrected_laplace_keeps_the_laplace_step_where_the_weights_cannot_be_trusted():
    """A posterior far from its Laplace proposal (a broad prior cut by one confident click): k-hat is over
    0.7 and the component is the Laplace step's."""
    prior = MixturePrior(np.ones(1), np.array([[-30.0]]), np.array([[[400.0]]]))
    z, y = np.array([[1.0]]), np.array([1])
    is_b = fold_session(prior, z, y, "laplace-is").belief
    lap = fold_session(prior, z, y, "laplace").belief
    np.testing.assert_array_equal(is_b.means, lap.means)
    np.testing.assert_array_equal(is_b.covs, lap.covs)


def test_the_base_draws_have_zero_mean_and_unit_second_moment():
    x = base_draws(7)
    np.testing.assert_allclose(x.mean(0), 0.0, atol=1e-14)
    np.testing.assert_allclose(x.T @ x / len(x), np.eye(7), atol=1e-12)
    assert not x.flags.writeable


@given(a=st.floats(-8, 8), log_s=st.floats(np.log(0.05), np.log(40)), y=st.integers(0, 1))
@settings(deadline=None, max_examples=60)
def test_click_moments_agree_with_fine_quadrature(a, log_s, y):
    s = float(np.exp(log_s))
    sd = np.sqrt(s)
    eta = np.linspace(a - 14 * sd, a + 14 * sd, 20001)
    lf = -0.5 * (eta - a) ** 2 / s - 0.5 * np.log(2 * np.pi * s) + log_expit(eta if y else -eta)
    p = np.exp(lf - lf.max())
    log_z = np.log(np.trapezoid(p, eta)) + lf.max()
    mean = np.trapezoid(p * eta, eta) / np.trapezoid(p, eta)
    var = np.trapezoid(p * (eta - mean) ** 2, eta) / np.trapezoid(p, eta)
    got = click_moments(a, s, y)
    assert abs(got[0] - log_z) < 2e-3
    assert abs(got[1] - mean) < 2e-3 * np.sqrt(var)
    assert abs(got[2] / var - 1) < 5e-3


@pytest.mark.parametrize("belief", BELIEFS)
def test_beliefs_are_pure_and_keep_their_shapes(belief):
    rng = np.random.default_rng(5)
    C, d, S = 3, 4, 6
    prior = _prior(rng, C, d)
    prior = prior._replace(weights=np.r_[prior.weights[:2], 0.0])          # an empty slot stays empty
    z, y = rng.normal(size=(S, d)), rng.integers(0, 2, S)
    before = [a.copy() for a in (*prior, z, y)]
    a = fold_session(prior, z, y, belief)
    b = fold_session(prior, z, y, belief)
    for x, x0 in zip((*prior, z, y), before):
        np.testing.assert_array_equal(x, x0)
    for p, q, r in zip(a.belief, b.belief, prior):
        np.testing.assert_array_equal(p, q)
        assert p.shape == r.shape
    assert a.belief.weights[2] == 0.0 and np.isclose(a.belief.weights.sum(), 1.0)
    assert a.p_first.shape == (S,) and np.all((a.p_first > 0) & (a.p_first < 1))
    # the kernel itself writes to none of its inputs
    args = [np.log(np.r_[prior.weights[:2], 1.0]), prior.means.copy(), prior.covs.copy(), np.array([1, 1, 0], bool)]
    kept = [x.copy() for x in args]
    kn.belief_update(BELIEFS.index(belief), *args, z[0], 1, args[0], args[1], args[2], z, y.astype(float), 0,
                     base_draws(d), *new_sites(3, S, d))
    for x, x0 in zip(args, kept):
        np.testing.assert_array_equal(x, x0)


@pytest.mark.parametrize("belief", ["ep", "ep-corrected"])
@pytest.mark.parametrize("bad", ["nan-mean", "nan-cov", "nan-prior", "singular-prior", "singular-belief"])
def test_expectation_propagation_names_a_state_it_cannot_use_never_a_nan_belief(bad, belief):
    """Through the kernel itself (the Python API's last line): a NaN belief or prior, or a singular prior, is
    one named error, never a belief of NaNs that a learner would carry on with. A singular covariance in the
    belief before the click is no error: EP refits from the prior, and its belief is finite."""
    rng = np.random.default_rng(6)
    prior = _prior(rng, 2, 3)
    log_w, means, covs = np.log(prior.weights), prior.means.copy(), prior.covs.copy()
    p_means, p_covs = prior.means.copy(), prior.covs.copy()
    if bad == "nan-mean":
        means[0, 1] = np.nan
    elif bad == "nan-cov":
        covs[1, 0, 0] = np.nan
    elif bad == "nan-prior":
        p_means[0, 0] = np.nan
    elif bad == "singular-prior":
        p_covs[0] = np.zeros((3, 3))
    else:
        covs[0] = np.zeros((3, 3))
    z, y = rng.normal(size=(4, 3)), rng.integers(0, 2, 4).astype(float)
    args = (BELIEFS.index(belief), log_w, means, covs, np.ones(2, bool), z[2], 1, np.log(prior.weights), p_means,
            p_covs, z, y, 2, base_draws(3), *new_sites(2, 4, 3))
    if bad == "singular-belief":
        w, m, S, lp = kn.belief_update(*args)
        assert np.isfinite(w).all() and np.isfinite(m).all() and np.isfinite(S).all() and np.isfinite(lp)
        return
    with pytest.raises(RuntimeError, match="expectation propagation|click_mode"):
        kn.belief_update(*args)


def test_fold_session_refuses_what_is_not_one_session():
    prior = MixturePrior(np.ones(1), np.zeros((1, 2)), np.eye(2)[None])
    for bad in (dict(belief="ep-2"), dict(belief=None), dict(clicks=3)):
        with pytest.raises(InputError):
            fold_session(prior, np.zeros((2, 2)), np.zeros(2, int), **bad)
    with pytest.raises(InputError):
        fold_session(prior, np.full((2, 2), np.nan), np.zeros(2, int))
    with pytest.raises(InputError):
        fold_session(prior, np.zeros((2, 3)), np.zeros(2, int))
    with pytest.raises(InputError):
        check_belief("../laplace")
    for bad in (prior._replace(means=np.full((1, 2), np.nan)), prior._replace(covs=-np.eye(2)[None])):
        with pytest.raises(InputError, match="prior"):
            fold_session(bad, np.zeros((2, 2)), np.zeros(2, int), "adf")


@pytest.mark.parametrize("n,df", [(100, 2), (256, 5), (256, 50), (1000, 3), (4000, 2)])
def test_psis_matches_arviz(n, df):
    lr = np.random.default_rng(n + df).standard_t(df, size=n) * 1.5 + 2.0
    lw, k = psis_smooth(lr)
    ref_lw, ref_k = az.psislw(lr.copy())
    assert k == pytest.approx(float(ref_k), abs=1e-10)
    np.testing.assert_allclose(lw - logsumexp(lw), ref_lw, atol=1e-10)
