"""Where a command's wall time goes: its phases, marked as each ends, and the time spent in named parts of
them, for the command line's ``--verbose`` line.

The clock is this process's (a command runs once per process); `start` resets it. Marking costs a
``perf_counter`` call, so the sweep and the readers mark unconditionally and only ``--verbose`` prints.
"""
from __future__ import annotations

import os
import time

_PHASES: list[tuple[str, float]] = []
_PARTS: dict[str, float] = {}


def start() -> None:
    """Begin a command: forget earlier marks."""
    _PHASES[:] = [("", time.perf_counter())]
    _PARTS.clear()


def phase_ended(name: str) -> None:
    """The phase `name` ends now (it began where the previous one ended)."""
    if _PHASES:
        _PHASES.append((name, time.perf_counter()))


def spent(part: str, seconds: float) -> None:
    """Add `seconds` to the time spent in `part` (inside the phases, e.g. the cells' own compute)."""
    _PARTS[part] = _PARTS.get(part, 0.0) + float(seconds)


def _since_process_start() -> float | None:
    """Seconds since this process started (Linux; None elsewhere): the interpreter's own start-up included."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(uptime - ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return None


def summary() -> str:
    """One line: start-up, each phase, the rest of the command, the parts, the total."""
    if not _PHASES:
        return "timing: not started"
    now = time.perf_counter()
    total = _since_process_start()
    items = []
    if total is not None:
        items.append(f"start-up {max(total - (now - _PHASES[0][1]), 0.0):.2f} s")
    for (_, t0), (name, t1) in zip(_PHASES, _PHASES[1:]):
        items.append(f"{name} {t1 - t0:.2f} s")
    items.append(f"{'the rest' if len(_PHASES) > 1 else 'the command'} {now - _PHASES[-1][1]:.2f} s")
    parts = "".join(f"; {name} {t:.2f} s" for name, t in _PARTS.items())
    end = f"total {total:.2f} s" if total is not None else f"total since start-up {now - _PHASES[0][1]:.2f} s"
    return f"timing: {', '.join(items)}{parts}; {end}"
