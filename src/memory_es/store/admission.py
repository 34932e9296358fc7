"""Group commit: concurrent admissions share one journal transaction and one fsync.

The first waiting caller leads: it commits everyone queued so far, then hands the journal to
the next waiter. Operator transitions and attempt commits take the journal the same way
(``exclusive``), so one writer path serialises every append of this process.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eventsourcing.persistence import IntegrityError as RecordConflict
from eventsourcing.persistence import StoredEvent

from memory_es.config import ConfigError, MemoryConfig
from memory_es.errors import MemoryEsError, io_problem
from memory_es.events import Intake, Root
from memory_es.intake import (
    MAX_ACTIVE,
    AdmissionResult,
    CompletedTurn,
    IntakeView,
    PreparedIntake,
    prepare_turn,
    repeat_result,
)
from memory_es.journal import MsgspecMapper, OpenedJournal, Payload
from memory_es.rootconfig import RootConfig, settle

log = logging.getLogger("memory_es")

_INTAKE_TOPIC = "memory_es/Intake."
# How often a batch is decided again after another writer took one of its run ids first.
_RACE_RETRIES = 3


def require_writable(store: object, config: MemoryConfig) -> None:
    """B27/O8: a config that writes completed turns needs a store that can admit them.

    Hosts that plug in their own (possibly read-only) store call this at start-up.
    """
    if config.write_mode != "disabled" and not callable(
        getattr(store, "persist_completed_turn", None)
    ):
        raise ConfigError([
            f'memory.writeMode: "{config.write_mode}" requires a writable store '
            f"({type(store).__name__} has no persist_completed_turn)"
        ])


class _Request:
    """One caller's admission in the group-commit queue.

    The caller builds its event and stored form itself, so the serial commit path holds only
    the SQL and the fsync. ``wake`` is a lock created held and released exactly once: with a
    result, or to hand over leadership (a bare lock is the cheapest one-shot signal).
    """

    __slots__ = ("event", "payload", "prepared", "result", "stored", "wake")

    def __init__(self, prepared: PreparedIntake, event: Any, stored: StoredEvent) -> None:
        self.prepared = prepared
        self.event = event
        self.stored = stored
        self.payload = (  # its digest column holds what the event names (a sealed one: none)
            Payload(prepared.run_hash, event.payload_sha256, prepared.payload)
            if prepared.payload is not None and event.payload_sha256 is not None else None
        )
        self.result: AdmissionResult | None = None
        self.wake = threading.Lock()
        self.wake.acquire()


class GroupCommit:
    """The journal's single writer path in this process, and the intake view it keeps current.

    ``cv`` guards ``view``: readers of the view hold it too.
    """

    def __init__(self, opened: OpenedJournal, view: IntakeView, root: Path) -> None:
        self._opened = opened
        self._root = root
        self.view = view
        self.cv = threading.Condition()
        # The live projections' own lock (LiveProjections): taken before the journal by every
        # exclusive hold, and alone by the worker's projection and vector writes, so those
        # never hold the journal and an admission never waits for them.
        self.projection_lock = threading.RLock()
        self.queue: list[_Request] = []
        self._committing = False
        self._last_batch = 0
        self.closed = False
        self.commits = 0  # journal transactions written by admission (shared by a batch)
        self.batch_sizes: Counter[int] = Counter()  # admissions decided per leader's batch
        # Events that open the next transaction, whatever it holds: the root's configuration
        # (rootconfig), recorded with the first thing written, never on its own.
        self.preface: list[Any] = []
        # A writer that seals keeps every digest and length of a turn out of the clear.
        self.seals = opened.recorder.sealer.policy is not None

    def settle_config(self, config: MemoryConfig, now: datetime) -> None:
        """Record the config this root runs with (first use, or a change) in the same
        transaction as the next thing written (an open that writes nothing leaves no trace),
        or refuse a change that would strand retained capture plans (B26) before anything is
        written."""
        with self.cv:
            report = self.view.report(now)
        retained = any(r.retained is not None and r.state != "resolved" for r in report.records)
        event = settle(self._opened, config, at=now, retained_plans=retained)
        if event is None:
            return
        self.preface = [event]
        if isinstance(event, Root.Reconfigured):
            log.warning("memory_reconfigured: %s", RootConfig.of(config).describe(),
                        extra={"memory_event": "memory_reconfigured"})

    def admit_turn(self, turn: CompletedTurn, config: MemoryConfig,
                   clock: Callable[[], datetime]) -> AdmissionResult:
        """Validate one completed turn against the root's config (A3, A4, A8, B27), then
        :meth:`admit` it stamped by ``clock``; a turn refused or skipped says why."""
        prepared = prepare_turn(turn, tier=config.mode, write_mode=config.write_mode,
                                capture_cron=config.capture.cron,
                                capture_webhook=config.capture.webhook)
        if isinstance(prepared, AdmissionResult):
            return prepared
        return self.admit(prepared, prepared.admitted(clock(), sealed=self.seals))

    def admit(self, prepared: PreparedIntake, event: Intake.Admitted) -> AdmissionResult:
        """Queue one admission and return once the transaction holding it is durable."""
        try:  # sealing may reserve record keys: on PostgreSQL, a round trip to the server
            stored = self._opened.app.mapper.to_stored_event(event)
        except Exception as e:
            problem = io_problem(e)
            if problem is None:
                raise
            log.error("memory_es journal write failed: %s", problem)
            return AdmissionResult(status="rejected", intake_id=prepared.run_hash,
                                   code="io_error", detail=problem)
        request = _Request(prepared, event, stored)
        with self.cv:
            if self.closed:
                return AdmissionResult(status="rejected", intake_id=prepared.run_hash,
                                       code="store_closed", detail="the store is closed")
            self.queue.append(request)
            leader = not self._committing
            self._committing = True
        if not leader:
            request.wake.acquire()
            if request.result is not None:
                return request.result
        # Leader: commit everything queued so far, then hand over to the next waiter, if any.
        # Under concurrency (the last batch was shared), yielding the GIL once lets callers
        # that are mid-preparation join this batch; a lone caller never pays for it.
        if self._last_batch > 1:
            time.sleep(0)
        with self.cv:
            batch, self.queue = self.queue, []
            self._last_batch = len(batch)
            self.batch_sizes[len(batch)] += 1
        try:
            self._commit(batch)
        finally:
            self._release()
        assert request.result is not None
        return request.result

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the journal like an admission leader (attempts, operator transitions), and the
        projections with it (taken first: the worker holds them alone while it projects, and
        admissions queue behind the journal only while it is actually held)."""
        with self.projection_lock:
            with self.cv:
                if self.closed:
                    raise MemoryEsError(f"{self._root}: the store is closed",
                                        code="store_closed")
                while self._committing:
                    self.cv.wait()
                self._committing = True
            try:
                yield
            finally:
                self._release()

    def close(self) -> bool:
        """Refuse new work and wait for the commit in flight; False if already closed."""
        with self.cv:
            if self.closed:
                return False
            self.closed = True
            while self._committing:
                self.cv.wait()
            return True

    def commit_events(self, events: Sequence[Any]) -> None:
        """Append domain events in one transaction and fold them into the view. They are
        encoded (and sealed) before the journal is held, as an admission's are."""
        if not events:
            return
        stored = [self._opened.app.mapper.to_stored_event(e) for e in events]
        with self.exclusive():
            self._insert(events, stored)

    def commit_held(self, events: Sequence[Any]) -> None:
        """:meth:`commit_events` for a caller that already holds :meth:`exclusive` (a write
        that must project before anyone else commits, Remember J1)."""
        self._insert(events, [self._opened.app.mapper.to_stored_event(e) for e in events])

    def _insert(self, events: Sequence[Any], stored: list[StoredEvent]) -> None:
        """Write ``events`` (``stored``: their encoded form) after the preface, if any, in one
        transaction; the caller holds the journal."""
        mapper = self._opened.app.mapper
        preface = self.preface
        positions = self._opened.recorder.insert_events(
            [*(mapper.to_stored_event(e) for e in preface), *stored])
        self.preface = []
        self.apply(positions, [*preface, *events])

    def apply(self, positions: Sequence[int] | None, events: Sequence[Any]) -> None:
        """Fold committed events into the view (after what other processes appended before
        them, on a shared journal)."""
        assert positions is not None
        if positions and positions[0] > self.view.position + 1:
            self._fold_foreign(positions[0] - 1)
        with self.cv:
            for position, event in zip(positions, events, strict=True):
                self.view.apply(position, event)
            if positions:
                self.view.position = max(self.view.position, positions[-1])

    def catch_up(self) -> None:
        """Fold into the view what other processes appended to a shared journal:
        their intakes and every transition of them. A no-op on a root's own journal."""
        if not self._opened.recorder.shared:
            return
        with self.exclusive():
            head = self._opened.recorder.max_notification_id() or 0
            if head > self.view.position:
                self._fold_foreign(head)

    def _fold_foreign(self, upto: int) -> None:
        """Fold the journal's Intake events after the view's position up to ``upto`` (the
        caller holds the journal, so none of them is ours)."""
        recorder, mapper = self._opened.recorder, self._opened.app.mapper
        assert isinstance(mapper, MsgspecMapper)
        while self.view.position < upto:
            found = recorder.select_notifications(self.view.position, 500, upto,
                                                  inclusive_of_start=False)
            with self.cv:
                for n in found:
                    if n.topic.startswith(_INTAKE_TOPIC):
                        self.view.apply(n.id, mapper.to_domain_event(n, content=False))
                self.view.position = found[-1].id if found else upto

    def _release(self) -> None:
        """Hand the journal to the next queued admission, or free it."""
        with self.cv:
            if self.queue:
                self.queue[0].wake.release()
            else:
                self._committing = False
                self.cv.notify_all()

    def _commit(self, batch: list[_Request]) -> None:
        """Decide every queued request, write the admitted ones in one transaction.

        A run id already in the journal but not in the view (pruned, B10; or admitted by
        another process on a shared journal) makes the database's unique constraint
        refuse the write (``RecordConflict``); the requests that rode on it are then decided
        again from the journal, where that admission is (a duplicate, or a conflict)."""
        results: list[AdmissionResult | None] = [None] * len(batch)
        undecided = list(range(len(batch)))
        conflicted = False
        try:
            for attempt in range(_RACE_RETRIES + 1):
                rides_on_write = undecided  # a lookup that fails fails them all
                try:
                    if conflicted:  # a read: inside the try, so its failure is reported too
                        self._drop_taken_preface()
                    to_write, rides_on_write = self._decide(batch, undecided, results,
                                                            lookup=attempt > 0)
                    if not to_write:
                        break
                    self._write([batch[i] for i in to_write])
                    break
                except RecordConflict:
                    if attempt < _RACE_RETRIES:
                        undecided, conflicted = rides_on_write, True
                        continue
                    self._fail(batch, results, rides_on_write, "journal_write_failed",
                               "run ids kept racing another writer")
                except Exception as e:
                    # disk full, read-only, I/O, the journal's server down: one code
                    problem = io_problem(e)
                    log.error("memory_es journal write failed: %s", problem or type(e).__name__)
                    self._fail(batch, results, rides_on_write,
                               "io_error" if problem else "journal_write_failed",
                               problem or type(e).__name__)
                    break
        finally:  # every request of the batch gets a result and is woken, whatever happened
            for i, (req, result) in enumerate(zip(batch, results, strict=True)):
                req.result = result if result is not None else AdmissionResult(
                    status="rejected", intake_id=batch[i].prepared.run_hash,
                    code="journal_write_failed", detail="admission interrupted")
                req.wake.release()

    def _decide(self, batch: list[_Request], indices: list[int],
                results: list[AdmissionResult | None], *, lookup: bool
                ) -> tuple[list[int], list[int]]:
        """Set the result of each of ``indices``; return the requests to write and those
        whose result holds only if that write succeeds.

        A run id the view does not hold is looked up in the journal only after a write was
        refused (``lookup``): the unique constraint on its Admitted event already refuses a
        second admission (a run pruned from the view, B10, or another host's), so the common
        case costs no read before the write (a round trip on PostgreSQL)."""
        decided: dict[str, str] = {}  # run_hash -> content hash admitted in this batch
        to_write: list[int] = []
        rides_on_write: list[int] = []
        active = self.view.active
        for i in indices:
            req = batch[i]
            p = req.prepared
            known = self.view.records.get(p.run_hash)
            # a view folded from the journal holds no sealed digest (""): the journal opens it
            known_hash = (known.content_sha256 if known else decided.get(p.run_hash)
                          or (self._opened.recorder.admitted_content_hash(
                              req.event.originator_id) if lookup else None))
            if known is not None and not known_hash:
                known_hash = self._opened.recorder.admitted_content_hash(
                    req.event.originator_id)
            if known is None and p.run_hash in decided:
                rides_on_write.append(i)
            if known_hash is not None:
                results[i] = repeat_result(p, known_hash)
            elif active + len(to_write) >= MAX_ACTIVE:
                results[i] = AdmissionResult(
                    status="rejected", intake_id=p.run_hash, code="too_many_active_records",
                    detail=f"{MAX_ACTIVE} active (pending + dead) records already",
                )
            else:
                decided[p.run_hash] = p.content_sha256
                to_write.append(i)
                rides_on_write.append(i)
                results[i] = AdmissionResult(status="admitted", intake_id=p.run_hash)
        return to_write, rides_on_write

    def _drop_taken_preface(self) -> None:
        """Another host recorded the root's configuration at the version ours would take:
        drop ours (the next open records any difference) rather than fail every admission."""
        recorder = self._opened.recorder
        taken = [e for e in self.preface if recorder.select_events(
            e.originator_id, gt=e.originator_version - 1, lte=e.originator_version)]
        if taken:
            log.warning("memory_es: another writer recorded the root's configuration first")
            self.preface = []

    @staticmethod
    def _fail(batch: list[_Request], results: list[AdmissionResult | None],
              indices: list[int], code: str, detail: str) -> None:
        for i in indices:
            results[i] = AdmissionResult(status="rejected", intake_id=batch[i].prepared.run_hash,
                                         code=code, detail=detail)

    def admit_together(self, admissions: Sequence[tuple[PreparedIntake, Any]],
                       trailer: Callable[[list[AdmissionResult]], Sequence[Any]]
                       ) -> list[AdmissionResult]:
        """Admit several turns (each with its ``Intake.Admitted``) and the events ``trailer``
        makes of their results in one transaction: all of them or none (an import's items
        and its receipt). Each is decided as a batch's is (a duplicate, a conflict, the
        active bound, B3, B18); an I/O failure raises, with nothing written."""
        mapper = self._opened.app.mapper
        batch = [_Request(p, e, mapper.to_stored_event(e)) for p, e in admissions]
        results: list[AdmissionResult | None] = [None] * len(batch)
        with self.exclusive():
            to_write, _ = self._decide(batch, list(range(len(batch))), results, lookup=True)
            decided = [r for r in results if r is not None]
            if to_write:
                self._write([batch[i] for i in to_write], trailer(decided))
        return decided

    def _write(self, requests: list[_Request], trailer: Sequence[Any] = ()) -> None:
        payloads = [r.payload for r in requests if r.payload is not None]
        mapper = self._opened.app.mapper
        positions = self._opened.recorder.insert_events(
            [*(mapper.to_stored_event(e) for e in self.preface), *(r.stored for r in requests),
             *(mapper.to_stored_event(e) for e in trailer)],
            payloads=payloads
        )
        self.commits += 1
        events = [*self.preface, *(r.event for r in requests), *trailer]
        self.preface = []
        self.apply(positions, events)
