import numpy as np
import pytest
from hypothesis import given, strategies as st

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


@given(st.lists(st.text(alphabet="ab. ", max_size=6), max_size=8, unique=True), st.text(alphabet="ab. ", max_size=12))
def test_the_longest_cue_a_question_ends_with_is_found_as_by_matching_each(cues, text):
    """The trie that replaced matching every text against every cue (quadratic: hours on a 20 MB sample)."""
    from tdmodels.sample import _suffix_finder

    hits = [i for i, c in enumerate(cues) if text.endswith(c)]
    assert _suffix_finder(cues)(text) == (max(hits, key=lambda i: len(cues[i])) if hits else None)


def test_a_sample_too_large_for_memory_is_refused_before_allocating(sample_path, tmp_path, monkeypatch):
    """A 12 MB sample had asked for 58 GiB with no memory check."""
    import tdmodels.run_inputs as run_inputs
    from tdmodels.errors import InputError

    monkeypatch.setattr(run_inputs, "memory_available", lambda: 2**20)
    with pytest.raises(InputError, match=r"the sample .* as a world \(8 profiles x 1,152 questions x 6 personas\) "
                                         r"needs about"):
        load_sample(sample_path)
