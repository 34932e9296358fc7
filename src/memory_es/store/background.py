"""The store's background side (B6-B8, B19-B22): what the worker drives, and the worker itself.

:class:`Background` implements the worker's ``WorkSource`` protocol over the store's
collaborators (attempts, projections, vectors, the journal writer), so the worker never sees
the store, and the store's public surface keeps only what a host calls. The same code serves
both paths: the background thread's passes and a foreground :meth:`Background.drain`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from memory_es.bounds import check_seconds
from memory_es.store.admission import GroupCommit
from memory_es.store.attempts import Attempts
from memory_es.store.projecting import LiveProjections
from memory_es.store.vectors import Vectors
from memory_es.worker import Worker, WorkerStatus, publish_snapshot, queue_counts

# How long a drain waits, at most, for other hosts to finish intakes they hold leases on.
_WAIT_FOR_OTHERS = 60.0


class Background:
    """The worker's ``WorkSource`` over one open store, and the worker thread it may run.

    Without :meth:`start` no thread runs: work happens only on :meth:`drain` (B6 still holds:
    admission never waits for it).
    """

    def __init__(self, root: Path, journal_writer: GroupCommit, attempts: Attempts,
                 projections: LiveProjections, vectors: Vectors,
                 clock: Callable[[], datetime]) -> None:
        self._root = root
        self._writer = journal_writer
        self._attempts = attempts
        self._projections = projections
        self._vectors = vectors
        self._clock = clock
        self._worker: Worker | None = None

    # -- the worker's WorkSource -------------------------------------------------------------

    def run_due(self, cancel: threading.Event) -> int:
        """One pass over the due queue (see :class:`Attempts`), after folding in what other
        hosts appended to a shared journal (their intakes, and what they resolved)."""
        self._writer.catch_up()
        return self._attempts.run_due(cancel)

    def project(self) -> None:
        """Catch projections up with the journal; logged, never raised (B21)."""
        self._projections.project()

    def embed_pending(self) -> int:
        """Embed memories that lack a vector; until then they are found lexically (D9).
        Returns how many were embedded (0: nothing waits, or the provider is paused)."""
        return self._vectors.embed_pending()

    def seconds_until_due(self, cap: float) -> float:
        """How long the worker may sleep before the next intake falls due (at most ``cap``)."""
        return self._attempts.seconds_until_due(cap)

    def publish_snapshot(self, state: str) -> None:
        """Republish ``.runtime/snapshot.json`` (B19-B21): content-free counts and liveness."""
        now = self._clock()
        with self._writer.cv:
            counts = self._writer.view.counts(now)
            retained = self._writer.view.retained_count()
        publish_snapshot(self._root, {
            "pid": os.getpid(), "heartbeat": now.isoformat(timespec="milliseconds"),
            "counts": counts.to_json(), "shutdown": state,
            # the vector backlog is read beside the writer: no journal hold
            "queue": queue_counts(counts.due, counts.dead, retained,
                                  self._vectors.backlog_nowait()),
        })

    # -- driving the worker ------------------------------------------------------------------

    def start(self) -> None:
        """Start the background thread (B6): admitted turns are projected as they arrive and
        failures retried on the durable backoff schedule (B7)."""
        self._worker = Worker(self)

    def kick(self) -> None:
        """Wake the worker now: new work, a transition, or a test that moved a fake clock."""
        if self._worker is not None:
            self._worker.kick()

    def stop(self, timeout: float) -> None:
        """Let due work drain for up to ``timeout`` s, then cancel the active attempt (B22).
        A second stop finds nothing to stop."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop(timeout)

    def status(self) -> WorkerStatus:
        """``running``; ``stalled`` when the worker thread is gone; ``not_running`` when none
        was started (work runs only on :meth:`drain`)."""
        if self._worker is None:
            return "not_running"
        return "running" if self._worker.live_state() == "running" else "stalled"

    def drain(self, timeout: float | None, *, embed: bool) -> int:
        """Run every due intake in the foreground, then (``embed``) embed what waits for a
        vector; returns the attempts made. Shares the worker's attempt code and lock, so both
        paths behave alike; a broken index fails the drain before anything is resolved. On a
        shared journal it waits (up to 60 s) for intakes another host holds leases on."""
        deadline = None if timeout is None else \
            time.monotonic() + check_seconds("timeout", timeout)
        with self._writer.exclusive():
            self._projections.get()
        attempts = 0
        cancel = threading.Event()
        waited = 0.0  # for another host's outcomes of intakes it leased (shared journal)
        while deadline is None or time.monotonic() < deadline:
            done = self.run_due(cancel)
            attempts += done
            if not done:
                if not self._attempts.elsewhere or waited >= _WAIT_FOR_OTHERS:
                    break
                time.sleep(0.05)
                waited += 0.05
        with self._writer.exclusive():
            self._projections.catch_up()  # foreground: a projection error surfaces
        if embed:
            self._vectors.embed_all(deadline)
        return attempts
