"""The attempt runner and the operator transitions (B6-B9, B22, C1-C4).

Due intakes run in admission order through the configured step; each batch's outcomes are
committed in one transaction. Retry and resolve are events like everything else.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import msgspec
from eventsourcing.persistence import IntegrityError as RecordConflict

from memory_es.bounds import check_slug
from memory_es.capture.reads import IndexReads
from memory_es.errors import MemoryEsError
from memory_es.events import Intake, Memory
from memory_es.fsutil import crash_point
from memory_es.history import checked_payload
from memory_es.ids import intake_uuid, memory_uuid
from memory_es.intake import (
    MAX_ATTEMPTS,
    RETAINED_STAGE,
    IntakeReport,
    IntakeState,
    IntakeView,
    failure_event,
    intake_record,
)
from memory_es.journal import OpenedJournal
from memory_es.progress import step
from memory_es.step import Processor, StepContext, StepFailure
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.store.vectors import Vectors
from projections.search import entities_by_name, same_text

log = logging.getLogger("memory_es")

# Passes over the due queue after another host won a batch (each pass folds its work in).
_RACED_PASSES = 8


class _Raced(Exception):
    """Another writer committed an outcome for an intake of the batch first."""
# Attempts committed per journal transaction. A host's admission waits while the worker's
# commit holds the journal: with the worker busy, admission p99 was 9-15 ms at 256 and 6-7 ms
# at 32, for 8 % fewer resolutions per second (bench/admission.py, bench/worker.py); below 32
# the worker falls behind a steady burst and p99 hardly moves.
ATTEMPT_BATCH = 32
RESOLVED_PAYLOADS_KEPT = 4096  # B9

Clock = Callable[[], datetime]


def batches(due: list[IntakeState]) -> Iterator[list[IntakeState]]:
    """Due records in admission order: runs of up to :data:`ATTEMPT_BATCH` model-free records;
    a capture alone."""
    batch: list[IntakeState] = []
    for record in due:
        if record.needs_model:
            if batch:
                yield batch
                batch = []
            yield [record]
        else:
            batch.append(record)
            if len(batch) == ATTEMPT_BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


class _SameText:
    """``StepContext.same_text`` for one batch: the batch's own new lines first (not yet in
    the index), then the caught-up index."""

    def __init__(self, attempts: Attempts) -> None:
        self._attempts = attempts
        self._pending: dict[str, str] = {}
        self._caught_up = False

    def __call__(self, normal: str) -> str | None:
        if normal in self._pending:
            return self._pending[normal]
        if not self._caught_up:  # once a batch: nothing is committed until its end
            self._attempts.ready_for_index()
            self._caught_up = True
        return self._attempts.stored_with_text(normal)

    def add(self, events: list[Any]) -> None:
        for e in events:
            if isinstance(e, Memory.Recorded) and e.tier == "journal":
                self._pending.setdefault(e.text, e.memory_id)


class Attempts:
    """Runs due attempts through the step and records operator transitions."""

    def __init__(self, opened: OpenedJournal, journal: GroupCommit,
                 projections: LiveProjections, vectors: Vectors, processor: Processor,
                 clock: Clock) -> None:
        self._opened = opened
        # Due intakes the last pass left to another host that held their lease.
        self.elsewhere = 0
        self._journal = journal
        self._projections = projections
        self._vectors = vectors
        self.processor = processor
        self._clock = clock
        self._work_lock = threading.Lock()  # one attempt at a time per root (B23)
        self.work_lock = self._work_lock  # held by a forget too

    # -- attempts -------------------------------------------------------------------------------

    def run_due(self, cancel: threading.Event) -> int:
        """One pass over the due queue, in admission order, committing as it goes.

        Model-free attempts share transactions (up to :data:`ATTEMPT_BATCH`); a capture is its
        own transaction and first catches projections up, so it reconciles against every
        earlier capture.
        """
        with self._work_lock:
            attempts = 0
            self.elsewhere = 0
            for _ in range(_RACED_PASSES):
                now = self._clock()
                with self._journal.cv:
                    due = self._journal.view.due(now, with_model=self.processor.needs_model)
                try:
                    for batch in batches(due):
                        if cancel.is_set():
                            break
                        attempts += self._leased_attempt(batch, cancel)
                        step("drain", attempts, len(due))
                    break
                except _Raced:  # the view took in the other host's work: decide again
                    continue
            if attempts:
                self.prune_payloads()
            return attempts

    def _leased_attempt(self, records: list[IntakeState], cancel: threading.Event) -> int:
        """:meth:`_attempt` on the records no other host is attempting (their leases, issue
        18) and that are still due once what other hosts wrote is folded in."""
        recorder = self._opened.recorder
        leased = set(recorder.lease([r.id for r in records]))
        self.elsewhere += len(records) - len(leased)
        try:
            if recorder.shared and leased:
                self._journal.catch_up()
            now = self._clock()
            with self._journal.cv:
                mine = [r for r in records if r.id in leased
                        and self._journal.view.records.get(r.id) is r and r.due(now)]
            return self._attempt(mine, cancel) if mine else 0
        finally:
            recorder.release(sorted(leased))

    def _attempt(self, records: list[IntakeState], cancel: threading.Event) -> int:
        """Run the step for each record; commit every outcome in one transaction.

        Returns how many attempts were committed (0 if cancelled: records stay pending).
        """
        app = self._opened.app
        recorder = self._opened.recorder
        events: list[Any] = []
        new_ids: set[str] = set()
        same_text = _SameText(self)
        for record in records:
            # A capture resumes from its retained stages; a model-free step needs only the first
            history = [app.mapper.to_domain_event(stored) for stored in app.recorder.select_events(
                intake_uuid(record.id), lte=None if record.needs_model else 1)]
            admitted = history[0]
            assert isinstance(admitted, Intake.Admitted)
            data, problem = checked_payload(self._opened, record)
            if problem is not None:  # tampered or lost: never feed it to a step (B5)
                log.warning("memory_integrity: intake %s capture payload %s; dead-lettered "
                            "(category integrity), nothing captured", record.id, problem)
                events.append(Intake.dead_lettered(
                    run_hash=record.id, version=record.revision, at=self._clock(),
                    attempt=record.attempts + 1, category="integrity"))
                continue
            ctx = StepContext(
                revision=record.revision, at=self._clock(), cancel=cancel,
                memory_exists=lambda mid: mid in new_ids or recorder.has_events(memory_uuid(mid)),
                same_text=same_text,
                final=record.failures + 1 >= MAX_ATTEMPTS, history=tuple(history),
                retain=self._retain, reads=self._capture_reads(record))
            crash_point("worker.before_step")
            try:
                if ctx.reads is not None:
                    self.ready_for_index()
                step_events = self.processor.process(admitted, data, ctx)
            except StepFailure as failure:
                step_events = [failure_event(record, failure.category, self._clock())]
            except Exception as e:  # logged content-free: a message may quote the turn
                log.warning("memory_es step failed unexpectedly (intake %s): %s", record.id,
                            type(e).__name__)
                step_events = [failure_event(record, "internal", self._clock())]
            if cancel.is_set():
                return 0  # shutdown: nothing of this batch is committed (B22)
            events += step_events
            new_ids.update(e.memory_id for e in step_events
                           if isinstance(e, Memory.Recorded | Memory.Captured))
            same_text.add(step_events)
        crash_point("worker.before_commit")
        try:
            self._journal.commit_events(events)
        except MemoryEsError as e:
            if e.code == "store_closed":
                return 0
            raise
        except RecordConflict:
            # Another host on a shared journal committed an outcome for one of
            # these intakes first: take in what it wrote; the next pass sees what is left.
            log.info("memory_es: another writer advanced an intake of this batch first")
            self._journal.catch_up()
            raise _Raced from None
        crash_point("worker.after_commit")
        return len(records)

    # -- capture (E*): what a model step reads and retains -------------------------------------

    def _capture_reads(self, record: IntakeState) -> IndexReads | None:
        """Index reads for a capture attempt; None for model-free records."""
        if not record.needs_model:
            return None
        return IndexReads(run=self._index_run, embed=self._vectors.candidates,
                          nearest=self._vectors.nearest, version=self._aggregate_version,
                          entities=entities_by_name)

    def ready_for_index(self) -> None:
        """Projections caught up (a capture reconciles against every earlier one)."""
        try:
            with self._projections.hold():
                self._projections.catch_up()
        except MemoryEsError as e:
            log.warning("memory_degraded: capture waits for projections (code=%s)", e.code)
            raise StepFailure("io_error") from None

    def _retain(self, event: Any) -> None:
        """Commit a capture stage's output now (E17, E23): a retry resumes after it."""
        self._journal.commit_events([event])
        crash_point(f"capture.after_{RETAINED_STAGE[type(event)]}")

    def stored_with_text(self, normal: str) -> str | None:
        """The id of a stored Journal line (any status; a forgotten one has no row) whose text
        is ``normal``, from the index (the caller caught it up, D5)."""
        found: str | None = self._index_run(lambda conn: same_text(conn, normal))
        return found

    def _index_run(self, fn: Callable[[Any], Any]) -> Any:
        with self._projections.hold():
            return fn(self._projections.get().index.conn)

    def _aggregate_version(self, originator_id: Any) -> int:
        last = self._opened.recorder.select_events(originator_id, desc=True, limit=1)
        return int(last[0].originator_version) if last else 0

    # -- upkeep -----------------------------------------------------------------------------------

    def prune_payloads(self) -> None:
        """B9: keep the payloads of the newest 4,096 resolved intakes; events stay forever."""
        with self._journal.cv:
            ids = self._journal.view.prunable_payloads(RESOLVED_PAYLOADS_KEPT)
        if ids:
            try:
                self._opened.recorder.delete_payloads(ids)
            except Exception as e:
                log.warning("memory_es payload pruning failed (%s)", type(e).__name__)

    def seconds_until_due(self, cap: float) -> float:
        """How long the worker may sleep: until the next due intake, at most ``cap``."""
        with self._journal.cv:
            nxt = self._journal.view.next_due_at(with_model=self.processor.needs_model)
        if nxt is None:
            return cap
        return max(0.0, min(cap, (nxt - self._clock()).total_seconds()))

    # -- operator views and transitions (C1-C4) ---------------------------------------------------

    def inspect(self, intake_id: str | None = None) -> IntakeReport:
        """Content-free intake report (C1, C2): counts, and the unresolved records (or the one
        asked for, resolved or not)."""
        now = self._clock()
        with self._journal.cv:
            report = self._journal.view.report(now, intake_id)
            if intake_id is None or report.records:
                return report
            try:
                record = self.record(intake_id)
            except MemoryEsError:
                return report
        return msgspec.structs.replace(report, records=(intake_record(record, now),))

    def record(self, intake_id: str) -> IntakeState:
        """One intake's state: from the view if unresolved, else folded from the journal."""
        record = self._journal.view.records.get(intake_id)
        if record is not None:
            return record
        view = IntakeView()
        app = self._opened.app
        for stored in app.recorder.select_events(intake_uuid(intake_id)):
            view.apply(0, app.mapper.to_domain_event(stored))
        if intake_id not in view.records:
            raise MemoryEsError(f"no intake with id {intake_id}", code="not_found")
        return view.records[intake_id]

    def retry(self, intake_id: str | None = None) -> list[str]:
        """Give dead or delayed intakes (one, or all) a fresh 16-attempt budget, due now."""
        with self._work_lock:
            now = self._clock()
            with self._journal.cv:
                if intake_id is not None:
                    candidates = [self.record(intake_id)]
                else:
                    candidates = self._journal.view.unresolved()
                targets = [r for r in candidates if r.state == "dead"
                           or (r.state == "pending" and not r.due(now))]
            events = [Intake.retry_requested(run_hash=r.id, version=r.revision, at=now)
                      for r in targets]
            self._journal.commit_events(events)
        return [r.id for r in targets]

    def resolve(self, intake_id: str, reason_slug: str) -> None:
        """Record ``operator_resolved``: loss-accepting, duplicate protection kept (C4).

        Refuses a pending record with a retained capture plan: its next attempt completes it
        (DESIGN 5). A dead one may be resolved."""
        check_slug(reason_slug)
        with self._work_lock:
            with self._journal.cv:
                record = self.record(intake_id)
            if record.state == "resolved":
                raise MemoryEsError(f"intake {intake_id} is already resolved "
                                    f"({record.outcome}); nothing to do", code="already_resolved")
            if record.retained is not None and record.state == "pending":
                raise MemoryEsError(
                    f"intake {intake_id} has a retained capture plan (stage "
                    f"{record.retained}) that its next attempt completes without asking the "
                    "model again; resolving it would lose that capture", code="plan_retained")
            event = Intake.resolved(run_hash=record.id, version=record.revision,
                                    at=self._clock(), outcome="operator_resolved",
                                    reason_slug=reason_slug)
            self._journal.commit_events([event])
        self.prune_payloads()
