"""Usage errors: one line, exit code 2, never a traceback."""


class UsageError(Exception):
    """A user mistake (bad flag, bad file); the message is one line naming what and how to fix."""
