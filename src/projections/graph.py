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
from memory_es.vocabulary import SIDECAR_MAX_BYTES, SIDECAR_MAX_ENTRIES
from projections.index_schema import authority_digest, migration_digest

GRAPH_FILE = "graph.jsonl"
SIDECAR_FILE = ".replay-projection-v1.json"
SIDECAR_VERSION = 1


def canonical(value: Any) -> bytes:
    """Strict canonical JSON: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def render_graph(conn: apsw.Connection, after: int = 0) -> bytes | None:
    """The graph lines of events after journal position ``after`` (0: the whole file, or None
    when the graph is empty). Lines are in journal order (an entity where it was named, a
    memory's associations in extraction order where it was captured, a relation where it was
    stated), so the file only ever grows at its end and a live writer appends."""
    rows: list[tuple[int, int, dict[str, Any]]] = []
    for pos, entity_id, name, type_ in conn.execute(
            "SELECT rowid, id, name, type FROM entities WHERE rowid > ?", (after,)):
        rows.append((pos, 0, {"kind": "entity", "id": entity_id, "name": name, "type": type_}))
    for pos, ord_, memory_id, entity_id in conn.execute(
            "SELECT m.rowid, me.ord, me.memory_id, me.entity_id FROM memory_entities me "
            "JOIN memories m ON m.id = me.memory_id WHERE m.rowid > ?", (after,)):
        rows.append((pos, ord_, {"kind": "association", "memory": memory_id,
                                 "entity": entity_id}))
    for pos, src, relation, dst, memory in conn.execute(
            "SELECT rowid, src, relation, dst, memory FROM relations WHERE rowid > ?", (after,)):
        rows.append((pos, 0, {"kind": "relation", "from": src, "relation": relation, "to": dst,
                              "memory": memory}))
    if not rows:
        return None
    rows.sort(key=lambda r: (r[0], r[1]))
    return b"".join(canonical(value) + b"\n" for _, _, value in rows)


SIDECAR_TAIL = b'],"version":1}\n'  # how every non-empty sidecar ends


def sidecar_entries(conn: apsw.Connection, after: int = 0) -> list[dict[str, Any]]:
    """The replay-owned rows after journal position ``after``, in journal order, as sidecar
    entries (appended in that order, so a live writer only ever adds at the end)."""
    entries: list[tuple[int, dict[str, Any]]] = []
    for rowid, memory_id, status, by, at, digest in conn.execute(
            "SELECT rowid, memory_id, status, by, at, authority FROM lifecycle "
            "WHERE rowid > ?", (after,)):
        # F3: the authority's kind, read back from its digest (a Remember's ``supersedes``
        # digests its new line, a capture its intake), so no extra column is stored
        kind = "remember" if digest == authority_digest(None, by) else \
            "migration" if digest == migration_digest(memory_id) else "capture"
        entries.append((rowid, {"kind": "lifecycle", "memory": memory_id, "status": status,
                                "by": by, "at": at, "authority": kind, "digest": digest}))
    for rowid, src, dst, weight, at, digest in conn.execute(
            "SELECT rowid, src, dst, weight, at, authority FROM threads WHERE rowid > ?",
            (after,)):
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


def sidecar_append(conn: apsw.Connection, after: int, size: int) -> bytes | None:
    """What replaces the last ``len(SIDECAR_TAIL)`` bytes of a non-empty sidecar of ``size``
    bytes to add the entries after ``after``: the same bytes a full render gives. None when
    there is nothing new. Raises ``sidecar_too_large`` past the bounds (F8)."""
    new = sidecar_entries(conn, after)
    if not new:
        return None
    counts: list[Any] = [conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
                         for table in ("lifecycle", "threads")]
    total = sum(int(c[0]) for c in counts)
    if total > SIDECAR_MAX_ENTRIES:
        raise MemoryEsError(f"{SIDECAR_FILE}: {total} entries, more than "
                            f"{SIDECAR_MAX_ENTRIES}", code="sidecar_too_large")
    tail = b"," + b",".join(canonical(entry) for entry in new) + SIDECAR_TAIL
    if size - len(SIDECAR_TAIL) + len(tail) > SIDECAR_MAX_BYTES:
        raise MemoryEsError(f"{SIDECAR_FILE}: more than {SIDECAR_MAX_BYTES} bytes",
                            code="sidecar_too_large")
    return tail


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
