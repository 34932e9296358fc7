"""One writer per root: an exclusive ``flock`` on the root's lock file (DESIGN 3; B23, C16).

The running store holds it, and so do mutating operator commands, which therefore refuse while
the agent runs. Readers never take it.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from memory_es.errors import LockTimeoutError
from memory_es.fsutil import create_private_file, open_private_file


class WriterLock:
    """Exclusive ``flock`` on the root's lock file; the file holds the holder's pid for errors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1

    def acquire(self, timeout: float) -> None:
        try:
            fd = create_private_file(self.path)
        except FileExistsError:
            fd = open_private_file(self.path)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                    os.close(fd)
                    raise LockTimeoutError(
                        f"{self.path.parent}: writer lock held by pid {holder} "
                        f"(waited {timeout:g} s); stop that process first"
                    ) from None
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
