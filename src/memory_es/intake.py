"""Intake admission rules (A2-A8, A10, A12-A13, B1-B5, B18, B28) and the content-free intake view.

Everything here is a pure function of its inputs: the store supplies the clock, the journal
and the lock. ``prepare_turn`` decides skip / reject / admit for one turn; ``IntakeView`` folds
Intake events into the states operators inspect (C1, C2).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import msgspec

from memory_es.events import Intake
from memory_es.ids import run_hash

SENTINEL = "NOTHING_TO_REPORT"
MAX_RECORD_BYTES = 640 * 1024  # B18: 640 KiB per record
MAX_ACTIVE = 4096  # B18: pending + dead
OUTCOMES = ("success", "cancelled", "failed", "interrupted", "isolated", "never_started")
SPEAKER_KINDS = ("human-turn", "trigger", "unknown")
TRIGGERS = ("human", "cron", "webhook")
SOURCE_LABELS = {"human": "User", "cron": "scheduled-task", "webhook": "webhook"}

Status = Literal["admitted", "duplicate", "skipped", "rejected"]


class Attachment(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Redacted attachment metadata (A25): never the attachment's text or name."""

    media_type: str
    size_bytes: int
    sha256: str | None = None


class CompletedTurn(msgspec.Struct, frozen=True, kw_only=True):
    """What a host hands over after a turn reached its successful commit boundary (B27).

    ``answer`` is the assistant answer, the only source of the host summary (A10).
    ``capture_text`` is the host-approved text for BuJo capture (A4); other write modes ignore
    it. ``speaker_kind`` is host-verified provenance and is stored exactly as given (B28).
    """

    run_id: str
    outcome: str
    answer: str
    capture_text: str | None = None
    session: str | None = None
    speaker_kind: str = "unknown"
    trigger: str = "human"
    source_label: str | None = None
    attachments: tuple[Attachment, ...] = ()


class AdmissionResult(msgspec.Struct, frozen=True, kw_only=True):
    """The structured answer to an admission (B4): never an exception into the host."""

    status: Status
    intake_id: str | None = None
    code: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        """True unless rejected: durably recorded (admitted, duplicate) or deliberately skipped."""
        return self.status != "rejected"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "intake_id": self.intake_id,
                               "code": self.code}
        if self.detail is not None:
            out["detail"] = self.detail
        return out


class PreparedIntake(msgspec.Struct, frozen=True, kw_only=True):
    """A turn that passed every per-turn rule; the store still checks duplicates and capacity."""

    run_hash: str
    content_sha256: str
    content_bytes: int
    payload: bytes | None
    fields: dict[str, Any]


def utc_now() -> datetime:
    """The default clock: UTC, truncated to milliseconds (the precision events carry)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)



def is_nothing_to_report(answer: str) -> bool:
    """A6: the sentinel alone, or ending the answer's final line."""
    text = answer.strip()
    if text == SENTINEL:
        return True
    if not text.endswith(SENTINEL):
        return False
    before = text[: -len(SENTINEL)][-1:]  # the sentinel must be a whole word on the last line
    return before == "\n" or not (before.isalnum() or before == "_")


def _rejected(code: str, detail: str, intake_id: str | None = None) -> AdmissionResult:
    return AdmissionResult(status="rejected", intake_id=intake_id, code=code, detail=detail)


def _invalid(detail: str) -> AdmissionResult:
    return _rejected("invalid_turn", detail)


_TEXT_FIELDS = (("run_id", False), ("outcome", False), ("answer", False),
                ("capture_text", True), ("session", True), ("speaker_kind", False),
                ("trigger", False), ("source_label", True))


def _unencodable_field(turn: CompletedTurn) -> str:
    """Name the field holding an unpaired surrogate (slow path, after encoding failed)."""
    for name, _ in _TEXT_FIELDS:
        value = getattr(turn, name)
        try:
            if value is not None:
                value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{name}: contains an unpaired surrogate (not valid UTF-8)"
    return "attachments: contains an unpaired surrogate (not valid UTF-8)"


