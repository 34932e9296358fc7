"""See what is stored: ``memory-es list`` and ``memory-es show`` (G13, G14,
G25, K2-K7, K14).

Both read one index connection (and, for ``show``, the journal events of the memory's own
aggregate) and change nothing. They are the only content-bearing operator reads: ``inspect``
and ``health`` stay content-free (C1, C2, N12). Field names are recall's (G25): ``id``,
``text``, ``type``, ``status``, ``createdAt`` (the recording instant), ``currentness``,
``attribution`` and ``source`` (``session``, ``intakeId``).

``list`` is newest first by recording instant, ties by id ascending; a page ends with a
keyset cursor (``<createdAt>~<id>`` of its last memory), so memories recorded while a user
pages never shift a page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, tzinfo
from typing import Any, Final

import apsw
from eventsourcing.persistence import StoredEvent

from memory_es.bounds import describe
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.ids import memory_uuid
from memory_es.indexread import optional_rows
from memory_es.journal import OpenedJournal
from memory_es.recall.rank.render import Currentness, format_instant
from memory_es.recall.rank.score import Candidate, Source
from memory_es.recall.rank.select import currentness
from memory_es.recall.retrieve.candidates import line_fields
from memory_es.text import iso_ms
from memory_es.text import truncate as truncate  # re-exported: the CLI's list and show
from memory_es.vocabulary import LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, LIST_STATUSES

# Every status a stored line can have (K14, DESIGN 9.8); forgotten lines are not stored.
MIN_PREFIX: Final = 8  # hex characters of a memory id prefix ``show`` accepts
MAX_CHAIN: Final = 64  # supersession links followed each way (a cycle cannot loop)
_PREFIX = re.compile(r"[0-9a-f]{8,64}")
_CURSOR = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)~([0-9a-f]{64})")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_COLUMNS = "m.id, m.text, m.kind, m.status, m.recorded_at, m.source_session, m.run_hash"


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored memory as ``list`` shows it (recall's field names, G25)."""

    id: str
    text: str
    type: str
    status: str
    created_at: datetime
    currentness: Currentness
    attribution: str | None  # H9: you said / assistant noted / from a document
    source: Source
    valid_from: date | datetime | None = None
    valid_to: date | datetime | None = None
    due_at: date | datetime | None = None
    insight: bool = False
    provenance_unknown: bool = False  # K7: no storable source conversation id

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": self.id, "text": self.text, "type": self.type, "status": self.status,
            "createdAt": format_instant(self.created_at), "currentness": self.currentness,
            "attribution": self.attribution, "source": self.source.to_json()}
        for key, value in (("validFrom", self.valid_from), ("validTo", self.valid_to),
                           ("dueAt", self.due_at)):
            if value is not None:  # G13: only the validity a line was stated with
                item[key] = value.isoformat()
        if self.insight:
            item["insight"] = True
        if self.provenance_unknown:  # K7: "source conversation unknown"
            item["provenanceUnknown"] = True
        return item


@dataclass(frozen=True, slots=True)
class MemoryList:
    """One page of ``list``: ``cursor`` continues it (None on the last page)."""

    memories: tuple[MemoryItem, ...]
    limit: int
    cursor: str | None

    def to_json(self) -> dict[str, Any]:
        return {"memories": [m.to_json() for m in self.memories], "limit": self.limit,
                "cursor": self.cursor}


@dataclass(frozen=True, slots=True)
class Link:
    """A supersession step: ``id`` replaced (or was replaced by) the memory shown; ``status``
    is what the step made of the older line (superseded, or invalidated for a task), ``at``
    when the step was recorded."""

    id: str
    text: str
    status: str
    at: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "status": self.status, "at": self.at}


@dataclass(frozen=True, slots=True)
class EventRef:
    """A journal event behind a memory: content-free (position, version, topic, instant)."""

    position: int
    version: int
    topic: str
    timestamp: str

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "version": self.version, "topic": self.topic,
                "timestamp": self.timestamp}


@dataclass(frozen=True, slots=True)
class StatusStep:
    """One change of a memory's status, read from its journal events: the status it came into
    being with (``before`` None), a lifecycle transition with its reason, a supersession with
    the line that replaced it (``by``)."""

    position: int
    at: str
    before: str | None
    after: str
    reason: str | None = None
    by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "at": self.at, "from": self.before,
                "to": self.after, "reason": self.reason, "by": self.by}


