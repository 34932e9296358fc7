"""The intake state machine (B6-B9, B32): the content-free ``IntakeState`` of each intake, the
``IntakeView`` that folds Intake events into them, the failure categories and the backoff
schedule (``failure_event``), and the report an operator inspects (C1, C2).
"""

from __future__ import annotations

import hashlib
from collections import deque
from datetime import datetime, timedelta
from typing import Any, cast, get_args

import msgspec

from memory_es.events import Intake
from memory_es.intake.report import (
    FailureCategory,
    ForgetLog,
    ForgetRecord,
    IntakeCounts,
    IntakeRecord,
    IntakeReport,
    IntakeStatus,
    ResolvedOutcome,
    RetainedStage,
)

MAX_ATTEMPTS = 16  # B7
FORGET_LOG = 50  # the latest forgets a view keeps for the operator (the journal has them all)
BASE_DELAY = timedelta(minutes=1)
MAX_DELAY = timedelta(hours=6)
CATEGORIES: tuple[FailureCategory, ...] = get_args(FailureCategory)


def backoff_delay(failure: int) -> timedelta:
    """Delay after the ``failure``-th failed attempt: min(60 s x 2^(k-1), 6 h) (DESIGN 5)."""
    if failure >= 10:  # 2^9 min already exceeds the cap; avoid huge powers
        return MAX_DELAY
    delay: timedelta = BASE_DELAY * 2 ** (failure - 1)
    return min(delay, MAX_DELAY)


class IntakeState(msgspec.Struct, kw_only=True):
    """What an operator may see of one intake (C1, C2): no summary, no capture text.

    ``failures`` counts failed attempts since admission or the last operator retry: the
    16-attempt budget (B7). ``attempts`` counts every attempt ever made.
    """

    id: str
    state: IntakeStatus
    attempts: int
    failures: int
    revision: int
    position: int
    admitted_at: datetime
    next_due_at: datetime | None
    category: FailureCategory | None
    content_sha256: str
    tier: str
    write_mode: str
    payload_sha256: str | None
    payload_bytes: int = 0
    outcome: ResolvedOutcome | None = None
    reason_slug: str | None = None
    resolved_position: int | None = None
    retained: RetainedStage | None = None  # the last retained capture stage

    def due(self, now: datetime) -> bool:
        return self.state == "pending" and self.next_due_at is not None and \
            self.next_due_at <= now

    @property
    def needs_model(self) -> bool:
        """BuJo capture intakes wait for a chat model: the capture pipeline runs them."""
        return self.tier == "bujo" and self.write_mode == "capture"


ACTIVE_STATES: tuple[IntakeStatus, ...] = ("pending", "dead")
RETAINED_STAGE: dict[type, RetainedStage] = {
    Intake.ExtractionRetained: "extract",
    Intake.ReviewRetained: "review",
    Intake.ReconcileRetained: "reconcile",
}
RETAINED = (Intake.ExtractionRetained, Intake.ReviewRetained, Intake.ReconcileRetained)


# ``payload_sha256`` of a payload the journal seals: authenticity is its AES-GCM tag (bound to
# the intake id), so no digest or length of the capture text is kept in the clear.
SEALED_PAYLOAD = "sealed"


def payload_problem(record: IntakeState, data: bytes | None) -> str | None:
    """``missing`` or ``mismatch`` when an intake's stored capture text is not exactly what
    ``Intake.Admitted`` recorded (SHA-256 and length, B5); None when it is, or when the intake
    kept none. The worker checks before every step and fails closed; health reports it."""
    if record.payload_sha256 is None:
        return None
    if data is None:
        return "missing"
    if record.payload_sha256 == SEALED_PAYLOAD:
        return None  # it opened (the caller checks it was sealed): the tag proves the bytes
    if len(data) != record.payload_bytes or hashlib.sha256(data).hexdigest() != \
            record.payload_sha256:
        return "mismatch"
    return None


