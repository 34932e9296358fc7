"""``graph.jsonl`` (L1) and the replay sidecar ``.replay-projection-v1.json`` (F1-F9).

Both are rendered from index tables, so they are a pure function of the events:

- ``graph.jsonl``: one canonical JSON object per line: entities (by journal position), then
  per-memory associations (memory, entity, in extraction order), then directed relations;
- the sidecar: the replay-owned state (supersession lifecycle and thread edges) as metadata
  only (ids, timestamps, thread weights, authority kinds and content-free SHA-256 authority
  digests; no memory text, no model output), in strict canonical JSON, at most 32 MiB and
  131,072 entries (F8). A root with no replay-owned state has no sidecar.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from memory_es.errors import MemoryEsError

GRAPH_FILE = "graph.jsonl"
SIDECAR_FILE = ".replay-projection-v1.json"
SIDECAR_VERSION = 1
SIDECAR_MAX_BYTES = 32 * 1024 * 1024  # F8
SIDECAR_MAX_ENTRIES = 131_072  # F8


def canonical(value: Any) -> bytes:
    """Strict canonical JSON: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def render_graph(conn: apsw.Connection) -> bytes | None:
    """The graph file, or None when the graph is empty."""
    lines: list[bytes] = []
    for entity_id, name, type_ in conn.execute(
            "SELECT id, name, type FROM entities ORDER BY rowid"):
        lines.append(canonical({"kind": "entity", "id": entity_id, "name": name, "type": type_}))
    for memory_id, entity_id in conn.execute(
            "SELECT me.memory_id, me.entity_id FROM memory_entities me "
            "JOIN memories m ON m.id = me.memory_id ORDER BY m.rowid, me.ord"):
        lines.append(canonical({"kind": "association", "memory": memory_id,
                                "entity": entity_id}))
    for src, relation, dst, memory in conn.execute(
            "SELECT src, relation, dst, memory FROM relations ORDER BY rowid"):
        lines.append(canonical({"kind": "relation", "from": src, "relation": relation,
                                "to": dst, "memory": memory}))
    return b"".join(line + b"\n" for line in lines) if lines else None


def sidecar_entries(conn: apsw.Connection) -> list[dict[str, Any]]:
    """The replay-owned rows of an index, in journal order, as sidecar entries."""
    entries: list[tuple[int, dict[str, Any]]] = []
    for rowid, memory_id, status, by, at, digest in conn.execute(
            "SELECT rowid, memory_id, status, by, at, authority FROM lifecycle"):
        entries.append((rowid, {"kind": "lifecycle", "memory": memory_id, "status": status,
                                "by": by, "at": at, "authority": "capture", "digest": digest}))
    for rowid, src, dst, weight, at, digest in conn.execute(
            "SELECT rowid, src, dst, weight, at, authority FROM threads"):
        entries.append((rowid, {"kind": "thread", "from": src, "to": dst, "weight": weight,
                                "at": at, "authority": "capture", "digest": digest}))
    return [{"position": rowid, **entry} for rowid, entry in sorted(entries,
                                                                       key=lambda e: e[0])]


def render_sidecar(conn: apsw.Connection) -> bytes | None:
    """The sidecar file for an index, or None when it holds no replay-owned state."""
    entries = sidecar_entries(conn)
    if not entries:
        return None
    if len(entries) > SIDECAR_MAX_ENTRIES:
        raise MemoryEsError(f"{SIDECAR_FILE}: {len(entries)} entries, more than "
                            f"{SIDECAR_MAX_ENTRIES}", code="sidecar_too_large")
    data = canonical({"entries": entries, "version": SIDECAR_VERSION}) + b"\n"
    if len(data) > SIDECAR_MAX_BYTES:
        raise MemoryEsError(f"{SIDECAR_FILE}: {len(data)} bytes, more than "
                            f"{SIDECAR_MAX_BYTES}", code="sidecar_too_large")
    return data


def sidecar_problem(data: bytes) -> str | None:
    """Why ``data`` is not a valid sidecar (F6, F8), content-free; None when it is."""
    if len(data) > SIDECAR_MAX_BYTES:
        return f"{len(data)} bytes, more than {SIDECAR_MAX_BYTES}"
    try:
        value = json.loads(data)
    except ValueError:
        return "not JSON"
    if not isinstance(value, dict) or value.get("version") != SIDECAR_VERSION \
            or not isinstance(value.get("entries"), list) or set(value) != {"entries", "version"}:
        return "not a version 1 sidecar"
    if len(value["entries"]) > SIDECAR_MAX_ENTRIES:
        return f"{len(value['entries'])} entries, more than {SIDECAR_MAX_ENTRIES}"
    if canonical(value) + b"\n" != data:
        return "not canonical JSON"
    return None
