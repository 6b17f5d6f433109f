"""Prior predictive click rates of every model lie in the range the simulator produces."""
import jax
import numpy as np
import pytest
from numpyro.infer import Predictive

from online.replay import replay_logged
from tdmodels.click_model import user_utilities
from tdmodels.population_model import population, recalibration
from tdmodels.priors import isotropic_prior


@pytest.fixture(scope="module")
def random_log(dev_world):
    return replay_logged(dev_world, 0, "random", arrivals=60)[1]


@pytest.mark.parametrize("name", ["users", pytest.param("population", marks=pytest.mark.slow), "recalibration"])
def test_prior_predictive_click_rates_cover_the_simulator(random_log, name):
    log = random_log
    z, y = log.design()
    model, args = {"users": (user_utilities, (z, isotropic_prior(7))),
                   "population": (population, (z,)),
                   "recalibration": (recalibration, (log.first, log.second, log.rater, isotropic_prior(7)))}[name]
    ys = np.asarray(Predictive(model, num_samples=200)(jax.random.PRNGKey(0), *args)["y"])
    assert ys.shape == (200,) + y.shape and set(np.unique(ys)) <= {0, 1}
    pred_lo, pred_hi = np.quantile(ys.mean(-1), [0.01, 0.99])        # per-user first-win rate over a session
    sim_lo, sim_hi = np.quantile(y.mean(1), [0.05, 0.95])
    assert pred_lo - 0.02 <= sim_lo and sim_hi <= pred_hi + 0.02
    overall = ys.mean((1, 2))
    assert np.quantile(overall, 0.001) - 0.01 <= y.mean() <= np.quantile(overall, 0.999) + 0.01
