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
Executors: `jobs` local worker processes (default 1); ``inline=True`` runs cells in this process
(for debugging: no isolation, a policy that ends its process ends the sweep); `dask_workers=N`
starts a LocalCluster of N single-threaded worker processes; ``scheduler="tcp://HOST:PORT"`` joins
a running cluster (workers need this package, the same version, but not the world files).
"""
from __future__ import annotations

import numbers
import re
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from online.code_identity import policy_code
from online.interrupt import InterruptFlag
from online.process_pool import WorkerPool
from online.protocol import PolicyOutputError
from online.registry import PolicySpecError, make_policy, policy_spec, resolve
from online.replay import ScoreUndefinedError, arrivals_limit, replay, replay_logged
from online.store import CellKey, CorruptRowError, RunStore, StoreError, row_problem
from online.verify import RowCheckError, click_log_problem, rescored
from tdmodels.limits import MAX_SEED
from tdmodels.run_inputs import check_run_memory
from tdmodels.rosters import open_world, world_file, world_name
from tdmodels.world import WorldFormatError, read_world_file, validate_world, world_digest

# A cell's result as the parent reads it from a worker that ran a policy: a row (plain data) and a click log.
CELL_RESULT = frozenset({("online.clicklog", "ClickLog"), ("tdmodels.priors", "MixturePrior")})
MAX_SEEDS = 1_000_000            # a seed list longer than this is refused outright
CONFIRM_CELLS = 10_000           # a sweep over more cells needs confirm=True (--yes)
MAX_CELLS = 1_000_000            # even with confirm: one row file per cell
DASK_RETRIES = 0                 # the scheduler's own reruns of a lost task on our LocalCluster (we rerun it alone)
DASK_CONNECT_S = 10
NO_WORKERS_S = 120               # a Dask cluster without workers this long fails the cells left
HEAL_S = 5                       # our LocalCluster without workers this long gets fresh ones
_WORLDS: dict = {}               # worker-side cache: (source, digest) -> Dataset


class SweepError(ValueError):
    """A sweep that cannot start: too many cells, an unreachable scheduler, bad executor options."""


@dataclass(frozen=True)
class Cell:
    """One run of a sweep, with its store identity."""
    world: str                  # the name the world was asked for
    digest: str                 # its content digest
    seed: int
    policy: str                 # canonical spec
    code: str                   # the policy's code digest
    arrivals: int | None = None  # None: the full run; else the first `arrivals` arrivals

    @property
    def key(self) -> CellKey:
        return CellKey(self.digest, self.seed, self.policy, self.code, self.arrivals)

    def __str__(self):
        cut = f" (first {self.arrivals} arrivals)" if self.arrivals is not None else ""
        return f"{self.world} seed {self.seed} {self.policy}{cut}"


@dataclass
class SweepResult:
    """What a sweep did with each cell: computed, already stored, failed, damaged rows moved aside, other code versions kept, not finished."""
    done: list = field(default_factory=list)        # cells computed now
    cached: list = field(default_factory=list)      # cells already in the store
    failed: list = field(default_factory=list)      # (cell, message)
    corrupt: list = field(default_factory=list)     # (message, where the damaged file was moved)
    superseded: list = field(default_factory=list)  # (cell, [paths of rows of other code versions, kept])
    interrupted: list = field(default_factory=list)  # cells not finished when the sweep was stopped


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep; `.result` holds what was stored before it."""

    def __init__(self, result: SweepResult):
        super().__init__("sweep interrupted")
        self.result = result


def _seed_ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for part in str(text).split(","):
        m = re.fullmatch(r"\s*([0-9]{1,19})\s*(?:-\s*([0-9]{1,19})\s*)?", part)
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise ValueError(f"seed range {text!r}: cannot parse {part.strip()[:40]!r}; use e.g. 0-7 or 0-3,8,10-11 "
                             f"(non-negative)")
        lo = int(m.group(1))
        hi = int(m.group(2) or lo)
        if hi > MAX_SEED:
            raise ValueError(f"seed range {text[:60]!r}: seed {hi} is above {MAX_SEED} (seeds are stored as int64)")
        out.append((lo, hi))
    return out


