"""Sweeps on a Dask LocalCluster: the same rows as a local sweep, cached cells not resent,
failed cells reported and never stored."""
import pytest

from online.store import RunStore
from online.sweep import run_sweep

VOLATILE = ("wall_s", "versions")


def _same(a, b):
    return {k: v for k, v in a.items() if k not in VOLATILE} == {k: v for k, v in b.items() if k not in VOLATILE}


def test_dask_local_cluster_sweep_matches_local_rows(env_dirs):
    specs = ["random", "no-transfer", "coduel-greedy", "tests.online.helpers:Exploding"]
    local = RunStore(env_dirs / "local")
    run_sweep(["dev"], [0, 1], specs[:3], local, arrivals=6, progress=False)
    st = RunStore(env_dirs / "dask")
    res = run_sweep(["dev"], [0, 1], specs, st, arrivals=6, progress=False, dask_workers=2)
    assert len(res.done) == 6 and len(res.failed) == 2
    assert all("boom" in msg for _, msg in res.failed)
    assert all(st.get(c.key) is None for c, _ in res.failed)
    for c in res.done:                       # bit-identical rows, apart from timing and versions
        assert _same(st.get(c.key), local.get(c.key))
    again = run_sweep(["dev"], [0, 1], specs[:3], st, arrivals=6, progress=False, dask_workers=2)
    assert len(again.cached) == 6 and not again.done      # nothing resent


def test_dask_options_are_exclusive(env_dirs):
    import pytest

    with pytest.raises(ValueError, match="not both"):
        run_sweep(["dev"], [0], ["random"], RunStore(), arrivals=3, scheduler="tcp://127.0.0.1:1", dask_workers=2)


@pytest.mark.parametrize("address", ["foo", "tcp://", "tcp://h:x", "http://127.0.0.1:1", "inproc://x", "tcp://[::1",
                                     "", "tcp://127.0.0.1:99999", "tcp://h:1/path"])
def test_a_scheduler_address_that_is_not_one_is_named_before_anything_runs(env_dirs, address):
    """Malformed addresses had raised a ValueError from inside distributed; '' had meant a local cluster."""
    from online.sweep import SweepError

    with pytest.raises(SweepError, match="Dask scheduler"):
        run_sweep(["dev"], [0], ["random"], RunStore(), arrivals=2, progress=False, scheduler=address)


@pytest.mark.parametrize("address", ["127.0.0.1:8786", "localhost:8786", "tcp://127.0.0.1:8786", "tcp://[::1]:8786"])
def test_an_address_distributed_reads_is_taken(address):
    """A bare HOST:PORT is distributed's documented form (tcp by default); a first version had refused it."""
    from online.sweep import _scheduler_problem

    assert _scheduler_problem(address) is None
