"""The error types for input a user can correct, and a held-out roster asked for without leave.

`InputError` is raised for a bad value, file, name or argument, wherever it is found; its
message names what and where. The command line reports it on one line and exits 2. Any other
exception is a bug and surfaces as one (a traceback, exit 1), never as a quiet exit 2.
`InputError` subclasses `ValueError`, so code that catches `ValueError` keeps working.
"""


class InputError(ValueError):
    """Input a user can correct: the message names what is wrong and where."""


class HeldOutError(PermissionError):
    """A held-out roster was asked for without --allow-test."""


def check_flag(name: str, value) -> bool:
    """`value` as a bool when it is one (Python's or NumPy's); InputError naming `name` otherwise. A truthy
    string ("no", "false") or a number is not taken for a yes: ``allow_test="no"`` had opened held-out
    rosters."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InputError(f"{name}={value!r}: give True or False")
