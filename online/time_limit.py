"""A time limit on what this process runs on a plug-in's say before any cell starts: importing the plug-in
and constructing it (a sweep checks every spec that way; a tuner reads a plug-in's settings).

A cell runs in a worker process under the sweep's cell time limit; these steps run in the parent, where a
plug-in that sleeps or loops in its module or constructor had hung the whole command. The limit is the
same number of seconds (SIGALRM, so only in the main thread of a process that has it; elsewhere, and with no
limit given, the code runs as it is).
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from tdmodels.errors import InputError


class PluginTimeout(InputError):
    """A plug-in whose import or construction ran past the time limit."""


@contextmanager
def time_limit(seconds: float | None, what: str):
    """Raise PluginTimeout naming `what` if the block runs longer than `seconds` (None, or anything but a positive
    finite number, which the caller's own checks refuse: no limit)."""
    usable = (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 < seconds < float("inf")
              and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def expired(signum, frame):
        raise PluginTimeout(f"{what} took more than {seconds:g} s (the cell time limit); stopped")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
