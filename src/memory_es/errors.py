"""Exception hierarchy: every failure an operator can see names its cause in one line."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterable, Iterator
from typing import Literal

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

# SQLite errors by what they say about a file. Our SQL is fixed, so an
# SQLError on a file we made means its schema is gone: damage, like a malformed page.
_CORRUPT = (apsw.CorruptError, apsw.NotADBError, apsw.SQLError, apsw.FormatError,
            apsw.MismatchError, apsw.EmptyError, apsw.TooBigError, apsw.RangeError,
            apsw.SchemaChangeError)
_UNREADABLE = (*_IO_ERRORS, apsw.PermissionsError, apsw.AuthError, apsw.NoLFSError,
               apsw.NotFoundError, apsw.ProtocolError)
_BUSY = (apsw.BusyError, apsw.LockedError)
# OS errors that are the disk or its permissions, not a path the caller got wrong.
_IO_ERRNOS = frozenset({errno.EIO, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC,
                        errno.EDQUOT, errno.EFBIG, errno.ENXIO, errno.ESTALE})

StorageKind = Literal["corrupt", "io", "busy", "sqlite"]


def storage_kind(error: BaseException) -> StorageKind | None:
    """What a SQLite or OS error says about the file it came from: ``corrupt`` (the bytes
    are not what we wrote), ``io`` (the disk or its permissions: read-only, full, EIO,
    EACCES), ``busy`` (another connection holds it), ``sqlite`` (anything else SQLite
    raised: a bug, still one code); None when ``error`` is neither."""
    if isinstance(error, _CORRUPT):
        return "corrupt"
    if isinstance(error, _UNREADABLE):
        return "io"
    if isinstance(error, _BUSY):
        return "busy"
    if isinstance(error, apsw.Error):
        return "sqlite"
    if isinstance(error, OSError) and error.errno in _IO_ERRNOS:
        return "io"
    if _server_unreachable(error):
        return "io"
    return None


def _server_unreachable(error: BaseException) -> bool:
    """eventsourcing's ``OperationalError`` / ``InterfaceError``: the PostgreSQL journal's
    server is down or the connection was cut. Matched by name, so that this module
    does not import eventsourcing (the CLI's start stays light)."""
    return any(c.__module__ == "eventsourcing.persistence"
               and c.__name__ in ("OperationalError", "InterfaceError")
               for c in type(error).__mro__)


class StorageError(MemoryEsError):
    """A file of the root could not be read or written: ``kind`` is :func:`storage_kind`,
    ``path`` the file, ``code`` the stable name (``journal_corrupt``, ``index_unreadable``,
    ``io_error``, ``busy``, ``sqlite_error``). Carries no content."""

    def __init__(self, message: str, *, code: str, kind: StorageKind, path: str) -> None:
        super().__init__(message, code=code)
        self.kind = kind
        self.path = path


STORAGE_CODES: dict[StorageKind, str] = {"io": "io_error", "busy": "busy",
                                         "sqlite": "sqlite_error"}


def storage_error(error: BaseException, path: object, *, what: str,
                  corrupt_code: str) -> StorageError | None:
    """``error`` as a :class:`StorageError` naming ``path`` (``what`` it is, e.g. "journal"),
    or None when it is no storage failure. Damage gets ``corrupt_code``; the disk failing gets
    ``io_error``, whichever file it is (one code for every file)."""
    kind = storage_kind(error)
    if kind is None:
        return None
    code = corrupt_code if kind == "corrupt" else STORAGE_CODES[kind]
    cause = type(error).__name__
    if isinstance(error, OSError):
        if error.strerror:
            cause += f": {error.strerror}"
        if error.filename:  # the file the OS named (the writer lock, say)
            path = error.filename
    said = {"corrupt": f"{what} is corrupt or not a memory_es {what}",
            "io": "cannot read or write it", "busy": f"the {what} is locked",
            "sqlite": f"SQLite failed on the {what}"}[kind]
    return StorageError(f"{path}: {said} ({cause})", code=code, kind=kind, path=str(path))


def io_problem(error: BaseException) -> str | None:
    """A content-free description when ``error`` is the disk failing (:func:`storage_kind`
    ``io``: full, read-only, I/O), else None: admission and the worker report such failures
    under the one code ``io_error``."""
    if storage_kind(error) != "io":
        return None
    if isinstance(error, apsw.FullError) or (isinstance(error, OSError)
                                              and error.errno in (errno.ENOSPC, errno.EDQUOT)):
        return "disk full"
    return f"I/O error ({type(error).__name__})"


@contextlib.contextmanager
def storage_guard(path: object, *, what: str, corrupt_code: str) -> Iterator[None]:
    """Raise a SQLite or OS storage failure inside the block as :func:`storage_error`."""
    try:
        yield
    except (apsw.Error, OSError) as e:
        mapped = storage_error(e, path, what=what, corrupt_code=corrupt_code)
        if mapped is None:
            raise
        raise mapped from e
