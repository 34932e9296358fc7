"""The reference host's own memory folder (DESIGN 9.1: legacy roots enter through import).

The folder is read, never written: ``daily/*.md`` in the format of SPEC K (two-line bullets and
the legacy one-line form, K11, K12), ``graph.jsonl`` and ``.replay-projection-v1.json`` when
present. Each bullet is a :class:`Line` keeping the folder's own memory id, so the lines of a
BuJo folder become the same lines here: a BuJo root gets them as curated events
(:func:`line_events`: ``Captured``, ``Remembered`` or ``Recorded`` by the bullet's source, with
its status, labels, scope, terms, due date and insight marker; the graph's entities,
associations and relations; each supersession, timed by the sidecar when it names one), and
its daily Markdown and ``graph.jsonl`` come out as the folder's. A Lite or Journal root keeps
what it can hold: each live line as a turn, a superseded or invalidated line refused
(``history``: those tiers keep no supersession, F10).

A bullet without metadata (written before it existed, K7) gets an id from its place
(``DAY#n``) and an unknown source conversation; nothing is guessed (K8).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_es.errors import InvalidArgumentError
from memory_es.events import Entity, Memory
from memory_es.ids import run_hash, run_memory_id
from memory_es.imports.adopt import needs_adoption
from memory_es.imports.items import (
    NOTE_MAX_BYTES,
    ImportItem,
    ImportSourceError,
    Refusal,
    SourceRead,
    json_of,
    parse_time,
    regular_bytes,
    text_problem,
)
from memory_es.validity import check_validity
from memory_es.vocabulary import LIVE_STATUSES, REMEMBER_SOURCE
from projections.graph import GRAPH_FILE, SIDECAR_FILE, sidecar_problem

_DAY = re.compile(r"\A\d{4}-\d{2}-\d{2}\Z")
_META = re.compile(r"<!--mem (?P<body>[^\n]*?)-->\s*\Z")
HISTORY = ("superseded", "invalidated")


@dataclass(frozen=True)
class Line:
    """One bullet: its day, text (unescaped) and metadata (percent-decoded)."""

    day: str
    text: str
    meta: dict[str, str]
    place: str  # DAY#n: its id when the bullet carries none

    @property
    def memory_id(self) -> str:
        return self.meta.get("id") or run_memory_id(run_hash(f"import:reference:{self.place}"),
                                                    0)

    @property
    def at(self) -> datetime:
        recorded = self.meta.get("recorded")
        return parse_time(recorded if recorded else self.day, "recorded")

    @property
    def status(self) -> str:
        return self.meta.get("status", "open")


@dataclass
class Folder:
    """What a reference folder holds, read."""

    lines: list[Line] = field(default_factory=list)
    entities: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, type)
    associations: dict[str, list[str]] = field(default_factory=dict)  # memory -> entity ids
    relations: list[dict[str, str]] = field(default_factory=list)
    ended: dict[str, str] = field(default_factory=dict)  # memory -> its sidecar "at"
    threads: list[dict[str, Any]] = field(default_factory=list)  # the sidecar's, in order


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _meta(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in body.split(" "):
        key, sep, value = item.partition("=")
        if sep:
            out[key] = urllib.parse.unquote(value)
    return out


def read_daily(day: str, text: str) -> list[Line]:
    """The bullets of one daily file, in file order."""
    lines: list[Line] = []
    rows = text.splitlines()
    for n, row in enumerate(rows):
        if not row.startswith("-"):
            continue
        body = row[1:].strip()
        meta: dict[str, str] = {}
        one_line = _META.search(body)
        if one_line is not None:  # the legacy one-line form (K11)
            meta, body = _meta(one_line.group("body")), body[:one_line.start()].rstrip()
        elif n + 1 < len(rows) and (found := _META.search(rows[n + 1].strip())):
            meta = _meta(found.group("body"))
        lines.append(Line(day, _unescape(body), meta, f"{day}#{len(lines) + 1}"))
    return lines


def read_folder(path: Path) -> tuple[Folder, str]:
    """The folder, read whole, and a digest of what was read."""
    daily = path / "daily"
    if not path.is_dir() or not daily.is_dir():
        raise ImportSourceError(f"{path}: not a reference memory folder: expected a folder "
                                "holding daily/YYYY-MM-DD.md", code="import_wrong_format")
    digest = hashlib.sha256()
    folder = Folder()
    for file in sorted(daily.glob("*.md")):
        if not _DAY.match(file.stem):
            continue
        raw = regular_bytes(file)
        digest.update(f"{file.name}:{len(raw)}:".encode() + raw)
        folder.lines.extend(read_daily(file.stem, raw.decode("utf-8", "replace")))
    graph = path / GRAPH_FILE
    if graph.is_file():
        raw = regular_bytes(graph)
        digest.update(f"{GRAPH_FILE}:{len(raw)}:".encode() + raw)
        for number, row in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
            _graph_row(folder, row, f"{graph}:{number}")
    sidecar = path / SIDECAR_FILE
    if sidecar.is_file():
        raw = regular_bytes(sidecar)
        if (problem := sidecar_problem(raw)) is not None:  # F6, F8: never half-trusted
            raise ImportSourceError(f"{sidecar}: {problem}", code="import_malformed")
        digest.update(f"{SIDECAR_FILE}:{len(raw)}:".encode() + raw)
        for entry in json.loads(raw)["entries"]:
            _sidecar_entry(folder, entry, str(sidecar))
    elif (database := needs_adoption(path)) is not None:  # F11: never inferred from SQLite
        raise ImportSourceError(
            f"replay_adoption_required: {database} holds replay state and {path} has no "
            f"{SIDECAR_FILE}; keep its agent stopped and run memory-es adopt-replay {path} "
            "first (F11)", code="replay_adoption_required")
    return folder, digest.hexdigest()


def _json(raw: bytes | str, where: str) -> Any:
    return json_of(raw, where)


GRAPH_KEYS: dict[str, tuple[str, ...]] = {
    "entity": ("id", "name", "type"), "association": ("entity", "memory"),
    "relation": ("from", "relation", "to", "memory")}
SIDECAR_KEYS: dict[str, tuple[str, ...]] = {
    "lifecycle": ("memory", "status", "by", "at"), "thread": ("from", "to", "weight", "at")}


def _fields(obj: object, keys: dict[str, tuple[str, ...]], where: str) -> dict[str, Any]:
    """``obj``'s fields when it is a row of a known kind holding every key that kind needs
    (strings, a number for a weight); :class:`ImportSourceError` otherwise."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if not isinstance(obj, dict) or kind not in keys or not all(
            isinstance(obj.get(k), float | int if k == "weight" else str)
            and not isinstance(obj.get(k), bool) for k in keys[kind]):
        raise ImportSourceError(f"{where}: not a {' or '.join(keys)} row with all its fields",
                                code="import_malformed")
    return obj


