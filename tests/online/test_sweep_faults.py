"""A cell ends as done or failed, never vanishes: policies that exit, kill or hang their process,
workers killed from outside, Ctrl-C, and sweeps too large or impossible to start."""
import os
import signal
import subprocess
import sys
import time

import pytest

from online.store import RunStore
from online.sweep import SweepError, SweepInterrupted, run_sweep
from tdmodels.rosters import open_world

GOOD = ["random", "no-transfer"]


def _cli(*args):
    return [sys.executable, "-m", "tutorduel.cli", "replay", "--world", "dev", *args]


@pytest.fixture()
def procs():
    """Processes a test starts; killed at the end whatever happened."""
    started = []
    yield started
    for p in started:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL) if getattr(p, "own_group", False) else p.kill()
            p.wait()


def _start(procs, cmd, own_group=False):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=own_group)
    proc.own_group = own_group
    procs.append(proc)
    return proc


@pytest.mark.parametrize("inline", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_a_policy_calling_sys_exit_fails_its_cell_and_the_sweep_goes_on(env_dirs, inline):
    """Finding 4: SystemExit is a BaseException, not an Exception."""
    st = RunStore()
    res = run_sweep(["dev"], [0, 1], ["tests.online.helpers:Exits"] + GOOD, st, arrivals=3, progress=False,
                    inline=inline)
    assert len(res.done) == 4 and len(res.failed) == 2
    assert all("sys.exit(0)" in msg for _, msg in res.failed)
    assert len(st.failures()) == 2 and len(list(st.rows())) == 4


def test_a_policy_ending_its_worker_process_fails_only_its_cell(env_dirs):
    """Finding 5 (local): os._exit in a pool worker; the worker is replaced and every other cell stored."""
    st = RunStore()
    res = run_sweep(["dev"], [0, 1, 2], GOOD + ['tests.online.helpers:Exits[how="os",code=0]'], st, arrivals=3,
                    progress=False, jobs=2)
    assert len(res.done) == 6 and len(res.failed) == 3
    assert all("worker process died (exit status 0)" in msg for _, msg in res.failed)
    assert len(list(st.rows())) == 6


def _kill_sleepers(proc, pid_file, limit, deadline):
    """SIGKILL each process that writes its id to pid_file, up to `limit` of them; return how many."""
    killed = set()
    while len(killed) < limit and proc.poll() is None and time.time() < deadline:
        pids = set(map(int, pid_file.read_text().split())) if pid_file.exists() else set()
        for pid in sorted(pids - killed):
            time.sleep(0.2)
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.05)
    return len(killed)


@pytest.mark.slow
def test_a_pool_worker_killed_from_outside_mid_sweep(env_dirs, procs):
    """kill -9 of a local worker while it runs a cell: that cell fails, every other cell is stored, rc 1."""
    open_world("dev")
    pid_file = env_dirs / "pids"
    spec = f'tests.online.helpers:Sleeps[seconds=600,pid_file="{pid_file}"]'
    proc = _start(procs, _cli("--seeds", "0-3", "--arrivals", "3", "--jobs", "2", "--policies", ",".join(GOOD + [spec])))
    assert _kill_sleepers(proc, pid_file, 4, time.time() + 120) == 4
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "8 cells computed, 0 already stored, 4 failed" in out
    assert err.split("failed cells")[1].count("killed by SIGKILL") == 4
    assert len(list(RunStore().rows())) == 8


def test_a_hanging_policy_is_stopped_by_the_cell_time_limit(env_dirs):
    """Only the sleeper (an hour) runs under the 3-s limit: the good cells are stored first, so no cell that
    should finish is timed, and the outcome does not depend on the machine's speed (nor on its load)."""
    st = RunStore()
    assert len(run_sweep(["dev"], [0, 1], GOOD, st, arrivals=3, progress=False, jobs=2).done) == 4
    res = run_sweep(["dev"], [0, 1], GOOD + ["tests.online.helpers:Sleeps"], st, arrivals=3, progress=False, jobs=2,
                    cell_timeout=3)
    assert len(res.cached) == 4 and len(res.done) == 0 and len(res.failed) == 2
    assert all("time limit of 3 s" in msg for _, msg in res.failed)


@pytest.mark.slow
def test_dask_worker_killed_by_a_cell(env_dirs):
    """Finding 5 (Dask): a task that kills its worker is retried a bounded number of times, then fails;
    every other cell is computed (the world is not lost with the worker)."""
    st = RunStore()
    res = run_sweep(["dev"], [0, 1, 2], GOOD + ['tests.online.helpers:Exits[how="os",code=1]'], st, arrivals=3,
                    progress=False, dask_workers=2)
    assert len(res.done) == 6 and len(res.failed) == 3, res.failed
    assert all("killed its worker" in msg for _, msg in res.failed)
    assert len(list(st.rows())) == 6