def status_steps(events: Iterable[tuple[int, Any]]) -> tuple[StatusStep, ...]:
    """The status history of one aggregate's decoded ``(position, event)`` pairs."""
    steps: list[StatusStep] = []
    current: str | None = None
    for position, event in events:
        name = type(event).__name__
        after = getattr(event, "status", None)
        if name in ("Recorded", "Captured", "Remembered"):
            after = after or "open"  # an enhanced Remember starts open (K14)
        elif name == "Forgotten":
            after = "forgotten"
        elif name == "MigrationForgotten":  # migrate's notes replaced it: invalidated (C12)
            after = "invalidated"
        elif name not in ("StatusChanged", "Superseded"):
            continue
        if not isinstance(after, str) or after == current:
            continue
        by = getattr(event, "by", None) or next(iter(getattr(event, "into", None) or []), None)
        steps.append(StatusStep(position, iso_ms(event.timestamp), current, after,
                                getattr(event, "reason", None), by))
        current = after
    return tuple(steps)


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    """Everything stored about one memory (``memory-es show``)."""

    memory: MemoryItem
    day: str
    tier: str
    origin: str  # the line's source label: host-summary, or the capture's bounded source
    labels: tuple[str, ...] | None  # None: no capture metadata (Lite and Journal lines)
    scope: str | None
    salience: float | None
    entities: tuple[tuple[str, str, str], ...]  # (id, name, type) in the line's order
    supersedes: tuple[Link, ...]  # older lines this one replaced, nearest first
    superseded_by: tuple[Link, ...]  # newer lines that replaced this one, nearest first
    events: tuple[EventRef, ...] = field(default=())
    status_history: tuple[StatusStep, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        m = self.memory
        return m.to_json() | {
            "day": self.day,
            "labels": None if self.labels is None else list(self.labels),
            "scope": self.scope, "salience": self.salience,
            "entities": [{"id": i, "name": n, "type": t} for i, n, t in self.entities],
            "provenance": {"intakeId": m.source.intake_id, "session": m.source.session,
                           "origin": self.origin, "tier": self.tier,
                           "file": f"daily/{self.day}.md"},
            "supersedes": [link.to_json() for link in self.supersedes],
            "supersededBy": [link.to_json() for link in self.superseded_by],
            "events": [e.to_json() for e in self.events],
            "statusHistory": [s.to_json() for s in self.status_history],
        }


# -- arguments ----------------------------------------------------------------------------------


def check_status(status: object) -> str | None:
    if status is None:
        return None
    if not isinstance(status, str) or status not in LIST_STATUSES:
        raise InvalidArgumentError(f"status must be one of {', '.join(LIST_STATUSES)}, got "
                                   f"{describe(status)}")
    return status


def check_list_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) \
            or not 1 <= limit <= LIST_MAX_LIMIT:
        raise InvalidArgumentError(f"limit must be a whole number from 1 to {LIST_MAX_LIMIT}, "
                                   f"got {describe(limit)}")
    return limit


def check_since(since: object) -> str | None:
    """The inclusive lower bound as a stored instant: a date is its UTC midnight, an
    instant without an offset is UTC."""
    if since is None:
        return None
    try:
        if isinstance(since, datetime):
            when = since
        elif isinstance(since, date):
            when = datetime(since.year, since.month, since.day)
        elif isinstance(since, str) and (_DATE.fullmatch(since) is not None
                                         or (len(since) <= 64 and "T" in since)):
            when = datetime.fromisoformat(since)
        else:
            raise ValueError
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return iso_ms(when)
    except (ValueError, OverflowError):
        raise InvalidArgumentError(
            f"since must be an ISO date (YYYY-MM-DD, UTC) or instant (2026-12-02T09:00:00Z, "
            f"2026-12-02T10:00+01:00), got {describe(since)}") from None


def check_cursor(cursor: object) -> tuple[str, str] | None:
    if cursor is None:
        return None
    match = _CURSOR.fullmatch(cursor) if isinstance(cursor, str) else None
    if match is None:
        raise InvalidArgumentError(f"cursor must be one printed by list (<createdAt>~<id>), "
                                   f"got {describe(cursor)}")
    return match.group(1), match.group(2)


