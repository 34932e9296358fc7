"""The store's live projections: opened on first use, caught up after every commit.

A broken index must never block admission, so opening is lazy and a failure in the
background is logged, never raised; operator paths (drain, rebuild) see it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw

from memory_es.errors import MemoryEsError, io_problem
from memory_es.history import iter_events
from memory_es.journal import OpenedJournal
from memory_es.store.admission import GroupCommit
from projections.projector import Projector
from projections.replay import RebuildReport, rebuild
from projections.sqlite_index import IndexProjection

log = logging.getLogger("memory_es")


class LiveProjections:
    """The open :class:`Projector` of a writable root. Callers hold the projections around
    every use: with the journal (``GroupCommit.exclusive``, which takes them first) when they
    write events, else alone (:meth:`hold`: catching up, storing vectors), so admissions never
    wait for a projection pass."""

    def __init__(self, opened: OpenedJournal, root: Path, tier: str, journal: GroupCommit) -> None:
        self._opened = opened
        self._root = root
        self._tier = tier
        self._journal = journal
        self._projector: Projector | None = None

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the projections without the journal (the worker's catch-up, capture's index
        reads, vector writes): a writer's exclusive hold takes them too, so the two never
        overlap. ``store_closed`` once the store is closing: a worker thread that outlived
        :meth:`MemoryStore.close` never reopens an index the next writer owns."""
        with self._journal.projection_lock:
            if self._journal.closed:
                raise MemoryEsError(f"{self._root}: the store is closed", code="store_closed")
            yield

    def get(self) -> Projector:
        """The open projections, opened on first use (a broken index raises here)."""
        if self._projector is None:
            self._projector = Projector.open(self._root, self._tier)
        return self._projector

    def start(self) -> None:
        """Catch up and scrub forgotten rows when the store opens. A failure is logged as
        ``memory_degraded``, never raised: admission must not depend on a healthy index (B4);
        drain and rebuild surface it."""
        try:
            self.catch_up()
            self.get().scrub()
        except (MemoryEsError, apsw.Error, OSError) as e:
            code = e.code if isinstance(e, MemoryEsError) else \
                "io_error" if io_problem(e) else type(e).__name__
            log.warning("memory_degraded: projections unavailable (code=%s); %s", code,
                        "they catch up once the disk can be written again"
                        if code == "io_error" else "run memory-es rebuild",
                        extra={"memory_event": "memory_degraded", "code": code})

    def catch_up(self) -> None:
        """Fold every journal event after the index position (the caller holds the
        projections)."""
        projector = self.get()
        projector.catch_up(iter_events(self._opened, after=projector.position))

    def project(self) -> None:
        """Catch up if behind (the worker calls this after each pass).

        A failure is logged, never raised: it cannot undo a committed transition (B21), and
        health reports the lag until a later pass or a rebuild succeeds.
        """
        try:
            with self.hold():
                if self._projector is None or \
                        self._projector.position < (self._opened.recorder.max_notification_id()
                                                    or 0):
                    self.catch_up()
        except MemoryEsError as e:
            if e.code != "store_closed":  # closing: the next open catches up
                log.warning("memory_degraded: projection catch-up failed (%s)", e.code)
        except Exception as e:
            log.warning("memory_degraded: projection catch-up failed (%s)", type(e).__name__)

    def rebuild(self, before_activate: Callable[[IndexProjection], None]) -> RebuildReport:
        """Replay the journal into a new generation, activate it and reopen (the caller holds
        the journal)."""
        self.close()
        report = rebuild(self._root, iter_events(self._opened, index_only=True),
                         before_activate=before_activate)
        self.catch_up()
        return report

    def close(self) -> None:
        if self._projector is not None:
            self._projector.close()
            self._projector = None
