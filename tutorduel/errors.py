"""The command line's error: a message for the user, exit status 2."""


class CLIError(Exception):
    """A bad command-line argument: printed as one line, exit status 2."""
    pass
