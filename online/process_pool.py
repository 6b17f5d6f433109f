"""Local worker processes that survive what a task does to them.

Each worker runs one task at a time, so a worker that dies (a policy calling ``os._exit``, a
segfault, the kernel's OOM killer, ``kill -9``) names exactly the task it was running; it is
replaced and the other tasks go on. A task past its time limit has its worker killed and
replaced. Workers ignore SIGINT: Ctrl-C reaches the parent, which stops them (``close``).
Workers are started with the "spawn" method (no state inherited from the parent) and, on Linux, die
with the parent.
"""
from __future__ import annotations

import io
import multiprocessing as mp
import pickle
import signal
import time
from multiprocessing.connection import wait
from typing import Callable, Iterable
from tdmodels.errors import InputError

POLL_S = 0.2
START_UP_S = 600.0       # beyond a task's time limit, what a worker's start-up (its initializer) may take
_STARTED = ("started",)
# What a worker that ran untrusted code (a plug-in policy) may send back: plain data, NumPy arrays and
# scalars, and the named result types. Nothing else a pickle names is looked up, so a worker cannot make
# the parent import or call anything (a crafted pickle's os.system is refused, not run).
PLAIN_DATA = frozenset({("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
                        ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
                        ("numpy", "ndarray"), ("numpy", "dtype")})


class ResultRefusedError(pickle.UnpicklingError):
    """A worker's result that names something outside the pool's allowed globals."""


class _PlainUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, allowed: frozenset):
        super().__init__(io.BytesIO(data))
        self.allowed = allowed

    def find_class(self, module, name):
        if (module, name) not in self.allowed:
            raise ResultRefusedError(f"{module}.{name}")
        return super().find_class(module, name)


def restricted_loads(data: bytes, allowed: frozenset):
    """Unpickle `data` looking up only the (module, name) globals in `allowed` (ResultRefusedError else)."""
    return _PlainUnpickler(data, allowed).load()


