"""Progress of long work, for a person at a terminal: the library reports, a sink shows it.

Long operations (drain, rebuild, health, replay, export, import, migrate-journal) call
:func:`step` (or wrap an iterable in :func:`tracked`) as they go, with what they are doing,
how far they are and the total when it is known. Nothing is shown unless a sink is installed
(:func:`set_sink`: the CLI installs one on a terminal, ``memory_es.cli.progress``), and a
report never changes what is done or written: replaying a journal gives the same bytes with
or without one. One switch for the whole process, like the crash hooks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")
EVERY_S = 0.1  # at most this often per task: a million events do not mean a million calls


class Sink(Protocol):
    """Shows progress: ``update`` with the task's name, how much is done and its total (None:
    unknown); ``close`` when the process is done with it."""

    def update(self, task: str, done: int, total: int | None) -> None: ...

    def close(self) -> None: ...


_sink: Sink | None = None
_last: dict[str, float] = {}


def set_sink(sink: Sink | None) -> Sink | None:
    """Route every report of this process to ``sink`` (None: nowhere); the one before it."""
    global _sink
    before, _sink = _sink, sink
    _last.clear()
    return before


def step(task: str, done: int, total: int | None = None, *, final: bool = False) -> None:
    """Report ``done`` of ``total`` for ``task``; shown at most every :data:`EVERY_S` seconds
    (and at once when ``final``). Nothing happens without a sink."""
    if _sink is None:
        return
    now = time.monotonic()
    if final or now - _last.get(task, 0.0) >= EVERY_S:
        _last[task] = now
        _sink.update(task, done, total)


def tracked(task: str, items: Iterable[T], total: int | None,
            done_of: Callable[[T, int], int] | None = None) -> Iterator[T]:
    """``items`` unchanged, reporting ``task`` as they pass: ``done_of(item, count)`` says
    how far an item is (default: how many have passed, a journal position for events)."""
    count = 0
    for item in items:
        count += 1
        yield item
        if _sink is not None:
            step(task, done_of(item, count) if done_of else count, total)
    if _sink is not None:
        step(task, count if done_of is None else (total or count), total, final=True)


def position(item: tuple[int, object], count: int) -> int:
    """How far a ``(position, event)`` pair is: its journal position."""
    return item[0]
