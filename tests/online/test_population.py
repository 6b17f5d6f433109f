import numpy as np

from inference.sbc import simulate_clicks
from online.population import init_population, refit_population
from tdmodels.priors import MixturePrior

CENTERS = np.array([[3.0, 0, 0], [-3.0, 0, 0], [0, 3.0, -3.0]])


def _sessions(rng, n, rounds=40):
    kind = rng.integers(3, size=n)
    theta = CENTERS[kind] + 0.3 * rng.standard_normal((n, 3))
    z = rng.standard_normal((n, rounds, 3))
    return kind, z, simulate_clicks(theta, z, rng)


def test_learns_the_kinds_of_users_one_session_at_a_time():
    rng = np.random.default_rng(0)
    kind, z, y = _sessions(rng, 45)
    pop = init_population(3)
    for n in range(1, 46):
        pop, r = refit_population(pop, z[:n], y[:n])
        w = pop.prior.weights
        assert pop.n == n and np.isclose(w.sum(), 1.0) and w[-1] >= 20 / (20 + n) - 1e-12
        assert len(w) - 1 <= 16
        np.testing.assert_array_equal(pop.prior.means[-1], 0.0)
    learned = pop.prior.means[:-1]
    assert 3 <= len(learned) <= 6
    for c in CENTERS:              # every kind has a component near it
        assert np.min(np.linalg.norm(learned - c, axis=1)) < 1.0


def test_never_more_than_the_cap_and_weak_components_go():
    rng = np.random.default_rng(1)
    _, z, y = _sessions(rng, 12)
    pop = init_population(3)
    for n in range(1, 13):
        pop, _ = refit_population(pop, z[:n], y[:n], max_learned=2)
        assert len(pop.prior.weights) - 1 <= 2
    # a component nobody supports is removed at the next refit
    w, m, C = pop.prior
    k = len(w) - 1
    learned_w = np.r_[0.9 * w[:k], 0.1 * w[:k].sum()]
    far = np.array([[40.0, 40.0, 40.0]])
    crowded = pop._replace(prior=MixturePrior(np.r_[learned_w, w[-1]], np.concatenate([m[:k], far, m[-1:]]),
                                              np.concatenate([C[:k], 0.01 * np.eye(3)[None], C[-1:]])))
    after, _ = refit_population(crowded, z, y, max_learned=3)
    assert len(after.prior.weights) <= len(crowded.prior.weights) - 1
    assert np.min(np.linalg.norm(after.prior.means[:-1] - far, axis=1)) > 5.0
