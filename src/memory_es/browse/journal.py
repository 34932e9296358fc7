"""MemoryJournal (I*): bounded chronology over explicit civil dates, from the curated index.

One ``MemoryJournal`` belongs to one handle. A first request names an inclusive civil date
range in an explicit IANA zone (``query``); the resolver echoes the half-open UTC interval
``[fromUtc, toUtc)`` between the local midnights (DST-correct), reads the ``memories`` rows of
that interval in chronological order (recorded_at, then id) into a frozen snapshot, and
returns the first page. Later pages come only from ``continue_`` with the cursor the previous
page issued.

A cursor carries what it needs, so it works in any handle and any process on the same root:
its query (the three range fields and the limit), the exact offset of the
next page, the index position the snapshot was read at and the snapshot's content digest
(SHA-256 over the range echo, the limit, every entry and the coverage). It is HMAC-SHA-256
signed with the root's cursor key (:mod:`memory_es.browse.journal_key`; a handle without a
root, in tests, uses a random key of its own), so a changed byte or a cursor of another root
fails ``journal_cursor_invalid``, and carries no field a caller could override. The handle that
froze the snapshot serves its pages from memory: writes after the snapshot never shift them.
Any other handle (another process, or this one after the snapshot was evicted) reads the range
again and serves the page only when the content digest matches the cursor's; otherwise the
memories of the range changed since the first page and the cursor fails
``journal_cursor_stale`` (repeat the first request). A continuation never returns pages of a
different snapshot.

What a request may be (the range, the zone, the limit) is
:mod:`memory_es.browse.journal_request`. Bounds (I5, I7-I9, DESIGN 9.12):

- at most 31 civil days inclusive; ``limit`` (entries per page) 10 by default, 1..25, never
  clamped;
- a snapshot holds at most 1,000 entries and 2 MiB (entry bytes = UTF-8 of its compact JSON);
  ``coverage`` says whether the range scan completed and why it stopped;
- a page holds at most ``limit`` entries, 25 entries and 8 KiB; each text at most 2 KiB of
  UTF-8, cut on a character boundary and ending in ``TRUNCATION_MARKER``;
- a handle keeps at most 4 snapshots; a fifth evicts the oldest, whose cursors are then served
  by reading the range again (or fail ``journal_cursor_stale`` when it changed).

Excluded (I14): dropped and invalidated rows; raw BuJo audit observations (the ``audit``
table is never read); session ids, run hashes, memory-root paths, embeddings, salience and
access telemetry (never selected or not stored); raw backend errors (an SQLite failure is
the generic ``journal_unavailable``). Unsafe text and ids become fixed markers (I15).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import msgspec

from memory_es.browse.journal_page import (
    JournalCoverage,
    JournalEntry,
    JournalPage,
    Range,
    StoppedBy,
)
from memory_es.browse.journal_request import (
    CIVIL_DATE,
    DEFAULT_LIMIT,
    RANGE_FIELDS,
    JournalFilter,
    check_limit,
    journal_error,
    resolve_range,
)
from memory_es.errors import MemoryEsError
from memory_es.recall.rank.score import Candidate
from memory_es.recall.rank.select import currentness
from memory_es.text import UNSAFE_CHARS, iso_ms
from memory_es.validity import parse_validity
from memory_es.vocabulary import TERMINAL_STATUSES  # G22 / I14: never returned

MAX_SNAPSHOTS = 4
SNAPSHOT_MAX_ENTRIES = 1000
SNAPSHOT_MAX_BYTES = 2 * 1024 * 1024
PAGE_MAX_ENTRIES = 25
PAGE_MAX_BYTES = 8 * 1024
TEXT_MAX_BYTES = 2 * 1024

TRUNCATION_MARKER = "…[truncated]"
UNSAFE_TEXT_MARKER = "[unsafe text withheld]"
UNSAFE_ID_MARKER = "[unsafe id withheld]"
UNSAFE_VALUE_MARKER = "[unsafe value withheld]"

CURSOR_VERSION = 3  # 3: carries the filter
MAX_CURSOR = 4096  # characters: a filter's 256-character session, JSON-escaped, fits

_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_SAFE_WORD = re.compile(r"[a-z][a-z0-9_-]{0,31}")
# DESIGN 9.11: C0/C1 controls except tab, bidi embeddings/overrides/isolates, HTML comments.
_UNSAFE_TEXT = re.compile(f"[{UNSAFE_CHARS}]|<!--|-->")

_COLUMNS = "m.rowid, m.id, m.kind, m.text, m.recorded_at, m.status, m.day"
_TERM_COLUMNS = _COLUMNS + ", mt.valid_from, mt.valid_to, mt.due_at"


def cap_text(text: str) -> tuple[str, bool]:
    """At most 2 KiB of UTF-8, cut on a character boundary, marker included (I9)."""
    raw = text.encode("utf-8")
    if len(raw) <= TEXT_MAX_BYTES:
        return text, False
    budget = TEXT_MAX_BYTES - len(TRUNCATION_MARKER.encode("utf-8"))
    return raw[:budget].decode("utf-8", errors="ignore") + TRUNCATION_MARKER, True


def safe_text(text: object) -> tuple[str, bool]:
    """Unsafe or non-string text becomes one fixed marker (I15); long text is capped."""
    if not isinstance(text, str) or _UNSAFE_TEXT.search(text):
        return UNSAFE_TEXT_MARKER, False
    return cap_text(text)


def safe_id(value: object) -> str:
    return value if isinstance(value, str) and _SAFE_ID.fullmatch(value) else UNSAFE_ID_MARKER


def safe_word(value: object) -> str:
    return value if isinstance(value, str) and _SAFE_WORD.fullmatch(value) else \
        UNSAFE_VALUE_MARKER


def entry_bytes(entry: JournalEntry) -> int:
    """The size an entry counts against page and snapshot budgets: its compact JSON (sorted
    keys, UTF-8 unescaped: the bytes ``json.dumps(..., ensure_ascii=False)`` gives)."""
    return len(msgspec.json.encode(entry.to_json(), order="sorted"))


def _entry(row: tuple[Any, ...], zone: ZoneInfo, now: datetime) -> JournalEntry:
    _rowid, memory_id, kind, text, recorded_at, status, source_day, *validity = row
    valid_from, valid_to, due_at = validity or (None, None, None)
    try:
        instant = datetime.fromisoformat(str(recorded_at).replace("Z", "+00:00"))
        cur = currentness(Candidate(id="", text="", status=status,
                                    valid_to=parse_validity(valid_to),
                                    due_at=parse_validity(due_at)), now, zone)
    except ValueError as e:
        raise journal_error("journal_unavailable", "the journal backend is unavailable") from e
    local = instant.astimezone(zone)
    shown, truncated = safe_text(text)
    # I13: the canonical daily source reference, relative (never a memory-root path).
    source = (f"daily/{source_day}.md" if isinstance(source_day, str)
              and CIVIL_DATE.fullmatch(source_day) else UNSAFE_VALUE_MARKER)
    return JournalEntry(id=safe_id(memory_id), recorded_at=iso_ms(instant),
                        day=local.date().isoformat(), time=f"{local.hour:02d}:{local.minute:02d}",
                        type=safe_word(kind), status=safe_word(status), source=source,
                        text=shown, truncated=truncated, currentness=cur,
                        valid_from=valid_from, valid_to=valid_to, due_at=due_at)


@dataclass
class Snapshot:
    """The frozen entries of one first request, with its content digest and page starts."""

    range: Range
    limit: int
    entries: list[JournalEntry]
    sizes: list[int]
    coverage: JournalCoverage
    position: int
    filters: JournalFilter = field(default_factory=JournalFilter)
    digest: str = ""
    starts: frozenset[int] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        content = {"coverage": self.coverage.to_json(), "entries": [
            e.to_json() for e in self.entries], "limit": self.limit,
            "range": self.range.to_json()}
        if self.filters:
            content["filter"] = self.filters.to_json()
        self.digest = hashlib.sha256(msgspec.json.encode(content, order="sorted")).hexdigest()
        starts, offset = set(), 0
        while offset < len(self.entries):
            offset = page_end(self, offset)
            starts.add(offset)
        self.starts = frozenset(starts - {len(self.entries)})


@dataclass(frozen=True)
class Cursor:
    """What a cursor carries (all of it under the HMAC)."""

    from_date: str
    through_date: str
    time_zone: str
    limit: int
    offset: int
    position: int
    digest: str
    filters: JournalFilter = field(default_factory=JournalFilter)

    def payload(self) -> bytes:
        return json.dumps({"d": self.digest, "f": self.from_date, "l": self.limit,
                           "o": self.offset, "p": self.position, "q": self.filters.to_json(),
                           "t": self.through_date, "v": CURSOR_VERSION, "z": self.time_zone},
                          separators=(",", ":"), sort_keys=True).encode("utf-8")


def page_end(snapshot: Snapshot, offset: int) -> int:
    """Where the page starting at ``offset`` ends: ``limit`` entries, 25 and 8 KiB (I9)."""
    end = offset
    used = 0
    cap = min(snapshot.limit, PAGE_MAX_ENTRIES)
    while end < len(snapshot.entries) and end - offset < cap:
        size = snapshot.sizes[end]
        if end > offset and used + size > PAGE_MAX_BYTES:
            break
        used += size
        end += 1
    return end


KeySource = Callable[[bool], bytes | None]


class MemoryJournal:
    """The chronological tool for one handle: its cursor key and its 4 frozen snapshots.

    ``key`` is the root's key source (:class:`~memory_es.browse.journal_key.RootCursorKey`:
    called with ``create=True`` to sign, ``False`` to verify), raw key bytes, or None for a
    random key of this handle alone.
    """

    def __init__(self, key: bytes | KeySource | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._clock = clock  # the snapshot instant currentness is judged at (I13)
        if key is None:
            key = secrets.token_bytes(32)
        if isinstance(key, bytes):
            fixed = key
            self._key: KeySource = lambda create: fixed
        else:
            self._key = key
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()

    # -- entry points --------------------------------------------------------------------------

    def call(self, conn: apsw.Connection | None, request: Mapping[str, Any],
             filters: JournalFilter | None = None) -> JournalPage:
        """The tool-shaped entry: either the three range fields (+ ``limit``) or exactly
        ``{"cursor": ...}``; a continuation that also names a range, limit or filter is
        rejected (its cursor carries them)."""
        if "cursor" in request:
            extra = sorted(set(request) - {"cursor"}) + (["filter"] if filters else [])
            if extra:
                raise journal_error("journal_invalid_request",
                             "a continuation takes only the cursor; range, limit or filter "
                             f"overrides are not accepted ({', '.join(extra)})")
            return self.continue_(conn, request["cursor"])
        unknown = sorted(set(request) - {*RANGE_FIELDS, "limit"})
        if unknown:
            raise journal_error("journal_invalid_request", f"unknown fields: {', '.join(unknown)}")
        if conn is None:
            raise journal_error("journal_unavailable", "the journal backend is unavailable")
        return self.query(conn, request.get("fromDate"), request.get("throughDate"),
                          request.get("timeZone"), request.get("limit"), filters)

    def query(self, conn: apsw.Connection, from_date: Any, through_date: Any,
              time_zone: Any, limit: Any = DEFAULT_LIMIT,
              filters: JournalFilter | None = None) -> JournalPage:
        """A first request: validate, freeze a snapshot, return its first page."""
        resolved = resolve_range(from_date, through_date, time_zone)
        page_limit = check_limit(limit)
        if filters is not None and not isinstance(filters, JournalFilter):
            raise journal_error("journal_invalid_filter", "filters must be a JournalFilter")
        snapshot = self._remember(self._freeze(conn, resolved, page_limit,
                                               filters or JournalFilter()))
        return self._page(snapshot, 0)

    def continue_(self, conn: apsw.Connection | None, cursor: Any) -> JournalPage:
        """The page a cursor names: from this handle's frozen snapshot when it still holds
        it, else from the range read again through ``conn``, only if its content digest is
        the cursor's (``journal_cursor_stale`` otherwise)."""
        c = self._verify(cursor)
        snapshot = self._snapshots.get(c.digest)
        if snapshot is None:
            if conn is None:
                raise journal_error("journal_unavailable", "the journal backend is unavailable")
            try:
                resolved = resolve_range(c.from_date, c.through_date, c.time_zone)
                page_limit = check_limit(c.limit)
            except MemoryEsError as e:  # signed by us, so the zone data itself changed
                raise _stale(c, None) from e
            fresh = self._freeze(conn, resolved, page_limit, c.filters)
            if fresh.digest != c.digest:
                raise _stale(c, fresh.position)
            fresh.position = c.position  # the same content: the snapshot read back then
            snapshot = self._remember(fresh)
        else:
            self._snapshots.move_to_end(c.digest)
        if c.offset not in snapshot.starts:
            raise journal_error("journal_cursor_invalid",
                                "cursor offset is not a page of its snapshot")
        return self._page(snapshot, c.offset)

    @property
    def snapshot_count(self) -> int:
        return len(self._snapshots)

    # -- snapshot and pages --------------------------------------------------------------------

    def _remember(self, snapshot: Snapshot) -> Snapshot:
        self._snapshots[snapshot.digest] = snapshot
        self._snapshots.move_to_end(snapshot.digest)
        while len(self._snapshots) > MAX_SNAPSHOTS:
            self._snapshots.popitem(last=False)  # the fifth evicts the oldest (I7)
        return snapshot

    def _freeze(self, conn: apsw.Connection, r: Range, limit: int,
                filters: JournalFilter) -> Snapshot:
        placeholders = ", ".join("?" for _ in TERMINAL_STATUSES)
        terms = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_terms'"
                             ).fetchone() is not None  # a generation from before validity
        narrow, params = "", []
        for column, value in (("m.status", filters.status), ("m.kind", filters.type),
                              ("m.source_session", filters.session)):
            if value is not None:
                narrow += f"AND {column} = ? "
                params.append(value)
        # currentness is judged per entry at the snapshot instant (no SQL LIMIT then); SQL
        # keeps only the rows that can match: superseded is the status, an ended line states
        # an end, a current one is not superseded
        narrow += {"superseded": "AND m.status = 'superseded' ",
                   "ended": "AND m.status != 'superseded' AND "
                            + ("(mt.valid_to IS NOT NULL OR mt.due_at IS NOT NULL) " if terms
                               else "0 "),
                   "current": "AND m.status != 'superseded' "}.get(filters.currentness or "", "")
        bound = filters.currentness is None
        sql = (f"SELECT {_TERM_COLUMNS if terms else _COLUMNS} FROM memories m "
               + ("LEFT JOIN memory_terms mt ON mt.id = m.id " if terms else "")
               + "WHERE m.recorded_at >= ? AND m.recorded_at < ? "
               f"AND m.status NOT IN ({placeholders}) {narrow}ORDER BY m.recorded_at, m.id"
               + (" LIMIT ?" if bound else ""))
        now = self._clock()
        entries: list[JournalEntry] = []
        sizes: list[int] = []
        total = 0
        stopped: StoppedBy = "range_end"
        try:
            with conn:  # one read transaction: a consistent view of the index
                position = _index_position(conn)
                rows = conn.execute(sql, (iso_ms(r.from_utc), iso_ms(r.to_utc),
                                          *TERMINAL_STATUSES, *params,
                                          *([SNAPSHOT_MAX_ENTRIES + 1] if bound else [])))
                for row in rows:
                    entry = _entry(tuple(row), r.zone, now)
                    if not bound and entry.currentness != filters.currentness:
                        continue
                    if len(entries) == SNAPSHOT_MAX_ENTRIES:
                        stopped = "entry_cap"
                        break
                    size = entry_bytes(entry)
                    if total + size > SNAPSHOT_MAX_BYTES:
                        stopped = "byte_cap"
                        break
                    entries.append(entry)
                    sizes.append(size)
                    total += size
        except apsw.Error as e:
            # I11 / I14: the generic error; the raw backend message never leaves.
            raise journal_error("journal_unavailable", "the journal backend is unavailable") from e
        coverage = JournalCoverage(complete=stopped == "range_end", stopped_by=stopped,
                                   entries=len(entries), bytes=total)
        return Snapshot(r, limit, entries, sizes, coverage, position, filters)

    def _page(self, snapshot: Snapshot, offset: int) -> JournalPage:
        end = page_end(snapshot, offset)
        cursor = None
        if end < len(snapshot.entries):
            r = snapshot.range
            cursor = self._sign(Cursor(
                r.from_date.isoformat(), r.through_date.isoformat(), r.zone_name,
                snapshot.limit, end, snapshot.position, snapshot.digest, snapshot.filters))
        return JournalPage(range=snapshot.range, limit=snapshot.limit, offset=offset,
                           filters=snapshot.filters.to_json() or None,
                           entries=tuple(snapshot.entries[offset:end]),
                           no_data=not snapshot.entries and snapshot.coverage.complete,
                           coverage=snapshot.coverage, cursor=cursor)

    # -- cursors -------------------------------------------------------------------------------

    def _sign(self, cursor: Cursor) -> str:
        key = self._key(True)
        assert key is not None
        payload = cursor.payload()
        return f"{_b64(payload)}.{_b64(hmac.new(key, payload, hashlib.sha256).digest())}"

    def _verify(self, cursor: Any) -> Cursor:
        invalid = journal_error("journal_cursor_invalid",
                         "cursor is malformed, altered, or not from this memory root")
        if not isinstance(cursor, str) or cursor.count(".") != 1 or len(cursor) > MAX_CURSOR:
            raise invalid
        body, tag = cursor.split(".")
        try:
            payload, mac = _unb64(body), _unb64(tag)
        except ValueError as e:
            raise invalid from e
        key = self._key(False)
        if key is None or not hmac.compare_digest(
                mac, hmac.new(key, payload, hashlib.sha256).digest()):
            raise invalid
        try:
            data = json.loads(payload)
        except ValueError as e:
            raise invalid from e
        fields = {"d": str, "f": str, "l": int, "o": int, "p": int, "q": dict, "t": str,
                  "v": int, "z": str}
        if (not isinstance(data, dict) or set(data) != set(fields)
                or data["v"] != CURSOR_VERSION
                or any(type(data[k]) is not t for k, t in fields.items())):
            raise invalid
        try:  # signed by us: only a filter this version no longer accepts fails here
            filters = JournalFilter.from_json(data["q"])
        except MemoryEsError as e:
            raise invalid from e
        return Cursor(data["f"], data["t"], data["z"], data["l"], data["o"], data["p"],
                      data["d"], filters)


def _index_position(conn: apsw.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()
    try:
        return int(row[0]) if row is not None else 0
    except (TypeError, ValueError):
        return 0


def _stale(cursor: Cursor, position: int | None) -> MemoryEsError:
    now = "" if position is None else f", the index is now at {position}"
    return journal_error("journal_cursor_stale",
                  f"the memories of {cursor.from_date}..{cursor.through_date} "
                  f"{cursor.time_zone} changed since this cursor's first page (read at index "
                  f"position {cursor.position}{now}); repeat the first request")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise ValueError("not base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as e:
        raise ValueError("not base64url") from e
    if _b64(data) != text:  # canonical only: no two spellings of one cursor
        raise ValueError("not canonical base64url")
    return data
