"""A sweep's local executor: worker processes that start up while the sweep is planned, and a helper that
compiles the kernels the on-disk cache lacks while the first cells run (``online.kernel_warmup``).

A command's wall time is mostly start-up where its cells are short: a worker process imports the stack
(half a second or more) and, on a cold kernel cache, a CODuel cell compiles for seconds. Starting the
workers (and the helper) before the parent reads the worlds and the store overlaps those costs with
the planning; the helper splits the compiling with the first worker. Neither changes what a cell
computes: the workers run cells exactly as before, and a kernel the helper has not finished is
compiled by the worker that needs it.
"""
from __future__ import annotations

import os
from functools import partial
from typing import Callable

from online.kernel_warmup import specs_to_warm, warm_learners
from online.process_pool import Helper, WorkerPool
from online.registry import PolicySpecError, canonical_spec, registered_target
from online.sweep_cell import CELL_RESULT, compute_cell, warm_up
from online.sweep_plan import Cell, is_plugin
from tdmodels.memory import memory_available
from tdmodels.world import memory_needed


class LocalExecutor:
    """`jobs` local worker processes (``online.process_pool.WorkerPool``), started now.

    Parameters
    ----------
    jobs : int
        Worker processes (at most as many as the machine's cores start before the sweep is planned; the
        rest start with the cells).
    cell_timeout : float or None
        Seconds a cell may run.
    should_stop : callable
        Polled while cells run; true stops the sweep.
    worlds, seeds, specs : lists
        The sweep as asked for (before planning: at most that many cells will run; a malformed one starts
        nothing, and the sweep's planning names the problem).
    """

    def __init__(self, jobs: int, cell_timeout, should_stop: Callable[[], bool], worlds, seeds, specs):
        self.helper, self.warm = None, []
        named = tuple(s for s in specs if isinstance(s, str)) if isinstance(specs, list) else ()
        self.pool = WorkerPool(jobs, cell_timeout, should_stop, result_globals=CELL_RESULT,
                               initializer=partial(warm_up, named))
        if not all(isinstance(x, list) for x in (worlds, seeds, specs)):
            return
        try:
            self.pool.start(min(len(worlds) * len(seeds) * len(specs), os.cpu_count() or 1))
            try:       # registered policies only: nothing a plug-in names is imported here
                self.warm = specs_to_warm([canonical_spec(s) for s in specs
                                           if isinstance(s, str) and registered_target(s)])
            except PolicySpecError:
                self.warm = []
            if self.warm:
                self.helper = Helper(initializer=partial(warm_up, tuple(self.warm)))
        except BaseException:          # a Ctrl-C while they start: nothing left running
            self.close()
            raise

    def run(self, todo: list[Cell], args: Callable[[Cell], tuple], sources: dict, loaded: dict,
            finish: Callable[[Cell, str, object], None]) -> None:
        """Run the cells (``args(cell)``: compute_cell's arguments; `loaded`: digest -> the world's Dataset),
        each result to `finish`; a worker that ran a plug-in is retired after its cell. Stops the workers and
        the helper when done."""
        try:
            running = {c.policy for c in todo}
            warm = [s for s in self.warm if s in running]
            first = todo[0].digest
            if self.helper is not None and warm and self._helper_fits(loaded[first]):
                self.helper.send(warm_learners, (sources[first], first, warm))
            self.pool.run(((c, compute_cell, args(c)) for c in todo), finish, retire=lambda c: is_plugin(c.policy))
        finally:
            self.close()

    def _helper_fits(self, world) -> bool:
        """Whether one more process holding `world` fits in the memory available beside the workers (the
        sweep's own memory check counts this process and the workers, not the helper)."""
        have = memory_available()
        return have is None or 2 * memory_needed(world) * (self.pool.n + 2) <= have

    def close(self) -> None:
        """Stop the workers and the helper (killed where busy)."""
        try:
            self.pool.close(kill=True)
        finally:
            if self.helper is not None:
                self.helper.stop()
                self.helper = None
