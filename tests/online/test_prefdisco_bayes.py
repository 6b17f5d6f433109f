import numpy as np
import pytest

from online.prefdisco_bayes import elicit, scenario_model
from online.prefdisco_run import run_world
from tdmodels.prefdisco_world import build_prefdisco_world


@pytest.fixture(scope="module")
def world():
    return build_prefdisco_world(seed=11, n_tasks_per_domain=3, n_personas=40)


def test_elicit_asks_distinct_relevant_attributes_and_stops(world):
    m = scenario_model(world, 0, 0)
    seen = []

    def answer(j):
        seen.append(j)
        return float(world["values"].values[0, 0, j])

    e = elicit(m, answer, questions=5, cost=0.0)
    assert 1 <= len(e.asked) <= 5 and len(set(e.asked)) == len(e.asked)
    assert set(seen) <= set(m.attributes) and seen == list(m.attributes[e.asked])
    assert np.all(e.gains >= 0)
    none = elicit(m, answer, questions=5, cost=10.0)                      # no question is worth that much
    assert len(none.asked) == 0 and none.response == elicit(m, answer, questions=0).response
    capped = elicit(m, answer, questions=2, cost=0.0)
    assert len(capped.asked) <= 2


def test_ask_bayes_beats_the_fixed_orders_on_paired_scenarios(world):
    """Same scenarios, same budget of 3: discovery PrefAlign paired per scenario."""
    bayes = run_world(world, "ask-bayes", 3, seed=1, cost=0.0)
    for other in ("ask-top-weight", "ask-random"):
        r = run_world(world, other, 3, seed=1)
        d = bayes["discovery"] - r["discovery"]
        se = d.std(ddof=1) / np.sqrt(len(d))
        assert d.mean() - 1.96 * se > 0, (other, d.mean(), se)
    assert np.all(bayes["asked"] <= 3) and np.all(bayes["discovery"] <= bayes["oracle"] + 1e-12)


def test_noisy_answers_run_and_cost_less_than_exact(world):
    exact = run_world(world, "ask-bayes", 3, seed=2, scenarios=60)
    noisy = run_world(world, "ask-bayes", 3, seed=2, scenarios=60, answer_noise=0.2)
    assert np.all(np.isfinite(noisy["discovery"]))
    assert noisy["discovery"].mean() <= exact["discovery"].mean() + 0.01
