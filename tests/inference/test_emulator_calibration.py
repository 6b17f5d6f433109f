"""Emulator-based calibration: the emulator, the NumPyro model, the waves, and coverage on synthetic data."""
import numpy as np
import pytest

from inference.emulator_calibration import (calibrate, calibration_model, fit_emulator, posterior_matrix, predict,
                                            quadratic_features, starting_points)

LO, HI = np.zeros(2), np.ones(2)


def toy(th):
    th = np.atleast_2d(th)
    return np.stack([np.sin(2 * th[:, 0]) + th[:, 1], th[:, 0] * th[:, 1] + 0.3 * th[:, 0], th[:, 1] ** 2 - th[:, 0]], 1)


def test_a_quadratic_is_emulated_exactly_and_its_error_is_near_zero():
    rng = np.random.default_rng(0)
    th = rng.uniform(size=(40, 3))
    Y = np.stack([1 + th[:, 0] - 2 * th[:, 1] * th[:, 2], th[:, 2] ** 2], 1)
    em = fit_emulator(th, Y, np.zeros(3), np.ones(3), ridge=0.0)
    new = rng.uniform(size=(5, 3))
    want = np.stack([1 + new[:, 0] - 2 * new[:, 1] * new[:, 2], new[:, 2] ** 2], 1)
    np.testing.assert_allclose(predict(em, new), want, atol=1e-9)
    assert em.error_sd.max() < 1e-8 and quadratic_features(new).shape == (5, 10)


def test_the_emulator_refuses_too_few_or_non_finite_simulations():
    th = np.random.default_rng(0).uniform(size=(8, 3))
    with pytest.raises(ValueError, match="needs at least 15 simulations, got 8"):
        fit_emulator(th, th[:, :1], np.zeros(3), np.ones(3))
    Y = np.ones((30, 1))
    Y[3] = np.nan
    with pytest.raises(ValueError, match="finite"):
        fit_emulator(np.random.default_rng(1).uniform(size=(30, 3)), Y, np.zeros(3), np.ones(3))


def test_the_model_is_a_plain_numpyro_model_with_named_sites():
    from numpyro import handlers

    em = fit_emulator(np.random.default_rng(0).uniform(size=(30, 2)), toy(np.random.default_rng(0).uniform(size=(30, 2))),
                      LO, HI)
    tr = handlers.trace(handlers.seed(calibration_model, 0)).get_trace(em, ("a", "b"), np.full(3, 0.1))
    assert set(tr) == {"a", "b", "statistics"} and not tr["statistics"]["is_observed"]   # prior predictive
    tr = handlers.trace(handlers.seed(calibration_model, 0)).get_trace(em, ("a", "b"), np.full(3, 0.1), toy([0.5, 0.5])[0])
    assert tr["statistics"]["is_observed"]


def test_the_chains_start_near_the_data():
    rng = np.random.default_rng(0)
    th = rng.uniform(size=(60, 2))
    em = fit_emulator(th, toy(th), LO, HI)
    start = starting_points(em, toy([0.4, 0.7])[0], np.full(3, 0.03), chains=3)
    assert start.shape == (3, 2) and np.all(np.abs(start - [0.4, 0.7]) < 0.1)


def _one(seed, waves=2, draws=400):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.15, 0.85, size=2)
    sds = np.full(3, 0.03)
    obs = toy(truth)[0] + sds * rng.standard_normal(3)
    res = calibrate(toy, ["a", "b"], LO, HI, obs, sds, rng.uniform(size=(60, 2)), waves=waves, wave_size=40, chains=2,
                    draws=draws, seed=seed)
    return truth, res


@pytest.mark.slow
def test_the_posterior_concentrates_at_the_truth_and_the_waves_are_recorded():
    import arviz as az

    truth, res = _one(1)
    post = posterior_matrix(res.idata, ["a", "b"])
    assert np.all(np.abs(post.mean(0) - truth) < 0.05) and np.all(post.std(0) < 0.05)
    assert float(az.rhat(res.idata).to_array().max()) < 1.01
    assert list(np.bincount(res.wave)) == [60, 40, 40] and len(res.emulators) == 2
    assert np.all(np.abs(res.statistics[res.wave == 2].mean(0) - toy(truth)[0]) < 0.05)    # predictive check


@pytest.mark.slow
def test_90_percent_intervals_cover_the_truth_on_synthetic_data():
    """Coverage of the whole procedure (design, emulator, waves, NUTS) over 20 synthetic data sets."""
    hits = np.zeros(2)
    n = 20
    for seed in range(n):
        truth, res = _one(100 + seed, waves=1, draws=300)
        post = posterior_matrix(res.idata, ["a", "b"])
        lo, hi = np.quantile(post, [0.05, 0.95], axis=0)
        hits += (lo <= truth) & (truth <= hi)
    assert np.all(hits >= 14), hits          # expected 18 of 20; 14 or fewer has probability 0.04 per parameter


def test_the_gaussian_process_emulates_what_a_quadratic_cannot():
    rng = np.random.default_rng(0)
    f = lambda th: np.stack([np.sin(4 * th[:, 0]) * th[:, 1], np.abs(th[:, 0] - 0.5)], 1)
    th = rng.uniform(size=(80, 2))
    new = rng.uniform(size=(200, 2))
    gp = fit_emulator(th, f(th), LO, HI, kind="gp")
    quad = fit_emulator(th, f(th), LO, HI)
    err = lambda em: np.sqrt(np.mean((predict(em, new) - f(new)) ** 2, axis=0))
    assert np.all(err(gp) < 0.5 * err(quad))
    assert np.all(gp.error_sd < 2 * err(gp) + 1e-3) and np.all(err(gp) < 2 * gp.error_sd + 1e-3)  # honest LOO error
    with pytest.raises(ValueError, match="kind must be"):
        fit_emulator(th, f(th), LO, HI, kind="cubic")
