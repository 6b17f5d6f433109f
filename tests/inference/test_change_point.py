"""The change-point view of the population: its closed forms against direct formulas and the population's own
surrogate evidence, and what it concludes from sessions of one new type, of the population, or none."""
import numpy as np
import pytest

from inference import kernels
from inference.change_point import MIN_GAINS, WIDTHS, new_kind_probability, population_log_evidence, recent_type
from inference.reference import (mixture_log_evidence_reference, run_posterior_reference, type_run_evidence_reference,
                                 type_terms)
from inference.population import surrogate_units


def _surrogates(rng, B, d, singular=False):
    A = rng.standard_normal((B, d, d))
    lam = np.einsum("bij,bkj->bik", A, A) + 0.1 * np.eye(d)
    if singular:                                   # no likelihood along the all-ones direction, as clicks leave it
        P = np.eye(d) - np.ones((d, d)) / d
        lam = np.einsum("ij,bjk,kl->bil", P, lam, P)
    return lam, rng.standard_normal((B, d)), rng.standard_normal(B)


@pytest.mark.parametrize("seed", range(5))
def test_type_terms_are_the_marginal_likelihood_of_the_type_mean(seed):
    """With Lam_u invertible, p(y_u | m) = exp(c_u + h' Lam^-1 h / 2) |2 pi Lam^-1|^1/2 N(Lam^-1 h; m, W + Lam^-1)."""
    rng = np.random.default_rng(seed)
    d, width = 3, WIDTHS[seed % len(WIDTHS)]
    lam, h, c = _surrogates(rng, 4, d)
    J, k, e = type_terms(lam, h, c, width)
    m = rng.standard_normal(d)
    for b in range(4):
        inv = np.linalg.inv(lam[b])
        x, S = inv @ h[b], width * np.eye(d) + inv
        want = (c[b] + 0.5 * h[b] @ inv @ h[b] - 0.5 * np.linalg.slogdet(lam[b])[1]
                - 0.5 * np.linalg.slogdet(S)[1] - 0.5 * (x - m) @ np.linalg.solve(S, x - m))
        assert e[b] - 0.5 * m @ J[b] @ m + k[b] @ m == pytest.approx(want, abs=1e-9)


def test_population_evidence_is_the_populations_own_surrogate_evidence():
    rng = np.random.default_rng(1)
    d = 4
    lam, h, c = _surrogates(rng, 6, d, singular=True)
    w, means = np.array([0.2, 0.5, 0.3]), rng.standard_normal((3, d))
    covs = np.stack([0.3 * np.eye(d), np.eye(d), 4.0 * np.eye(d)])
    users, comps = np.repeat(np.arange(6), 3), np.tile(np.arange(3), 6)
    ev = surrogate_units(users, comps, lam, h, c, means, covs)[2].reshape(6, 3)
    want = np.logaddexp.reduce(np.log(w)[None] + ev, axis=1)
    np.testing.assert_allclose(population_log_evidence(lam, h, c, w, means, covs), want, atol=1e-10)


def _clicks_surrogate(theta, rng, n=60, scale=2.0):
    """A Gaussian likelihood of theta as many informative clicks would give: Lam = X'X / 4 (persona contrasts),
    centred on the user's theta (up to the all-ones direction, which contrasts never see)."""
    d = len(theta)
    X = rng.standard_normal((n, d))
    X -= X.mean(1, keepdims=True)
    lam = scale * X.T @ X / 4
    return lam, lam @ theta, 0.0


def _sessions(thetas, rng):
    parts = [_clicks_surrogate(t, rng) for t in thetas]
    return (np.array([p[0] for p in parts]), np.array([p[1] for p in parts]), np.array([p[2] for p in parts]))


def test_users_of_one_new_type_after_the_populations_own_make_it_the_likely_next_one():
    rng = np.random.default_rng(2)
    d = 5
    means = np.array([[2.0, -1, 0, 0, 0], [-1.0, 2, 0, 0, 0], [0.0, 0, 0, 0, 0]])
    covs = np.stack([0.1 * np.eye(d), 0.1 * np.eye(d), 4.0 * np.eye(d)])
    w = np.array([0.45, 0.45, 0.1])
    old = [means[rng.integers(2)] + 0.3 * rng.standard_normal(d) for _ in range(20)]
    new_type = np.array([0.0, 0, -2, 2.5, 0])
    new = [new_type + 0.3 * rng.standard_normal(d) for _ in range(6)]
    before = recent_type(*_sessions(old, rng), w, means, covs, 0.02, 4.0)
    after = recent_type(*_sessions(old + new, rng), w, means, covs, 0.02, 4.0)
    assert before.weight < 0.05
    assert after.weight > 0.9 and 5 <= after.sessions <= 7.5
    c = lambda v: v - v.mean()                     # noqa: E731  (contrasts only: the all-ones direction is unseen)
    assert np.sqrt(np.mean((c(after.mean) - c(new_type)) ** 2)) < 0.3
    assert np.all(np.linalg.eigvalsh(after.cov) > 0)


