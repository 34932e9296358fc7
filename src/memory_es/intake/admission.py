"""Intake admission (A2-A8, A10, A12-A13, B1-B5, B18, B28): the turn a host hands over, the
rules that skip, reject or admit it, and the fields of ``Intake.Admitted``.

Pure functions of their inputs: the store supplies the clock, the journal and the lock, and
checks duplicates and capacity (``MAX_ACTIVE``) when it commits.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta

from memory_es.events import Intake
from memory_es.ids import run_hash
from memory_es.intake.state import SEALED_PAYLOAD

SENTINEL = "NOTHING_TO_REPORT"
MAX_RECORD_BYTES = 640 * 1024  # B18: 640 KiB per record
MAX_ACTIVE = 4096  # B18: pending + dead
Outcome = Literal["success", "cancelled", "failed", "interrupted", "isolated", "never_started"]
SpeakerKind = Literal["human-turn", "trigger", "unknown"]
Trigger = Literal["human", "cron", "webhook"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
SPEAKER_KINDS: tuple[str, ...] = get_args(SpeakerKind)
TRIGGERS: tuple[str, ...] = get_args(Trigger)
SOURCE_LABELS = {"human": "User", "cron": "scheduled-task", "webhook": "webhook"}

Status = Literal["admitted", "duplicate", "skipped", "rejected"]


class Attachment(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Redacted attachment metadata (A25): never the attachment's text or name."""

    media_type: str
    size_bytes: Annotated[int, Meta(ge=0)]
    sha256: str | None = None


class CompletedTurn(msgspec.Struct, frozen=True, kw_only=True):
    """What a host hands over after a turn reached its successful commit boundary (B27).

    ``answer`` is the assistant answer, the only source of the host summary (A10).
    ``capture_text`` is the host-approved text for BuJo capture (A4); other write modes ignore
    it. ``speaker_kind`` is host-verified provenance and is stored exactly as given (B28).

    The field types state the rules; msgspec checks them on decode, not on construction, so
    the store checks a constructed turn with :func:`validate_turn` (never raising into a host).
    """

    run_id: Annotated[str, Meta(pattern=r"\S")]  # not empty, not only white space
    outcome: Outcome
    answer: str
    capture_text: str | None = None
    session: str | None = None
    speaker_kind: SpeakerKind = "unknown"
    trigger: Trigger = "human"
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
    payload_sha256: str | None
    summary: str
    write_mode: str
    tier: str
    speaker_kind: str
    source_label: str
    session: str | None
    trigger: str
    attachments: list[dict[str, Any]]

    def admitted(self, at: datetime, *, sealed: bool = False) -> Intake.Admitted:
        """The ``Intake.Admitted`` event of this turn, stamped ``at``. A journal that seals
        keeps the capture text's digest and length out of the event (``SEALED_PAYLOAD``)."""
        payload_sha256 = self.payload_sha256
        if sealed and payload_sha256 is not None:
            payload_sha256 = SEALED_PAYLOAD
        return Intake.admitted(
            at=at, run_hash=self.run_hash, content_sha256=self.content_sha256,
            content_bytes=self.content_bytes, payload_sha256=payload_sha256,
            payload_bytes=0 if self.payload is None or sealed else len(self.payload),
            summary=self.summary, write_mode=self.write_mode, tier=self.tier,
            speaker_kind=self.speaker_kind, source_label=self.source_label,
            session=self.session, trigger=self.trigger, attachments=self.attachments)


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


_TEXT_FIELDS = ("run_id", "outcome", "answer", "capture_text", "session", "speaker_kind",
                "trigger", "source_label")
_AT = re.compile(r"^(?P<rule>.*) - at `\$\.(?P<path>[^`]*)`$", re.DOTALL)
# msgspec's rule text for a constraint of the types above, in the words a host reads.
_RULES = {
    "Expected `str` matching regex '\\\\S'": "must not be empty",
    "Expected `int` >= 0": "must be a non-negative integer",
    "Expected `array`, got `str`": "expected a list of attachment metadata",
}