def _graph_row(folder: Folder, row: str, where: str) -> None:
    if not row.strip():
        return
    obj = _fields(_json(row, where), GRAPH_KEYS, where)
    if obj["kind"] == "entity":
        folder.entities[obj["id"]] = (obj["name"], obj["type"])
    elif obj["kind"] == "association":
        folder.associations.setdefault(obj["memory"], []).append(obj["entity"])
    else:
        folder.relations.append({k: obj[k] for k in GRAPH_KEYS["relation"]})


def _sidecar_entry(folder: Folder, entry: object, where: str) -> None:
    obj = _fields(entry, SIDECAR_KEYS, where)
    try:
        parse_time(obj["at"], "at")
    except ValueError:
        raise ImportSourceError(f"{where}: an entry's at is not an ISO 8601 time",
                                code="import_malformed") from None
    if obj["kind"] == "lifecycle":
        folder.ended[obj["memory"]] = obj["at"]
    else:
        folder.threads.append(obj)


# -- as turns (Lite, Journal) -----------------------------------------------------------------


def read_reference(path: Path) -> SourceRead:
    """The folder's live lines as turns (what a Lite or Journal root can hold)."""
    return as_turns(*read_folder(path))


def as_turns(folder: Folder, digest: str) -> SourceRead:
    """:func:`read_reference` of a folder already read."""
    read = SourceRead("reference", digest)
    for line in folder.lines:
        if line.status in HISTORY:
            read.refuse(line.memory_id, f"history: {line.status} in the source; only a BuJo "
                        "root keeps supersession (F10)")
            continue
        try:
            at = line.at
        except ValueError as e:
            read.refuse(line.memory_id, f"invalid: {e}")
            continue
        session = line.meta.get("source_session")
        read.add(ImportItem(line.memory_id, at, line.text, session=session), NOTE_MAX_BYTES)
    return read


# -- as curated lines (BuJo) ------------------------------------------------------------------


KINDS = ("note", "event", "task", "observation")
STATUSES = frozenset(LIVE_STATUSES | {"dropped", *HISTORY})
_ID = re.compile(r"[0-9a-f]{64}")


