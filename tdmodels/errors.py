"""The one error type for input a user can correct.

`InputError` is raised for a bad value, file, name or argument, wherever it is found; its
message names what and where. The command line reports it on one line and exits 2. Any other
exception is a bug and surfaces as one (a traceback, exit 1), never as a quiet exit 2.
`InputError` subclasses `ValueError`, so code that catches `ValueError` keeps working.
"""


class InputError(ValueError):
    """Input a user can correct: the message names what is wrong and where."""