def _die_with_parent() -> None:
    """Linux: have the kernel kill this worker when its parent dies (a SIGKILLed sweep leaves no orphans)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _serve(conn, initializer: Callable | None = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # blocked since its start (see _Worker)
    _die_with_parent()
    if initializer is not None:
        try:
            initializer()
        except Exception:          # a warm-up only: what it failed to do, the first task does (and reports)
            pass
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        fn, args = task
        conn.send(_STARTED)          # the task's clock starts now, not while the worker was starting up
        try:
            result = fn(*args)
        except BaseException as exc:   # fn should report its own errors; this is the last resort
            result = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(result)
        except Exception as exc:       # an unpicklable result
            conn.send(("error", f"the result could not be sent back ({type(exc).__name__}: {exc})"))


def _exit_note(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class _Worker:
    def __init__(self, ctx, initializer: Callable | None = None):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, initializer), daemon=True)
        # A Ctrl-C while the worker's interpreter starts up would kill it before _serve ignores SIGINT (and
        # read as a crashed cell). Start it with SIGINT blocked (the mask is inherited across fork and exec);
        # a SIGINT meant for the parent stays pending here and is delivered when the mask is restored.
        masked = hasattr(signal, "pthread_sigmask")
        if masked:
            # The start would launch multiprocessing's resource tracker, which unblocks SIGINT in this
            # process after launching it; have it running first.
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.proc.start()
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
        child.close()
        self.task, self.started, self.sent = None, None, None

    def stop(self, kill: bool = False) -> None:
        if kill and self.proc.is_alive():
            self.proc.kill()
        elif self.proc.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                self.proc.kill()
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class WorkerPool:
    """`n` worker processes running `fn(*args)` tasks; results are `(status, payload)` tuples.

    With `result_globals`, a result is unpickled looking up only those (module, name) globals (plus
    ``PLAIN_DATA``): for tasks that run code the parent does not trust. A result naming anything else fails
    its task, and its worker is stopped. `initializer`, a module-level function, runs in each worker as it
    starts, before its first task (imports, say: `start` has workers pay them while this process works on)."""

    def __init__(self, n: int, timeout: float | None = None, should_stop: Callable[[], bool] = lambda: False,
                 result_globals: frozenset | None = None, initializer: Callable | None = None):
        if n < 1:
            raise InputError(f"a pool needs at least one worker, got {n}")
        self.n, self.timeout, self.should_stop, self.initializer = n, timeout, should_stop, initializer
        self.allowed = None if result_globals is None else PLAIN_DATA | frozenset(result_globals)
        self.ctx = mp.get_context("spawn")
        self.workers: list[_Worker] = []

    def start(self, n: int | None = None) -> None:
        """Start up to `n` (default: all) workers now, before any task: they start up (and run the
        initializer) while this process goes on. Stop them with `close` if no `run` follows."""
        while len(self.workers) < min(self.n if n is None else n, self.n):
            self.workers.append(_Worker(self.ctx, self.initializer))

    def run(self, tasks: Iterable[tuple[object, Callable, tuple]], on_result: Callable[[object, str, object], None],
            retire: Callable[[object], bool] = lambda tag: False) -> bool:
        """Run every (tag, fn, args) task; call on_result(tag, status, payload) as each ends (in this process).
        A dead worker or a task over the time limit gives status "error". A worker whose task's tag
        `retire(tag)` holds is stopped once that task ends (a fresh one takes the next task). Return False if
        `should_stop()` became true (the running tasks are abandoned, their workers killed), True when all ran."""
        queue = list(tasks)[::-1]
        try:
            while queue or any(w.task is not None for w in self.workers):
                if self.should_stop():
                    return False
                while queue and (len(self.workers) < self.n or any(w.task is None for w in self.workers)):
                    tag, fn, args = queue.pop()
                    self._send(tag, fn, args)
                busy = [w for w in self.workers if w.task is not None]
                ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=POLL_S)
                for w in busy:
                    if w.conn in ready:
                        try:
                            msg = self._receive(w)
                        except (EOFError, OSError):
                            self._lost(w, on_result, None)
                            continue
                        except Exception as exc:        # a result this pool does not read (see result_globals)
                            self._lost(w, on_result, f"its worker sent back a result this process does not read "
                                                     f"({type(exc).__name__}: {exc}); only plain data is accepted "
                                                     f"from a worker that ran a policy")
                            continue
                        if msg == _STARTED:
                            w.started = time.monotonic()
                            continue
                        tag, w.task, w.started = w.task, None, None
                        if retire(tag):
                            w.stop()
                            self.workers.remove(w)
                        on_result(tag, *msg)
                    elif w.proc.sentinel in ready:
                        self._lost(w, on_result, None)
                    elif self.timeout is not None and self._overdue(w):
                        self._lost(w, on_result, f"exceeded the time limit of {self.timeout:g} s (its worker was "
                                                 f"stopped)")
            return True
        finally:
            self.close(kill=True)

    def _overdue(self, w: _Worker) -> bool:
        """A task past the time limit since it started, or a worker that has not started its task within the
        limit plus `START_UP_S` of being sent it (an initializer or a start-up that hangs)."""
        now = time.monotonic()
        if w.started is not None:
            return now - w.started > self.timeout
        return w.sent is not None and now - w.sent > self.timeout + START_UP_S

    def _receive(self, w: _Worker):
        if self.allowed is None:
            return w.conn.recv()
        msg = restricted_loads(w.conn.recv_bytes(), self.allowed)
        if not (isinstance(msg, tuple) and msg and isinstance(msg[0], str)):
            raise ResultRefusedError(f"a {type(msg).__name__}, not a (status, payload) tuple")
        return msg

    def _send(self, tag, fn, args) -> None:
        w = next((w for w in self.workers if w.task is None), None)
        if w is not None:
            try:
                w.conn.send((fn, args))
            except OSError:               # an idle worker that died: replace it
                w.stop(kill=True)
                self.workers.remove(w)
                w = None
        if w is None:
            w = _Worker(self.ctx, self.initializer)
            self.workers.append(w)
            w.conn.send((fn, args))
        w.task, w.sent = tag, time.monotonic()

    def _lost(self, w: _Worker, on_result, note: str | None) -> None:
        tag = w.task
        w.stop(kill=True)
        self.workers.remove(w)
        if self.should_stop():        # abandoned, not failed: the sweep is being stopped
            return
        on_result(tag, "error", note or f"its worker process died ({_exit_note(w.proc.exitcode)}); a policy that "
                                        f"ends its own process, a crash in compiled code or the memory killer")

    def close(self, kill: bool = False) -> None:
        for w in self.workers:
            w.stop(kill=kill or w.task is not None)
        self.workers = []


class Helper:
    """One worker process for tasks whose results nobody waits for (work done ahead, such as compiling kernels
    into a cache): started at once (running `initializer`), given tasks by `send`, stopped (killed if still
    busy) by `stop`. It ignores SIGINT and dies with this process, as the pool's workers do."""

    def __init__(self, initializer: Callable | None = None):
        self._worker = _Worker(mp.get_context("spawn"), initializer)

    def send(self, fn: Callable, args: tuple) -> None:
        """Queue `fn(*args)` (a module-level function); its result or error is dropped."""
        try:
            self._worker.conn.send((fn, args))
        except OSError:            # the helper died: what it would have done is done later, by the workers
            pass

    def stop(self) -> None:
        self._worker.stop(kill=True)


