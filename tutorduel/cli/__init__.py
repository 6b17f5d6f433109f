"""The `tutorduel` command line: parsing only, one module per command group; the work is done by
the use-case modules of ``tutorduel`` and the layers below.

Exit status: 0 done; 1 done, but a cell failed or a row did not verify; 2 bad input, named on
one line (an `InputError` or one of the types in `INPUT_ERRORS`); 130 interrupted (what finished
is kept). Any other exception is a bug and is shown as one.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading

from tdmodels.errors import InputError
from tutorduel.cli import fits, pages, prefdisco, runs, tuning, worlds
from tutorduel.cli.options import Parser, one_line

__all__ = ["main", "run", "build_parser", "one_line", "INPUT_ERRORS"]

GROUPS = (runs, tuning, prefdisco, worlds, fits, pages)


def _input_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean bad input (exit 2). Beside `InputError`: a held-out roster without
    --allow-test, a store that cannot be used, a worker that could not run a task, a missing file, an output
    that could not be written (a full disk)."""
    from online.process_pool import TaskError
    from online.store import StoreError
    from tdmodels.atomic_file import WriteFailedError
    from tdmodels.errors import HeldOutError

    return (InputError, HeldOutError, StoreError, TaskError, FileNotFoundError, WriteFailedError)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    ap = Parser(prog="tutorduel", description="TutorDuel benchmark: worlds, replays, statistics")
    sub = ap.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_parsers(sub)
    return ap


def main(argv=None) -> int:
    """Run the command line; returns the exit status (2: bad input, named on one line; 130: interrupted; 141:
    its output's reader went away)."""
    from inference.kernel_cache import configure_kernel_cache

    configure_kernel_cache()             # first: compiled kernels cached by their source (before numba starts)
    previous = None
    hook = sys.unraisablehook
    if threading.current_thread() is threading.main_thread():
        from online.interrupt import InterruptFlag, quiet_unraisable

        previous = signal.signal(signal.SIGINT, InterruptFlag())
        sys.unraisablehook = quiet_unraisable(hook)
    status = None
    from tutorduel.terminal_text import VisibleStream, silence

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleStream(sys.stdout), VisibleStream(sys.stderr)   # text from files, made visible
    try:
        status = _run(argv)
    except BrokenPipeError:             # `tutorduel stats ... | head -1`: the reader has gone; what was stored stays
        silence(streams[0])
        status = 141                    # as a process ended by SIGPIPE reports it
    finally:
        sys.stdout, sys.stderr = streams
        if previous is not None:
            try:
                signal.signal(signal.SIGINT, previous)
                sys.unraisablehook = hook       # (a SIGINT left pending by the run is handled by now)
            except KeyboardInterrupt:           # a Ctrl-C the run already answered (or one landing as it
                if status not in (None, 130):   # fails): not a second one to die of
                    raise
        sys.unraisablehook = hook
    return status


def run() -> int:
    """The `tutorduel` program: `main`, as a process that ends when it returns. Every object is then frozen
    out of the garbage collector's reach (``gc.freeze``): exit handlers and the finalisers of what the
    interpreter tears down still run, but its last collections no longer walk the whole scientific stack
    (a fifth of a second of a short command; a cycle left unreachable by then is not collected, as the
    process ends anyway). Only for a process about to exit; code that calls `main` goes on collecting."""
    import gc

    status = main()
    gc.freeze()
    return status


def _run(argv) -> int:
    try:
        # The error types first: an except clause that imported them would run those imports while a
        # Ctrl-C is propagating, and a module half-imported when it landed would fail them with a traceback.
        input_errors = _input_errors()
        from online import phase_clock

        phase_clock.start()
        args = build_parser().parse_args(argv)
        try:
            return args.fn(args)
        except input_errors as exc:
            print(f"tutorduel: error: {one_line(exc)}", file=sys.stderr)
            return 2
        finally:
            if getattr(args, "verbose", False):
                print(phase_clock.summary(), file=sys.stderr)
    except KeyboardInterrupt:
        print("tutorduel: interrupted", file=sys.stderr)
        return 130
