"""Sweeps: every (world, seed, policy spec) cell, skipping finished ones, in local processes.

A cell counts as finished when its row is stored, readable and was run on the current
version of the world (same content digest); a row of an older world is recomputed.

Workers compute rows and send them back; the parent alone writes the store, so there is
never more than one writer. A cell that raises is reported and recorded as failed, never
stored as done, and the other cells go on. The result lists computed, cached, stale,
failed cells and damaged rows met on the way.
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


def _worker(world_path: str, seed: int, spec: str, arrivals, keep_clicks: bool = False):
    """Compute one cell's row (and click log) in a worker; the parent already enforced the held-out lock."""
    try:
        if world_path not in _WORLDS:
            _WORLDS[world_path] = open_world(world_path, allow_test=True)
        if keep_clicks:
            return "ok", replay_logged(_WORLDS[world_path], seed, spec, arrivals)
        return "ok", (replay(_WORLDS[world_path], seed, spec, arrivals), None)
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
              keep_clicks: bool = False) -> SweepResult:
    """Compute every missing cell of worlds x seeds x specs and store its row (and click log with keep_clicks)."""
    specs = [canonical_spec(s) for s in specs]
    for spec in specs:
        make_policy(spec)          # an unknown policy or setting stops the sweep before any work
    res = SweepResult()
    todo = []
    paths = {}
    for w in worlds:
        ds = open_world(w, allow_test=allow_test, directory=worlds_dir)   # validates, builds, enforces the lock
        name, digest, limit = str(ds.attrs["roster"]), world_digest(ds), arrivals_limit(ds, arrivals)
        paths[name] = str(world_file(w, worlds_dir).resolve())
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

    if jobs <= 1:
        for cell in todo:
            finish(cell, *_worker(paths[cell.world], cell.seed, cell.policy, cell.arrivals, keep_clicks))
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            futs = {pool.submit(_worker, paths[c.world], c.seed, c.policy, c.arrivals, keep_clicks): c for c in todo}
            for fut in as_completed(futs):
                finish(futs[fut], *fut.result())
    return res