def validate_turn(turn: CompletedTurn) -> str | None:
    """The first problem with the turn's fields, as a one-line detail, or None.

    UTF-8 validity is checked when the record is encoded, not here: admission is a hot path.
    """
    for name, optional in _TEXT_FIELDS:
        value = getattr(turn, name)
        if type(value) is not str and not (value is None and optional):
            return f"{name}: expected a string, got {type(value).__name__}"
    if not turn.run_id.strip():
        return "run_id: must not be empty"
    if turn.outcome not in OUTCOMES:
        return f"outcome: {turn.outcome!r} is not one of {', '.join(OUTCOMES)}"
    if turn.speaker_kind not in SPEAKER_KINDS:
        return f"speaker_kind: {turn.speaker_kind!r} is not one of {', '.join(SPEAKER_KINDS)}"
    if turn.trigger not in TRIGGERS:
        return f"trigger: {turn.trigger!r} is not one of {', '.join(TRIGGERS)}"
    expected_label = SOURCE_LABELS[turn.trigger]
    if turn.source_label is not None and turn.source_label != expected_label:
        return (f"source_label: {turn.source_label!r} does not match trigger {turn.trigger!r} "
                f"(expected {expected_label!r}; trigger turns are never labelled User)")
    if turn.trigger != "human" and turn.speaker_kind == "human-turn":
        return f"speaker_kind: a {turn.trigger} turn cannot be a human-turn"
    if not isinstance(turn.attachments, tuple | list):
        return "attachments: expected a list of attachment metadata"
    for i, att in enumerate(turn.attachments):
        if not isinstance(att, Attachment):
            return f"attachments[{i}]: expected Attachment metadata"
        if not isinstance(att.size_bytes, int) or att.size_bytes < 0:
            return f"attachments[{i}].size_bytes: must be a non-negative integer"
    return None


def prepare_turn(
    turn: CompletedTurn, *, tier: str, write_mode: str, capture_cron: bool, capture_webhook: bool
) -> AdmissionResult | PreparedIntake:
    """Apply every per-turn rule; return a final result (skip/reject) or the record to admit."""
    if not isinstance(turn, CompletedTurn):
        return _invalid(f"expected a CompletedTurn, got {type(turn).__name__}")
    problem = validate_turn(turn)
    if problem:
        return _invalid(problem)
    rh = run_hash(turn.run_id)
    if turn.outcome != "success":  # A8: only the successful commit boundary qualifies
        return _rejected("turn_not_successful",
                         f"outcome {turn.outcome!r}: only successful turns are admitted", rh)
    if write_mode == "disabled":  # A2
        return AdmissionResult(status="skipped", intake_id=rh, code="write_mode_disabled")
    if is_nothing_to_report(turn.answer):  # A6
        return AdmissionResult(status="skipped", intake_id=rh, code="nothing_to_report")
    if (turn.trigger == "cron" and not capture_cron) or (
        turn.trigger == "webhook" and not capture_webhook
    ):  # A12, A13: no intake and so no audit line
        return AdmissionResult(status="skipped", intake_id=rh,
                               code=f"{turn.trigger}_capture_disabled")
    capture_text = turn.capture_text if write_mode == "capture" else None
    attachments = [msgspec.structs.asdict(a) for a in turn.attachments]
    record = {
        "answer": turn.answer,
        "attachments": attachments,
        "capture_text": capture_text,
        "session": turn.session,
        "source_label": SOURCE_LABELS[turn.trigger],
        "speaker_kind": turn.speaker_kind,
        "trigger": turn.trigger,
    }
    try:
        encoded = msgspec.json.encode(record, order="sorted")
    except UnicodeEncodeError:
        return _invalid(_unencodable_field(turn))
    if len(encoded) > MAX_RECORD_BYTES:
        return _rejected("record_too_large",
                         f"record is {len(encoded)} bytes; the limit is {MAX_RECORD_BYTES} "
                         "(640 KiB)", rh)
    payload = capture_text.encode("utf-8") if capture_text is not None else None
    content_sha256 = hashlib.sha256(encoded).hexdigest()
    fields = {
        "run_hash": rh,
        "content_sha256": content_sha256,
        "content_bytes": len(encoded),
        "payload_sha256": hashlib.sha256(payload).hexdigest() if payload is not None else None,
        "payload_bytes": len(payload) if payload is not None else 0,
        "summary": turn.answer,
        "write_mode": write_mode,
        "tier": tier,
        "speaker_kind": turn.speaker_kind,
        "source_label": SOURCE_LABELS[turn.trigger],
        "session": turn.session,
        "trigger": turn.trigger,
        "attachments": attachments,
    }
    return PreparedIntake(run_hash=rh, content_sha256=content_sha256,
                          content_bytes=len(encoded), payload=payload, fields=fields)


