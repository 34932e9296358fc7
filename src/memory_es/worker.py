"""The background worker (B6-B8, B19-B24): one thread per open store, one attempt at a time.

It drives a small protocol (``WorkSource``): run due attempts, catch projections up, embed,
sleep until the next due time or a new admission, and publish the runtime snapshot. It knows
nothing of the store that implements it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from memory_es.errors import io_problem
from memory_es.fsutil import atomic_write, crash_point, make_private_dir
from memory_es.journal.lock import writer_alive

log = logging.getLogger("memory_es")
T = TypeVar("T")

RUNTIME_DIR = ".runtime"
SNAPSHOT_FILE = "snapshot.json"
HEARTBEAT_SECONDS = 5.0
BACKOFF_MAX_SECONDS = 30.0
SNAPSHOT_MIN_INTERVAL = 0.05
# The worker's threads run this much nicer than the host's (B1: admission waits for nothing
# but its own commit). With both cores busy the scheduler then hands a core to the host's
# thread the moment its fsync returns instead of after the worker's time slice: with the
# worker busy, admission p99 6.9-7.8 ms -> 5.9-6.7 ms (bench/admission.py). 19 gained a little
# more but would leave the worker 1.5 % of a core beside a busy host thread, and its queue is
# bounded (B24). Threads the worker starts (the ANN build) inherit it.
WORKER_NICENESS = 10


def publish_snapshot(root: Path, data: dict[str, Any]) -> None:
    """Replace ``.runtime/snapshot.json`` atomically (0600). Runtime state, not durable:
    written with a rename but no fsync, and a failure is logged, never raised (B21)."""
    try:
        directory = root / RUNTIME_DIR
        make_private_dir(directory)
        crash_point("snapshot.before_rename")
        atomic_write(directory / SNAPSHOT_FILE,
                     json.dumps(data, sort_keys=True, separators=(",", ":")).encode(),
                     durable=False)
    except Exception as e:
        log.warning("memory_es snapshot publish failed: %s", type(e).__name__)


def read_snapshot(root: Path) -> dict[str, Any] | None:
    """The last published runtime snapshot, or None."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((root / RUNTIME_DIR / SNAPSHOT_FILE).read_text("utf-8"))
        return data if isinstance(data, dict) else None
    return None


SnapshotState = Literal["absent", "current", "stale", "invalid"]
_SHUTDOWN_STATES = frozenset({"running", "draining", "cancelled", "stopped", "dead"})


def snapshot_state(root: Path) -> SnapshotState:
    """What ``.runtime/snapshot.json`` says about the worker, content-free:
    ``absent`` (no background worker ever ran here), ``invalid`` (not the JSON object a
    worker publishes: pid, heartbeat, counts, a known shutdown state), ``stale`` (it says a
    worker runs or drains, but no process holds the root: that worker was killed; the next
    background worker republishes it), ``current`` otherwise."""
    if not (root / RUNTIME_DIR / SNAPSHOT_FILE).exists():
        return "absent"
    data = read_snapshot(root)
    if data is None or not isinstance(data.get("pid"), int) \
            or not isinstance(data.get("heartbeat"), str) \
            or not isinstance(data.get("counts"), dict) \
            or data.get("shutdown") not in _SHUTDOWN_STATES:
        return "invalid"
    if data["shutdown"] != "stopped" and not writer_alive(root):
        return "stale"
    return "current"


WorkerStatus = Literal["running", "stalled", "not_running"]
STALE_AFTER_SECONDS = 3 * HEARTBEAT_SECONDS


def worker_status(root: Path) -> WorkerStatus:
    """Is a background worker looking after this root right now? ``not_running``: no process
    holds the root (pending work waits for the next open); ``stalled``: a process holds it but
    no live worker has published a heartbeat lately (a store opened without ``background``,
    a hung process, or a worker thread that died); ``running`` otherwise. Read from the
    writer lock and the age of ``.runtime/snapshot.json`` (wall clock, not the store's)."""
    if not writer_alive(root):
        return "not_running"
    path = root / RUNTIME_DIR / SNAPSHOT_FILE
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return "stalled"
    snapshot = read_snapshot(root)
    if snapshot is None or snapshot.get("shutdown") != "running" or age > STALE_AFTER_SECONDS:
        return "stalled"
    return "running"


# The downstream queues a snapshot counts (B19, N13), in the order the worker's snapshot
# publishes them and an operator reads them.
QUEUE_FIELDS = ("due", "dead", "capture_retained", "embedding")


def queue_counts(due: int, dead: int, capture_retained: int,
                 embedding: int | None) -> dict[str, int | None]:
    """A snapshot's ``queue`` object: intakes due and dead, capture plans held, lines
    waiting for a vector (None: this store never embeds, or its index cannot be read)."""
    return dict(zip(QUEUE_FIELDS, (due, dead, capture_retained, embedding), strict=True))


@dataclass(frozen=True, slots=True)
class WorkerSnapshot:
    """The worker's last published snapshot as an operator reads it (content-free): whether
    a worker looks after the root now (:func:`worker_status`), what the file is
    (:func:`snapshot_state`), its heartbeat and shutdown state, and the queues it counted."""

    status: WorkerStatus
    snapshot: SnapshotState
    heartbeat: str | None = None
    shutdown: str | None = None
    queue: tuple[tuple[str, int | None], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "snapshot": self.snapshot, "heartbeat": self.heartbeat,
                "shutdown": self.shutdown, "queue": dict(self.queue)}


