"""Progress on stderr for a person at a terminal: a tqdm bar per task (count, rate, time
left). Nothing when stderr is not a terminal or under ``--quiet``, and never on stdout, so
``--json`` output and pipes are untouched. The library only reports (:mod:`memory_es.progress`).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
from collections.abc import Iterator
from typing import IO, Any


class _Stream:
    """The terminal's stream as tqdm sees it: handed ``sys.stderr`` itself on a fresh
    pseudo-terminal, tqdm writes nothing; through a plain delegate it writes."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return True


class TerminalProgress:
    """One bar per task, the earlier task's bar closed when the next begins."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._bars: dict[str, Any] = {}

    def update(self, task: str, done: int, total: int | None) -> None:
        from tqdm import tqdm

        bar = self._bars.get(task)
        if bar is None:
            for other in self._bars.values():
                other.close()
            width = shutil.get_terminal_size().columns or 80  # a new pty may say 0
            bar = self._bars[task] = tqdm(total=total, desc=task, file=_Stream(self._stream),
                                          ncols=width, leave=False, unit="")
        if total is not None and bar.total != total:
            bar.total = total
        bar.n = done
        bar.refresh()

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


@contextlib.contextmanager
def shown(args: argparse.Namespace) -> Iterator[None]:
    """Progress for the command's span when stderr is a terminal and ``--quiet`` is off."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        yield
        return
    from memory_es.progress import set_sink

    sink = TerminalProgress(sys.stderr)
    before = set_sink(sink)
    try:
        yield
    finally:
        sink.close()
        set_sink(before)
