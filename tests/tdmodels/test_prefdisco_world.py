import numpy as np
import pytest

from online.prefdisco_scoring import baseline_response, norm_align, pref_align, scenario_scores
from tdmodels.prefdisco_world import ATTRIBUTES, build_prefdisco_world, validate_prefdisco_world


@pytest.fixture(scope="module")
def world():
    return build_prefdisco_world(seed=0, n_tasks_per_domain=4, n_personas=12)


def test_world_is_sparse_normalised_and_seeded(world):
    validate_prefdisco_world(world)
    assert world.sizes["attribute"] == len(ATTRIBUTES) >= 20
    rel = world["relevant"].values
    assert np.all(rel.sum(1) == 6)
    w = world["weights"].values
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all((w > 0).sum(-1) == 4) and np.all(w[:, ~rel] == 0)
    again = build_prefdisco_world(seed=0, n_tasks_per_domain=4, n_personas=12)
    assert world.identical(again)
    assert not world.identical(build_prefdisco_world(seed=1, n_tasks_per_domain=4, n_personas=12))


def test_values_move_with_the_task_context(world):
    v = world["values"].values
    rel = world["relevant"].values
    j = int(np.argmax(rel.sum(0)))                       # an attribute relevant to several tasks
    tasks = np.flatnonzero(rel[:, j])
    assert np.std(v[0, tasks, j]) > 0.01                 # the same persona prefers different levels


def test_pref_align_in_range_and_oracle_dominates(world):
    for p in range(3):
        for t in range(5):
            a = pref_align(world, p, t)
            assert np.all((a >= 0) & (a <= 1))
            s = scenario_scores(world, p, t, baseline_response(world, p, t))
            assert s["oracle"] >= s["baseline"] and s["oracle"] >= s["discovery"]
            assert s["norm_align"] == 0.0 or np.isnan(s["norm_align"])    # answering at once: 0 by construction
            best = int(np.argmax(a))
            o = scenario_scores(world, p, t, best)
            assert o["norm_align"] == pytest.approx(100.0) or np.isnan(o["norm_align"])


def test_norm_align_and_bad_worlds():
    assert norm_align(0.7, 0.5, 0.9) == pytest.approx(50.0)
    assert np.isnan(norm_align(0.5, 0.5, 0.5))
    w = build_prefdisco_world(seed=2, n_tasks_per_domain=2, n_personas=4)
    bad = w.copy(deep=True)
    bad["weights"].values[0, 0] *= 2
    with pytest.raises(ValueError, match="'weights'"):
        validate_prefdisco_world(bad)
    with pytest.raises(ValueError, match="'styles': missing"):
        validate_prefdisco_world(w.drop_vars("styles"))
    with pytest.raises(ValueError, match="profile_size"):
        build_prefdisco_world(profile_size=9, n_relevant=6)


def test_asking_then_answering(world):
    from online.prefdisco_run import run_scenario, run_world

    rng = np.random.default_rng(0)
    now = run_world(world, "answer-now", 3)
    assert np.all((now["norm_align"] == 0) | np.isnan(now["norm_align"]))      # 0 by construction
    asked = run_world(world, "ask-top-weight", 5)
    assert np.nanmean(asked["norm_align"]) > 10 and np.all(asked["discovery"] <= asked["oracle"] + 1e-12)
    s = run_scenario(world, 0, 0, "ask-random", 2, rng)
    assert s["asked"] == 2
    with pytest.raises(ValueError, match="questions"):
        run_scenario(world, 0, 0, "ask-random", 6, rng)
    with pytest.raises(ValueError, match="unknown PrefDisco policy"):
        run_scenario(world, 0, 0, "ask-everything", 2, rng)


def test_save_load_and_damaged_files(tmp_path):
    from tdmodels.prefdisco_world import load_prefdisco_world, save_prefdisco_world
    from tdmodels.world import WorldFormatError

    w = build_prefdisco_world(seed=4, n_tasks_per_domain=2, n_personas=5)
    path = save_prefdisco_world(w, tmp_path / "pd.nc")
    assert load_prefdisco_world(path).identical(w)
    (tmp_path / "cut.nc").write_bytes(path.read_bytes()[:400])
    with pytest.raises(WorldFormatError, match="cut.nc: not a readable netCDF"):
        load_prefdisco_world(tmp_path / "cut.nc")
    with pytest.raises(WorldFormatError, match="no such file"):
        load_prefdisco_world(tmp_path / "none.nc")
    bad = w.copy(deep=True)
    bad["weights"].values[1, 2, int(np.flatnonzero(w["relevant"].values[2])[0])] = np.nan
    with pytest.raises(WorldFormatError, match=r"'weights': non-finite value at \(persona, task, attribute\) = \(1, 2,"):
        save_prefdisco_world(bad, tmp_path / "bad.nc")
    assert not (tmp_path / "bad.nc").exists()
    other = w.copy()
    other.attrs["kind"] = "tutorduel"
    with pytest.raises(WorldFormatError, match="attrs.kind"):
        validate_prefdisco_world(other)