def check_memory_id(value: object) -> str:
    """A full memory id or a prefix of it: 8 to 64 lowercase hex characters."""
    if not isinstance(value, str) or _PREFIX.fullmatch(value) is None:
        raise InvalidArgumentError(
            f"memory id {describe(value, 80)} is not {MIN_PREFIX} to 64 lowercase hex "
            "characters (a full id, or a unique prefix of one)")
    return value


# -- reading ------------------------------------------------------------------------------------


def _items(conn: apsw.Connection, rows: Sequence[Any], now: datetime,
           tz: tzinfo | None) -> tuple[MemoryItem, ...]:
    """Rows of ``_COLUMNS`` as items, with the validity and attribution an enhanced Remember
    was stated with (G13-G15, J9) and currentness judged in the host's zone ``tz``."""
    fields = line_fields(conn, [row[0] for row in rows])
    items = []
    for row in rows:
        created = datetime.fromisoformat(row[4].replace("Z", "+00:00"))
        candidate = replace(Candidate(id=row[0], text=row[1], status=row[3],
                                      created_at=created,
                                      provenance_unknown=row[5] in (None, "unknown")),
                            **fields.get(row[0], {}))
        items.append(MemoryItem(
            id=row[0], text=row[1], type=row[2], status=row[3], created_at=created,
            currentness=currentness(candidate, now, tz), attribution=candidate.attribution,
            provenance_unknown=candidate.provenance_unknown,
            source=Source(session=row[5], intake_id=row[6]), valid_from=candidate.valid_from,
            valid_to=candidate.valid_to, due_at=candidate.due_at, insight=candidate.insight))
    return tuple(items)


def memories_by_id(conn: apsw.Connection | None, ids: Sequence[str], *, now: datetime,
                   tz: tzinfo | None = None) -> tuple[MemoryItem, ...]:
    """The stored lines among the full ids ``ids``, in that order (an id that names no
    stored line is left out: a forgotten line, a graph row ahead of the index)."""
    if conn is None or not ids:
        return ()
    found: dict[str, Any] = {}
    for start in range(0, len(ids), 500):  # under SQLite's bound on parameters
        chunk = list(ids[start:start + 500])
        found.update((row[0], row) for row in conn.execute(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.id IN "
            f"({','.join('?' * len(chunk))})", chunk))
    return _items(conn, [found[i] for i in dict.fromkeys(ids) if i in found], now, tz)


def list_memories(conn: apsw.Connection | None, *, status: str | None = None,
                  since: str | date | datetime | None = None,
                  limit: int = LIST_DEFAULT_LIMIT, cursor: str | None = None,
                  now: datetime | None = None, tz: tzinfo | None = None) -> MemoryList:
    """Stored memories, newest first (recording instant, then id), optionally only one
    ``status`` and those recorded at or after ``since``; ``cursor`` continues a page."""
    status = check_status(status)
    bound = check_since(since)
    limit = check_list_limit(limit)
    after = check_cursor(cursor)
    if conn is None:  # nothing was ever projected
        return MemoryList((), limit, None)
    clauses: list[str] = []
    params: list[Any] = []
    if status is not None:
        clauses.append("m.status = ?")
        params.append(status)
    if bound is not None:
        clauses.append("m.recorded_at >= ?")
        params.append(bound)
    if after is not None:
        clauses.append("(m.recorded_at < ? OR (m.recorded_at = ? AND m.id > ?))")
        params += [after[0], after[0], after[1]]
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = list(conn.execute(f"SELECT {_COLUMNS} FROM memories m{where} "
                             "ORDER BY m.recorded_at DESC, m.id LIMIT ?", [*params, limit + 1]))
    moment = now or datetime.now(UTC)
    items = _items(conn, rows[:limit], moment, tz)
    more = len(rows) > limit
    last = rows[limit - 1] if more else None
    return MemoryList(items, limit, f"{last[4]}~{last[0]}" if last is not None else None)


