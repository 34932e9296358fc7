"""Exception hierarchy: every failure an operator can see names its cause in one line."""

from __future__ import annotations

import errno
from collections.abc import Iterable

import apsw


class MemoryEsError(Exception):
    """Base for every error memory_es raises on purpose; the CLI prints it as one line.

    ``code`` is a stable, content-free name for the cause (health findings reuse it).
    """

    def __init__(self, message: str, *, code: str = "error") -> None:
        super().__init__(message)
        self.code = code


class UnsafePathError(MemoryEsError):
    """A root or managed file is a symlink, foreign-owned, group/other accessible or hard-linked."""


class IntegrityError(MemoryEsError):
    """The journal, its catalog or the schema marker disagree: the root fails closed."""


class LockTimeoutError(MemoryEsError):
    """Another process still holds the root's writer lock after the bounded wait."""


class IndexUnavailableError(MemoryEsError):
    """The active index generation cannot be read (truncated, corrupt, unsafe, missing): the
    journal is intact, admission goes on, recall answers degraded until ``memory-es rebuild``."""


class NotARootError(MemoryEsError):
    """A read-only command was pointed at a directory that holds no memory root."""


class ConfigError(MemoryEsError, ValueError):
    """Invalid memory config; `.errors` lists every problem found, one line each."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors: list[str] = list(errors)
        super().__init__("\n".join(self.errors))

    def __str__(self) -> str:
        return "\n".join(self.errors)


class InvalidArgumentError(MemoryEsError, ValueError):
    """A caller passed a value outside its documented range (a NaN timeout, a malformed id);
    refused before anything is read or written. The message names the argument and its range."""

    def __init__(self, message: str, *, code: str = "invalid_argument") -> None:
        super().__init__(message, code=code)


# What "could not write or read the disk" looks like from SQLite and the OS.
_IO_ERRORS = (apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.CantOpenError)


def io_problem(error: BaseException) -> str | None:
    """A content-free description when ``error`` is the disk failing (full, read-only, I/O),
    else None: callers report such failures under the one code ``io_error``."""
    if isinstance(error, apsw.FullError) or (isinstance(error, OSError)
                                              and error.errno in (errno.ENOSPC, errno.EDQUOT)):
        return "disk full"
    if isinstance(error, _IO_ERRORS) or (isinstance(error, OSError) and error.errno in (
            errno.EIO, errno.EROFS, errno.EFBIG)):
        return f"I/O error ({type(error).__name__})"
    return None