def line_problem(line: Line) -> str | None:
    """Why a line cannot be written as the folder states it (content-free), or None: the
    same text rules as every other import, and metadata a reader of the root can trust."""
    m = line.meta
    if "id" in m and not _ID.fullmatch(m["id"]):
        return "invalid: id is not 64 lowercase hex characters"
    if line.status not in STATUSES or m.get("type", "note") not in KINDS:
        return "invalid: status or type is not one the format has (K14)"
    for name in ("recorded", "due", "valid_from", "valid_to"):  # no value in the reason
        try:
            _ = line.at if name == "recorded" else check_validity(name, m.get(name))
        except (ValueError, InvalidArgumentError):
            return f"invalid: {name} is not a valid time"
    if line.status in HISTORY and m.get("superseded_by") in (None, "", line.memory_id):
        return f"invalid: {line.status} without the line that replaced it"
    return text_problem(line.text, max_bytes=NOTE_MAX_BYTES)


def screened(folder: Folder) -> tuple[list[Line], list[Refusal]]:
    """The lines a root may take, and a refusal for each other one: :func:`line_problem`, a
    repeated id, and a superseded line whose successor is not taken (it would dangle)."""
    lines: list[Line] = []
    refused: list[Refusal] = []
    seen: set[str] = set()
    for line in folder.lines:
        problem = line_problem(line)
        if problem is None and line.memory_id in seen:
            problem = "duplicate_id: the folder holds this id more than once"
        if problem is not None:
            refused.append(Refusal(line.memory_id, problem))
            continue
        seen.add(line.memory_id)
        lines.append(line)
    while True:  # a chain whose newest line was refused leaves with it
        taken = {line.memory_id for line in lines}
        dangling = [line for line in lines if line.status in HISTORY
                    and line.meta["superseded_by"] not in taken]
        if not dangling:
            return lines, refused
        refused.extend(Refusal(line.memory_id, "invalid: the line that replaced it is not "
                               "imported") for line in dangling)
        lines = [line for line in lines if line not in dangling]


Stored = Callable[[str], str | None]  # a memory id -> its status here (None: not here)
Versions = Callable[[str], int]  # an entity id -> how many events it has here (0: none)


def changed(lines: list[Line], stored: Stored) -> tuple[list[Line], list[Refusal], int]:
    """The lines not here yet; a refusal for each line here whose status the folder has
    changed since (``changed_since_import``: the root keeps its own history); and how many
    are here as the folder states them."""
    fresh, refused, already = [], [], 0
    for line in lines:
        status = stored(line.memory_id)
        if status is None:
            fresh.append(line)
        elif status == line.status:
            already += 1
        else:
            refused.append(Refusal(line.memory_id, f"changed_since_import: {status} here, "
                                   f"{line.status} in the folder; change it here (set-status, "
                                   "remember --supersedes)"))
    return fresh, refused, already


