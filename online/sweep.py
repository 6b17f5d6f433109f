"""Sweeps: every (world, seed, policy spec) cell, skipping finished ones, in local processes
or on a Dask distributed cluster.

A cell counts as finished when its row is stored, readable and was run on the current
version of the world (same content digest); a row of an older world is recomputed.

Workers compute rows and send them back; the parent (the Dask client) alone writes the
store, so there is never more than one writer. A cell that raises, or whose Dask task is
lost, is reported and recorded as failed, never stored as done, and the other cells go on.
The result lists computed, cached, stale, failed cells and damaged rows met on the way.

Executors: `jobs` local processes (default 1: in this process); `dask_workers=N` starts a
LocalCluster of N single-threaded worker processes; `scheduler="tcp://HOST:PORT"` joins a
running cluster. On Dask, each world is sent to the workers once (scattered, broadcast), so
workers need this package installed but not the world files or the store.
"""
from __future__ import annotations

import multiprocessing as mp
import re
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

from online.protocol import PolicyOutputError
from online.registry import PolicySpecError, canonical_spec, make_policy
from online.clicklog import save_click_log
from online.replay import arrivals_limit, replay, replay_logged
from online.store import CorruptRowError, RunStore
from tdmodels.rosters import open_world, world_file
from tdmodels.world import world_digest

_WORLDS: dict = {}


@dataclass(frozen=True)
class Cell:
    world: str
    seed: int
    policy: str
    arrivals: int | None = None       # None: the full run; else the first `arrivals` arrivals

    def __str__(self):
        cut = f" (first {self.arrivals} arrivals)" if self.arrivals is not None else ""
        return f"{self.world} seed {self.seed} {self.policy}{cut}"


@dataclass
class SweepResult:
    done: list = field(default_factory=list)        # cells computed now
    cached: list = field(default_factory=list)      # cells already in the store
    failed: list = field(default_factory=list)      # (cell, message)
    corrupt: list = field(default_factory=list)     # messages about damaged rows found on the way
    stale: list = field(default_factory=list)       # cells whose stored row came from another world version


def parse_seeds(text: str) -> list[int]:
    """'0-7', '3', '0-3,8,10-11' -> sorted unique seeds; ValueError naming the bad part."""
    seeds = set()
    for part in str(text).split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise ValueError(f"seed range {text!r}: cannot parse {part.strip()!r}; use e.g. 0-7 or 0-3,8,10-11 (non-negative)")
        lo = int(m.group(1))
        seeds.update(range(lo, int(m.group(2) or lo) + 1))
    return sorted(seeds)


def _worker(world, seed: int, spec: str, arrivals, keep_clicks: bool = False):
    """Compute one cell's row (and click log) in a worker; `world` is a world file's path or the
    world itself. The parent already enforced the held-out lock."""
    try:
        if isinstance(world, str):
            if world not in _WORLDS:
                _WORLDS[world] = open_world(world, allow_test=True)
            world = _WORLDS[world]
        if keep_clicks:
            return "ok", replay_logged(world, seed, spec, arrivals)
        return "ok", (replay(world, seed, spec, arrivals), None)
    except (PolicyOutputError, PolicySpecError) as exc:
        return "error", str(exc)
    except Exception as exc:  # a researcher's policy can raise anything; report, keep the sweep going
        tb = traceback.format_exc(limit=4)
        return "error", f"{type(exc).__name__}: {exc}\n{tb}"


class Progress:
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


def run_sweep(worlds: list[str], seeds: list[int], specs: list[str], store: RunStore, jobs: int = 1,
              allow_test: bool = False, arrivals: int | None = None, worlds_dir=None, progress: bool = True,
              keep_clicks: bool = False, scheduler: str | None = None, dask_workers: int | None = None) -> SweepResult:
    """Compute every missing cell of worlds x seeds x specs and store its row (and click log with keep_clicks),
    in `jobs` local processes, or on Dask (`scheduler` address, or a LocalCluster of `dask_workers`)."""
    if scheduler and dask_workers:
        raise ValueError("give either a scheduler address to join or a number of Dask workers to start, not both")
    specs = [canonical_spec(s) for s in specs]
    for spec in specs:
        make_policy(spec)          # an unknown policy or setting stops the sweep before any work
    res = SweepResult()
    todo = []
    paths, datasets = {}, {}
    for w in worlds:
        ds = open_world(w, allow_test=allow_test, directory=worlds_dir)   # validates, builds, enforces the lock
        name, digest, limit = str(ds.attrs["roster"]), world_digest(ds), arrivals_limit(ds, arrivals)
        paths[name], datasets[name] = str(world_file(w, worlds_dir).resolve()), ds
        for seed in seeds:
            for spec in specs:
                cell = Cell(name, seed, spec, limit)
                try:
                    row = store.get(name, seed, spec, limit)
                except CorruptRowError as exc:
                    res.corrupt.append(str(exc))
                    row = None
                has_log = not keep_clicks or store.clicks_path(name, seed, spec, limit).exists()
                if row is not None and row.get("world_digest") == digest and has_log:
                    res.cached.append(cell)
                else:
                    if row is not None and row.get("world_digest") != digest:
                        res.stale.append(cell)
                    todo.append(cell)
    bar = Progress(len(todo)) if progress and todo else None

    def finish(cell, status, payload):
        if status == "ok":
            payload, log = payload
            if log is not None:    # the log first: a stored row with keep_clicks implies its log
                save_click_log(log, store.clicks_path(cell.world, cell.seed, cell.policy, cell.arrivals))
            store.put(payload)
            res.done.append(cell)
            note = f"score {payload['score']:.1f} ({payload['wall_s']:.1f}s)"
        else:
            store.put_failure(cell.world, cell.seed, cell.policy, cell.arrivals, payload)
            res.failed.append((cell, payload))
            note = "FAILED: " + payload.splitlines()[0]
        if bar:
            bar.step(cell, note)

    if scheduler or dask_workers:
        _run_on_dask(todo, datasets, keep_clicks, finish, scheduler, dask_workers)
    elif jobs <= 1:
        for cell in todo:
            finish(cell, *_worker(paths[cell.world], cell.seed, cell.policy, cell.arrivals, keep_clicks))
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            futs = {pool.submit(_worker, paths[c.world], c.seed, c.policy, c.arrivals, keep_clicks): c for c in todo}
            for fut in as_completed(futs):
                finish(futs[fut], *fut.result())
    return res


def _run_on_dask(todo, datasets, keep_clicks, finish, scheduler=None, n_workers=None):
    """Cells as Dask tasks; results come back to this process (the only store writer) as they finish."""
    if not todo:
        return
    from distributed import Client, LocalCluster
    from distributed import as_completed as dask_completed

    cluster = None if scheduler else LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                                  dashboard_address=None)
    try:
        with Client(scheduler or cluster) as client:
            worlds = {name: client.scatter(ds, broadcast=True) for name, ds in datasets.items()
                      if any(c.world == name for c in todo)}
            futs = {client.submit(_worker, worlds[c.world], c.seed, c.policy, c.arrivals, keep_clicks,
                                  key=f"cell-{c.world}-{c.seed}-{c.policy}-{c.arrivals}", pure=False): c for c in todo}
            for fut in dask_completed(futs):
                try:
                    status, payload = fut.result()
                except Exception as exc:     # the task itself was lost (a worker died, a cancelled future)
                    status, payload = "error", f"Dask task failed: {type(exc).__name__}: {exc}"
                finish(futs[fut], status, payload)
                fut.release()
    finally:
        if cluster is not None:
            cluster.close()
