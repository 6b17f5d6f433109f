import numpy as np
import pytest

from online.clicklog import ClickLogError, load_click_log, save_click_log
from online.replay import replay, replay_logged
from online.replay import run_key
from online.store import RunStore
from online.sweep import run_sweep
from tdmodels.rosters import open_world


def test_log_holds_what_the_policy_saw(dev_world, tmp_path):
    row, log = replay_logged(dev_world, 3, "no-transfer", arrivals=6)
    assert row == {**replay(dev_world, 3, "no-transfer", arrivals=6), "wall_s": row["wall_s"]}
    F = dev_world["features"].values
    np.testing.assert_array_equal(log.phi_first, F[log.question, log.first])
    np.testing.assert_array_equal(log.phi_second, F[log.question, log.second])
    np.testing.assert_array_equal(log.rater, F[log.question][..., -1])
    z, y = log.design()
    assert z.shape == (6, 24, 7) and y.shape == (6, 24)
    np.testing.assert_array_equal(z, log.phi_first - log.phi_second)
    path = save_click_log(log, tmp_path / "a.clicks.nc")
    back = load_click_log(path)
    for name in ("student", "question", "first", "second", "phi_first", "phi_second", "rater", "outcome"):
        np.testing.assert_array_equal(getattr(back, name), getattr(log, name))
    assert back.attrs["policy"] == "no-transfer" and back.attrs["seed"] == 3 and back.attrs["arrivals_limit"] == 6


def test_damaged_log_is_named(dev_world, tmp_path):
    _, log = replay_logged(dev_world, 0, "random", arrivals=2)
    path = save_click_log(log, tmp_path / "b.clicks.nc")
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ClickLogError, match="b.clicks.nc"):
        load_click_log(path)


def test_sweep_keeps_logs_beside_rows(env_dirs):
    store = RunStore()
    res = run_sweep(["dev"], [0, 1], ["random"], store, arrivals=3, progress=False, keep_clicks=True)
    assert len(res.done) == 2
    for seed in (0, 1):
        log = load_click_log(store.clicks_path(run_key(open_world("dev"), seed, "random", 3)))
        assert log.outcome.shape == (3, 24)
    # a stored row without its log is recomputed when logs are asked for
    store.clicks_path(run_key(open_world("dev"), 1, "random", 3)).unlink()
    res = run_sweep(["dev"], [0, 1], ["random"], store, arrivals=3, progress=False, keep_clicks=True)
    assert len(res.cached) == 1 and len(res.done) == 1


def test_a_log_from_another_format_version_is_refused(dev_world, tmp_path):
    from online.clicklog import to_dataset
    from online.replay import replay_logged

    _, log = replay_logged(dev_world, 0, "no-transfer", arrivals=2)
    ds = to_dataset(log)
    ds.attrs["log_version"] = 1
    path = tmp_path / "old.clicks.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    with pytest.raises(ClickLogError, match="format version 1"):
        load_click_log(path)


def test_a_second_damaged_click_log_never_replaces_the_first(env_dirs, dev_world):
    """Each damaged log is kept aside under its own number; the cell's log is recomputed each time."""
    from online.replay import run_key
    from online.store import RunStore
    from tutorduel.cell_fit import cell_click_log

    st = RunStore()
    key = run_key(dev_world, 0, "no-transfer", 4)
    path = st.clicks_path(key)
    cell_click_log(dev_world, 0, "no-transfer", st, 4)
    for n, junk in enumerate((b"first damage", b"second damage")):
        path.write_bytes(junk)
        log = cell_click_log(dev_world, 0, "no-transfer", st, 4)
        assert log.n_users == 4
    kept = sorted(p.read_bytes() for p in path.parent.glob(path.name + ".corrupt*"))
    assert kept == [b"first damage", b"second damage"]


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_log_that_is_not_a_regular_file_is_refused_unopened(tmp_path, kind):
    """A pipe in a log's place used to block the reader forever; /dev/zero to be read without end."""
    import os

    path = tmp_path / "x.clicks.nc"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    with pytest.raises(ClickLogError, match="not a regular file"):
        load_click_log(path)
