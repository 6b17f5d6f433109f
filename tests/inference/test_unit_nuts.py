"""Per-unit NUTS: each unit's draws depend on its own key and data alone, a unit that misses a threshold is
sampled again deeper, and the per-unit figures add up to the run's health."""
import warnings

import numpy as np
import pytest

from inference.health import MAX_RHAT, FitHealthWarning, stored_health
from inference.sbc import random_designs, sample_prior, simulate_clicks
from inference.unit_nuts import RETRY_TREE_DEPTH, UNIT_TREE_DEPTH, UnitHealth, UnitSample, replace_units
from inference.user_reference import fit_users, user_chunks
from tdmodels.priors import MixturePrior, isotropic_prior


def quiet_fit(*args, **kw):
    """fit_users with its health warnings silenced (short chains on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitHealthWarning)
        return fit_users(*args, **kw)


@pytest.fixture(scope="module")
def clicks(dev_world):
    rng = np.random.default_rng(3)
    prior = isotropic_prior(7)
    theta = sample_prior(prior, 6, rng)
    z = random_designs(dev_world["features"].values, 6, 24, rng)
    return z, simulate_clicks(theta, z, rng), prior


@pytest.mark.slow         # the mixture's test below checks the same, with weights
def test_a_users_draws_do_not_depend_on_the_chunk(clicks):
    z, y, prior = clicks
    one = quiet_fit(z[:3], y[:3], prior, chains=2, warmup=150, draws=100, chunk=1)
    all_ = quiet_fit(z, y, prior, chains=2, warmup=150, draws=100, chunk=64)
    np.testing.assert_array_equal(one.posterior.theta.values, all_.posterior.theta.values[:, :, :3])
    assert not np.array_equal(all_.posterior.theta.values[:, :, 0], all_.posterior.theta.values[:, :, 1])


def test_under_a_mixture_a_users_draws_and_weights_do_not_depend_on_the_chunk(clicks):
    z, y, _ = clicks
    prior = MixturePrior(np.array([0.5, 0.5]), np.array([np.full(7, 0.3), np.full(7, -0.3)]),
                         np.stack([np.eye(7), np.eye(7)]))
    one = quiet_fit(z[:3], y[:3], prior, chains=2, warmup=150, draws=100, chunk=1)
    all_ = quiet_fit(z, y, prior, chains=2, warmup=150, draws=100, chunk=64)
    n = one["units"].sizes["unit"]
    np.testing.assert_array_equal(one["units"].posterior_weight.values, all_["units"].posterior_weight.values[:n])
    np.testing.assert_array_equal(one.posterior.theta.values, all_.posterior.theta.values[:, :, :3])


def test_a_unit_that_misses_a_threshold_is_sampled_again_deeper(clicks):
    z, y, prior = clicks
    idata = quiet_fit(z, y, prior, chains=2, warmup=5, draws=30)       # too short: ESS under 200
    units = idata["units"]
    assert np.all(units.tree_depth.values == RETRY_TREE_DEPTH)
    assert stored_health(idata).min_ess_bulk == pytest.approx(float(units.ess_bulk.min()))


def test_unit_health_flags_each_threshold():
    ok = dict(rhat=np.ones(5), rhat_over=np.zeros(5), ess_bulk=np.full(5, 900.0), ess_tail=np.full(5, 900.0),
              divergences=np.zeros(5), bfmi=np.ones(5))
    bad = {k: v.copy() for k, v in ok.items()}
    bad["rhat"][0], bad["ess_bulk"][1], bad["ess_tail"][2], bad["divergences"][3], bad["bfmi"][4] = \
        MAX_RHAT + 0.01, 399.0, 10.0, 1, 0.1
    assert not UnitHealth(**ok).failing(4).any()
    assert UnitHealth(**bad).failing(4).tolist() == [True] * 5
    assert UnitHealth(**{**ok, "rhat": np.array([np.nan, 1, 1, 1, 1])}).failing(4)[0]


def test_replacing_units_keeps_the_others():
    n, d = 4, 2
    first = UnitSample(np.zeros((2, 3, n, d)), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros((n, 2)),
                       np.zeros((n, 2)), np.full(n, UNIT_TREE_DEPTH))
    again = UnitSample(np.ones((2, 3, 2, d)), np.ones(2), np.ones(2), np.ones(2), np.ones((2, 2)), np.ones((2, 2)),
                       np.full(2, RETRY_TREE_DEPTH))
    out = replace_units(first, again, np.array([1, 3]))
    assert out.xi[:, :, [1, 3]].min() == 1 and out.xi[:, :, [0, 2]].max() == 0
    assert out.tree_depth.tolist() == [UNIT_TREE_DEPTH, RETRY_TREE_DEPTH] * 2
    assert first.xi.max() == 0


@pytest.mark.parametrize("users, chunk, want", [
    ([0, 0, 1, 1, 1, 2], 3, [(0, 2), (2, 5), (5, 6)]),
    ([0, 0, 1, 1, 1, 2], 5, [(0, 5), (5, 6)]),
    ([0, 0, 0, 0, 1], 2, [(0, 4), (4, 5)]),          # a user with more units than a chunk is one chunk
    ([0, 1, 2], 64, [(0, 3)]),
])
def test_chunks_hold_whole_users(users, chunk, want):
    assert [(s.start, s.stop) for s in user_chunks(np.array(users), chunk)] == want


@pytest.mark.slow
def test_a_mixture_reference_weights_each_users_components(clicks):
    z, y, _ = clicks
    prior = MixturePrior(np.array([0.5, 0.5]), np.array([np.full(7, 1.0), np.full(7, -1.0)]),
                         np.stack([np.eye(7), np.eye(7)]))
    idata = quiet_fit(z, y, prior, chains=2, warmup=150, draws=100)     # the sampler compiled above
    u = idata["units"]
    for user in range(6):
        w = u.posterior_weight.values[u.unit_user.values == user]
        assert np.isclose(w.sum(), 1.0)
    assert idata.posterior.theta.shape == (2, 100, 6, 7) and idata.posterior.theta.dtype == np.float32


_DEVICES = """
import sys, numpy as np
from inference.nuts import configure_jax
configure_jax(int(sys.argv[1]))
from inference.sbc import random_designs, sample_prior, simulate_clicks
from inference.user_reference import fit_users
from tdmodels.priors import isotropic_prior
from tdmodels.rosters import open_world
rng = np.random.default_rng(1)
z = random_designs(open_world("dev")["features"].values, 3, 24, rng)
y = simulate_clicks(sample_prior(isotropic_prior(7), 3, rng), z, rng)
np.save(sys.argv[2], fit_users(z, y, isotropic_prior(7), chains=2, warmup=50, draws=50).posterior.theta.values)
"""


@pytest.mark.slow
def test_the_draws_do_not_depend_on_the_number_of_devices(tmp_path):
    import subprocess
    import sys

    for n in (1, 5):
        subprocess.run([sys.executable, "-c", _DEVICES, str(n), str(tmp_path / f"{n}.npy")], check=True,
                       capture_output=True)
    np.testing.assert_array_equal(np.load(tmp_path / "1.npy"), np.load(tmp_path / "5.npy"))


@pytest.mark.parametrize("kw, what", [({"chunk": 0}, "chunk"), ({"chunk": True}, "chunk"), ({"chunk": 2.5}, "chunk"),
                                      ({"progress": "every chunk"}, "progress")])
def test_reference_settings_are_checked_before_any_sampling(clicks, kw, what):
    z, y, prior = clicks
    with pytest.raises(ValueError, match=what):
        fit_users(z, y, prior, **kw)
