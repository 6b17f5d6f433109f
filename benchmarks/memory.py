"""Peak memory of one replay in a fresh process, against random pairs'.

The world is built once, in the parent, and each child process reads it from a file; then, where Linux
allows it, the process's resident-set high-water mark is
reset (``/proc/self/clear_refs``), so the figure is the peak while the replay runs (what stays resident
from the imports and the world included), not the imports' own peak. Elsewhere it is the process's peak.
"""
from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import Ratio

_FOLDER = tempfile.TemporaryDirectory(prefix="tutorduel-memory-")


@functools.lru_cache(maxsize=None)
def _world_file(world: str) -> str:
    """The roster built once for this process's children, as a world file."""
    from tdmodels.simulator import build_roster
    from tdmodels.world import save_world

    return str(save_world(build_roster(world), Path(_FOLDER.name) / f"{world}.nc"))

# A child's peak resident set from here on: the high-water mark reset where Linux allows it (PEAK_RESET), read
# back as `peak` in MiB (PEAK_READ); elsewhere the process's own peak.
PEAK_RESET = """
import resource
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    reset = True
except OSError:
    reset = False
"""
PEAK_READ = """
if reset:
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
else:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
_CHILD = """
import json, sys
from online.replay import replay
from tdmodels.world import load_world
path, spec, arrivals = json.loads(sys.argv[1])
world = load_world(path)
if arrivals is not None and arrivals > int(world.attrs["arrivals"]):
    world.attrs["arrivals"] = arrivals            # the roster's students arriving for longer
""" + PEAK_RESET + """
replay(world, 0, spec, arrivals)
""" + PEAK_READ + """
print(peak)
"""


def peak_mib(world: str, spec: str, arrivals: int | None) -> float:
    """The maximum resident set size, in MiB, of a new Python process that replays `spec` once, on the
    roster's first `arrivals` arrivals, or on more than it has (its students keep arriving)."""
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([_world_file(world), spec, arrivals])],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"memory benchmark: the replay of {spec!r} failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.split()[-1])


def measure_memory(world: str, policies: list[str], arrivals: int | None = None) -> list[Ratio]:
    ref = peak_mib(world, "random", arrivals)
    return [Ratio("memory", spec, peak_mib(world, spec, arrivals), "random", ref, unit="MiB",
                  note="peak resident set while one replay runs") for spec in policies]


def measure_memory_growth(world: str, spec: str, arrivals: list[int]) -> list[Ratio]:
    """Peak memory of `spec` on each number of arrivals against its peak on the first (the roster's
    students arriving for as long as asked): how the memory grows with the run."""
    base = peak_mib(world, spec, arrivals[0])
    return [Ratio("memory", f"{spec}, {n} arrivals", peak_mib(world, spec, n), f"{spec}, {arrivals[0]} arrivals",
                  base, unit="MiB", note="peak resident set while one replay runs") for n in arrivals[1:]]