def parse_seeds(text: str, limit: int = MAX_SEEDS, what: str = "in one sweep") -> list[int]:
    """'0-7', '3', '0-3,8,10-11' -> sorted unique seeds; ValueError naming the bad part or a list over `limit`
    (MAX_SEEDS for a sweep; commands that compute references per seed in one process allow fewer)."""
    if not isinstance(text, str) or len(text) > 10_000:
        raise ValueError(f"seed range {str(text)[:60]!r}: give a text such as 0-7 or 0-3,8,10-11 (at most 10,000 "
                         f"characters)")
    ranges = _seed_ranges(text)
    if sum(hi - lo + 1 for lo, hi in ranges) > limit:
        raise ValueError(f"seed range {text[:60]!r}: {sum(hi - lo + 1 for lo, hi in ranges):,} seeds; at most "
                         f"{limit:,} {what}")
    seeds = set()
    for lo, hi in ranges:
        seeds.update(range(lo, hi + 1))
    return sorted(seeds)


def _load(source, digest: str):
    """The world a worker computes on, loaded once per process: from a file path, or from a world file's
    bytes sent with a Dask task as (digest, bytes)."""
    key = source if isinstance(source, str) else source[0]
    if (key, digest) not in _WORLDS:
        _WORLDS.clear()              # one world at a time per worker process: sweeps go world by world
        if isinstance(source, str):
            _WORLDS[(key, digest)] = validate_world(read_world_file(source), source)
        else:
            _WORLDS[(key, digest)] = _world_from_bytes(source[1], digest)
    return _WORLDS[(key, digest)]


def compute_cell(source, digest: str, seed: int, spec: str, arrivals, keep_clicks: bool = False, code: str = ""):
    """One cell's (status, payload): ("ok", (row, log or None)) or ("error", message). Everything a policy
    raises becomes an error; KeyboardInterrupt is passed on (the sweep decides what it means)."""
    try:
        world = _load(source, digest)
        if world_digest(world) != digest:
            where = source if isinstance(source, str) else "sent with the task"
            return "error", (f"the world file {where} changed since the sweep began (digest {world_digest(world)}, "
                             f"expected {digest}); rerun the sweep")
        row, log = replay_logged(world, seed, spec, arrivals) if keep_clicks else (replay(world, seed, spec, arrivals), None)
    except KeyboardInterrupt:
        raise
    except (PolicyOutputError, PolicySpecError, ScoreUndefinedError, WorldFormatError) as exc:
        return "error", str(exc)
    except SystemExit as exc:
        return "error", f"the policy called sys.exit({exc.code!r}); a policy must return, not end its process"
    except BaseException as exc:  # a researcher's policy can raise anything; report, keep the sweep going
        return "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
    if code and row["code"]["digest"] != code:
        return "error", (f"the worker ran code {row['code']['digest']}, this sweep expects {code} (the source changed "
                         f"during the sweep, or a Dask worker has another version installed)")
    return "ok", (row, log)


def _warm_up() -> None:
    import online.replay  # noqa: F401


def _world_from_bytes(data: bytes, digest: str):
    """The world decoded from a world file's bytes (a Dask task's copy of the client's file)."""
    import io

    import xarray as xr

    with xr.open_dataset(io.BytesIO(data), engine="h5netcdf") as ds:
        world = ds.load()
    return validate_world(world, f"world {digest} (sent by the client)")


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


