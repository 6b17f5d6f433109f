import numpy as np
import pytest

from inference.abc_smc import abc_smc

N_OBS = 20


def _normal_mean(theta, seed):
    """20 draws of N(theta, 1) summarised by their mean: the exact posterior under a flat prior is
    N(mean, 1/20), truncated to the prior's box."""
    return [np.random.default_rng(seed).normal(theta[0], 1.0, N_OBS).mean()]


def test_the_population_concentrates_on_the_exact_posterior():
    x = _normal_mean([1.3], 99)[0]
    res = abc_smc(_normal_mean, [x], [(-5.0, 5.0)], scales=[1.0], particles=300, generations=8, seed=1)
    m = np.sum(res.weights * res.particles[:, 0])
    sd = np.sqrt(np.sum(res.weights * (res.particles[:, 0] - m) ** 2))
    assert abs(m - x) < 0.06 and 0.75 / np.sqrt(N_OBS) < sd < 1.35 / np.sqrt(N_OBS)
    assert np.all(np.diff(res.tolerances[1:]) < 0) and res.ess() > 100
    assert len(res.tolerances) == len(res.acceptance) and res.simulations >= 300 * len(res.tolerances)


def test_ninety_percent_intervals_cover_the_truth_about_ninety_percent_of_the_time():
    """Coverage on synthetic data: 40 data sets with theta drawn from the prior."""
    rng = np.random.default_rng(7)
    hits = 0
    for k in range(40):
        theta = rng.uniform(-3, 3)
        x = _normal_mean([theta], 1000 + k)[0]
        res = abc_smc(_normal_mean, [x], [(-5.0, 5.0)], scales=[1.0], particles=200, generations=6, seed=k)
        lo, hi = res.interval(0.9)[0]
        hits += lo <= theta <= hi
    assert 30 <= hits <= 40          # Binomial(40, 0.9): 30 or more with probability 0.99


def test_two_parameters_on_log_and_natural_scales_and_the_same_seed_the_same_population():
    def sim(theta, seed):
        r = np.random.default_rng(seed)
        y = theta[0] * r.standard_normal(50) + theta[1]
        return [y.std(), y.mean()]
    obs = sim([0.5, 2.0], 3)
    a = abc_smc(sim, obs, [(0.05, 5.0), (-5.0, 5.0)], scales=[0.05, 0.1], log_scale=[True, False], particles=150,
                generations=5, seed=2)
    b = abc_smc(sim, obs, [(0.05, 5.0), (-5.0, 5.0)], scales=[0.05, 0.1], log_scale=[True, False], particles=150,
                generations=5, seed=2)
    np.testing.assert_array_equal(a.particles, b.particles)
    assert np.all(a.particles[:, 0] > 0.05) and abs(np.sum(a.weights * a.particles[:, 0]) - 0.5) < 0.15


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="scales > 0"):
        abc_smc(_normal_mean, [0.0], [(-1.0, 1.0)], scales=[0.0])
    with pytest.raises(ValueError, match="low > 0 on a log scale"):
        abc_smc(_normal_mean, [0.0], [(-1.0, 1.0)], scales=[1.0], log_scale=[True])
    with pytest.raises(ValueError, match="quantile"):
        abc_smc(_normal_mean, [0.0], [(-1.0, 1.0)], scales=[1.0], quantile=1.0)
    with pytest.raises(ValueError, match="finite"):
        abc_smc(_normal_mean, [float("nan")], [(-1.0, 1.0)], scales=[1.0])


def test_a_simulator_that_never_comes_close_ends_instead_of_spinning():
    """All-NaN statistics are refused at once (not 'accepted' at an infinite tolerance); a simulator that is
    finite only on part of the prior stops after a bounded number of calls instead of spinning."""
    with pytest.raises(ValueError, match="non-finite statistics"):
        abc_smc(lambda theta, seed: [float("nan")], [0.0], [(-1.0, 1.0)], scales=[1.0], particles=20)

    def sliver(theta, seed):
        return [abs(theta[0])] if theta[0] > 0.7 else [float("nan")]
    res = abc_smc(sliver, [0.0], [(-1.0, 1.0)], scales=[1.0], particles=20, generations=5, seed=0, quantile=0.01)
    # generation 1 cannot keep 20 within 20 / min_acceptance proposals: it is recorded as failed and the run ends
    assert len(res.tolerances) == 2 and res.acceptance[-1] < 0.02 and res.simulations <= 20 + 20 / 0.02 + 20
