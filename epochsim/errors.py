"""Usage errors: one line, exit code 2, never a traceback."""


class UsageError(Exception):
    """A user mistake (bad flag, bad file); the message is one line naming what and how to fix."""


def path_problem(exc: Exception) -> str:
    """Why a path could not be used: the OS's words, or the ValueError's (a NUL byte)."""
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