# --------------------------------------------------------------------------------------------
# Content-free view of intakes, folded from events.


MAX_ATTEMPTS = 16  # B7
BASE_DELAY = timedelta(minutes=1)
MAX_DELAY = timedelta(hours=6)
CATEGORIES = ("model_timeout", "model_invalid_output", "model_unavailable",
              "embedding_unavailable", "io_error", "internal")


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
    state: str  # pending | dead | resolved
    attempts: int
    failures: int
    revision: int
    position: int
    admitted_at: datetime
    next_due_at: datetime | None
    category: str | None
    content_sha256: str
    tier: str
    write_mode: str
    payload_sha256: str | None
    outcome: str | None = None
    reason_slug: str | None = None
    resolved_position: int | None = None
    retained: str | None = None  # the last retained capture stage: extract|review|reconcile

    def due(self, now: datetime) -> bool:
        return self.state == "pending" and self.next_due_at is not None and \
            self.next_due_at <= now

    @property
    def needs_model(self) -> bool:
        """BuJo capture intakes wait for the capture pipeline (a later issue)."""
        return self.tier == "bujo" and self.write_mode == "capture"


ACTIVE_STATES = ("pending", "dead")
RETAINED_STAGE: dict[type, str] = {
    Intake.ExtractionRetained: "extract",
    Intake.ReviewRetained: "review",
    Intake.ReconcileRetained: "reconcile",
}
RETAINED = (Intake.ExtractionRetained, Intake.ReviewRetained, Intake.ReconcileRetained)


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

    def apply(self, position: int, event: object) -> None:
        if isinstance(event, Intake.Admitted):
            admitted = IntakeState(
                id=event.run_hash, state="pending", attempts=0, failures=0,
                revision=event.originator_version, position=position,
                admitted_at=event.timestamp, next_due_at=event.timestamp, category=None,
                content_sha256=event.content_sha256, tier=event.tier, write_mode=event.write_mode,
                payload_sha256=event.payload_sha256,
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
            record.category, record.next_due_at = event.category, event.next_due_at
        elif isinstance(event, Intake.DeadLettered):
            record.attempts, record.failures = event.attempt, record.failures + 1
            record.category, record.next_due_at, record.state = event.category, None, "dead"
        elif isinstance(event, Intake.RetryRequested):
            record.state, record.failures, record.next_due_at = "pending", 0, event.timestamp
        elif isinstance(event, Intake.Resolved):
            self._resolve(record, position, event)
        elif isinstance(event, RETAINED):
            record.retained = RETAINED_STAGE[type(event)]
        else:
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
        record.outcome, record.reason_slug = event.outcome, event.reason_slug
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

    def counts(self, now: datetime) -> dict[str, int]:
        """Content-free counts; scans only unresolved records (at most 4,096)."""
        counts = {"pending": 0, "due": 0, "delayed": 0, "dead": 0, "resolved": self.resolved}
        for r in self._unresolved.values():
            counts[r.state] += 1
            if r.state == "pending":
                counts["due" if r.due(now) else "delayed"] += 1
        counts["active"] = counts["pending"] + counts["dead"]
        counts["total"] = self.total
        counts["transitions"] = self.transitions
        return counts

    def report(self, now: datetime, intake_id: str | None = None) -> dict[str, Any]:
        """The ``inspect --json`` object: ``counts`` and ``records`` (each with id and state)."""
        records = sorted(self.records.values(), key=lambda r: r.position)
        if intake_id is not None:
            records = [r for r in records if r.id == intake_id]
        return {
            "counts": self.counts(now),
            "records": [record_json(r, now) for r in records],
        }


def _iso(ts: datetime | None) -> str | None:
    if ts is None:
        return None
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_json(r: IntakeState, now: datetime) -> dict[str, Any]:
    return {
        "id": r.id,
        "state": r.state,
        "due": r.due(now),
        "attempts": r.attempts,
        "failures": r.failures,
        "attempts_left": MAX_ATTEMPTS - r.failures if r.state == "pending" else 0,
        "revision": r.revision,
        "position": r.position,
        "admitted_at": _iso(r.admitted_at),
        "next_due_at": _iso(r.next_due_at),
        "category": r.category,
        "outcome": r.outcome,
        "reason_slug": r.reason_slug,
        "retained": r.retained,
    }
