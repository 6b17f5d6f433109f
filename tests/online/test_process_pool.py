"""The worker pool: a Ctrl-C never reads as a crashed cell."""
import os
import signal

from online.process_pool import WorkerPool, _Worker
import multiprocessing as mp


def _pid():
    return ("ok", os.getpid())


def _exit_now():
    os._exit(1)


def test_a_sigint_while_a_worker_starts_up_does_not_kill_it():
    """CI failure: SIGINT to the process group reached a worker still importing, which died with exit
    status 1 and was recorded as a failed cell. A worker starts with SIGINT blocked."""
    old = signal.signal(signal.SIGINT, lambda *a: None)     # the parent's own handler (the sweep's flag)
    try:
        w = _Worker(mp.get_context("spawn"))
        os.kill(w.proc.pid, signal.SIGINT)                  # long before its interpreter is up
        w.conn.send((_pid, ()))
        assert w.conn.recv() == ("started",)
        assert w.conn.recv() == ("ok", w.proc.pid)
        w.stop()
        assert w.proc.exitcode == 0
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_worker_that_dies_while_the_pool_stops_is_abandoned_not_failed():
    calls = iter([False])
    results = []
    done = WorkerPool(1, should_stop=lambda: next(calls, True)).run(
        [("cell", _exit_now, ())], lambda *r: results.append(r))
    assert done is False and results == []


def test_a_worker_that_dies_otherwise_fails_its_cell_only():
    results = []
    assert WorkerPool(1).run([("a", _exit_now, ()), ("b", _pid, ())], lambda *r: results.append(r))
    assert results[0][:2] == ("a", "error") and "exit status 1" in results[0][2]
    assert results[1][:2] == ("b", "ok")


def _square(x):
    if x == 3:
        raise ValueError("three is not allowed")
    if x == 4:
        os._exit(9)
    return x * x


def test_map_in_workers_keeps_the_order_and_names_the_failing_task():
    import pytest

    from online.process_pool import TaskError, map_in_workers

    assert map_in_workers(_square, [5, 1, 2, 0], jobs=2) == [25, 1, 4, 0]
    assert map_in_workers(_square, [2, 1], jobs=1) == [4, 1]
    with pytest.raises(TaskError, match=r"task 3 failed: ValueError: three is not allowed"):
        map_in_workers(_square, [1, 2, 3], jobs=2)
    with pytest.raises(TaskError, match=r"task 4 failed: its worker process died \(exit status 9\)"):
        map_in_workers(_square, [4, 1], jobs=2)
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        map_in_workers(_square, [1], jobs=0)


_READY = []


def _mark_ready():
    _READY.append(os.getpid())


def _ready_pids():
    return ("ok", list(_READY))


def test_started_workers_run_the_initializer_once_before_their_first_task():
    pool = WorkerPool(2, initializer=_mark_ready)
    pool.start(5)                                          # at most n workers
    assert len(pool.workers) == 2
    pids = {w.proc.pid for w in pool.workers}
    out = {}
    assert pool.run([(k, _ready_pids, ()) for k in range(4)], lambda k, s, p: out.__setitem__(k, (s, p)))
    assert all(s == "ok" and len(p) == 1 and p[0] in pids for s, p in out.values())
    assert pool.workers == []                               # run stops them when done


def _fail_to_start():
    raise RuntimeError("no warm-up today")


def test_a_failing_initializer_leaves_the_tasks_to_run():
    out = []
    WorkerPool(1, initializer=_fail_to_start).run([("t", _pid, ())], lambda *r: out.append(r))
    assert out[0][1] == "ok"


def _touch(path):
    open(path, "w").close()


def _sleep_long():
    import time

    time.sleep(600)


def test_a_helper_runs_what_it_is_sent_and_is_killed_when_stopped(tmp_path):
    from online.process_pool import Helper

    h = Helper(initializer=_mark_ready)
    h.send(_touch, (str(tmp_path / "done"),))
    h.send(_sleep_long, ())
    import time

    for _ in range(4000):                                   # up to the test's time limit, on a busy machine
        if (tmp_path / "done").exists():
            break
        time.sleep(0.05)
    assert (tmp_path / "done").exists()
    proc = h._worker.proc
    h.stop()                                                # busy sleeping: killed, not waited for
    assert not proc.is_alive() and proc.exitcode is not None
    h.send(_touch, (str(tmp_path / "late"),))               # sending to a stopped helper is not an error


def test_a_worker_whose_start_up_hangs_is_stopped_by_the_time_limit(monkeypatch):
    """Review finding: imports moved into the initializer ran before the task's clock started, so a start-up
    that hung had no limit. Past the limit plus START_UP_S of being sent its task, the worker is stopped."""
    from online import process_pool

    monkeypatch.setattr(process_pool, "START_UP_S", 0.5)
    out = []
    WorkerPool(1, timeout=0.5, initializer=_sleep_long).run([("t", _pid, ())], lambda *r: out.append(r))
    assert out and out[0][1] == "error" and "time limit" in out[0][2]
