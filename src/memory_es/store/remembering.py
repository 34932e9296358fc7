"""Remember (SPEC J): one explicitly stated fact, written now, without waiting for capture.

A text-only write (every tier, J6) becomes a ``Memory.Recorded`` note (``source: remember``);
an enhanced write (BuJo: ``about``, ``supersedes``, ``replaceable`` or a validity) becomes a
``Memory.Remembered`` note, assistant-noted (J9), with a ``Memory.Superseded`` of the line it
replaces in the same commit (J8). Either id is the content hash of the text (J4, the Journal
identity, D3). The events are committed and projected into the daily Markdown and the index
under the same hold of the journal, so the fact is recallable the moment the call returns
(J1). Writing it again is a ``duplicate`` that changes nothing (not even a replaceable marker,
J11), and completes the projection if a crash left the event without its line (N11); the
session of the first write is kept (J12). Text carrying a credential is refused with nothing
written (J5). Capture switches do not apply (J14).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

import apsw

from memory_es.bounds import describe
from memory_es.browse.inventory import resolve_id
from memory_es.capture.contracts.common import TEXT_MAX_BYTES, check_safe_text
from memory_es.credentials import CREDENTIAL_RULE
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.events import Memory
from memory_es.ids import memory_uuid, remember_id
from memory_es.journal import OpenedJournal
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.text import journal_text
from memory_es.validity import check_interval, check_validity
from memory_es.vocabulary import LIVE_STATUSES, REMEMBER_SOURCE
from projections.search import same_text

_REF = re.compile(r"[0-9a-f]{8,64}")


@dataclass(frozen=True)
class RememberResult:
    """``remembered`` (written now) or ``duplicate`` (this exact text is already stored)."""

    status: Literal["remembered", "duplicate"]
    memory_id: str

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "id": self.memory_id}


def checked_text(text: object) -> str:
    """The normalised fact, or a one-line error: empty, too long, unsafe (J5: credentials
    are refused as ``remember_credential``, nothing written)."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"remember: text must be a string, got {type(text).__name__}",
                                   code="remember_invalid_text")
    clean = journal_text(text)
    if not clean:
        raise InvalidArgumentError("remember: text is empty", code="remember_invalid_text")
    rule = check_safe_text(clean)
    if rule == CREDENTIAL_RULE:
        raise MemoryEsError("remember_credential: the text looks like a credential; nothing "
                            "was written (J5)", code="remember_credential")
    if rule is not None:
        raise InvalidArgumentError(f"remember: text {rule}", code="remember_invalid_text")
    size = len(clean.encode("utf-8"))
    if size > TEXT_MAX_BYTES:
        raise InvalidArgumentError(f"remember: text is {size} UTF-8 bytes; at most "
                                   f"{TEXT_MAX_BYTES}", code="remember_invalid_text")
    return clean


@dataclass(frozen=True)
class RememberTerms:
    """An enhanced write's options, checked (J6-J10, G13-G15). All empty: a text-only write."""

    about: str | None = None
    supersedes: str | None = None
    replaceable: bool = False
    valid_from: str | None = None
    valid_to: str | None = None
    due_at: str | None = None

    @property
    def enhanced(self) -> bool:
        return self != RememberTerms()

    @classmethod
    def checked(cls, *, about: object = None, supersedes: object = None,
                replaceable: object = False, valid_from: object = None,
                valid_to: object = None, due_at: object = None) -> RememberTerms:
        """The options as given, or a one-line usage error naming the bad one."""
        if not isinstance(replaceable, bool):
            raise InvalidArgumentError(f"remember: replaceable must be true or false, got "
                                       f"{describe(replaceable)}", code="invalid_argument")
        for name, ref in (("about", about), ("supersedes", supersedes)):
            if ref is not None and (not isinstance(ref, str) or not _REF.fullmatch(ref)):
                raise InvalidArgumentError(
                    f"remember: {name} must be an id (8 to 64 lowercase hex characters), got "
                    f"{describe(ref)}", code="invalid_argument")
        terms = cls(about=cast(str | None, about), supersedes=cast(str | None, supersedes),
                    replaceable=replaceable, valid_from=check_validity("valid_from", valid_from),
                    valid_to=check_validity("valid_to", valid_to),
                    due_at=check_validity("due_at", due_at))
        check_interval(terms.valid_from, terms.valid_to)
        return terms


def check_tier(terms: RememberTerms, tier: str) -> None:
    """Lite and Journal take text-only writes (J6): ``remember_text_only`` otherwise."""
    if terms.enhanced and tier != "bujo":
        raise MemoryEsError(f"remember_text_only: the {tier} tier takes text-only writes; "
                            "about, supersedes, replaceable and validity need BuJo (J6)",
                            code="remember_text_only")


