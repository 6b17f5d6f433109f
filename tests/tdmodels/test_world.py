import numpy as np
import pytest

from tdmodels.rosters import HeldOutError, open_world
from tdmodels.world import WorldFormatError, load_world, save_world, validate_world


def test_round_trip(dev_world, tmp_path):
    p = save_world(dev_world, tmp_path / "dev.nc")
    back = load_world(p)
    np.testing.assert_array_equal(back["probs"].values, dev_world["probs"].values)
    assert back.attrs["roster"] == "dev"


@pytest.mark.parametrize("mutate, field, words", [
    (lambda ds: ds.drop_vars("utilities"), "utilities", "missing variable"),
    (lambda ds: ds.drop_vars("question_kind"), "question_kind", "missing variable"),
    (lambda ds: ds.assign(features=ds["features"].transpose("persona", "question", "feature")), "features", "dims"),
    (lambda ds: _set(ds, "probs", (0, 0, 0, 1), 1.2), "probs", "outside the open interval"),
    (lambda ds: _set(ds, "probs", (0, 0, 0, 1), 0.0), "probs", "outside the open interval"),
    (lambda ds: _set(ds, "utilities", (0, 3, 2), -0.1), "utilities", "outside [0, 1]"),
    (lambda ds: _set(ds, "features", (5, 2, 6), np.nan), "features", "non-finite"),
    (lambda ds: _set(ds, "features", (5, 2, 6), np.inf), "features", "non-finite"),
    (lambda ds: ds.assign_coords(student=np.zeros(ds.sizes["student"], int)), "student", "not unique"),
    (lambda ds: _attr(ds, "arrival_mode", "sometimes"), "attrs.arrival_mode", "not one of"),
    (lambda ds: _attr(ds, "format_version", 99), "attrs.format_version", "this toolkit reads"),
])
def test_bad_worlds_are_refused_naming_the_field(dev_world, mutate, field, words):
    bad = mutate(dev_world.copy(deep=True))
    with pytest.raises(WorldFormatError) as e:
        validate_world(bad, "bad.nc")
    assert f"field '{field}'" in str(e.value) and words in str(e.value)


def test_bad_file_on_disk(dev_world, tmp_path):
    p = tmp_path / "broken.nc"
    p.write_bytes(b"\x89HDF\r\n\x1a\n" + b"garbage" * 20)
    with pytest.raises(WorldFormatError, match="not a readable netCDF"):
        load_world(p)
    good = save_world(dev_world, tmp_path / "dev.nc")
    data = good.read_bytes()
    (tmp_path / "trunc.nc").write_bytes(data[: len(data) // 3])
    with pytest.raises(WorldFormatError, match="trunc.nc"):
        load_world(tmp_path / "trunc.nc")


def test_held_out_needs_allow_test(env_dirs):
    with pytest.raises(HeldOutError, match="--allow-test"):
        open_world("test_profiles")
    with pytest.raises(HeldOutError):
        open_world("composite")


def _set(ds, name, idx, value):
    arr = ds[name].values.copy()
    arr[idx] = value
    return ds.assign({name: (ds[name].dims, arr)})


def _attr(ds, key, value):
    ds.attrs[key] = value
    return ds
