import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

from diagnostics.posterior_checks import (btl_log_posterior, check_logged_users, check_posterior, mixture_logpdf,
                                          mixture_moments, sample_mixture)
from tdmodels.errors import InputError


def _gaussian_case(seed, d=3, n_obs=40):
    """Linear-Gaussian model: y = X theta + N(0, 1) noise, theta ~ N(m0, S0): the posterior is Gaussian."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, d))
    m0, S0 = rng.standard_normal(d), np.diag(rng.uniform(0.5, 2.0, d))
    y = X @ rng.standard_normal(d) + rng.standard_normal(n_obs)
    P = np.linalg.inv(S0) + X.T @ X
    Sp = np.linalg.inv(P)
    mp = Sp @ (np.linalg.solve(S0, m0) + X.T @ y)

    def log_target(theta):
        r = y - theta @ X.T
        return -0.5 * np.sum(r ** 2, -1) + multivariate_normal(m0, S0).logpdf(theta)

    return rng, mp, Sp, log_target


def test_exact_approximation_reports_noise_level_errors():
    rng, mp, Sp, log_target = _gaussian_case(0)
    ref = rng.multivariate_normal(mp, Sp, size=4000)          # exact draws stand in for MCMC
    chk = check_posterior(ref, [1.0], mp[None], Sp[None], log_target, rng)
    assert chk.khat < 0.5
    assert np.all(np.abs(chk.mean_error) < 5 / np.sqrt(len(ref)))
    assert np.all(np.abs(chk.sd_ratio - 1) < 0.05)
    assert np.all(chk.w1 < 3 * chk.w1_floor + 0.02)
    assert chk.problems == []


def test_a_wrong_approximation_is_flagged():
    rng, mp, Sp, log_target = _gaussian_case(1)
    ref = rng.multivariate_normal(mp, Sp, size=4000)
    narrow = check_posterior(ref, [1.0], mp[None], 0.25 * Sp[None], log_target, rng)       # sd halved
    assert narrow.khat > 0.7 and np.allclose(narrow.sd_ratio, 0.5, atol=0.05)
    assert any("k-hat" in p for p in narrow.problems) and any("sd ratio" in p for p in narrow.problems)
    sd = np.sqrt(np.diag(Sp))
    shifted = check_posterior(ref, [1.0], (mp + sd)[None], Sp[None], log_target, rng)       # mean off by one sd
    assert np.allclose(shifted.mean_error, 1.0, atol=0.1)
    assert any("mean error" in p for p in shifted.problems)
    assert np.all(shifted.w1 > 5 * shifted.w1_floor)


@given(st.integers(0, 10_000))
@settings(max_examples=20)
def test_mixture_density_and_moments(seed):
    rng = np.random.default_rng(seed)
    C, d = 3, 2
    w = rng.dirichlet(np.ones(C))
    m = rng.standard_normal((C, d)) * 2
    A = rng.standard_normal((C, d, d))
    S = A @ A.transpose(0, 2, 1) + 0.2 * np.eye(d)
    x = rng.standard_normal((5, d))
    ref = np.log(sum(w[k] * multivariate_normal(m[k], S[k]).pdf(x) for k in range(C)))
    np.testing.assert_allclose(mixture_logpdf(x, w, m, S), ref, rtol=1e-10)
    draws = sample_mixture(rng, w, m, S, 40_000)
    mean, sd = mixture_moments(w, m, S)
    assert np.all(np.abs(draws.mean(0) - mean) < 6 * sd / np.sqrt(40_000))
    np.testing.assert_allclose(draws.std(0), sd, rtol=0.03)


def test_btl_log_posterior_is_prior_plus_bernoulli_log_likelihood():
    rng = np.random.default_rng(3)
    z, y = rng.standard_normal((24, 7)), rng.integers(0, 2, 24)
    w, m, S = np.array([1.0]), np.zeros((1, 7)), 4 * np.eye(7)[None]
    f = btl_log_posterior(z, y, w, m, S)
    theta = rng.standard_normal((3, 7))
    p = 1 / (1 + np.exp(-(theta @ z.T)))
    ref = np.sum(y * np.log(p) + (1 - y) * np.log(1 - p), -1) + multivariate_normal(m[0], S[0]).logpdf(theta)
    np.testing.assert_allclose(f(theta), ref, rtol=1e-10)


def test_beliefs_recomputed_from_the_log_are_the_ones_the_learner_held(dev_world):
    from diagnostics.posterior_checks import beliefs_at_round
    from online.replay import replay_logged

    _, log = replay_logged(dev_world, 3, "coduel", arrivals=25)
    users = np.array([0, 12, 24])
    w, m, S = beliefs_at_round(log, users, 24)
    np.testing.assert_allclose(w, log.beliefs.weights[users], atol=1e-9)
    np.testing.assert_allclose(m, log.beliefs.means[users], atol=1e-8)
    np.testing.assert_allclose(S, log.beliefs.covs[users], atol=1e-8)
    w0, m0, _ = beliefs_at_round(log, users, 0)                     # no clicks yet: the arrival prior
    np.testing.assert_allclose(w0, log.priors.weights[users])


def test_khat_comes_with_its_monte_carlo_spread_and_users_by_arrival_block():
    """One 4,000-draw k-hat varies between samples (sd ~0.1 on CODuel's beliefs); the check reports the
    replicates, and a run's users by arrival block."""
    from diagnostics.posterior_checks import UserChecks, btl_log_posterior, check_posterior

    rng = np.random.default_rng(11)
    d = 2
    z = rng.standard_normal((8, d))
    y = (rng.random(8) < 0.5).astype(float)
    w, m, C = np.ones(1), np.zeros((1, d)), np.eye(d)[None] * 4.0
    target = btl_log_posterior(z, y, w, m, C)
    ref = rng.multivariate_normal(np.zeros(d), 0.5 * np.eye(d), 2000)
    chk = check_posterior(ref, w, m, C * 0.2, target, rng, n_proposal=500, khat_replicates=5)
    assert chk.khat_replicates.shape == (5,) and np.isclose(chk.khat, chk.khat_replicates.mean())
    assert len(set(np.round(chk.khat_replicates, 6))) > 1                     # independent samples differ
    U = 120
    rep = np.where(np.arange(U)[:, None] < 50, 0.9, 0.3) + 0.05 * rng.standard_normal((U, 5))
    rep[60] = [0.65, 0.75, 0.6, 0.72, 0.5]                                     # flagged in some samples only
    checks = UserChecks(np.arange(U), np.zeros((U, d)), np.ones((U, d)), np.ones((U, d)), np.ones((U, d)),
                        rep.mean(1), rep)
    sm = checks.summary()
    lo, hi = sm["share_khat_over_0.7_range"]
    assert lo <= sm["share_khat_over_0.7"] <= hi and sm["share_flagged_in_some_replicates_only"] >= 1 / U
    blocks = checks.by_block(50)
    assert [b["arrivals"] for b in blocks] == [(0, 49), (50, 99), (100, 149)]
    assert blocks[0]["share_khat_over_0.7"] == 1.0 and blocks[2]["share_khat_over_0.7"] == 0.0
    assert [b["users"] for b in blocks] == [50, 50, 20]



def test_check_logged_users_names_reference_draws_that_do_not_fit_the_users():
    """More users than reference columns had raised IndexError; fewer had used the first columns quietly."""
    from online.replay import replay_logged
    from tdmodels.errors import InputError
    from tdmodels.rosters import open_world

    _, log = replay_logged(open_world("dev"), 0, "coduel", arrivals=3)
    d = log.beliefs.means.shape[-1]
    ref = np.zeros((50, 2, d))
    for users, draws, words in (([0, 1, 2], ref, "one per column"), ([0], ref, "one per column"),
                                ([0, 7], ref, r"in \[0, 3\)"), (None, ref[:, 0], r"\[draw, user, dim\]"),
                                (None, ref * np.nan, "non-finite")):
        with pytest.raises(InputError, match=words):
            check_logged_users(log, draws, users)


@pytest.mark.parametrize("case, says", [
    ("negative weight", "non-negative and sum to 1"), ("weights sum 2", "non-negative and sum to 1"),
    ("not positive definite", "positive definite"), ("one reference draw", "need [S, d] with S >= 4"),
    ("nan draw", "non-finite"), ("constant draws", "constant in dimension"), ("wrong dimension", "need [C], [C, 2]"),
    ("zero replicates", "khat_replicates must be an integer"), ("text draws", "not an array of numbers"),
])
def test_bad_inputs_to_check_posterior_are_named(case, says):
    """NumPy's and SciPy's errors (or a silent nan) had come out of negative weights, a covariance that is not
    positive definite, or a single reference draw."""
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(40, 2))
    w, m, S = np.array([0.5, 0.5]), np.zeros((2, 2)), np.stack([np.eye(2)] * 2)
    kw = {}
    if case == "negative weight":
        w = np.array([1.5, -0.5])
    elif case == "weights sum 2":
        w = np.array([1.0, 1.0])
    elif case == "not positive definite":
        S = np.stack([np.eye(2), -np.eye(2)])
    elif case == "one reference draw":
        ref = ref[:1]
    elif case == "nan draw":
        ref[3, 1] = np.nan
    elif case == "constant draws":
        ref[:, 1] = 2.0
    elif case == "wrong dimension":
        m, S = np.zeros((2, 3)), np.stack([np.eye(3)] * 2)
    elif case == "zero replicates":
        kw = {"khat_replicates": 0}
    else:
        ref = "draws"
    with pytest.raises(InputError, match=re.escape(says)):
        check_posterior(ref, w, m, S, lambda t: np.zeros(len(t)), rng, **kw)
