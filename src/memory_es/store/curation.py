"""``memory-es curate decide`` (C14, M26): one reviewed decision of the curate audit, written
through the lifecycle transitions the journal already has, beside a content-free record of it
on the review log (``Root.Reviewed``), in one commit:

- ``keep``: the line means what intentExpiry will read; only the record is written;
- ``drop``: the line is obsolete: ``Memory.StatusChanged`` to the terminal ``dropped``;
- ``undate``: its date means nothing: ``Memory.DueStated`` with no date;
- ``retype``: it is another kind (a task, whose date stays a deadline; an event; a note):
  a copy of the line with that kind (``Memory.Captured``, its date and insight marker
  restated) supersedes it (``Memory.Superseded``), so the old line stays as history.

Only a live line the audit lists (:func:`~memory_es.browse.curation.findings_of`) takes a
decision, and only on a BuJo root (intentExpiry is a BuJo read policy). Nothing is changed
without a decision, and nothing reads the record but the audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any, Final

import apsw

from memory_es.bounds import describe
from memory_es.browse.curation import DECISIONS, RETYPE_KINDS, findings_of
from memory_es.browse.inventory import resolve_id
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.events import Memory, Root
from memory_es.ids import REVIEW_UUID, memory_uuid, retype_id
from memory_es.journal import OpenedJournal
from memory_es.recall.rank.select import host_zone
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.vocabulary import LIVE_STATUSES

REASON: Final = "curate_audit"  # the StatusChanged reason of a reviewed drop


@dataclass(frozen=True)
class Decision:
    """What a decision wrote: the line, the decision, a retype's kind and new line."""

    memory_id: str
    decision: str
    kind: str | None
    replaced_by: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.memory_id, "decision": self.decision, "kind": self.kind,
                "replacedBy": self.replaced_by}


def check_decision(decision: object, kind: object) -> tuple[str, str | None]:
    """The decision and a retype's kind, or a one-line usage error naming the bad one."""
    if not isinstance(decision, str) or decision not in DECISIONS:
        raise InvalidArgumentError(f"decision must be one of {', '.join(DECISIONS)}, got "
                                   f"{describe(decision)}")
    if decision != "retype":
        if kind is not None:
            raise InvalidArgumentError(f"--as is only for retype, not {decision}")
        return decision, None
    if not isinstance(kind, str) or kind not in RETYPE_KINDS:
        raise InvalidArgumentError(f"retype needs --as {'|'.join(RETYPE_KINDS)}"
                                   + ("" if kind is None else f", got {describe(kind)}"))
    return decision, kind


def decide(opened: OpenedJournal, journal: GroupCommit, projections: LiveProjections,
           memory_id: str, decision: str, *, kind: str | None, now: datetime,
           tz: tzinfo | None) -> Decision:
    """Write one reviewed decision and project it before returning; refused
    (``curate_refused``) for a line the audit does not list or a retype it cannot make."""
    decision, kind = check_decision(decision, kind)
    with journal.exclusive():
        projections.catch_up()
        conn = projections.get().index.conn
        full = resolve_id(conn, memory_id)
        line = _line(conn, full)
        if line["status"] not in LIVE_STATUSES:
            raise _refused(full, f"is {line['status']}: only live lines are reviewed")
        findings = findings_of(line["kind"], line["status"], line["due_at"], line["valid_to"],
                               line["from_task"], now, host_zone(now, tz))
        if not findings:
            raise _refused(full, f"is {line['kind']} [{line['status']}] with nothing "
                                 "intentExpiry would read differently")
        version = len(opened.recorder.aggregate_rows(memory_uuid(full)))
        events: list[Any] = []
        replaced_by = None
        if decision == "drop":
            events.append(Memory.status_changed(version=version, at=now, memory_id=full,
                                                status="dropped", reason=REASON))
        elif decision == "undate":
            if line["due_at"] is None:
                raise _refused(full, "has no date to remove")
            events.append(Memory.due_stated(version=version, at=now, memory_id=full,
                                            due_at=None))
        elif decision == "retype":
            assert kind is not None
            replaced_by, copy = _retyped(conn, opened, full, line, kind, version, now)
            events.extend(copy)
        log = len(opened.recorder.aggregate_rows(REVIEW_UUID))
        journal.commit_held([Root.reviewed(version=log, at=now, memory_id=full,
                                           decision=decision, kind=kind,
                                           replaced_by=replaced_by), *events])
        projections.catch_up()
    return Decision(full, decision, kind, replaced_by)


