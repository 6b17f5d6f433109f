"""The compiled kernels compute what their NumPy counterparts compute (to rounding)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.laplace import click_mode, laplace_update
from inference.reference import fit_recalibration_map_reference, laplace_fit_batch_reference, update_belief_reference
from inference import kernels as kn
from inference.online_beliefs import new_sites
from inference.mixture_belief import MixtureBelief
from online.lookahead_reference import lookahead_pair, lookahead_scores
from online.pair_rules import greedy_pair

K, D = 6, 7


def _mixture(rng, C=5, dead=(1,)):
    A = rng.standard_normal((C, D, D)) * 0.5
    covs = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(D)
    active = np.ones(C, dtype=bool)
    active[list(dead)] = False
    log_w = np.where(active, np.log(rng.dirichlet(np.ones(C))), -np.inf)
    log_w[active] -= np.log(np.exp(log_w[active]).sum())
    return log_w, rng.standard_normal((C, D)), covs, active


def _phi(rng):
    return np.concatenate([np.eye(K), rng.uniform(0, 1, (K, 1))], 1)


@given(st.integers(0, 10_000), st.integers(0, 1))
@settings(max_examples=40, deadline=None)
def test_mixture_update_matches_numpy(seed, y):
    rng = np.random.default_rng(seed)
    log_w, m, S, active = _mixture(rng)
    z = rng.standard_normal(D) * 2
    ref, lp = update_belief_reference(MixtureBelief(log_w, m, S), z, y)
    w2, m2, S2, lp2 = kn.mixture_update(log_w, m, S, active, z, y)
    assert np.isclose(lp, lp2, atol=1e-12)
    np.testing.assert_allclose(w2[active], ref.log_w[active], atol=1e-12)
    assert np.all(np.isneginf(w2[~active]))
    np.testing.assert_allclose(m2[active], ref.means[active], atol=1e-10)
    np.testing.assert_allclose(S2[active], ref.covs[active], atol=1e-10)


@given(st.floats(-30, 30), st.floats(1e-6, 1e3), st.integers(0, 1))
@settings(max_examples=200, deadline=None)
def test_one_click_mode_is_the_root_for_scalars_and_arrays(a, s, y):
    eta = kn.click_mode(a, s, y)
    assert np.isclose(eta, float(click_mode(a, s, y)), rtol=1e-11, atol=1e-11)
    assert np.isclose(eta, float(click_mode(np.array([a]), np.array([s]), y)[0]), rtol=1e-11, atol=1e-11)
    p = 0.5 * (1 + np.tanh(0.5 * eta))
    assert abs((y - p) - (eta - a) / s) < 1e-9 * (1 + 1 / s)
    lo, hi = (a, a + s) if y else (a - s, a)
    assert lo - 1e-9 <= eta <= hi + 1e-9


def test_no_transfer_step_is_the_one_component_mixture_update():
    rng = np.random.default_rng(0)
    m, S = rng.standard_normal(D), 4 * np.eye(D)
    for _ in range(30):
        z, y = rng.standard_normal(D), int(rng.integers(2))
        m1, S1, _ = laplace_update(m, S, z, y)
        _, m2, S2, _ = kn.mixture_update(np.zeros(1), m[None], S[None], np.ones(1, bool), z, y)
        np.testing.assert_allclose(m2[0], m1, atol=1e-12)
        np.testing.assert_allclose(S2[0], S1, atol=1e-12)
        m, S = m1, S1


@given(st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_lookahead_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    log_w, m, S, active = _mixture(rng)
    P, bank = _phi(rng), np.stack([_phi(rng) for _ in range(6)])
    R = int(rng.integers(0, 20))
    ref = lookahead_scores(MixtureBelief(log_w, m, S), P, bank, R)
    got, mu = kn.lookahead_scores(log_w, m, S, active, P, bank, R)
    np.testing.assert_allclose(got, [ref[k] for k in sorted(ref)], atol=1e-7)
    assert kn.lookahead_pair(log_w, m, S, active, P, bank, R) == lookahead_pair(MixtureBelief(log_w, m, S), P, bank, R)


@given(st.integers(0, 10_000), st.integers(0, 20), st.booleans())
@settings(max_examples=25, deadline=None)
def test_coduel_pair_and_click_are_the_kernels_they_fuse(seed, n_bank, lookahead):
    """CODuel's one-call kernels give bit for bit what the kernels they call give on the bank CODuel
    assembled before (the newest min(n_bank, B - 1) rows, then this question)."""
    rng = np.random.default_rng(seed)
    log_w, m, S, active = _mixture(rng)
    Phi, A = _phi(rng), np.eye(K) + 0.1 * rng.standard_normal((K, K))
    bank = np.stack([_phi(rng) for _ in range(8)])
    P = kn.recalibrated(Phi, A)
    keep = min(n_bank, len(bank) - 1)
    full = np.concatenate([bank[len(bank) - keep:], P[None]])
    np.testing.assert_array_equal(kn.lookahead_bank(bank, n_bank, P), full)
    R = float(rng.integers(0, 20))
    want = kn.lookahead_pair(log_w, m, S, active, P, full, R) if lookahead else kn.mixture_greedy(log_w, m, active, P)
    assert kn.coduel_pair(log_w, m, S, active, Phi, A, bank, n_bank, R, lookahead) == want
    i, j = rng.choice(K, 2, replace=False)
    y = int(rng.integers(2))
    got = kn.coduel_click(log_w, m, S, active, np.zeros(1), m[:1], S[:1], Phi, A, i, j, y)
    by_belief = kn.coduel_click_belief(log_w, m, S, active, np.zeros(1), m[:1], S[:1], Phi, A, i, j, y, 0, log_w, m,
                                       S, np.zeros((1, m.shape[1])), np.zeros(1), 0, np.zeros((2, m.shape[1])),
                                       *new_sites(len(log_w), 1, m.shape[1]), *new_sites(1, 1, m.shape[1]))
    ref = kn.update_both(log_w, m, S, active, np.zeros(1), m[:1], S[:1], P[i] - P[j], y)
    np.testing.assert_array_equal(got[0], P)
    np.testing.assert_array_equal(got[1], P[i] - P[j])
    for g, b, r in zip(got[2:], by_belief[2:], ref):
        np.testing.assert_array_equal(g, r)
        np.testing.assert_array_equal(b, r)


@given(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=K, max_size=K))
@settings(deadline=None)          # the first example may pay for compiling the kernel
def test_greedy_ties_break_like_a_stable_sort(u):
    assert kn.greedy_pair(np.array(u)) == greedy_pair(np.array(u))


def test_laplace_units_match_batch_laplace():
    rng = np.random.default_rng(1)
    n, S = 12, 24
    Z = rng.standard_normal((n, S, D))
    y = (rng.random((n, S)) < 0.5).astype(float)
    _, means, covs, _ = _mixture(rng, C=3, dead=())
    users, comps = np.repeat(np.arange(n), 3), np.tile(np.arange(3), n)
    m, C, ev, ok = kn.laplace_units(Z, y, users, comps, means, np.linalg.inv(covs), np.linalg.slogdet(covs)[1],
                                    means[comps].copy())
    m2, C2, ev2 = laplace_fit_batch_reference(means[comps], covs[comps], Z[users], y[users])
    assert ok.all()
    np.testing.assert_allclose(m, m2, atol=1e-9)
    np.testing.assert_allclose(C, C2, atol=1e-9)
    np.testing.assert_allclose(ev, ev2, atol=1e-8)


def test_recalibration_newton_matches_numpy():
    rng = np.random.default_rng(2)
    n = 400
    first = rng.integers(0, K, n)
    second = (first + 1 + rng.integers(0, K - 1, n)) % K
    rater, theta = rng.random((n, K)), rng.standard_normal((n, K + 1))
    y = (rng.random(n) < 0.5).astype(float)
    ref = fit_recalibration_map_reference(first, second, rater, theta, y)
    w, it = kn.recalibration_newton(first, second, rater, theta, y, 10.0, 1e-3, np.r_[1.0, np.zeros(K * K)])
    assert it > 0
    assert np.isclose(w[0], ref.a, atol=1e-10)
    np.testing.assert_allclose(w[1:].reshape(K, K), ref.A_dev, atol=1e-10)
    # warm-started at the answer it stops at once
    _, it2 = kn.recalibration_newton(first, second, rater, theta, y, 10.0, 1e-3, w)
    assert it2 == 1


def test_the_library_wrappers_refuse_input_the_kernels_cannot_take():
    """The kernels index without bounds checks: the functions over them check shapes, ranges and finiteness."""
    from inference.laplace import laplace_fit_batch
    from inference.mixture_belief import update_belief
    from inference.recalibration_fit import fit_recalibration_map
    from tdmodels.errors import InputError

    rng = np.random.default_rng(0)
    Z, y = rng.standard_normal((3, 5, D)), np.ones((3, 5))
    m, S = np.zeros((3, D)), np.stack([np.eye(D)] * 3)
    with pytest.raises(InputError, match="y has shape"):
        laplace_fit_batch(m, S, Z, y[:2])
    with pytest.raises(InputError, match="not symmetric positive definite"):
        laplace_fit_batch(m, -S, Z, y)
    first, second = np.array([0, 50]), np.array([1, 2])
    with pytest.raises(InputError, match="persona indices"):
        fit_recalibration_map(first, second, rng.random((2, K)), rng.standard_normal((2, K + 1)), np.ones(2))
    with pytest.raises(InputError, match="one row per click"):
        fit_recalibration_map(first[:1], second, rng.random((2, K)), rng.standard_normal((2, K + 1)), np.ones(2))
    with pytest.raises(InputError, match="do not fit one belief"):
        update_belief(MixtureBelief(np.zeros(1), np.zeros((1, D)), np.eye(D)[None]), np.ones(D + 1), 1)


@given(st.integers(0, 10_000), st.integers(1, 300), st.sampled_from([0.1, 1.0, 10.0]), st.booleans())
@settings(max_examples=40, deadline=None)
def test_ridge_logistic_is_the_newton_of_its_numpy_statement(seed, n, lam, warm):
    """CoLSTIM's and COLDB's estimate (``inference.kernels.ridge_logistic``: the kernels' Newton and line search)
    agrees with the NumPy statement it replaced, from a cold or a warm start."""
    from inference.estimators import ridge_logistic
    from inference.reference import ridge_logistic_reference

    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, D)) * rng.uniform(0.1, 3)
    y = (rng.random(n) < 0.5).astype(float)
    init = rng.standard_normal(D) if warm else None
    np.testing.assert_allclose(ridge_logistic(Z, y, lam, init=init), ridge_logistic_reference(Z, y, lam, init=init),
                               atol=1e-8)


@given(st.integers(0, 10_000), st.integers(1, 400), st.floats(-6, 3), st.integers(1, 30), st.floats(-12, 1.5),
       st.booleans())
@settings(max_examples=60, deadline=None)
def test_the_fused_ridge_logistic_newton_is_the_laplace_newton_bit_for_bit(seed, n, log_lam, iters, log_tol, separable):
    """The ridge logistic kernel fuses each point's objective, gradient and Hessian into one pass and takes a
    step under `tol` without the line search; its estimate and verdict are the kernels' Laplace Newton's
    (``laplace.newton_mode`` under N(0, I / lam)) exactly, cold or warm, separable clicks included."""
    from inference.kernels.laplace import newton_mode
    from inference.kernels.ridge_logistic import ridge_logistic_mode

    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, D)) * rng.uniform(0.1, 3)
    y = np.ones(n) if separable else (rng.random(n) < 1 / (1 + np.exp(-Z @ rng.standard_normal(D)))).astype(float)
    lam, tol, init = 10.0 ** log_lam, 10.0 ** log_tol, rng.standard_normal(D) * rng.uniform(0, 3)
    theta, m, P = init.copy(), np.zeros(D), lam * np.eye(D)
    w = [np.empty((D, D)), np.empty((D, D)), np.empty(D), np.empty(D), np.empty(D)] + [np.empty(n) for _ in range(4)]
    ok, _ = newton_mode(Z, y, theta, m, P, *w, iters, tol)
    got, got_ok, _ = ridge_logistic_mode(Z, y, lam, init, iters, tol)
    assert got_ok == ok and np.array_equal(got, theta)


def test_a_step_under_a_loose_tolerance_still_takes_the_line_search():
    """Bug: a Newton step under `tol` was taken whole at any tolerance; at tol = 20 the whole step overshoots
    where the line search halves it (-7.02 where the Laplace Newton gives -2.01)."""
    from inference.kernels.laplace import newton_mode
    from inference.kernels.ridge_logistic import ridge_logistic_mode

    Z, y, lam, init = np.array([[1.0], [1.0]]), np.array([1.0, 0.0]), 1e-6, np.array([3.0])
    theta, w = init.copy(), [np.empty((1, 1)), np.empty((1, 1)), np.empty(1), np.empty(1), np.empty(1)]
    ok, _ = newton_mode(Z, y, theta, np.zeros(1), lam * np.eye(1), *w, *[np.empty(2) for _ in range(4)], 25, 20.0)
    got, got_ok, _ = ridge_logistic_mode(Z, y, lam, init, 25, 20.0)
    assert got_ok == ok and np.array_equal(got, theta)


@pytest.mark.parametrize("Z, y, lam, what, extra", [
    (np.zeros((3, 2)), np.array([0.0, 1.0]), 1.0, "shapes", None),
    (np.zeros((2, 2)), np.array([0.0, 2.0]), 1.0, "y in {0, 1}", None),
    (np.array([[np.nan, 0.0]]), np.array([1.0]), 1.0, "finite", None),
    (np.zeros((2, 2)), np.array([0.0, 1.0]), 0.0, "lam must be", None),
    (np.zeros((2, 2)), np.array([0.0, 1.0]), float("nan"), "lam must be", None),
    (np.zeros((2, 2)), np.array([0.0, 1.0]), 1.0, "init must have shape", {"init": np.zeros(3)}),
    (np.zeros((0, 2)), np.zeros(0), 1.0, "must be finite", {"init": np.array([np.nan, 0.0])}),
    (np.zeros((2, 2)), np.array([0.0, 1.0]), 1.0, "iters must be", {"iters": 0}),
    (np.zeros((2, 2)), np.array([0.0, 1.0]), 1.0, "iters must be", {"tol": float("nan")}),
])
def test_ridge_logistic_refuses_bad_input_by_name(Z, y, lam, what, extra):
    from inference.estimators import ridge_logistic
    from tdmodels.errors import InputError

    with pytest.raises(InputError, match=what.replace("{", r"\{").replace("}", r"\}")):
        ridge_logistic(Z, y, lam, **(extra or {}))


@given(st.floats(-30, 30), st.floats(0, 200), st.sampled_from([1e-12, 1e-6]), st.booleans())
@settings(max_examples=300, deadline=None)
def test_both_outcomes_interleaved_are_the_two_one_click_newtons_bit_for_bit(a, s, rtol, given_p):
    from inference.kernels._scalar import _sigmoid, click_mode as mode, click_modes_both

    p_a = float(_sigmoid(a)) if given_p else -1.0
    assert click_modes_both(a, s, rtol, p_a) == (mode(a, s, 0, rtol, p_a), mode(a, s, 1, rtol, p_a))
