"""How long the command line takes to answer small questions: whole processes, as a user starts them,
against ``python -c pass`` measured in the same run.

Measured on a warm machine: the kernels are compiled into the cache first (one replay of every policy the
commands run), the world is built, and each command is timed as the best of `repeats` runs (a replay into a
fresh store each time, so it computes, stores and verifies its cell).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.measure import Ratio

QUICKSTART = ["replay", "--world", "dev", "--seeds", "0-3", "--policies", "random,no-transfer,coduel"]


def _best(argv: list[str], env: dict, repeats: int, before=None) -> float:
    best = float("inf")
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        out = subprocess.run(argv, env=env, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if out.returncode != 0:
            raise RuntimeError(f"cli benchmark: {' '.join(argv[3:])} exited {out.returncode}: {out.stderr[-500:]}")
        best = min(best, dt)
    return best


def measure_cli(repeats: int = 3, arrivals: int | None = None) -> list[Ratio]:
    """The commands of issue 51's table, each the best of `repeats`; the quickstart's replay on the first
    `arrivals` arrivals (default: all, as the quickstart runs it)."""
    tool = [sys.executable, "-m", "tutorduel.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TUTORDUEL_WORLDS": str(Path(tmp) / "worlds"), "TUTORDUEL_STORE": str(Path(tmp) / "runs")}
        quick = QUICKSTART + (["--arrivals", str(arrivals)] if arrivals else [])
        _best(tool + quick, env, 1)                               # builds the world, warms the kernels and caches
        one = tool + ["replay", "--world", "dev", "--seeds", "0", "--policies", "random", "--arrivals", "5",
                      "--store", str(Path(tmp) / "one")]
        quick_store = Path(tmp) / "quick"
        times = {
            "python -c pass": _best([sys.executable, "-c", "pass"], env, repeats),
            "tutorduel --help": _best(tool + ["--help"], env, repeats),
            "replay, 1 random cell of 5": _best(one, env, repeats, lambda: shutil.rmtree(Path(tmp) / "one", True)),
            "stats, 12 rows": _best(tool + ["stats", "--world", "dev"] + (["--arrivals", str(arrivals)] if arrivals
                                                                             else []), env, repeats),
            "quickstart replay, 12 cells": _best(tool + quick + ["--store", str(quick_store)], env, 1,
                                                 lambda: shutil.rmtree(quick_store, True)),
        }
    note = f"whole processes, best of {repeats}" + (f"; the quickstart's replay on {arrivals} arrivals" if arrivals
                                                    else "")
    return [Ratio("cli", name, t, "python -c pass", times["python -c pass"], note=note)
            for name, t in times.items() if name != "python -c pass"]