def resolve_id(conn: apsw.Connection | None, memory_id: str) -> str:
    """The one stored id ``memory_id`` names (itself, or the id it is a unique prefix of):
    ``memory_not_found`` / ``memory_id_ambiguous`` otherwise."""
    prefix = check_memory_id(memory_id)
    found = [] if conn is None else [r[0] for r in conn.execute(
        "SELECT id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT 2",
        (prefix, prefix + "g"))]  # every id holding the prefix sorts in [prefix, prefix+'g')
    if not found:
        raise MemoryEsError(f"memory_not_found: no stored memory has id {prefix}"
                            + ("" if len(prefix) == 64 else "..."), code="memory_not_found")
    if len(found) > 1:
        raise MemoryEsError(f"memory_id_ambiguous: {prefix}... names more than one memory "
                            f"({found[0][:16]}..., {found[1][:16]}...); give more characters",
                            code="memory_id_ambiguous")
    return str(found[0])


def _chain(conn: apsw.Connection, start: str,
           step: Callable[[str], Iterable[tuple[str, str, str]]]) -> tuple[Link, ...]:
    """Breadth-first along ``step`` (id -> (next id, status, at)), at most MAX_CHAIN links,
    each memory once."""
    seen = {start}
    frontier = [start]
    links: list[Link] = []
    while frontier and len(links) < MAX_CHAIN:
        following: list[str] = []
        for current in frontier:
            for other, status, at in step(current):
                if other in seen or len(links) >= MAX_CHAIN:
                    continue
                seen.add(other)
                row = conn.execute("SELECT text FROM memories WHERE id = ?", (other,)).fetchone()
                links.append(Link(other, "" if row is None else row[0], status, at))
                following.append(other)
        frontier = following
    return tuple(links)


def show_memory(conn: apsw.Connection | None, opened: OpenedJournal | None, memory_id: str,
                *, now: datetime | None = None, tz: tzinfo | None = None) -> MemoryDetail:
    """Everything stored about the memory ``memory_id`` (a full id or unique prefix) names:
    its row, capture metadata, entities, supersession links both ways, and (with ``opened``)
    the journal events of its aggregate."""
    full = resolve_id(conn, memory_id)
    assert conn is not None  # resolve_id found a row
    row: Any = conn.execute(f"SELECT {_COLUMNS}, m.day, m.tier, m.source FROM memories m "
                            "WHERE m.id = ?", (full,)).fetchone()
    item = _items(conn, [row], now or datetime.now(UTC), tz)[0]
    meta = optional_rows(conn, "SELECT labels, scope, salience FROM memory_meta WHERE id = ?",
                         (full,))
    entities = tuple((r[0], r[1], r[2]) for r in optional_rows(
        conn, "SELECT e.id, e.name, e.type FROM memory_entities me JOIN entities e "
              "ON e.id = me.entity_id WHERE me.memory_id = ? ORDER BY me.ord", (full,)))

    def older(memory: str) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in optional_rows(
            conn, "SELECT memory_id, status, at FROM lifecycle WHERE by = ? ORDER BY rowid",
            (memory,))]

    def newer(memory: str) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in optional_rows(
            conn, "SELECT by, status, at FROM lifecycle WHERE memory_id = ? ORDER BY rowid",
            (memory,))]

    events: tuple[EventRef, ...] = ()
    steps: tuple[StatusStep, ...] = ()
    if opened is not None:
        aggregate = memory_uuid(full)
        mapper = opened.app.mapper
        decoded: list[tuple[int, Any]] = []
        refs: list[EventRef] = []
        for position, version, topic, state in opened.aggregate_rows(aggregate):
            event: Any = mapper.to_domain_event(StoredEvent(aggregate, version, topic, state))
            decoded.append((position, event))
            refs.append(EventRef(position, version, topic, iso_ms(event.timestamp)))
        events, steps = tuple(refs), status_steps(decoded)
    labels = tuple(x for x in str(meta[0][0]).split(",") if x) if meta else None
    return MemoryDetail(
        memory=item, day=row[7], tier=row[8], origin=row[9], labels=labels,
        scope=meta[0][1] if meta else None,
        salience=float(meta[0][2]) if meta else None, entities=entities,
        supersedes=_chain(conn, full, older), superseded_by=_chain(conn, full, newer),
        events=events, status_history=steps)


