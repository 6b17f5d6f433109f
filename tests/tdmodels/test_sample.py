import numpy as np

from online.replay import replay
from tdmodels.sample import load_sample
from tdmodels.world import load_world, save_world


def test_sample_imports_as_a_fixed_schedule_world(sample_path, tmp_path):
    ds = load_world(save_world(load_sample(sample_path), tmp_path / "sample.nc"))
    assert ds.attrs["arrival_mode"] == "fixed" and int(ds.attrs["rater_available"]) == 0
    assert ds.sizes["student"] == 8 and ds["schedule_question"].shape == (48, 24)
    assert len(np.unique(ds["question_cue"].values)) == 13
    np.testing.assert_array_equal(ds["features"].values[..., 6], 0.0)
    row = replay(ds, 0, "no-transfer")
    assert row["arrivals"] == 48 and row["rounds"] == 24
    # per session floor 2.36 and random excess 6.75 were measured on the sample
    assert abs(row["floor"] / 48 - 2.36) < 0.01
    assert abs((row["random"] - row["floor"]) / 48 - 6.75) < 0.01