def _refused(memory_id: str, why: str) -> MemoryEsError:
    return MemoryEsError(f"curate_refused: {memory_id[:16]}... {why}", code="curate_refused")


def _line(conn: apsw.Connection, memory_id: str) -> dict[str, Any]:
    """The stored line as a decision needs it (index columns by name)."""
    row: Any = conn.execute(
        "SELECT m.kind, m.text, m.day, m.status, m.source, m.source_session, m.run_hash, "
        "m.recorded_at, "
        "m.tier, t.due_at, t.valid_to, COALESCE(t.insight, 0), t.about, "
        "COALESCE(t.replaceable, 0), t.valid_from, mm.labels, mm.scope, "
        "mm.salience, COALESCE(mm.from_task, 0), mm.fact_subject, mm.fact_key, mm.fact_value "
        "FROM memories m LEFT JOIN memory_terms t ON t.rowid = m.rowid "
        "LEFT JOIN memory_meta mm ON mm.rowid = m.rowid WHERE m.id = ?",
        (memory_id,)).fetchone()
    names = ("kind", "text", "day", "status", "source", "session", "run_hash", "recorded",
             "tier",
             "due_at", "valid_to", "insight", "about", "replaceable", "valid_from", "labels",
             "scope", "salience", "from_task",
             "fact_subject", "fact_key", "fact_value")
    line = dict(zip(names, row, strict=True))
    line["from_task"] = bool(line["from_task"])
    return line


def _retyped(conn: apsw.Connection, opened: OpenedJournal, memory_id: str,
             line: dict[str, Any], kind: str, version: int, now: datetime
             ) -> tuple[str, list[Any]]:
    """The events of a retype: the copy of kind ``kind`` (with its date and marker) and
    the old line superseded by it."""
    if line["kind"] == kind:
        raise _refused(memory_id, f"is already a {kind}")
    if line["about"] is not None or line["replaceable"] or line["valid_from"] is not None \
            or line["valid_to"] is not None:
        raise _refused(memory_id, "is a Remember stated with a validity, a person or as "
                                  "replaceable, which a retyped copy cannot keep; keep, drop "
                                  "or undate it, or remember it again")
    new_id = retype_id(memory_id, kind)
    if len(opened.recorder.aggregate_rows(memory_uuid(new_id))):
        raise _refused(memory_id, f"was retyped as {kind} before ({new_id[:16]}...)")
    entity_ids = [r[0] for r in conn.execute(
        "SELECT entity_id FROM memory_entities WHERE memory_id = ? ORDER BY ord",
        (memory_id,))]
    fact = None if line["fact_subject"] is None else {
        "subject": line["fact_subject"], "key": line["fact_key"], "value": line["fact_value"]}
    events: list[Any] = [Memory.captured(  # recorded when the line was: the same words
        at=datetime.fromisoformat(line["recorded"]), memory_id=new_id, kind=kind,
        text=line["text"], day=line["day"],
        status=line["status"], labels=[x for x in (line["labels"] or "").split(",") if x],
        entity_ids=entity_ids, scope=line["scope"] or "agent", source=line["source"],
        salience=float(line["salience"] or 0.0), from_task=line["from_task"],
        session=line["session"], run_hash=line["run_hash"], tier=line["tier"], fact=fact)]
    copied = 1
    if line["due_at"] is not None:
        events.append(Memory.due_stated(version=copied, at=now, memory_id=new_id,
                                        due_at=line["due_at"]))
        copied += 1
    if line["insight"]:
        events.append(Memory.marked(version=copied, at=now, memory_id=new_id, insight=True))
    events.append(Memory.superseded(version=version, at=now, memory_id=memory_id, by=new_id,
                                    status="superseded", run_hash=None))
    return new_id, events
