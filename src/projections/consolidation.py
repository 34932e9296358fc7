"""Consolidation: the living ``index.md`` (L6-L9, D13, K1).

A projection like ``graph.jsonl``: a pure function of the index tables, rendered by the
projector's flush (BuJo only) and by rebuild, audited by health byte for byte. It never writes
the journal or an index row and calls no model (D13, L9): it only reads.

- **Top-entity preview** (L6, L7): entity rows are read in deterministic pages (rowid order,
  :data:`PAGE_ROWS` a page) until the inventory is exhausted or :data:`MAX_SCAN_ROWS` rows were
  read. The only state kept is one small tally per lexical group, so memory is bounded by the
  ceiling, whatever the graph's size. At most :data:`MAX_GROUPS` groups are rendered.
- **Lexical groups** (L8): names that are equal after NFKC, case folding and whitespace
  collapsing (:func:`memory_es.text.fold`) are one group, whatever their types. This is display
  only, never entity resolution: the graph's nodes stay as they are.
- **Time nodes** (L8): ephemeral calendar and time nodes (a date or time type, or a name that
  is a date, a time, a weekday, a month or a relative day) are left out of the preview.
- **Duplicate groups** (L9): live lines whose folded text collides, counted over the newest
  :data:`MAX_SCAN_ROWS` live lines (the same ceiling keeps every refresh bounded).

Lite and Journal have no graph, so they have no ``index.md`` (D14): the file exists exactly
when the index holds BuJo rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import apsw
import msgspec

from memory_es.text import fold
from memory_es.vocabulary import HISTORY_STATUSES, sql_list
from projections.markdown import safe_text

INDEX_FILE = "index.md"
MAX_SCAN_ROWS = 10_000  # L7: the safety ceiling on rows one refresh reads
MAX_GROUPS = 50  # L7: lexical groups rendered
PAGE_ROWS = 500  # one deterministic source page
_LIVE = f"m.status NOT IN {sql_list(HISTORY_STATUSES)}"  # current lines only

# Entity types that name a point or span of time (L8). Types are lowercase words (E*).
TIME_TYPES = frozenset({
    "date", "time", "datetime", "timestamp", "day", "weekday", "week", "month", "year",
    "season", "period", "time_period", "timeframe", "duration", "calendar", "calendar_date",
    "date_range", "time_range", "deadline", "quarter", "hour", "minute",
})
# Types whose names are names, never dates: "April" the person stays in the preview.
_NAMED_TYPES = frozenset({"person", "organization", "organisation", "company", "project",
                          "place", "team", "pet", "product"})
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|" \
            "thur|thurs|fri|sat|sun"
_RELATIVE = ("today|tomorrow|yesterday|tonight|now|this (?:morning|afternoon|evening|week|"
             "weekend|month|year)|(?:next|last|this) (?:week|weekend|month|year|" + _WEEKDAYS
             + ")")
_TIME_NAME = re.compile(
    r"(?:\d{4}(?:[-/.]\d{1,2}(?:[-/.]\d{1,2})?)?(?:[ t]\d{1,2}:\d{2}(?::\d{2})?\S*)?"
    r"|\d{1,2}[-/.]\d{1,2}(?:[-/.]\d{2,4})?"
    r"|\d{1,2}(?::\d{2}){1,2} ?(?:am|pm)?|\d{1,2} ?(?:am|pm)"
    r"|q[1-4](?: \d{4})?"
    rf"|(?:{_WEEKDAYS})(?:,? (?:the )?\d{{1,2}}(?:st|nd|rd|th)?)?"
    rf"|(?:\d{{1,2}}(?:st|nd|rd|th)? (?:of )?)?(?:{_MONTHS})\.?(?: \d{{1,2}}(?:st|nd|rd|th)?)?"
    r",?(?: \d{4})?"
    rf"|{_RELATIVE})")


def is_time_node(name: str, type_: str) -> bool:
    """Is this node an ephemeral calendar or time node (L8)? Its type says so, or (unless its
    type names people or things) its folded name is a date, a time, a weekday, a month or a
    relative day."""
    if type_ in TIME_TYPES:
        return True
    return type_ not in _NAMED_TYPES and _TIME_NAME.fullmatch(fold(name)) is not None


class ConsolidationSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What one refresh found, content-free (counts only; N12): what ``memory-es consolidate``
    prints. ``changed`` says whether ``index.md`` was rewritten (or removed). ``tier`` is the
    root's tier when the store says it (None from the projection alone): only ``bujo`` keeps
    an ``index.md``, so on ``lite`` and ``journal`` the refresh has nothing to do (D14)."""

    entities_scanned: int
    scan_complete: bool
    time_nodes: int
    groups: int
    groups_rendered: int
    collapsed_names: int
    lines: int
    lines_scanned: int
    duplicate_groups: int
    changed: bool = False
    tier: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__struct_fields__}


@dataclass
class _Group:
    """One lexical group's tally: the bounded reconciliation state (L7)."""

    display: tuple[int, int, str]  # (-mentions, first rowid, name) of its best-known name
    mentions: int = 0
    members: int = 0
    types: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Preview:
    """The rendered preview and its counts (L6-L9)."""

    summary: ConsolidationSummary
    top: tuple[tuple[str, tuple[str, ...], int, int], ...]  # name, types, mentions, members