def plan_sweep(worlds: list[str], seeds: list[int], specs: list[str], store: RunStore, allow_test: bool = False,
               arrivals: int | None = None, worlds_dir=None, keep_clicks: bool = False, copies: int = 1,
               confirm: bool = False):
    """Check everything a sweep needs before any cell runs; return (cells to run, world files by digest, the
    worlds by digest, result so far)."""
    if isinstance(worlds, str) or isinstance(specs, str) or isinstance(seeds, str):
        raise SweepError("worlds, seeds and specs are lists (a single name is [name]; seeds: parse_seeds('0-7'))")
    if not isinstance(store, RunStore):
        raise SweepError(f"store {store!r}: give an online.store.RunStore")
    if not worlds or not seeds or not specs:
        raise SweepError("a sweep needs at least one world, one seed and one policy")
    bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, numbers.Integral) or not 0 <= s <= MAX_SEED]
    if bad:
        raise SweepError(f"seed {bad[0]!r}: seeds are integers in [0, {MAX_SEED}]")
    n = len(worlds) * len(seeds) * len(specs)
    if n > MAX_CELLS:
        raise SweepError(f"{n:,} cells ({len(worlds)} world(s) x {len(seeds):,} seeds x {len(specs)} policies): "
                         f"at most {MAX_CELLS:,} in one sweep; split it")
    if n > CONFIRM_CELLS and not confirm:
        raise SweepError(f"{n:,} cells ({len(worlds)} world(s) x {len(seeds):,} seeds x {len(specs)} policies); "
                         f"pass --yes to run more than {CONFIRM_CELLS:,}")
    parsed = [policy_spec(s) for s in specs]
    for ps in parsed:
        make_policy(ps.canonical)          # an unknown policy or a wrong setting stops the sweep before any work
    codes = {ps.canonical: policy_code(resolve(ps.target)).digest for ps in parsed}
    canon = list(dict.fromkeys(ps.canonical for ps in parsed))
    store.check_writable()
    res, todo, sources, loaded = SweepResult(), [], {}, {}
    for w in worlds:
        ds = open_world(w, allow_test=allow_test, directory=worlds_dir, copies=copies)
        digest, limit, name = world_digest(ds), arrivals_limit(ds, arrivals), world_name(w)
        check_run_memory(ds, limit or int(ds.attrs["arrivals"]), f"a run on world {name!r}")
        if digest in sources:          # the same world given twice (two names or paths): its cells once
            continue
        sources[digest] = str(world_file(w, worlds_dir).resolve())
        loaded[digest] = ds
        store.note_world(digest, name, {"roster": str(ds.attrs["roster"]), "students": ds.sizes["student"],
                                        "questions": ds.sizes["question"], "arrivals": int(ds.attrs["arrivals"])})
        for seed in seeds:
            for spec in canon:
                cell = Cell(name, digest, int(seed), spec, codes[spec], limit)
                try:
                    row = store.get(cell.key)
                except CorruptRowError as exc:
                    res.corrupt.append((str(exc), store.quarantine(store.path(cell.key))))
                    row = None
                if row is not None and (not keep_clicks or store.clicks_path(cell.key).exists()):
                    res.cached.append(cell)
                    continue
                todo.append(cell)
                others = store.other_versions(cell.key)
                if others and row is None:
                    res.superseded.append((cell, others))
    return todo, sources, loaded, res