def failure_event(record: IntakeState, category: str, at: datetime) -> Any:
    """The event a failed attempt commits: AttemptFailed, or DeadLettered on the 16th (B7)."""
    failure = record.failures + 1
    if failure >= MAX_ATTEMPTS:
        return Intake.dead_lettered(run_hash=record.id, version=record.revision,
                                    at=at, attempt=record.attempts + 1, category=category)
    return Intake.attempt_failed(run_hash=record.id, version=record.revision,
                                 at=at, attempt=record.attempts + 1, category=category,
                                 next_due_at=at + backoff_delay(failure))


class IntakeView:
    """Intake states by run hash: a pure fold of Intake events in journal order (B32).

    With ``retain_resolved=False`` (the live store) a resolved record is dropped after its
    last transition, so memory stays bounded by the 4,096 active records however many turns
    a store has seen; the journal answers for resolved ones. Operator reports fold with
    ``retain_resolved=True``.
    """

    def __init__(self, *, retain_resolved: bool = True) -> None:
        self.retain_resolved = retain_resolved
        self.records: dict[str, IntakeState] = {}  # every record, or only unresolved ones
        self._by_aggregate: dict[object, IntakeState] = {}  # later events carry only the uuid
        self._unresolved: dict[str, IntakeState] = {}  # pending + dead: what counts scan
        self.active = 0  # pending + dead, kept incrementally: admission checks it every commit
        self.resolved = 0
        self.total = 0
        self.transitions = 0
        # Resolved intakes with capture text, in resolution order: whose payloads to keep (B9).
        self.resolved_payloads: dict[str, None] = {}
        # The journal position folded up to (every event, intake or not): where a store on a
        # shared journal goes on folding what other hosts appended.
        self.position = 0
        self.forgets: deque[ForgetRecord] = deque(maxlen=FORGET_LOG)
        self.forget_total = 0

    def note_forget(self, position: int, event: Any) -> None:
        """A ``Memory.Forgotten`` or ``Intake.Forgotten`` event, kept content-free."""
        memory = getattr(event, "memory_id", None)
        self.forgets.append(ForgetRecord(
            position=position, at=event.timestamp, kind="turn" if memory is None else "memory",
            subject=str(memory if memory is not None else getattr(event, "run_hash", "")),
            reason=str(event.reason), keys_destroyed=len(event.key_ids),
            entities_pruned=len(getattr(event, "entity_ids", ())),
            turns_erased=len(getattr(event, "run_hashes", ()))))
        self.forget_total += 1

    def forget_log(self) -> ForgetLog:
        return ForgetLog(total=self.forget_total, recent=tuple(reversed(self.forgets)))

    def apply(self, position: int, event: object) -> None:
        if isinstance(event, Intake.Admitted):
            admitted = IntakeState(
                id=event.run_hash, state="pending", attempts=0, failures=0,
                revision=event.originator_version, position=position,
                admitted_at=event.timestamp, next_due_at=event.timestamp, category=None,
                content_sha256=event.content_sha256, tier=event.tier, write_mode=event.write_mode,
                payload_sha256=event.payload_sha256, payload_bytes=event.payload_bytes,
            )
            self.records[admitted.id] = self._unresolved[admitted.id] = admitted
            self._by_aggregate[event.originator_id] = admitted
            self.active += 1
            self.total += 1
            self.transitions += 1
            return
        record = self._by_aggregate.get(getattr(event, "originator_id", None))
        if record is None:
            return
        if isinstance(event, Intake.AttemptFailed):
            record.attempts, record.failures = event.attempt, record.failures + 1
            record.category = cast(FailureCategory, event.category)
            record.next_due_at = event.next_due_at
        elif isinstance(event, Intake.DeadLettered):
            record.attempts, record.failures = event.attempt, record.failures + 1
            record.category = cast(FailureCategory, event.category)
            record.next_due_at, record.state = None, "dead"
        elif isinstance(event, Intake.RetryRequested):
            record.state, record.failures, record.next_due_at = "pending", 0, event.timestamp
        elif isinstance(event, Intake.Resolved):
            self._resolve(record, position, event)
        elif isinstance(event, RETAINED):
            record.retained = RETAINED_STAGE[type(event)]
        elif not isinstance(event, Intake.Forgotten):  # its content erased
            return
        record.revision = event.originator_version
        self.transitions += 1

    def _resolve(self, record: IntakeState, position: int, event: Intake.Resolved) -> None:
        if record.state in ACTIVE_STATES:
            self.active -= 1
            self.resolved += 1
            self._unresolved.pop(record.id, None)
        if event.outcome != "operator_resolved":
            record.attempts += 1
        record.state, record.next_due_at = "resolved", None
        record.outcome = cast(ResolvedOutcome, event.outcome)
        record.reason_slug = event.reason_slug
        record.resolved_position = position
        if record.payload_sha256 is not None:
            self.resolved_payloads[record.id] = None
        if not self.retain_resolved:
            self.records.pop(record.id, None)
            self._by_aggregate.pop(event.originator_id, None)

    def prunable_payloads(self, keep: int) -> list[str]:
        """Resolved intakes with capture text beyond the newest ``keep`` resolutions (B9).

        Returned ids are forgotten here: the caller deletes their payloads.
        """
        excess = len(self.resolved_payloads) - keep
        if excess <= 0:
            return []
        oldest = list(self.resolved_payloads)[:excess]
        for intake_id in oldest:
            del self.resolved_payloads[intake_id]
        return oldest

    def unresolved(self) -> list[IntakeState]:
        """Pending and dead intakes, in admission order."""
        return sorted(self._unresolved.values(), key=lambda r: r.position)

    def due(self, now: datetime, *, with_model: bool = False) -> list[IntakeState]:
        """Pending intakes due at ``now``, in admission order (the worker's queue)."""
        return sorted(
            (r for r in self._unresolved.values()
             if r.due(now) and (with_model or not r.needs_model)),
            key=lambda r: r.position,
        )

    def next_due_at(self, *, with_model: bool = False) -> datetime | None:
        """The earliest due time of any pending intake (when the worker should wake)."""
        times = [r.next_due_at for r in self._unresolved.values()
                 if r.state == "pending" and r.next_due_at is not None
                 and (with_model or not r.needs_model)]
        return min(times) if times else None

    def counts(self, now: datetime) -> IntakeCounts:
        """Content-free counts; scans only unresolved records (at most 4,096)."""
        pending = due = dead = 0
        for r in self._unresolved.values():
            if r.state == "pending":
                pending += 1
                due += r.due(now)
            elif r.state == "dead":
                dead += 1
        return IntakeCounts(pending=pending, due=due, delayed=pending - due, dead=dead,
                            resolved=self.resolved, active=pending + dead, total=self.total,
                            transitions=self.transitions)

    def retained_count(self) -> int:
        """Unresolved intakes holding a retained capture stage (the curation queue, B24)."""
        return sum(1 for r in self._unresolved.values() if r.retained is not None)

    def report(self, now: datetime, intake_id: str | None = None) -> IntakeReport:
        """The ``inspect`` answer: ``counts`` and ``records`` in admission order (all of them,
        or the one named ``intake_id``)."""
        records = sorted(self.records.values(), key=lambda r: r.position)
        if intake_id is not None:
            records = [r for r in records if r.id == intake_id]
        return IntakeReport(counts=self.counts(now),
                            records=tuple(intake_record(r, now) for r in records))


def intake_record(r: IntakeState, now: datetime) -> IntakeRecord:
    """What an operator sees of one intake at ``now``."""
    return IntakeRecord(
        id=r.id, state=r.state, due=r.due(now), attempts=r.attempts, failures=r.failures,
        attempts_left=MAX_ATTEMPTS - r.failures if r.state == "pending" else 0,
        revision=r.revision, position=r.position, admitted_at=r.admitted_at,
        next_due_at=r.next_due_at, category=r.category, outcome=r.outcome,
        reason_slug=r.reason_slug, retained=r.retained,
    )