def each_in_workers(fn: Callable, items: Iterable, jobs: int = 1, timeout: float | None = None) -> list:
    """``fn(x)`` for each item in `jobs` worker processes (always in workers, so that a task can be stopped),
    each task's outcome kept on its own: a list, in the order of `items`, of ("ok", result) or ("error",
    what happened: what it raised, its worker's death, or the time limit of `timeout` seconds passed, its
    worker stopped). Results come back as plain data only (``PLAIN_DATA``): for tasks that run code this
    process does not trust, such as a researcher's policy.

    Parameters
    ----------
    fn : callable
        A module-level function (the workers import it by name) returning plain data.
    items : iterable
        Picklable arguments.
    jobs : int
        Worker processes, at least 1.
    timeout : float, optional
        Seconds a task may run.
    """
    items = list(items)
    if jobs < 1:
        raise InputError(f"jobs must be at least 1, got {jobs}")
    out: list = [None] * len(items)

    def on_result(k, status, payload):
        out[k] = (status, payload)

    if items:
        WorkerPool(min(jobs, len(items)), timeout, result_globals=frozenset()).run(
            ((k, _ok, (fn, x)) for k, x in enumerate(items)), on_result)
    return out


class TaskError(RuntimeError):
    """A task of `map_in_workers` raised, or its worker died; names the task."""


def _ok(fn, item):
    return ("ok", fn(item))


def map_in_workers(fn: Callable, items: Iterable, jobs: int = 1) -> list:
    """``[fn(x) for x in items]``, in `jobs` worker processes of a `WorkerPool` (in this process when
    jobs is 1), results in the order of `items`.

    Parameters
    ----------
    fn : callable
        A module-level function (the workers import it by name), called once per item.
    items : iterable
        Picklable arguments.
    jobs : int
        Worker processes, at least 1.

    Returns
    -------
    list
        fn's results. The first task that raises, or whose worker dies, stops the rest and
        raises TaskError naming its item and what happened.
    """
    items = list(items)
    if jobs < 1:
        raise InputError(f"jobs must be at least 1, got {jobs}")
    if jobs == 1 or len(items) <= 1:
        return [fn(x) for x in items]
    out, errors = [None] * len(items), []

    def on_result(k, status, payload):
        if status == "ok":
            out[k] = payload
        else:
            errors.append((k, payload))

    WorkerPool(min(jobs, len(items)), should_stop=lambda: bool(errors)).run(
        ((k, _ok, (fn, x)) for k, x in enumerate(items)), on_result)
    if errors:
        k, note = errors[0]
        raise TaskError(f"task {items[k]!r} failed: {note}")
    return out
