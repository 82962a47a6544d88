"""Output files written whole or not at all: a temporary file beside the target, then a rename.

Contract: `atomic_write(path)` yields an open file (text, UTF-8, or binary with "wb") on a
hidden temporary file in the target's directory (`.<name>.<pid>.tmp`: the leading dot keeps
it out of directory listings that readers take as output); when the block ends normally the
temporary file replaces `path` in one `os.replace`, so a reader, or a later command after a
kill, sees the old file or the new one, never half of one. On any exception (a full disk,
Ctrl-C) the temporary file is removed and `path` is left as it was. `write_text(path, text)`
is the one-call form. Nothing here knows what the files hold. Text that UTF-8 cannot encode
(a file name of non-UTF-8 bytes, which Python gives as lone surrogates such as '\udcff') is
written with a backslash escape (`\udcff`): the file stays UTF-8 and the write never fails.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO


def temp_path(path: str) -> str:
    """The temporary name `atomic_write` uses for `path` (same directory, hidden)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{os.getpid()}.tmp")


def is_temp_name(name: str) -> bool:
    """Is `name` (a file name, no directory) one of `atomic_write`'s temporary files?"""
    return name.startswith(".") and name.endswith(".tmp")


@contextmanager
def atomic_write(path: str, mode: str = "w", buffering: int = -1) -> Iterator[IO]:
    """Write `path` through a temporary file renamed over it at the end (see the contract)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode {mode!r} is not 'w' or 'wb'")
    tmp = temp_path(path)
    encoding, errors = ("utf-8", "backslashreplace") if mode == "w" else (None, None)
    fh = open(tmp, mode, encoding=encoding, errors=errors,  # noqa: SIM115 - closed below
              buffering=buffering)
    try:
        try:
            yield fh
        finally:
            fh.close()  # the last buffered bytes may fail here too (a full disk)
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def discard(path: str) -> None:
    """Remove `path` if it is there; a file that cannot be removed is left (best effort)."""
    try:
        os.remove(path)
    except OSError:
        pass


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` atomically (UTF-8)."""
    with atomic_write(path) as fh:
        fh.write(text)


def write_bytes(path: str, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_write(path, "wb") as fh:
        fh.write(data)


class FileProblem(ValueError):
    """A file that `read_regular` will not read: `problem` and `fix` in words."""

    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem, self.fix = problem, fix


def read_regular(path: str, max_bytes: int) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` of them. Anything else is a
    FileProblem, at once: a pipe (opened without waiting for a writer), a device such as
    /dev/zero, a directory, a file past the cap; FileNotFoundError and other OSErrors pass."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise FileProblem("is a directory", "give a file")
        if not stat.S_ISREG(mode):
            raise FileProblem("not a regular file (a pipe, socket or device)",
                              "save the text to a file and pass that")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileProblem(f"larger than {max_bytes:,} bytes, more than such a file needs",
                          "check that this is the file you meant")
    return data