@pytest.mark.slow
def test_dask_cell_time_limit(env_dirs):
    st = RunStore()
    res = run_sweep(["dev"], [0], GOOD + ["tests.online.helpers:Sleeps"], st, arrivals=3, progress=False,
                    dask_workers=2, cell_timeout=6)
    assert len(res.done) == 2 and len(res.failed) == 1 and "time limit of 6 s" in res.failed[0][1]


def test_unreachable_scheduler_is_one_clear_error(env_dirs, monkeypatch):
    import online.sweep_dask

    monkeypatch.setattr(online.sweep_dask, "DASK_CONNECT_S", 1)
    with pytest.raises(SweepError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        run_sweep(["dev"], [0], ["random"], RunStore(), arrivals=3, progress=False, scheduler="tcp://127.0.0.1:9")


@pytest.mark.parametrize("kwargs, words", [
    ({"jobs": 0}, "jobs must be a positive integer"),
    ({"jobs": -1}, "jobs must be a positive integer"),
    ({"dask_workers": 0}, "dask_workers must be a positive integer"),
    ({"dask_workers": -1}, "dask_workers must be a positive integer"),
    ({"cell_timeout": 0}, "cell_timeout must be a positive number"),
    ({"cell_timeout": float("nan")}, "cell_timeout must be a positive number"),
    ({"scheduler": "tcp://x:1", "dask_workers": 2}, "not both"),
])
def test_executor_options_are_checked(env_dirs, kwargs, words):
    with pytest.raises(SweepError, match=words):
        run_sweep(["dev"], [0], ["random"], RunStore(), arrivals=3, progress=False, **kwargs)
    assert not (env_dirs / "runs").exists()


def test_huge_sweeps_need_confirmation(env_dirs):
    """Finding 9: more than 10,000 cells need --yes; nothing is built or stored before the check."""
    with pytest.raises(SweepError, match="pass --yes"):
        run_sweep(["dev"], list(range(100_001)), ["random"], RunStore(), progress=False)
    assert not (env_dirs / "runs").exists() and not (env_dirs / "worlds").exists()


def test_a_store_that_cannot_be_written_is_refused_before_any_cell(env_dirs):
    (env_dirs / "afile").write_text("x")
    with pytest.raises(OSError, match="is a file, not a folder"):
        run_sweep(["dev"], [0], ["random"], RunStore(env_dirs / "afile"), arrivals=3, progress=False)
    ro = env_dirs / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write a read-only folder (root)")
        with pytest.raises(OSError, match="cannot be written"):
            run_sweep(["dev"], [0], ["random"], RunStore(ro / "runs"), arrivals=3, progress=False)
    finally:
        ro.chmod(0o700)


def test_ctrl_c_inline_stops_without_failing_a_cell(env_dirs, monkeypatch):
    """SIGINT during an inline coduel cell (numba code): interrupted, never recorded as failed. The
    signal is sent 0.2 s into the first cell (a timer from the test's start could land before the sweep
    installs its handler, while it still imports, and be lost)."""
    import threading

    import online.sweep as sw

    st = RunStore()
    real, timers = sw.compute_cell, []

    def first_cell_starts_the_timer(*args):
        if not timers:
            timers.append(threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)))
            timers[0].start()
        return real(*args)

    monkeypatch.setattr(sw, "compute_cell", first_cell_starts_the_timer)
    with pytest.raises(SweepInterrupted) as e:
        run_sweep(["dev"], list(range(20)), ["coduel"], st, arrivals=120, progress=False, inline=True)
    timers[0].cancel()
    res = e.value.result
    assert not res.failed and not st.failures() and res.interrupted
    assert len(res.done) + len(res.interrupted) == 20


@pytest.mark.slow
def test_ctrl_c_stops_the_sweep_cleanly(env_dirs, procs):
    """Finding 10: SIGINT to the process group (a terminal's Ctrl-C) while workers start up and after
    the 1st and 3rd finished cells: rc 130, a summary, no cell recorded as failed; a rerun completes the
    sweep. (The interrupt follows the sweep's own progress lines: a fixed sleep let a fast machine
    finish the sweep first, a slow one interrupt during start-up only.)"""
    open_world("dev")
    cmd = _cli("--seeds", "0-15", "--policies", "coduel-greedy,no-transfer", "--jobs", "2")
    st = RunStore()
    for after_cells in (0, 1, 3):
        proc = _start(procs, cmd, own_group=True)
        if after_cells == 0:
            time.sleep(0.8)                              # the workers' interpreters are starting
        else:
            seen = 0
            while seen < after_cells:
                line = proc.stderr.readline()
                assert line, "the sweep ended before the interrupt"
                seen += line.startswith("[")
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err, err
        if after_cells:
            assert "interrupted:" in err and "not finished (rerun to resume" in err, err
        else:
            assert "interrupted" in err, err
        assert not st.failures()
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    assert len(list(st.rows())) == 32 and not st.failures()