def test_no_session_says_nothing_and_the_hazard_bounds_the_weight():
    d = 3
    w, means, covs = np.array([1.0]), np.zeros((1, d)), 4.0 * np.eye(d)[None]
    none = recent_type(np.zeros((0, d, d)), np.zeros((0, d)), np.zeros(0), w, means, covs, 0.1, 4.0)
    assert none.weight == 0.0 and none.sessions == 0.0
    rng = np.random.default_rng(3)
    same = [np.array([3.0, -3.0, 0.0]) + 0.1 * rng.standard_normal(d) for _ in range(10)]
    r = recent_type(*_sessions(same, rng), w, means, covs, 0.3, 4.0)
    assert 0.6 < r.weight <= 0.7 + 1e-12                # at most 1 - hazard: the next user may start a change
    lam, h, c = _surrogates(rng, 8, d, singular=True)
    assert np.isfinite(recent_type(lam, h, c, w, means, covs, 0.02, 4.0).weight)


def test_a_new_type_shows_after_two_users_even_after_a_run_of_another_new_type():
    """A run of 20 users of type A, which the population lacks, then two of type B: the recent type is B's (the
    run before is summed over, not held against the population: the first version held it, and kept A's)."""
    rng = np.random.default_rng(4)
    d = 5
    means, covs, w = np.zeros((1, d)), 4.0 * np.eye(d)[None], np.array([1.0])
    A, B = np.array([2.5, -2.0, 0, 0, 0]), np.array([-2.0, 0, 2.5, 0, 0])
    users = [A + 0.3 * rng.standard_normal(d) for _ in range(20)] + [B + 0.3 * rng.standard_normal(d) for _ in range(2)]
    r = recent_type(*_sessions(users, rng), w, means, covs, 0.05, 4.0)
    c = lambda v: v - v.mean()                     # noqa: E731
    assert r.weight > 0.5 and r.sessions == pytest.approx(2.0, abs=0.3)
    assert np.sqrt(np.mean((c(r.mean) - c(B)) ** 2)) < 0.6 < np.sqrt(np.mean((c(r.mean) - c(A)) ** 2))


@pytest.mark.parametrize("seed", range(3))
def test_logdet_and_quadratic_form_without_an_inverse(seed):
    from inference.kernels import spd_logdet_quad

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((6, 7, 7))
    M = np.einsum("bij,bkj->bik", A, A) + 0.5 * np.eye(7)
    v = rng.standard_normal((6, 7))
    logdet, quad = spd_logdet_quad(M, v)
    np.testing.assert_allclose(logdet, np.linalg.slogdet(M)[1], rtol=1e-10)
    np.testing.assert_allclose(quad, np.einsum("bi,bi->b", v, np.linalg.solve(M, v[..., None])[..., 0]), rtol=1e-9)
    bad = M.copy()
    bad[0] = -np.eye(7)
    assert np.isnan(spd_logdet_quad(bad, v)[0][0])


