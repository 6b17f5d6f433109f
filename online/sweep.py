"""Sweeps: every (world, seed, policy spec) cell, skipping finished ones, in local worker processes
or on a Dask distributed cluster.

A cell counts as finished when a valid row is stored at its identity (world digest, canonical
spec, code identity, seed, truncation; see ``online.store``). Rows of other code versions of the
same cell are kept where they are and reported, never counted and never overwritten.

Faults. A cell ends as done or failed, never vanishes:
- a policy that raises anything, ``SystemExit`` included, fails its cell;
- a local worker process that dies (``os._exit``, a crash, ``kill -9``) fails the cell it was
  running; the worker is replaced and the sweep goes on;
- with ``cell_timeout``, a cell running longer has its worker stopped and fails;
- on Dask, a cell whose worker dies (KilledWorker; the scheduler's own reruns,
  ``distributed.scheduler.allowed-failures``, are set to ``DASK_RETRIES`` = 0 on a LocalCluster this
  sweep starts and left as they are on a cluster it joins) is run once more, alone, after the
  others, and fails only if its worker dies then too; a cell whose policy raises fails at once and
  is not retried; every task carries its world's bytes, so no task waits on data a dead worker held;
  a LocalCluster left without workers gets fresh ones;
- Ctrl-C (SIGINT) stops the sweep: the running cells are abandoned (never recorded as failed) and
  ``SweepInterrupted`` carries what was stored.

Workers run the policies and send back what each played; this process (the Dask client), which
never runs a policy, checks every click against the seed's common random numbers, computes every
figure (``online.verify.rescored``) and alone writes the store. A worker's own figures are never
stored, so a policy that patches the scorer in its worker changes nothing. A local worker that ran
a plug-in policy (a target outside this package) is retired after that cell, so a plug-in cannot
change how a built-in policy plays in a later cell either; a Dask worker is reused (the figures
still come from this process; a plug-in that rewrites a built-in policy's code there could change
the pairs that policy plays, so run untrusted plug-ins on a cluster of their own).
Executors: `jobs` local worker processes (default 1; started while the sweep is planned, with a helper
that compiles kernels the cache lacks: ``online.sweep_local``); ``inline=True`` runs cells in this process
(for debugging: no isolation, a policy that ends its process ends the sweep); `dask_workers=N`
starts a LocalCluster of N single-threaded worker processes; ``scheduler="tcp://HOST:PORT"`` joins
a running cluster (workers need this package, the same version, but not the world files).
"""
from __future__ import annotations

import signal
import sys
import threading
import time

from online import phase_clock
from online.interrupt import InterruptFlag
from tdmodels.errors import check_flag
from online.store import CellKey, RunStore, StoreError, row_problem
from online.sweep_cell import compute_cell
from online.sweep_local import LocalExecutor
from online.sweep_plan import (CONFIRM_CELLS, MAX_CELLS, MAX_SEEDS, Cell, SweepError, SweepInterrupted, SweepResult,
                               parse_seeds, plan_sweep)
from online.registry import plugins_loaded
from online.verify import RowCheckError, audit_stored_row, click_log_problem, rescored

__all__ = ["run_sweep", "parse_seeds", "plan_sweep", "trusted_row", "Cell", "SweepResult", "SweepError",
           "SweepInterrupted", "CONFIRM_CELLS", "MAX_CELLS", "MAX_SEEDS"]


class Progress:
    """One progress line per finished cell (a bar on a terminal, plain lines otherwise)."""
    def __init__(self, total: int, stream=None):
        stream = stream or sys.stderr
        self.total, self.n, self.stream, self.t0 = total, 0, stream, time.perf_counter()
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def step(self, cell: Cell, note: str):
        self.n += 1
        width = 24
        fill = int(width * self.n / max(self.total, 1))
        bar = "#" * fill + "-" * (width - fill)
        msg = f"[{bar}] {self.n}/{self.total} {time.perf_counter() - self.t0:6.1f}s  {cell}: {note}"
        if self.tty:
            self.stream.write("\r\033[K" + msg + ("\n" if self.n == self.total else ""))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()


class _Interrupt:
    """SIGINT handling for the sweep's duration: a flag the executors poll (and, inline, a KeyboardInterrupt)."""

    def __init__(self, raise_now: bool):
        self.flag, self.raise_now, self.old = False, raise_now, None

    def _handler(self, signum, frame):
        self.flag = True
        if self.raise_now:
            raise KeyboardInterrupt

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, self._handler)
            self.flag = isinstance(self.old, InterruptFlag) and self.old.fired
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        return False