def _unencodable_field(turn: CompletedTurn) -> str:
    """Name the field holding an unpaired surrogate (slow path, after encoding failed)."""
    for name in _TEXT_FIELDS:
        value = getattr(turn, name)
        try:
            if value is not None:
                value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{name}: contains an unpaired surrogate (not valid UTF-8)"
    return "attachments: contains an unpaired surrogate (not valid UTF-8)"


def _field_problem(error: msgspec.ValidationError) -> str:
    """``field: rule`` from msgspec's ``rule - at `$.field` ``."""
    match = _AT.match(str(error))
    if match is None:
        return str(error)
    path, rule = match.group("path"), match.group("rule")
    choices = {"outcome": OUTCOMES, "speaker_kind": SPEAKER_KINDS, "trigger": TRIGGERS}
    if rule.startswith("Invalid enum value") and path in choices:
        value = rule.removeprefix("Invalid enum value ")
        return f"{path}: {value} is not one of {', '.join(choices[path])}"
    return f"{path}: {_RULES.get(rule, rule[:1].lower() + rule[1:])}"


def validate_turn(turn: CompletedTurn) -> str | None:
    """The first problem with the turn's fields, as a one-line detail naming the field, or None.

    The fields' declared types and constraints are checked by converting the turn's values
    strictly (a constructed Struct is never checked by msgspec itself); then the rules that
    span two fields. UTF-8 validity is checked when the record is encoded, not here: admission
    is a hot path.
    """
    attachments: Any = turn.attachments
    if isinstance(attachments, tuple | list):
        for i, att in enumerate(attachments):
            if not isinstance(att, Attachment):  # a dict is data, not the host's metadata type
                return f"attachments[{i}]: expected Attachment metadata"
        attachments = [msgspec.structs.asdict(a) for a in attachments]
    values = {name: getattr(turn, name) for name in _TEXT_FIELDS}
    try:
        msgspec.convert({**values, "attachments": attachments}, CompletedTurn, strict=True)
    except msgspec.ValidationError as e:
        return _field_problem(e)
    expected_label = SOURCE_LABELS[turn.trigger]
    if turn.source_label is not None and turn.source_label != expected_label:
        return (f"source_label: {turn.source_label!r} does not match trigger {turn.trigger!r} "
                f"(expected {expected_label!r}; trigger turns are never labelled User)")
    if turn.trigger != "human" and turn.speaker_kind == "human-turn":
        return f"speaker_kind: a {turn.trigger} turn cannot be a human-turn"
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
    try:
        rh = run_hash(turn.run_id)
    except UnicodeEncodeError:
        return _invalid(_unencodable_field(turn))
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
    return PreparedIntake(
        run_hash=rh, content_sha256=content_sha256, content_bytes=len(encoded), payload=payload,
        payload_sha256=hashlib.sha256(payload).hexdigest() if payload is not None else None,
        summary=turn.answer, write_mode=write_mode, tier=tier, speaker_kind=turn.speaker_kind,
        source_label=SOURCE_LABELS[turn.trigger], session=turn.session, trigger=turn.trigger,
        attachments=attachments)


def repeat_result(p: PreparedIntake, known_hash: str) -> AdmissionResult:
    """B3: same bytes is a successful duplicate; other bytes fail closed. A forgotten turn's
    digest went with its key: nothing can say the bytes are the same, so that fails closed too."""
    if not known_hash:
        return AdmissionResult(
            status="rejected", intake_id=p.run_hash, code="run_id_forgotten",
            detail="this run id's turn was forgotten; nothing written",
        )
    if known_hash == p.content_sha256:
        return AdmissionResult(status="duplicate", intake_id=p.run_hash)
    return AdmissionResult(
        status="rejected", intake_id=p.run_hash, code="run_id_conflict",
        detail="this run id was admitted with different content",
    )
