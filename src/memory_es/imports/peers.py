"""Readers for sources that are memory stores themselves: another memory_es root's export,
and the MCP reference memory server's knowledge graph.

- ``memory-es``: a JSONL export (``memory-es export``), its hash chain verified line by line
  before anything is read from it. Each admitted turn comes with its own intake id and digest
  (the same turn already here is nothing new; another turn under that run id is a conflict,
  refused, never overwritten), its time, session, speaker and trigger; each Remember line
  (``remember:<memory id>``) as a turn of its text. A turn or line the source forgot is
  refused (``forgotten``): its text is not in the export. Derived events (curated lines,
  entities, statuses) are not copied: the turns are curated again here.
- ``mcp-memory``: the reference MCP memory server's ``memory.jsonl``: one JSON object per line,
  ``{"type": "entity", "name", "entityType", "observations"}`` or ``{"type": "relation",
  "from", "to", "relationType"}``. Each observation is one line ``Name (type): observation``,
  each relation one line ``From relation to`` (underscores read as spaces), timed by the
  file's modification time (the format keeps none); ids are digests of the names (a name is
  content, and the receipt is content-free). A BuJo capture root builds its graph from them.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_es.errors import IntegrityError
from memory_es.events import Intake, Memory
from memory_es.imports.items import (
    NOTE_MAX_BYTES,
    ImportItem,
    ImportSourceError,
    SourceRead,
    regular_bytes,
)
from memory_es.transfer import read_export
from memory_es.vocabulary import REMEMBER_SOURCE

_HASH = re.compile(r"[0-9a-f]{64}")
TURN_MAX_BYTES = 640 * 1024  # admission's own record bound decides (record_too_large)


def _file(path: Path, fmt: str, expected: str) -> bytes:
    if not path.is_file():
        raise ImportSourceError(f"{path}: not a {fmt} source: expected {expected}",
                                code="import_wrong_format")
    return regular_bytes(path)


# -- another memory_es root ------------------------------------------------------------------


def read_memory_es(path: Path) -> SourceRead:
    raw = _file(path, "memory-es", "one JSONL export (memory-es export --journal FILE)")
    read = SourceRead("memory-es", hashlib.sha256(raw).hexdigest())
    try:
        events = [(e.topic, {**json.loads(e.state), "_position": n})
                  for n, e in enumerate(read_export(path), start=1)]
    except IntegrityError as e:
        code = "import_wrong_format" if e.code == "export_malformed" else "import_malformed"
        raise ImportSourceError(f"not a memory-es export: {e}", code=code) from None
    if not events:
        raise ImportSourceError(f"{path}: not a memory-es export: no events",
                                code="import_wrong_format")
    for topic, state in events:
        if topic == Intake.Admitted.TOPIC:
            _turn(read, state)
        elif topic == Memory.Remembered.TOPIC or (
                topic == Memory.Recorded.TOPIC and state.get("source") == REMEMBER_SOURCE):
            _remembered(read, state)
    return read


def _turn(read: SourceRead, state: dict[str, Any]) -> None:
    run_hash = state.get("run_hash")
    if not isinstance(run_hash, str) or not _HASH.fullmatch(run_hash):
        read.refuse(f"position {state.get('_position')}", "invalid: no run_hash")
        return
    summary = state.get("summary")
    if not isinstance(summary, str) or not isinstance(state.get("content_sha256"), str) \
            or not state["content_sha256"]:
        read.refuse(run_hash, "forgotten: the source erased this turn")
        return
    at = read.time_of(run_hash, state.get("timestamp"), "timestamp")
    if at is None:
        return
    read.add(ImportItem(run_hash, at, summary,
                        capture_text=summary, session=state.get("session"),
                        speaker_kind=state.get("speaker_kind", "unknown"),
                        trigger=state.get("trigger", "human"), intake_id_kept=run_hash,
                        digest_kept=state["content_sha256"]), TURN_MAX_BYTES)


def _remembered(read: SourceRead, state: dict[str, Any]) -> None:
    original = f"remember:{state.get('memory_id')}"
    text = state.get("text")
    if not isinstance(text, str) or not text:
        read.refuse(original, "forgotten: the source erased this line")
        return
    at = read.time_of(original, state.get("timestamp"), "timestamp")
    if at is not None:
        read.add(ImportItem(original, at, text, session=state.get("session")), NOTE_MAX_BYTES)


# -- the MCP memory server's knowledge graph -------------------------------------------------


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _shown(name: str) -> str:
    return " ".join(name.replace("_", " ").split())


def read_mcp_memory(path: Path) -> SourceRead:
    raw = _file(path, "mcp-memory", "the memory server's memory.jsonl")
    read = SourceRead("mcp-memory", hashlib.sha256(raw).hexdigest())
    at = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    known = 0
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ImportSourceError(f"{path}:{number}: not JSON ({e})",
                                    code="import_malformed") from None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "entity":
            known += 1
            _entity(read, obj, at, number)
        elif kind == "relation":
            known += 1
            _relation(read, obj, at, number)
        else:
            read.refuse(f"line {number}", "invalid: type is neither entity nor relation")
    if not known:
        raise ImportSourceError(f"{path}: not an mcp-memory graph: expected JSON lines of "
                                'type "entity" or "relation"', code="import_wrong_format")
    return read


def _entity(read: SourceRead, obj: dict[str, Any], at: datetime, number: int) -> None:
    name, kind, notes = obj.get("name"), obj.get("entityType"), obj.get("observations", [])
    if not isinstance(name, str) or not name.strip() or not isinstance(kind, str) \
            or not isinstance(notes, list):
        read.refuse(f"line {number}", "invalid: an entity needs a name, an entityType and "
                    "a list of observations")
        return
    head = f"{_shown(name)} ({_shown(kind)})"
    if not notes:
        read.add(ImportItem(f"entity:{_digest(name)}", at, f"{head} is known"),
                 NOTE_MAX_BYTES)
    for note in notes:
        if not isinstance(note, str):
            read.refuse(f"line {number}", "invalid: an observation is not a string")
            continue
        read.add(ImportItem(f"entity:{_digest(name)}:{_digest(note)}", at, f"{head}: {note}"),
                 NOTE_MAX_BYTES)


def _relation(read: SourceRead, obj: dict[str, Any], at: datetime, number: int) -> None:
    parts = [obj.get("from"), obj.get("relationType"), obj.get("to")]
    if not all(isinstance(p, str) and p.strip() for p in parts):
        read.refuse(f"line {number}", "invalid: a relation needs from, to and relationType")
        return
    names = [str(p) for p in parts]
    read.add(ImportItem(f"relation:{_digest(*names)}", at, " ".join(map(_shown, names))),
             NOTE_MAX_BYTES)