def is_plugin(spec: str) -> bool:
    """Whether a canonical spec's policy comes from outside this toolkit (a researcher's plug-in)."""
    from online.code_identity import PROJECT_PACKAGES
    from online.registry import REGISTRY

    target = policy_spec(spec).target
    return REGISTRY.get(target, target).split(":")[0].split(".")[0] not in PROJECT_PACKAGES


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
        Seconds a cell may run before it is stopped and failed.
    inline : bool
        Run the cells in this process (debugging; no isolation, no time limit).
    confirm : bool
        Allow sweeps over more than CONFIRM_CELLS cells.

    Returns
    -------
    SweepResult
        Raises SweepInterrupted (a KeyboardInterrupt, with the result) on Ctrl-C.
    """
    if scheduler and dask_workers:
        raise SweepError("give either a scheduler address to join or a number of Dask workers to start, not both")
    for what, v in (("jobs", jobs), ("dask_workers", dask_workers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise SweepError(f"{what} must be a positive integer, got {v!r}")
    if cell_timeout is not None and not (isinstance(cell_timeout, (int, float)) and 0 < cell_timeout < float("inf")):
        raise SweepError(f"cell_timeout must be a positive number of seconds, got {cell_timeout!r}")
    if inline and (cell_timeout or scheduler or dask_workers or jobs > 1):
        raise SweepError("inline runs cells one by one in this process: no jobs, Dask or time limit")
    local = 0 if scheduler else (dask_workers or (0 if inline else jobs))
    todo, sources, loaded, res = plan_sweep(worlds, seeds, specs, store, allow_test, arrivals, worlds_dir,
                                              keep_clicks, copies=1 + local, confirm=confirm)
    bar = Progress(len(todo)) if progress and todo else None
    finished = set()

    def finish(cell: Cell, status: str, payload) -> None:
        finished.add(cell)
        if status == "ok":
            try:
                row, log = payload
                row = trusted_row(loaded[cell.digest], cell, row, log)
                problem = row_problem({**row, "world": cell.world})
                if problem:
                    raise RowCheckError(problem)
            except (RowCheckError, KeyError, TypeError, ValueError) as exc:
                status, payload = "error", f"the worker's result does not check out: {exc}"
        if status == "ok":
            try:
                if log is not None:    # the log first: a stored row with keep_clicks implies its log
                    from online.clicklog import save_click_log

                    save_click_log(log, store.clicks_path(cell.key))
                store.put({**row, "world": cell.world})       # shown under the name it was run under
            except OSError as exc:
                raise StoreError(f"run store {store.root}: cannot write the row of {cell} ({exc}); the rows "
                                 f"stored before it are kept") from exc
            res.done.append(cell)
            note = f"score {row['score']:.1f} ({row['wall_s']:.1f}s)"
        else:
            store.put_failure(cell.key, cell.world, payload)
            res.failed.append((cell, payload))
            note = "FAILED: " + payload.splitlines()[0]
        if bar:
            bar.step(cell, note)

    def task(c: Cell):
        src = sources[c.digest]
        return compute_cell, (src, c.digest, c.seed, c.policy, c.arrivals, keep_clicks, c.code)

    with _Interrupt(raise_now=inline) as stop:
        try:
            if not todo:
                pass
            elif scheduler or dask_workers:
                _run_on_dask(todo, sources, keep_clicks, finish, scheduler, dask_workers, cell_timeout,
                             lambda: stop.flag)
            elif inline:
                for cell in todo:
                    try:
                        status, payload = compute_cell(*task(cell)[1])
                    except KeyboardInterrupt:
                        stop.flag = True
                    if stop.flag:   # numba turns a KeyboardInterrupt into SystemError: trust the flag
                        break
                    finish(cell, status, payload)
            else:
                WorkerPool(jobs, cell_timeout, lambda: stop.flag, result_globals=CELL_RESULT).run(
                    ((c, *task(c)) for c in todo), finish, retire=lambda c: is_plugin(c.policy))
        except KeyboardInterrupt:
            stop.flag = True
        if stop.flag:
            res.interrupted = [c for c in todo if c not in finished]
            raise SweepInterrupted(res)
    return res


def _run_on_dask(todo, sources, keep_clicks, finish, scheduler, n_workers, cell_timeout, should_stop):
    """Cells as Dask tasks; results come back to this process (the only store writer) as they finish.

    Each task carries its world's file bytes (decoded once per worker process), so no task depends on
    data a dying worker could take with it; at most two tasks per worker thread are in flight, which
    bounds the memory the scheduler holds. A worker that dies takes the blame for every task it held,
    so a cell that fails with KilledWorker is run again after the others, alone on the cluster: only a
    cell that kills its workers when it runs by itself fails for good."""
    import dask
    from distributed import Client, LocalCluster

    cluster = None
    try:
        if scheduler is None:
            with dask.config.set({"distributed.scheduler.allowed-failures": DASK_RETRIES,
                                  "distributed.scheduler.worker-saturation": 1.0}):
                cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None)
        try:
            client = Client(scheduler or cluster, timeout=DASK_CONNECT_S)
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {type(exc).__name__}: {exc}") from None
        with client:
            client.run(_warm_up)         # imports outside the cells' clocks (workers that restart later pay them in-cell)
            payloads = {d: Path(sources[d]).read_bytes() for d in {c.digest for c in todo}}

            def submit(c: Cell, attempt: int):
                return client.submit(compute_cell, (c.digest, payloads[c.digest]), c.digest, c.seed, c.policy,
                                     c.arrivals, keep_clicks, c.code, pure=False,
                                     key=f"cell-{c.digest}-{c.seed}-{c.policy}-{c.code}-{c.arrivals}-{attempt}")

            heal = (lambda: (cluster.scale(0), cluster.scale(n_workers))) if cluster is not None else None
            suspects = []
            _dask_gather(todo, lambda c: submit(c, 0), client, finish, cell_timeout, should_stop, suspects, heal)
            for c in suspects:
                _dask_gather([c], lambda c: submit(c, 1), client, finish, cell_timeout, should_stop, None, heal)
    finally:
        if cluster is not None:
            cluster.close()


def _dask_gather(cells, submit, client, finish, cell_timeout, should_stop, suspects, heal=None) -> None:
    """Run the cells, a bounded number in flight, finishing each as it ends; KilledWorker cells go to
    `suspects` if given. A cluster left without workers (a nanny gives up on a worker that dies while
    starting) is healed by `heal` if given (our LocalCluster: fresh workers); with no worker for
    NO_WORKERS_S, the cells left fail."""
    from distributed import wait as dask_wait

    queue, futs, started, idle_since, healed = list(cells)[::-1], {}, {}, None, False
    while queue or futs:
        if should_stop():
            client.cancel(list(futs))
            return
        threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
        idle_since, healed = (None, False) if threads else (idle_since or time.monotonic(), healed)
        if idle_since is not None and heal is not None and not healed and time.monotonic() - idle_since > HEAL_S:
            heal()
            healed = True
        if idle_since is not None and time.monotonic() - idle_since > NO_WORKERS_S:
            client.cancel(list(futs))
            for c in list(futs.values()) + queue[::-1]:
                finish(c, "error", f"no Dask worker for {NO_WORKERS_S:g} s; the cell was not run")
            return
        while queue and len(futs) < 2 * max(threads, 1):
            c = queue.pop()
            futs[submit(c)] = c
        try:
            done, _ = dask_wait(list(futs), timeout=0.5, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        for fut in done:
            cell = futs.pop(fut)
            try:
                status, payload = fut.result()
            except Exception as exc:     # lost too often (KilledWorker), cancelled
                if suspects is not None and type(exc).__name__ == "KilledWorker":
                    suspects.append(cell)
                    continue
                status, payload = "error", _dask_failure(exc)
            finally:
                fut.release()
            finish(cell, status, payload)
        if cell_timeout is not None and futs:
            for fut in _stop_overdue(client, futs, started, cell_timeout, finish):
                futs.pop(fut)


def _dask_failure(exc: Exception) -> str:
    if type(exc).__name__ == "KilledWorker":
        return (f"its Dask task killed its worker each time it ran, alone on the cluster too (a policy that ends its "
                f"own process, a crash, or the memory killer): {exc}")
    return f"Dask task failed: {type(exc).__name__}: {exc}"


def _stop_overdue(client, futs, started, limit, finish) -> list:
    """Fail the cells running longer than `limit` seconds: cancel them and restart their workers."""
    now, over, restart = time.monotonic(), [], set()
    running = {key: addr for addr, keys in client.processing().items() for key in keys}
    for fut in futs:
        if fut.key in running:
            started.setdefault(fut.key, now)
            if now - started[fut.key] > limit:
                over.append(fut)
                restart.add(running[fut.key])
    if over:
        client.cancel(over)
        try:
            client.restart_workers(list(restart), raise_for_error=False)
        except Exception:     # a worker without a nanny cannot be restarted; its task is cancelled all the same
            pass
        for fut in over:
            finish(futs[fut], "error", f"exceeded the time limit of {limit:g} s (its Dask worker was restarted)")
    return over