def is_bujo(conn: apsw.Connection) -> bool:
    """Does the index hold BuJo rows (an audit line, or a BuJo memory)? Only then is there a
    living ``index.md`` (D14: Lite and Journal have no graph)."""
    row: Any = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM audit) OR EXISTS "
        "(SELECT 1 FROM memories WHERE tier = 'bujo')").fetchone()
    return bool(row[0])


def _scan_entities(conn: apsw.Connection, ceiling: int) -> tuple[dict[str, _Group], int, int,
                                                                   bool]:
    """Groups by folded name, rows read, time nodes left out, whether the scan was complete."""
    groups: dict[str, _Group] = {}
    scanned = time_nodes = 0
    after = 0
    while scanned < ceiling:
        page = list(conn.execute(
            "SELECT e.rowid, e.name, e.type, (SELECT count(*) FROM memory_entities me "
            f"JOIN memories m ON m.id = me.memory_id WHERE me.entity_id = e.id AND {_LIVE}) "
            "FROM entities e WHERE e.rowid > ? ORDER BY e.rowid LIMIT ?",
            (after, min(PAGE_ROWS, ceiling - scanned))))
        if not page:
            return groups, scanned, time_nodes, True
        for rowid, name, type_, mentions in page:
            scanned += 1
            after = rowid
            if is_time_node(name, type_):
                time_nodes += 1
                continue
            key = fold(name)
            if not key or not mentions:
                continue
            group = groups.get(key)
            candidate = (-int(mentions), int(rowid), str(name))
            if group is None:
                group = groups[key] = _Group(display=candidate)
            group.display = min(group.display, candidate)
            group.mentions += int(mentions)
            group.members += 1
            group.types.add(str(type_))
    more: Any = conn.execute("SELECT EXISTS (SELECT 1 FROM entities WHERE rowid > ?)",
                             (after,)).fetchone()
    return groups, scanned, time_nodes, not more[0]


def _duplicates(conn: apsw.Connection, ceiling: int) -> tuple[int, int, int]:
    """(live lines, lines scanned, duplicate groups) over the newest ``ceiling`` live lines."""
    total: Any = conn.execute(f"SELECT count(*) FROM memories m WHERE {_LIVE}").fetchone()
    seen: dict[str, int] = {}
    scanned = 0
    for (text,) in conn.execute(
            f"SELECT m.text FROM memories m WHERE {_LIVE} ORDER BY m.rowid DESC LIMIT ?",
            (ceiling,)):
        scanned += 1
        key = fold(text)
        seen[key] = seen.get(key, 0) + 1
    return int(total[0]), scanned, sum(1 for n in seen.values() if n > 1)


def preview(conn: apsw.Connection, *, ceiling: int = MAX_SCAN_ROWS,
            max_groups: int = MAX_GROUPS) -> Preview:
    """The top-entity preview and duplicate count of an index (reads only)."""
    groups, scanned, time_nodes, complete = _scan_entities(conn, ceiling)
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1].mentions, kv[1].display[1], kv[0]))
    top = tuple((g.display[2], tuple(sorted(g.types)), g.mentions, g.members)
                for _, g in ranked[:max_groups])
    lines, lines_scanned, duplicate_groups = _duplicates(conn, ceiling)
    summary = ConsolidationSummary(
        entities_scanned=scanned, scan_complete=complete, time_nodes=time_nodes,
        groups=len(groups), groups_rendered=len(top),
        collapsed_names=sum(g.members - 1 for g in groups.values()),
        lines=lines, lines_scanned=lines_scanned, duplicate_groups=duplicate_groups)
    return Preview(summary=summary, top=top)


def render_index(conn: apsw.Connection) -> bytes | None:
    """``index.md`` for an index, or None (Lite and Journal: no file)."""
    if not is_bujo(conn):
        return None
    return render_preview(preview(conn))


def render_preview(found: Preview) -> bytes:
    s = found.summary
    out = ["# Memory index", "",
           "A living index regenerated by consolidation from the journal; edits here are "
           "replaced on the next refresh.", "",
           "## Memories", "",
           f"- live lines: {s.lines}",
           f"- duplicate groups: {s.duplicate_groups}"
           + ("" if s.lines_scanned == s.lines else
              f" (among the newest {s.lines_scanned} lines)"), "",
           "## Top entities", ""]
    for name, types, mentions, members in found.top:
        also = f", {members} names" if members > 1 else ""
        out.append(f"- {safe_text(name)} ({', '.join(types)}): {mentions} "
                   f"{'memory' if mentions == 1 else 'memories'}{also}")
    if not found.top:
        out.append("- none with a current line")
    scope = "all" if s.scan_complete else "the first"
    out += ["", f"Scanned {scope} {s.entities_scanned} entity rows; {s.time_nodes} time nodes "
            f"left out; showing {s.groups_rendered} of {s.groups} name groups."]
    return ("\n".join(out) + "\n").encode("utf-8")