def read_worker(root: Path) -> WorkerSnapshot:
    """:class:`WorkerSnapshot` of ``root``; a snapshot that is absent or invalid shows no
    fields, never a guess."""
    state, status = snapshot_state(root), worker_status(root)
    data = read_snapshot(root) if state in ("current", "stale") else None
    if data is None or not isinstance(data.get("heartbeat"), str):  # swapped meanwhile
        return WorkerSnapshot(status=status, snapshot=state)
    queue = data.get("queue") if isinstance(data.get("queue"), dict) else {}
    assert isinstance(queue, dict)
    counted = tuple((name, value if isinstance(value, int) and not isinstance(value, bool)
                     else None) for name in QUEUE_FIELDS for value in [queue.get(name)])
    return WorkerSnapshot(status=status, snapshot=state, heartbeat=str(data["heartbeat"]),
                          shutdown=str(data["shutdown"]), queue=counted)


class WorkSource(Protocol):
    """What the worker drives; the store's ``Background`` implements it."""

    def run_due(self, cancel: threading.Event) -> int: ...

    def project(self) -> None: ...

    def embed_pending(self) -> int: ...

    def seconds_until_due(self, cap: float) -> float: ...

    def publish_snapshot(self, state: str) -> None: ...


def lower_priority() -> None:
    """Make the calling thread :data:`WORKER_NICENESS` nicer than it is. Linux schedules
    each thread on its own, so this touches no other thread of the host; where a thread's
    niceness cannot be set (another system, a sandbox refusing it) the worker runs as is."""
    if not hasattr(os, "setpriority") or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid,
                       min(19, os.getpriority(os.PRIO_PROCESS, tid) + WORKER_NICENESS))


class Worker:
    """The store's background thread. ``kick`` wakes it; ``stop`` drains, then cancels."""

    def __init__(self, store: WorkSource) -> None:
        self._store = store
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._dirty = threading.Event()
        self._published_stop = threading.Event()
        self.cancel = threading.Event()
        self.state = "running"
        self._failures = 0  # failing stages since the last clean pass (backoff, log rate)
        self._thread = threading.Thread(target=self._run, name="memory-es-worker", daemon=True)
        self._publisher = threading.Thread(target=self._publish_loop,
                                           name="memory-es-snapshot", daemon=True)
        self._thread.start()
        self._publisher.start()

    def live_state(self) -> str:
        """``state``, except that a worker thread that is gone while it should run says
        ``dead`` (health and inspect then report the worker stalled)."""
        if self.state == "running" and not self._thread.is_alive():
            return "dead"
        return self.state

    def kick(self) -> None:
        """New work or a transition: wake the worker and republish the snapshot (B20)."""
        self._dirty.set()
        self._wake.set()

    def _publish_loop(self) -> None:
        """Republish promptly after every change, and on a heartbeat, even while a step runs."""
        lower_priority()
        while not self._published_stop.is_set():
            self._dirty.wait(HEARTBEAT_SECONDS)
            self._dirty.clear()
            self._store.publish_snapshot(self.live_state())
            # Coalesce bursts: at most one publish per interval, however fast turns arrive.
            self._published_stop.wait(SNAPSHOT_MIN_INTERVAL)

    def _run(self) -> None:
        lower_priority()
        store = self._store
        while True:
            failed_before = self._failures
            worked = self._guarded("attempt", lambda: store.run_due(self.cancel), 0)
            if not self.cancel.is_set():
                self._guarded("projection", store.project, None)
                if self._guarded("embedding", store.embed_pending, 0) and \
                        self._failures == failed_before:
                    continue  # more may wait; a busy provider never blocks admission
            self._dirty.set()
            if self.cancel.is_set():
                return
            if self._failures > failed_before:
                # A failing pass (disk full, I/O) backs off instead of spinning; a stop still
                # ends the wait at once.
                if self._stopping.wait(self._backoff()):
                    return
                continue
            self._failures = 0
            if worked:
                continue
            if self._stopping.is_set():
                return
            self._wake.wait(self._guarded(
                "scheduling", lambda: store.seconds_until_due(HEARTBEAT_SECONDS),
                HEARTBEAT_SECONDS))
            self._wake.clear()

    def _backoff(self) -> float:
        """Seconds to wait after the n-th failing pass in a row: 0.5 s doubling to 30 s."""
        return min(BACKOFF_MAX_SECONDS, 0.5 * 2.0 ** min(self._failures - 1, 10))

    def _guarded(self, stage: str, call: Callable[[], T], fallback: T) -> T:
        """Run one stage of the loop; an unexpected error is logged content-free (the type
        only: a message may quote a turn) and the loop goes on: the thread never dies, and
        the journal stays authoritative, so the next pass retries. A run of failures is
        logged at its 1st, 2nd, 4th, 8th... pass, not on every one."""
        try:
            return call()
        except Exception as e:
            if getattr(e, "code", None) == "store_closed":  # closing under a late pass
                return fallback
            self._failures += 1
            if self._failures & (self._failures - 1) == 0:
                problem = io_problem(e)
                log.warning("memory_es worker %s failed: %s (code=%s; failing passes in a "
                            "row: %d, backing off)", stage, problem or type(e).__name__,
                            "io_error" if problem else "internal", self._failures)
            return fallback

    def stop(self, timeout: float) -> bool:
        """Let due work drain for up to ``timeout`` seconds, then cancel the active attempt.

        Returns True when the thread finished in time. A step that ignores cancellation is
        abandoned (the thread is a daemon) and its result discarded.
        """
        self.state = "draining"
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.state = "cancelled"
            self.cancel.set()
            self._thread.join(0.2)
        finished = not self._thread.is_alive()
        self.state = "stopped"
        self._published_stop.set()
        self._dirty.set()
        self._publisher.join(1.0)
        self._store.publish_snapshot(self.state)
        return finished