@pytest.mark.parametrize("shift", [-7.0, 5.0])
def test_a_constant_in_every_surrogate_cancels_given_the_gains(shift):
    """A recalibration redoes every session's surrogate; what the population run keeps from arrival is its gain
    over the broad component, so an offset common to a session's evidences under every prior changes nothing
    (the first version kept the arrival evidence itself, against type runs read off the new surrogates)."""
    rng = np.random.default_rng(5)
    d = 5
    means = np.array([[2.0, -1, 0, 0, 0], [0.0, 0, 0, 0, 0]])
    covs, w = np.stack([0.1 * np.eye(d), 4.0 * np.eye(d)]), np.array([0.8, 0.2])
    users = [means[0] + 0.3 * rng.standard_normal(d) for _ in range(8)]
    users += [np.array([0.0, 0, -2, 2.5, 0]) + 0.3 * rng.standard_normal(d) for _ in range(3)]
    lam, h, c = _sessions(users, rng)
    gain = population_log_evidence(lam, h, c, w, means, covs) - population_log_evidence(lam, h, c, np.ones(1),
                                                                                         means[-1:], covs[-1:])
    a = recent_type(lam, h, c, w, means, covs, 0.05, 4.0, gain=gain)
    b = recent_type(lam, h, c + shift, w, means, covs, 0.05, 4.0, gain=gain)
    assert 0.05 < a.weight < 1
    assert (b.weight, b.sessions) == pytest.approx((a.weight, a.sessions), rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(b.mean, a.mean, atol=1e-9)


def test_a_drop_of_the_gain_makes_a_new_kind_likely_and_one_low_gain_alone_does_not():
    """Gains around 2 (sd 1), then users the population explains no better than the broad component: after two
    such users a new kind is likely; after one, however low its gain, it is not yet (as for a type, one user may
    be on their own); the population's users bring it back down; too few sessions, or no positive mean gain,
    say nothing."""
    rng = np.random.default_rng(7)
    steady = 2.0 + rng.standard_normal(40)
    assert new_kind_probability(steady, 0.05) < 0.05
    one_low = new_kind_probability(np.r_[steady, 0.3], 0.05)
    one_very_low = new_kind_probability(np.r_[steady, -2.0], 0.05)
    assert one_low < one_very_low < 0.5
    assert new_kind_probability(np.r_[steady, -2.0, -0.5], 0.05) > 0.8
    assert new_kind_probability(np.r_[steady, -2.0, -0.5, 0.2], 0.05) > 0.8
    assert new_kind_probability(np.r_[steady, -2.0, 2.5, 2.0, 1.8, 2.6], 0.05) < 0.05
    assert new_kind_probability(steady[:MIN_GAINS - 1], 0.05) == 0.0
    assert new_kind_probability(steady - 5.0, 0.05) == 0.0
    second = [new_kind_probability(np.r_[steady, -1.0, x], 0.05) for x in (3.0, 1.0, 0.0, -1.0, -3.0)]
    assert np.all(np.diff(second) > 0) and all(0.0 <= p < 1.0 for p in second)


@pytest.mark.parametrize("gains, hazard, error", [(np.r_[np.ones(12), np.nan], 0.05, FloatingPointError),
                                                  (np.ones((3, 4)), 0.05, ValueError),
                                                  (np.ones(12), 0.0, ValueError), (np.ones(12), 1.0, ValueError)])
def test_new_kind_probability_refuses_what_is_not_a_row_of_finite_gains_or_a_hazard(gains, hazard, error):
    with pytest.raises(error):
        new_kind_probability(gains, hazard)


def test_a_type_every_session_shares_from_the_first_is_the_populations():
    """The oldest session given is in a population run: users who all share one type from the first make a type
    run from the second on at the earliest (the first version let the run start at the first, and on a population
    of two opposed camps a tight type at their mean taste, shared by all the sessions looked at, took the recent
    type's weight)."""
    rng = np.random.default_rng(8)
    d = 5
    means, covs, w = np.zeros((1, d)), 4.0 * np.eye(d)[None], np.array([1.0])
    same = [np.array([2.5, -2.0, 0, 0, 0]) + 0.3 * rng.standard_normal(d) for _ in range(12)]
    r = recent_type(*_sessions(same, rng), w, means, covs, 0.05, 4.0)
    assert r.weight > 0.9 and 10.0 < r.sessions <= 11.0 + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_run_evidence_is_its_numpy_statement(seed):
    """Every run's evidence and the newest runs' predictives, with singular surrogates among them, agree to
    rounding with the statement in inference.reference."""
    rng = np.random.default_rng(seed)
    R, d = 1 + seed * 3, 7 if seed % 2 else 3
    lam, h, c = _surrogates(rng, R, d, singular=seed % 3 == 0)
    got = kernels.type_run_evidence(lam, h, c, np.array(WIDTHS), 2.0)
    want = type_run_evidence_reference(lam, h, c, WIDTHS, 2.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_mixture_evidence_and_run_posterior_are_their_numpy_statements(seed):
    rng = np.random.default_rng(seed)
    R, d, C = 12, 7, 4
    lam, h, c = _surrogates(rng, R, d, singular=seed % 2 == 0)
    A = rng.standard_normal((C, d, d))
    covs = np.einsum("cij,ckj->cik", A, A) + 0.5 * np.eye(d)
    w, means = rng.dirichlet(np.ones(C)), rng.standard_normal((C, d))
    np.testing.assert_allclose(kernels.mixture_log_evidence(lam, h, c, w, means, covs),
                               mixture_log_evidence_reference(lam, h, c, w, means, covs), rtol=1e-10, atol=1e-9)
    log_ev = type_run_evidence_reference(lam, h, c, WIDTHS, 2.0)[0]
    base = rng.normal(-5.0, 3.0, R)
    for hazard in (1e-6, 0.05, 0.5, 1 - 1e-6):
        np.testing.assert_allclose(kernels.run_posterior(base, log_ev, hazard),
                                   run_posterior_reference(base, log_ev, hazard), rtol=1e-9, atol=1e-12)


def test_a_surrogate_that_is_not_a_number_is_a_named_error_not_a_nan_belief():
    rng = np.random.default_rng(3)
    lam, h, c = _surrogates(rng, 5, 3)
    lam[2, 0, 0] = np.nan
    w, means, covs = np.ones(1), np.zeros((1, 3)), np.eye(3)[None]
    with pytest.raises(FloatingPointError, match="positive definite"):
        population_log_evidence(lam, h, c, w, means, covs)
    with pytest.raises(FloatingPointError, match="positive definite"):
        recent_type(lam, h, c, w, means, covs, 0.05, 1.0, gain=np.ones(5))
