import numpy as np
import pytest

from diagnostics.references import reference_regrets
from online.scoring import benchmark_score
from tdmodels.simulator import ROSTERS, build_roster
from tdmodels.students import N_COMBINATIONS
from tdmodels.world import validate_world


def _scores(ds, seed=0):
    refs = reference_regrets(ds, seed)
    R = {k: v.sum() for k, v in refs.items()}
    return {k: benchmark_score(R[k], R["floor"], R["random"]) for k in R}


def test_deterministic_from_seed(dev_world):
    again = build_roster("dev", seed=0)
    np.testing.assert_array_equal(again["probs"].values, dev_world["probs"].values)
    other = build_roster("dev", seed=1)
    assert not np.array_equal(other["probs"].values, dev_world["probs"].values)


def test_template_has_3072_combinations():
    assert N_COMBINATIONS == 3072


def test_judge_lattice_and_structure(dev_world):
    P = dev_world["probs"].values
    off = ~np.eye(6, dtype=bool)
    assert P[..., off].min() >= 0.1 - 1e-12 and P[..., off].max() <= 0.9 + 1e-12
    U = dev_world["utilities"].values
    np.testing.assert_allclose(U.max(-1), 1.0)
    assert len(np.unique(dev_world["question_cue"].values)) == 13
    g = dev_world["features"].values[:, :, 6]
    np.testing.assert_allclose(g.mean(1), 0, atol=1e-12)
    np.testing.assert_allclose(g.std(1), 1, atol=1e-12)


@pytest.mark.parametrize("name", ["dev", "test_profiles", "composite", "quirky"])
def test_reference_figures_in_the_reference_ranges(name):
    ds = validate_world(build_roster(name))
    sc = _scores(ds)
    assert 80 <= sc["linear-oracle"] <= 87, sc
    assert 60 <= sc["best-fixed-pair"] <= 80, sc


@pytest.mark.parametrize("name", ["test_topics", "scrambled", "unstructured"])
def test_every_roster_validates(name):
    ds = validate_world(build_roster(name))
    assert ds.attrs["arrivals"] == ROSTERS[name].arrivals
