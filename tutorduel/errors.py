"""The command line's error: a message for the user, exit status 2."""


class CLIError(Exception):
    pass
