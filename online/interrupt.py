"""The SIGINT handler entry points install first (kept light: nothing heavy is imported here)."""
from __future__ import annotations


class InterruptFlag:
    """A SIGINT handler that remembers it fired, then raises KeyboardInterrupt. An entry point installs it
    first thing: a Ctrl-C that lands while modules are still importing can have its KeyboardInterrupt
    swallowed (raised inside a weakref callback or __del__, Python only prints it); a sweep that starts
    afterwards sees the flag and stops at once instead of running."""

    def __init__(self):
        self.fired = False

    def __call__(self, signum, frame):
        self.fired = True
        raise KeyboardInterrupt


def quiet_unraisable(previous):
    """A ``sys.unraisablehook`` that drops KeyboardInterrupts and passes everything else to `previous`.

    A Ctrl-C that lands inside a callback Python cannot raise from (a weakref or garbage-collector
    callback, ``__del__``) is printed as "Exception ignored in ... Traceback ... KeyboardInterrupt";
    with the `InterruptFlag` installed the interrupt is remembered and acted on, so the print says
    nothing but looks like a crash."""
    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        previous(unraisable)
    return hook
