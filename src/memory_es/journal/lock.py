"""One writer per root: an exclusive ``flock`` on the root directory itself (DESIGN 3; B23, C16).

The running store holds it, and so do mutating operator commands, which therefore refuse while
the agent runs. Readers never take it.

The lock is taken on the directory, not on a file inside it: a lock file can be unlinked while
it is held, and the next writer would then lock a fresh file and get in beside the first. A
directory that holds a journal cannot be unlinked. ``.writer.lock`` still records
the holder's pid, for messages only; deleting it changes nothing.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from memory_es.errors import LockTimeoutError
from memory_es.fsutil import create_private_file, open_private_file


def _open_dir(root: Path) -> int:
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def writer_alive(root: Path) -> bool:
    """Does a process hold the root's writer lock right now? (N3: in_progress, not drift)."""
    try:
        fd = _open_dir(root)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a shared lock we may have taken
    return False


class WriterLock:
    """Exclusive ``flock`` on the root directory; ``path`` (the pid note) names the holder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1

    def acquire(self, timeout: float) -> None:
        fd = _open_dir(self.path.parent)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeoutError(self._refusal(timeout)) from None
                time.sleep(0.01)
        try:
            self._note_holder()
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _refusal(self, timeout: float) -> str:
        root = self.path.parent
        try:
            holder = self.path.read_text("ascii", "replace").strip()
        except OSError:
            holder = ""
        who = (f"pid {holder} (check it with `ps -p {holder}`)" if holder.isdigit()
               else f"another process (find it with `lsof {root}`)")
        return (f"{root}: writer lock held by {who}, waited {timeout:g} s; stop that process "
                "first (removing files does not release the lock)")

    def _note_holder(self) -> None:
        try:
            note = create_private_file(self.path)
        except FileExistsError:
            note = open_private_file(self.path)
        try:
            os.ftruncate(note, 0)
            os.pwrite(note, f"{os.getpid()}\n".encode(), 0)
        finally:
            os.close(note)

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