def remember(opened: OpenedJournal, journal: GroupCommit, projections: LiveProjections,
             text: str, *, session: str | None, tier: str, now: datetime,
             terms: RememberTerms = RememberTerms()) -> RememberResult:
    """Write one fact and project it before returning (J1, J4, J7-J12, N11)."""
    clean = checked_text(text)
    check_tier(terms, tier)
    day = now.date().isoformat()
    with journal.exclusive():
        projections.catch_up()  # the repeat, about and supersedes checks read a caught-up index
        conn = projections.get().index.conn
        stored = same_text(conn, clean)  # J11: an exact repeat of a stored line, any status
        known = stored is not None
        memory_id = stored if stored is not None else remember_id(
            opened.recorder.max_notification_id() or 0, now.isoformat())
        if not known:
            if terms.enhanced:
                events = _enhanced(opened, conn, terms, memory_id,
                                   clean, day=day, session=session, tier=tier, now=now)
            else:
                events = [Memory.recorded(
                    at=now, memory_id=memory_id, kind="note", text=clean, day=day,
                    status="open", source=REMEMBER_SOURCE, session=session, run_hash=None,
                    tier=tier)]
            journal.commit_held(events)
        projections.catch_up()  # the daily line and the index row, in the same hold (J1)
    return RememberResult("duplicate" if known else "remembered", memory_id)


def _enhanced(opened: OpenedJournal, conn: apsw.Connection, terms: RememberTerms,
              memory_id: str, text: str, *, day: str, session: str | None, tier: str,
              now: datetime) -> list[object]:
    """The Remembered event, and the Superseded of the line it replaces (J7, J8, J10)."""
    about = existing_person(conn, terms.about) if terms.about is not None else None
    target = supersedable(conn, terms.supersedes) if terms.supersedes is not None else None
    events: list[object] = [Memory.remembered(
        at=now, memory_id=memory_id, text=text, day=day, session=session, tier=tier,
        about=about, replaceable=terms.replaceable, valid_from=terms.valid_from,
        valid_to=terms.valid_to, due_at=terms.due_at)]
    if target is not None:
        version = len(opened.recorder.aggregate_rows(memory_uuid(target)))
        events.append(Memory.superseded(version=version, at=now, memory_id=target,
                                        by=memory_id, status="superseded", run_hash=None))
    return events


def existing_person(conn: apsw.Connection, ref: str) -> str:
    """The person entity ``ref`` (a full id or a unique prefix) names; Remember never creates
    one (J7): ``remember_about_unknown`` otherwise."""
    rows = list(conn.execute("SELECT id FROM entities WHERE type = 'person' AND id >= ? "
                             "AND id < ? ORDER BY id LIMIT 2", (ref, ref + "g")))
    if len(rows) != 1:
        why = "no known person has" if not rows else "more than one person has"
        raise MemoryEsError(f"remember_about_unknown: {why} id {ref}; about links an existing "
                            "person and never creates one (J7)", code="remember_about_unknown")
    return str(rows[0][0])


def supersedable(conn: apsw.Connection, ref: str) -> str:
    """The line ``ref`` names, when a Remember may replace it (J8): a current captured note
    or event, or an enhanced Remember line; never a task, an uncurated observation, a
    text-only Remember line, a preference, a lesson or an owner-stated fact."""
    target = resolve_id(conn, ref)
    row: Any = conn.execute(
        "SELECT m.kind, m.status, m.source, mm.id IS NOT NULL, coalesce(mm.labels, '') "
        "FROM memories m LEFT JOIN memory_meta mm ON mm.id = m.id WHERE m.id = ?",
        (target,)).fetchone()
    kind, status, source, curated, labels = row
    kinds = set(str(labels).split(","))
    why = None
    if status not in LIVE_STATUSES:
        why = f"it is {status}, not current"
    elif kind not in ("note", "event"):
        why = f"it is a {kind}; only notes and events can be superseded"
    elif not curated:
        why = ("it is a text-only Remember line" if source == REMEMBER_SOURCE
               else "it is an uncaptured observation")
    elif kinds & {"preference", "lesson"}:
        why = f"it is a {sorted(kinds & {'preference', 'lesson'})[0]}"
    elif "fact" in kinds and source == "user":
        why = "it is an owner-stated fact"
    if why is not None:
        raise MemoryEsError(f"remember_supersedes_refused: {target[:16]}... cannot be "
                            f"superseded: {why} (J8)", code="remember_supersedes_refused")
    return target
