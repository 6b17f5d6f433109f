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


def test_a_sample_of_another_size_is_described_by_its_own_size(sample_path, tmp_path, capsys):
    """`worlds import-sample` said "48 arrivals" of a sample of any size."""
    import json

    from tutorduel.cli import main

    raw = json.loads(sample_path.read_text())
    raw["arrivals"] = raw["arrivals"][:12]
    small = tmp_path / "small.json"
    small.write_text(json.dumps(raw))
    ds = load_sample(small)
    assert ds.attrs["arrivals"] == 12 and ds.attrs["description"].startswith("12 real arrivals")
    assert main(["worlds", "import-sample", str(small), "--resamples", "0", "--worlds", str(tmp_path / "w")]) == 0
    out = capsys.readouterr().out
    assert "(12 arrivals of real judge data" in out
