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