def trusted_row(world, cell: Cell, row: dict, log) -> dict:
    """A worker's row as it is stored: its identity checked against the cell, every click against the seed's
    common random numbers, every figure recomputed here, and its click log (if any) checked to be its own.
    RowCheckError says what a worker got wrong."""
    if not isinstance(row, dict):
        raise RowCheckError(f"the worker returned {type(row).__name__}, not a row")
    try:
        got = CellKey.of_row(row)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RowCheckError(f"the worker's row has no cell identity ({type(exc).__name__}: {exc})") from None
    if got != cell.key:
        raise RowCheckError(f"the worker returned the row of another cell ({got})")
    row = rescored(world, row)
    if log is not None:
        problem = click_log_problem(row, log)
        if problem:
            raise RowCheckError(f"the worker's click log is not this run's: {problem}")
    return row


MAX_DASK_WORKERS = 1_024       # local Dask workers started for one command


def _scheduler_problem(scheduler) -> str | None:
    """Why `scheduler` is not a Dask scheduler address as distributed reads one ([SCHEME://]HOST:PORT, with
    a scheme it has a backend for; tcp by default), or None."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends

    if not isinstance(scheduler, str) or not scheduler.strip():
        return f"is {'empty' if isinstance(scheduler, str) else 'a ' + type(scheduler).__name__}, not an address"
    try:
        scheme, location = parse_address(scheduler)
        _, port = parse_host_port(location)
    except (ValueError, TypeError) as exc:
        return f"cannot be read as an address ({exc})"
    if scheme not in backends:
        return f"has the scheme {scheme!r}; distributed knows {', '.join(sorted(backends))}"
    if not 1 <= port <= 65535:
        return f"has the port {port}, outside 1-65535"
    return None


def check_dask_options(scheduler, dask_workers) -> None:
    """SweepError (an InputError) where `scheduler` is not a Dask scheduler address, `dask_workers` is not None
    or a positive integer (0 workers had left a command waiting forever), or both are given."""
    if scheduler is not None and _scheduler_problem(scheduler):
        raise SweepError(f"Dask scheduler {scheduler!r}: {_scheduler_problem(scheduler)}, e.g. tcp://10.0.0.5:8786")
    if dask_workers is not None and (isinstance(dask_workers, bool) or not isinstance(dask_workers, int)
                                     or not 1 <= dask_workers <= MAX_DASK_WORKERS):
        raise SweepError(f"dask_workers must be a positive integer (at most {MAX_DASK_WORKERS:,}), got {dask_workers!r}")
    if scheduler and dask_workers:
        raise SweepError("give either a scheduler address to join or a number of Dask workers to start, not both")


def _check_executor(jobs, scheduler, dask_workers, cell_timeout, inline) -> None:
    check_dask_options(scheduler, dask_workers)
    for what, v in (("jobs", jobs), ("dask_workers", dask_workers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise SweepError(f"{what} must be a positive integer, got {v!r}")
    if cell_timeout is not None and not (isinstance(cell_timeout, (int, float)) and 0 < cell_timeout < float("inf")):
        raise SweepError(f"cell_timeout must be a positive number of seconds, got {cell_timeout!r}")
    if inline and (cell_timeout or scheduler or dask_workers or jobs > 1):
        raise SweepError("inline runs cells one by one in this process: no jobs, Dask or time limit")


class _Recorder:
    """What the parent does with each finished cell: check the worker's result, store it (or the failure),
    and report progress."""

    def __init__(self, store: RunStore, loaded: dict, res: SweepResult, bar: Progress | None, local: bool):
        self.store, self.loaded, self.res, self.bar, self.finished = store, loaded, res, bar, set()
        self.local = local         # results from this machine's workers, read as plain data only

    def __call__(self, cell: Cell, status: str, payload) -> None:
        t0 = time.perf_counter()
        try:
            self._finish(cell, status, payload)
        finally:
            phase_clock.spent("checking and storing rows", time.perf_counter() - t0)

    def _finish(self, cell: Cell, status: str, payload) -> None:
        self.finished.add(cell)
        if status == "ok":
            try:
                row, log = payload
                row = trusted_row(self.loaded[cell.digest], cell, row, log)
                problem = row_problem({**row, "world": cell.world})
                if problem:
                    raise RowCheckError(problem)
            except (RowCheckError, KeyError, TypeError, ValueError) as exc:
                status, payload = "error", f"the worker's result does not check out: {exc}"
        if status == "ok":
            self._store(cell, row, log)
            self.res.done.append(cell)
            phase_clock.spent("the cells' own compute", row["wall_s"])
            note = f"score {row['score']:.1f} ({row['wall_s']:.1f}s)"
        else:
            self.store.put_failure(cell.key, cell.world, payload)
            self.res.failed.append((cell, payload))
            note = "FAILED: " + payload.splitlines()[0]
        if self.bar:
            self.bar.step(cell, note)

    def _store(self, cell: Cell, row: dict, log) -> None:
        try:
            if log is not None:    # the log first: a stored row with keep_clicks implies its log
                from online.clicklog import save_click_log

                save_click_log(log, self.store.clicks_path(cell.key))
            self.store.put({**row, "world": cell.world})       # shown under the name it was run under
        except OSError as exc:
            raise StoreError(f"run store {self.store.root}: cannot write the row of {cell} ({exc}); the rows "
                             f"stored before it are kept") from exc
        if self.local and not plugins_loaded():
            # This process ran no plug-in and read its workers' results as plain data, so its check of the
            # row as stored is the fresh process's: the verdict is cached and the tables that follow need
            # no verifier process for it. (A Dask client unpickles what its workers send.)
            audit_stored_row(self.loaded[cell.digest], self.store.path(cell.key))


def run_sweep(worlds: list[str], seeds: list[int], specs: list[str], store: RunStore, jobs: int = 1,
              allow_test: bool = False, arrivals: int | None = None, worlds_dir=None, progress: bool = True,
              keep_clicks: bool = False, scheduler: str | None = None, dask_workers: int | None = None,
              cell_timeout: float | None = None, inline: bool = False, confirm: bool = False) -> SweepResult:
    """Compute every missing cell of worlds x seeds x specs and store its row (and click log with keep_clicks).

    Parameters
    ----------
    worlds, seeds, specs : lists
        World names or paths, seeds, policy specs.
    store : RunStore
    jobs : int
        Local worker processes (>= 1).
    scheduler, dask_workers : optional
        Run on a Dask cluster at this address, or on a LocalCluster of this many workers.
    cell_timeout : float, optional
        Seconds a cell may run before it is stopped and failed; also the limit on importing and constructing
        each policy in this process while the sweep is planned.
    inline : bool
        Run the cells in this process (debugging; no isolation, no time limit).
    confirm : bool
        Allow sweeps over more than CONFIRM_CELLS cells.

    Returns
    -------
    SweepResult
        Raises SweepInterrupted (a KeyboardInterrupt, with the result) on Ctrl-C.
    """
    allow_test, progress, keep_clicks, inline, confirm = (
        check_flag(n, v) for n, v in (("allow_test", allow_test), ("progress", progress), ("keep_clicks", keep_clicks),
                                      ("inline", inline), ("confirm", confirm)))
    _check_executor(jobs, scheduler, dask_workers, cell_timeout, inline)
    local = 0 if scheduler else (dask_workers or (0 if inline else jobs))
    stop = _Interrupt(raise_now=inline)
    # Local workers start up while the sweep is planned (and stop if it fails or finds nothing to do).
    executor = None if scheduler or dask_workers or inline else LocalExecutor(
        jobs, cell_timeout, lambda: stop.flag, worlds, seeds, specs)
    try:
        todo, sources, loaded, res = plan_sweep(worlds, seeds, specs, store, allow_test, arrivals, worlds_dir,
                                                keep_clicks, copies=1 + local, confirm=confirm,
                                                time_limit_s=cell_timeout)
    except BaseException:
        if executor is not None:
            executor.close()
        raise
    phase_clock.phase_ended("planning")
    finish = _Recorder(store, loaded, res, Progress(len(todo)) if progress and todo else None,
                       local=not (scheduler or dask_workers))

    def args(c: Cell):
        return sources[c.digest], c.digest, c.seed, c.policy, c.arrivals, keep_clicks, c.code

    with stop:
        try:
            if not todo:
                if executor is not None:
                    executor.close()
            elif scheduler or dask_workers:
                from online.sweep_dask import run_on_dask

                run_on_dask(todo, sources, keep_clicks, finish, scheduler, dask_workers, cell_timeout,
                            lambda: stop.flag)
            elif inline:
                _run_inline(todo, args, finish, stop)
            else:
                executor.run(todo, args, sources, loaded, finish)
        except KeyboardInterrupt:
            stop.flag = True
        if stop.flag:
            res.interrupted = [c for c in todo if c not in finish.finished]
            raise SweepInterrupted(res)
    phase_clock.phase_ended("cells")
    return res


def _run_inline(todo, args, finish, stop) -> None:
    for cell in todo:
        try:
            status, payload = compute_cell(*args(cell))
        except KeyboardInterrupt:
            stop.flag = True
        if stop.flag:   # numba turns a KeyboardInterrupt into SystemError: trust the flag
            break
        finish(cell, status, payload)
