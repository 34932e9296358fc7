"""Filesystem hygiene (B16, B17), atomic writes and named crash points (DESIGN 12)."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
from pathlib import Path
from typing import Protocol

from memory_es.errors import UnsafePathError

DIR_MODE = 0o700
FILE_MODE = 0o600

_CRASH_AT = os.environ.get("MEMORY_ES_CRASH_AT")


class CrashHooks(Protocol):
    """A test harness that decides at every named boundary (counting hits, say)."""

    def point(self, name: str) -> None: ...

    def armed(self, name: str) -> bool: ...


_hooks: CrashHooks | None = None


def set_crash_hooks(hooks: CrashHooks | None) -> None:
    """Route every crash point of this process through ``hooks`` (None: back to the variable).

    One switch for the whole library, so harnesses never patch module attributes."""
    global _hooks
    _hooks = hooks


def die() -> None:
    """SIGKILL this process: no cleanup, no flush, like a power cut for the journal."""
    os.kill(os.getpid(), signal.SIGKILL)


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL when MEMORY_ES_CRASH_AT names this boundary.

    Durability tests run a real subprocess with the variable set; in normal runs this is one
    comparison against None.
    """
    if _hooks is not None:
        _hooks.point(name)
    elif _CRASH_AT is not None and name == _CRASH_AT:
        die()


def crash_armed(name: str) -> bool:
    """True when the test harness asked to die at ``name`` (for torn-write simulation)."""
    if _hooks is not None:
        return _hooks.armed(name)
    return _CRASH_AT is not None and name == _CRASH_AT


def check_private(path: Path, *, is_dir: bool) -> os.stat_result:
    """Refuse a path that is a symlink, foreign-owned, not private, or hard-linked elsewhere."""
    return check_private_stat(path, os.lstat(path), is_dir=is_dir)


def check_private_stat(path: Path, st: os.stat_result, *, is_dir: bool) -> os.stat_result:
    """:func:`check_private` of a stat already taken (an ``fstat`` of a file opened with
    ``O_NOFOLLOW``: the checked file is then the one written, whatever replaces the path)."""
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(
            f"{path}: is a symlink; memory_es refuses symlinked roots and files", code="symlink"
        )
    if is_dir and not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"{path}: is not a directory", code="not_a_directory")
    if not is_dir and not stat.S_ISREG(st.st_mode):
        raise UnsafePathError(f"{path}: is not a regular file", code="not_a_regular_file")
    uid = os.geteuid()
    if st.st_uid != uid:
        raise UnsafePathError(
            f"{path}: is owned by uid {st.st_uid}, expected uid {uid}", code="foreign_owner"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        want = DIR_MODE if is_dir else FILE_MODE
        raise UnsafePathError(
            f"{path}: has group/other permission bits (mode {mode:04o}); expected {want:04o}",
            code="unsafe_mode",
        )
    if not is_dir and st.st_nlink != 1:
        raise UnsafePathError(f"{path}: has {st.st_nlink} hard links, expected 1", code="hard_link")
    return st


def make_private_dir(path: Path) -> None:
    """Create ``path`` (0700) if absent, then check it; an existing unsafe directory is refused."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    else:
        os.chmod(path, DIR_MODE)  # umask may have cleared bits we asked for; never adds any
        fsync_dir(path.parent)
    check_private(path, is_dir=True)


def create_private_file(path: Path) -> int:
    """Create a new 0600 file exclusively, never following a symlink; returns the fd."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd


def open_private_file(path: Path, flags: int = os.O_RDWR) -> int:
    """Open an existing managed file without following symlinks, after the hygiene check."""
    check_private(path, is_dir=False)
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)


def fsync_dir(path: Path) -> None:
    """Make a rename or create inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


TEMP_MARK = ".tmp-"


def remove_stale_temps(directory: Path, name: str | None = None) -> list[str]:
    """Delete ``.NAME.tmp-PID`` files a killed writer left in ``directory`` (only those of
    ``name`` when given).

    Only the holder of the writer lock calls this, so no live writer can own them (a backup
    passes its own new file's name).
    """
    removed = []
    prefix = "." if name is None else f".{name}{TEMP_MARK}"
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for name in os.listdir(directory):
            if name.startswith(prefix) and TEMP_MARK in name:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(directory / name)
                    removed.append(name)
    return removed


def private_temp(path: Path) -> tuple[int, Path]:
    """A new, empty 0600 temp file beside ``path`` for a later rename over it: created with
    ``O_EXCL`` under an unpredictable name, so it is never a file someone else created first
    (``.NAME.tmp-PID-XXXX``: :func:`remove_stale_temps` finds what a kill leaves)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}{os.getpid()}-", dir=path.parent)
    os.fchmod(fd, FILE_MODE)  # mkstemp's 0600 already; said again so no umask can matter
    return fd, Path(tmp)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (``os.write`` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically: a private temp file, fsync, rename, directory
    fsync (without ``durable``: no fsyncs, for runtime state). The rename replaces whatever
    ``path`` was (a symlink, a hard link, a foreign or group-readable file) with our own."""
    fd, tmp = private_temp(path)
    try:
        try:
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)
