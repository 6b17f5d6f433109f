"""What every command's parser shares: the one-line error parser and the common option groups."""
from __future__ import annotations

import argparse
import os

from tutorduel.arg_types import MAX_DRAWS, MAX_JOBS, arrivals_int, chains_int, file_arg, float_in, int_in, seed_int

DEFAULT_POLICIES = "random,no-transfer"
WORLD_HELP = "a roster or world name (in --worlds DIR) or a path to a world .nc file"
DEFAULT_JOBS = min(4, os.cpu_count() or 1)


def one_line(message) -> str:
    """An error message on one line: line breaks that came with a user's text are shown as \\n."""
    return str(message).replace("\r", "\\r").replace("\n", "\\n")


class Parser(argparse.ArgumentParser):
    """argparse with a bad argument reported on one line (what and where, and where to read more), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, and an empty or blank text given to any option or argument is an error: '' had
        silently meant the default (--store '', --policies '', --rosters '', --out '' and the like)."""
        ns = super().parse_args(args, namespace)
        for name, value in vars(ns).items():
            if isinstance(value, str) and not value.strip():
                flag = f"--{name.replace('_', '-')}" if name not in ("path", "presets", "names") else name
                self.error(f"argument {flag}: an empty value; leave the option out for its default")
        return ns


def common_options(p, store=True) -> None:
    """--worlds, --allow-test, --verbose and (if `store`) --store."""
    p.add_argument("--worlds", metavar="DIR", help="world files folder (default: $TUTORDUEL_WORLDS or ./worlds)")
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only; never tune on them)")
    p.add_argument("--verbose", action="store_true", help="end with a line saying where the command's time went "
                                                          "(start-up, planning, cells, verification)")
    if store:
        p.add_argument("--store", metavar="PATH", help="run store (default: $TUTORDUEL_STORE or ./runs)")


def sweep_options(p) -> None:
    """Local processes or a Dask cluster, a per-cell time limit, and the confirmation of a big sweep."""
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1, help="local worker processes (default 1)")
    p.add_argument("--cell-timeout", type=float_in(0, 7 * 24 * 3600, lo_open=True), metavar="SECONDS",
                   help="stop and fail a cell that runs longer than this (default: no limit)")
    p.add_argument("--yes", action="store_true", help="run a sweep of more than 10,000 cells")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the cells on this Dask cluster (the client "
                   "alone writes the store; workers need tutorduel installed, not the worlds)")
    p.add_argument("--dask-workers", type=int_in(1, MAX_JOBS), metavar="N",
                   help="start a Dask LocalCluster of N worker processes")


def sweep_keywords(a) -> dict:
    """The keywords of ``online.sweep.run_sweep`` that `sweep_options` parsed."""
    return dict(jobs=a.jobs, scheduler=a.scheduler, dask_workers=a.dask_workers, cell_timeout=a.cell_timeout,
                confirm=a.yes)


def fit_options(p, what) -> None:
    """The run whose clicks are fitted, and the chains' sizes."""
    p.add_argument("--world", default="dev", help=f"{WORLD_HELP} (default: dev)")
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument("--arrivals", type=arrivals_int, help=f"{what} the run truncated to its first N arrivals")
    p.add_argument("--users", type=arrivals_int, help=f"{what} only the first N users of the run")
    p.add_argument("--chains", type=chains_int, default=4, help="chains (at least 2 for R-hat; default 4)")
    p.add_argument("--warmup", type=int_in(1, MAX_DRAWS),
                   help="warm-up iterations per chain (default: NUTS 1000; the population model's Gibbs sweeps 2000)")
    p.add_argument("--draws", type=int_in(1, MAX_DRAWS),
                   help="draws kept per chain (default: NUTS 1000; the population model's Gibbs sampler 2000)")


def page_options(p, out) -> None:
    """The world, seed and output file of a page."""
    p.add_argument("--world", help=f"{WORLD_HELP} (default: the real sample if imported, else dev)")
    p.add_argument("--seed", type=seed_int, default=0, help="the run's seed: schedule and click draws (default 0)")
    p.add_argument("--out", default=out, type=file_arg, help=f"the page to write (default {out})")
    common_options(p, store=False)