@pytest.mark.slow
def test_a_dask_worker_killed_from_outside_mid_sweep_is_retried(env_dirs, procs):
    """kill -9 of a Dask worker while it runs a cell: the scheduler reruns the cell elsewhere, every cell is
    stored and the exit status is 0 (no cell finally failed)."""
    open_world("dev")
    pid_file = env_dirs / "pids"
    spec = f'tests.online.helpers:Sleeps[seconds=2,pid_file="{pid_file}"]'
    proc = _start(procs, _cli("--seeds", "0-2", "--arrivals", "2", "--dask-workers", "2", "--policies",
                              ",".join(GOOD + [spec])))
    assert _kill_sleepers(proc, pid_file, 1, time.time() + 120) == 1
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert "9 cells computed, 0 already stored, 0 failed" in out
    assert len(list(RunStore().rows())) == 9


@pytest.mark.slow
def test_a_killed_sweep_leaves_no_worker_behind(env_dirs, procs):
    """SIGKILL of the sweep while its worker hangs in a policy: the worker dies with it."""
    open_world("dev")
    pid_file = env_dirs / "pids"
    proc = _start(procs, _cli("--seeds", "0", "--arrivals", "2", "--policies",
                              f'tests.online.helpers:Sleeps[seconds=600,pid_file="{pid_file}"]'))
    deadline = time.time() + 60
    while not pid_file.exists() and time.time() < deadline:
        time.sleep(0.05)
    worker = int(pid_file.read_text().split()[0])
    proc.kill()
    proc.wait()
    while time.time() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    pytest.fail("the worker outlived its sweep")


def test_a_ctrl_c_swallowed_before_the_sweep_stops_it_at_once(env_dirs):
    """CI: a SIGINT 0.8 s after start landed while modules imported; its KeyboardInterrupt was swallowed
    (raised in a weakref callback) and the whole sweep ran, rc 0. The CLI's first handler remembers it."""
    from online.interrupt import InterruptFlag

    flag = InterruptFlag()
    flag.fired = True                                  # what a swallowed Ctrl-C leaves behind
    old = signal.signal(signal.SIGINT, flag)
    try:
        for inline in (True, False):
            with pytest.raises(SweepInterrupted) as e:
                run_sweep(["dev"], [0, 1], ["random"], RunStore(), arrivals=3, progress=False, inline=inline)
            assert not e.value.result.done and len(e.value.result.interrupted) == 2
    finally:
        signal.signal(signal.SIGINT, old)
    assert signal.getsignal(signal.SIGINT) is old


def test_a_ctrl_c_inside_a_gc_callback_prints_no_traceback():
    """Bug (CI-style run of test_ctrl_c_stops_the_sweep_cleanly): the SIGINT at 0.8 s landed inside
    JAX's garbage-collector callback; the remembered interrupt stopped the sweep (rc 130), but Python
    printed "Exception ignored in ... Traceback ... KeyboardInterrupt". The CLI's unraisable hook drops
    those (the InterruptFlag has them) and passes every other unraisable exception on."""
    import sys
    import types

    from online.interrupt import quiet_unraisable

    seen = []
    hook = quiet_unraisable(seen.append)
    args = lambda exc: types.SimpleNamespace(exc_type=type(exc), exc_value=exc, exc_traceback=None,  # noqa: E731
                                             err_msg=None, object=None)
    hook(args(KeyboardInterrupt()))
    assert seen == []
    boom = args(ValueError("a real one"))
    hook(boom)
    assert seen == [boom]

    # in a fresh interpreter (pytest installs its own unraisable hook): an interrupt Python cannot raise
    code = ("import sys\nfrom tutorduel import cli\nclass Interrupting:\n    def __del__(self):\n"
            "        raise KeyboardInterrupt\ncli._run = lambda argv: (Interrupting(), 0)[1]\n"
            "sys.exit(cli.main([]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr


def test_a_plugin_cannot_run_code_in_the_parent_through_its_result(env_dirs, tmp_path):
    """A worker's result is read as plain data only: a crafted pickle fails its cell, and runs nothing."""
    flag = tmp_path / "parent-ran-it"
    st = RunStore()
    res = run_sweep(["dev"], [0, 1], GOOD + [f'tests.online.helpers:PicklesBack[flag="{flag}"]'], st, arrivals=3,
                    progress=False, jobs=2)
    assert not flag.exists()
    assert len(res.failed) == 2 and all("does not read" in msg and "posix.system" in msg for _, msg in res.failed)
    assert len(res.done) == 4 and len(list(st.rows())) == 4