def line_events(folder: Folder, lines: list[Line], stored: Stored, entity_events: Versions,
                tier: str) -> list[Any]:
    """The events that write ``lines`` (none of them here yet, :func:`changed`), the graph's
    entities they name that are not here, the relations they state, their supersessions
    and threads."""
    events: list[Any] = []
    versions: dict[str, int] = {}
    written: list[Line] = []
    stated: dict[str, list[dict[str, str]]] = {}
    for rel in folder.relations:
        stated.setdefault(rel["memory"], []).append(rel)

    def name(entity_id: str, at: datetime) -> None:
        if entity_id in versions or entity_id not in folder.entities:
            return
        versions[entity_id] = entity_events(entity_id)
        if not versions[entity_id]:
            entity_name, type_ = folder.entities[entity_id]
            events.append(Entity.named(at=at, entity_id=entity_id, name=entity_name,
                                       type=type_))
            versions[entity_id] = 1

    # in the folder's order of events: lines of one instant (one capture) after the
    # entities they name, the relations they state after them (graph.jsonl's order)
    fresh = lines
    entity_ids = list(folder.entities)
    order = {e: n for n, e in enumerate(entity_ids)}
    named_upto = 0
    rank = {memory_id: n for n, memory_id in enumerate(folder.associations)}  # graph order
    for at, group in itertools.groupby(sorted(fresh, key=lambda x: (x.at, x.memory_id)),
                                       key=lambda x: x.at):
        batch = sorted(group, key=lambda x: (rank.get(x.memory_id, len(rank)), x.memory_id))
        needed = [order[e] for line in batch for e in folder.associations.get(line.memory_id, [])
                  if e in order]
        for entity_id in entity_ids[named_upto:max(needed) + 1] if needed else ():
            name(entity_id, at)  # in graph.jsonl's order, with those named between them
        named_upto = max([named_upto, *(n + 1 for n in needed)])
        for line in batch:
            events.extend(_line(line, folder, tier, versions))
            written.append(line)
        for rel in (r for line in batch for r in stated.get(line.memory_id, [])):
            name(rel["from"], at)
            name(rel["to"], at)
            if rel["from"] in versions:
                events.append(Entity.related(
                    version=versions[rel["from"]], at=at, entity_id=rel["from"],
                    to=rel["to"], relation=rel["relation"], memory=rel["memory"]))
                versions[rel["from"]] += 1
    new = {line.memory_id for line in written}
    times = {line.memory_id: line.at for line in written}
    for entity_id in entity_ids[named_upto:]:  # named by no line imported here
        name(entity_id, written[-1].at if written else datetime(1970, 1, 1, tzinfo=UTC))
    ends = {memory_id: n for n, memory_id in enumerate(folder.ended)}  # the sidecar's order
    for line in sorted(written, key=lambda x: ends.get(x.memory_id, len(ends))):
        by = line.meta.get("superseded_by")
        if line.status in HISTORY and by:
            ended = folder.ended.get(line.memory_id)
            at = parse_time(ended, "at") if ended else times.get(by, line.at)
            events.append(Memory.superseded(version=versions[line.memory_id],
                                            at=at, memory_id=line.memory_id, by=by,
                                            status=line.status, run_hash=None))
            versions[line.memory_id] += 1
    for thread in folder.threads:  # the sidecar's threads between lines written here
        if thread["from"] in new and (thread["to"] in new or stored(thread["to"])):
            events.append(Memory.threaded(
                version=versions[thread["from"]], at=parse_time(thread["at"], "at"),
                memory_id=thread["from"], to=thread["to"], weight=float(thread["weight"]),
                run_hash=str(thread["digest"])))
            versions[thread["from"]] += 1
    return events


def _line(line: Line, folder: Folder, tier: str, versions: dict[str, int]) -> list[Any]:
    m = line.meta
    memory_id, at, session = line.memory_id, line.at, m.get("source_session")
    status = line.status if line.status not in HISTORY else "open"
    out: list[Any] = []
    terms = ("about", "replaceable", "valid_from", "valid_to")
    if m.get("source") == REMEMBER_SOURCE and "scope" in m:  # an enhanced Remember (J6)
        out.append(Memory.remembered(
            at=at, memory_id=memory_id, text=line.text, day=line.day, session=session,
            tier=tier, about=m.get("about"), replaceable=m.get("replaceable") == "true",
            valid_from=m.get("valid_from"), valid_to=m.get("valid_to"), due_at=m.get("due")))
    elif "scope" not in m and not any(t in m for t in terms):  # an uncurated line
        out.append(Memory.recorded(
            at=at, memory_id=memory_id, kind=m.get("type", "note"), text=line.text,
            day=line.day, status="open", source=m.get("source", REMEMBER_SOURCE),
            session=session, run_hash=None, tier=tier))
    else:
        out.append(Memory.captured(
            at=at, memory_id=memory_id, kind=m.get("type", "note"), text=line.text,
            day=line.day, status=status, labels=[x for x in m.get("labels", "").split(",") if x],
            entity_ids=folder.associations.get(memory_id, []), scope=m.get("scope", "agent"),
            source=m.get("source", "user"), salience=0.0, from_task=False, session=session,
            run_hash=None, tier=tier, fact=None))
        status = "open"  # the captured line was born with its status
    versions[memory_id] = 1
    if m.get("due") and not isinstance(out[0], Memory.Remembered):
        out.append(Memory.due_stated(version=versions[memory_id], at=at, memory_id=memory_id,
                                     due_at=m["due"]))
        versions[memory_id] += 1
    if m.get("insight") == "true":
        out.append(Memory.marked(version=versions[memory_id], at=at, memory_id=memory_id,
                                 insight=True))
        versions[memory_id] += 1
    if status != "open" and line.status not in HISTORY and status in LIVE_STATUSES | {"dropped"}:
        out.append(Memory.status_changed(version=versions[memory_id], at=at,
                                         memory_id=memory_id, status=status, reason=None))
        versions[memory_id] += 1
    return out
