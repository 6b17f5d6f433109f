import numpy as np
import pytest

from diagnostics.profile_checks import check_belief
from inference.health import stored_health
from inference.profile_reference import profile_nuts, z_new_draws
from inference.profile_belief import ProfileBelief, condition, population_belief
from tdmodels.profile_model import ProfilePrior, default_profile_prior

PRIOR = default_profile_prior(2)       # D = 4: two value logits, two log-weights


def data(seed=0, n=15):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(4, 4))
    Sigma = A @ A.T / 4 + 0.3 * np.eye(4)
    return rng.multivariate_normal(PRIOR.mu0 + 0.5, Sigma, n + 1)


@pytest.fixture(scope="module")
def exact_case():
    y = data()
    pop, new = y[:-1], y[-1]
    idata = profile_nuts(pop, [0], new[:1], prior=PRIOR, chains=4, warmup=400, draws=1000)
    return pop, new, idata


@pytest.mark.slow
def test_nuts_reference_is_healthy_and_agrees_with_the_exact_belief(exact_case):
    pop, new, idata = exact_case
    h = stored_health(idata)
    assert h.ok, h.line()
    prior_b = population_belief(pop, PRIOR)
    b = condition(prior_b, 0, new[0])
    c, coords = check_belief(b, prior_b, [0], new[:1], [0.0], z_new_draws(idata), np.random.default_rng(0))
    assert list(coords) == [1, 2, 3]
    assert np.max(np.abs(c.mean_error)) < 0.1 and np.all(np.abs(c.sd_ratio - 1) < 0.1), c
    assert c.khat < 0.5 and not c.problems
    # A belief shifted by one sd on a coordinate is flagged on the same reference.
    sd = np.sqrt(np.diag(b.shape) * b.df / (b.df - 2))
    wrong = ProfileBelief(b.mean + np.array([0, sd[1], 0, 0]), b.shape, b.df)
    w, _ = check_belief(wrong, prior_b, [0], new[:1], [0.0], z_new_draws(idata), np.random.default_rng(0))
    assert any("mean error" in p for p in w.problems)
    narrow = ProfileBelief(b.mean, b.shape / 4, b.df)             # sd halved: the proposal's tails are too light
    n, _ = check_belief(narrow, prior_b, [0], new[:1], [0.0], z_new_draws(idata), np.random.default_rng(0))
    assert n.khat > 0.5 and any("sd ratio" in p for p in n.problems)   # measured 0.53 (3 coordinates)


@pytest.mark.slow
def test_noisy_answers_approximation_against_nuts():
    y = data(seed=4)
    pop, new = y[:-1], y[-1]
    sd = np.array([0.8, 0.5])
    answers = new[:2] + np.array([0.3, -0.2])
    idata = profile_nuts(pop, [0, 1], answers, sd, prior=PRIOR, chains=4, warmup=400, draws=1000)
    assert stored_health(idata).ok
    prior_b = population_belief(pop, PRIOR)
    b = condition(condition(prior_b, 0, answers[0], sd[0] ** 2), 1, answers[1], sd[1] ** 2)
    c, coords = check_belief(b, prior_b, [0, 1], answers, sd ** 2, z_new_draws(idata), np.random.default_rng(1))
    assert len(coords) == 4
    assert np.max(np.abs(c.mean_error)) < 0.15 and np.all(np.abs(c.sd_ratio - 1) < 0.15) and c.khat < 0.7, c


@pytest.mark.slow
def test_nuts_sbc_of_the_profile_model():
    """SBC with NUTS as the inference: ranks of the new user's free coordinates among thinned draws.
    JAX's caches are cleared between simulations: 60 recompilations of the sampler in one
    process crashed XLA's compiler here (a segmentation fault after several minutes)."""
    import jax
    from scipy import stats

    prior = ProfilePrior(np.zeros(4), 0.5, 8.0, 3.0 * np.eye(4))
    rng = np.random.default_rng(7)
    L, ranks = 49, []
    for s in range(40):
        Sigma = stats.invwishart.rvs(prior.nu0, prior.psi0, random_state=rng)
        mu = rng.multivariate_normal(prior.mu0, Sigma / prior.kappa0)
        y = rng.multivariate_normal(mu, Sigma, 11)
        idata = profile_nuts(y[:-1], [0], y[-1, :1], prior=prior, seed=s, chains=2, warmup=300, draws=500)
        z = z_new_draws(idata)[:, 1:]
        idx = np.linspace(0, len(z) - 1, L).round().astype(int)
        ranks.append(np.sum(z[idx] < y[-1, 1:], 0))
        jax.clear_caches()
    ranks = np.array(ranks)
    for c in range(ranks.shape[1]):
        counts = np.histogram(ranks[:, c], bins=5, range=(0, L + 1))[0]
        assert stats.chisquare(counts).pvalue > 0.001 / ranks.shape[1]
