"""``memory-es rewrite-journal``: bring a root written with content-derived ids into the form
a forget can fully erase, verified, in place.

Roots written before ids stopped hashing content keep, in events already written, digests that
confirm a guessed text after a forget: a Journal observation's and a Remember's id is the
SHA-256 of the text, an entity's id the SHA-256 of its folded name, and an admission holds the
turn record's SHA-256 and size and the capture text's SHA-256 and length in the clear. The
rewrite works like ``migrate-journal``: the root's canonical export (sealed content open, a
forgotten record's tombstone) is rewritten line by line:

- those memories and entities get the ids new writes get (:func:`memory_es.ids.run_memory_id`
  of the first run that recorded it, :func:`~memory_es.ids.remember_id` of the journal position
  and instant, an entity's from its position), every reference to them follows (the aggregate
  id, ``Resolved``, supersessions, relations, facts, retained plans, ``Forgotten``);
- a capture text's digest becomes ``SEALED_PAYLOAD`` and its length 0, and a forgotten turn's
  record digest and size become tombstones (a live one is sealed again by the new journal);

then replayed into a new root beside it (its own root id and keys), **verified** (every index
row of the old root, ids mapped, is a row of the new one and nothing else is), and swapped in;
the old root and its keys are deleted. Positions, events, texts and statuses do not change; a
root's id (so its anchors) does. A kill before the swap leaves the root as it was (the
half-built one is removed by the next run); a kill inside the swap is finished by the next run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from memory_es.config import MemoryConfig
from memory_es.errors import IntegrityError
from memory_es.events import Entity, Intake, Memory
from memory_es.fsutil import crash_point, fsync_dir
from memory_es.history import export_lines, iter_events
from memory_es.ids import (
    entity_uuid,
    memory_uuid,
    remember_id,
    run_entity_id,
    run_memory_id,
    sha256_hex,
)
from memory_es.intake import SEALED_PAYLOAD
from memory_es.journal import GENESIS, MARKER_FILE, OpenedJournal, chain_link, open_journal
from memory_es.keystore import KeyStore
from memory_es.rootconfig import effective
from memory_es.text import fold
from memory_es.transfer import replay_export
from projections.asof import fold_in_memory
from projections.derived import open_active_index
from projections.index_schema import DUMP_TABLES

_NEW, _OLD = ".rewrite-new", ".rewrite-old"  # sibling directories of a rewrite in flight
_SEALED = "$sealed"


@dataclass(frozen=True)
class RewriteReport:
    """What a rewrite changed: ``memories`` and ``entities`` given new ids, ``digests``
    (admission digests sealed or voided), at journal ``position``; ``root_id`` the new one."""

    position: int
    memories: int
    entities: int
    digests: int
    root_id: str
    already: bool = False


def rewrite_lines(lines: Iterable[bytes]) -> tuple[list[bytes], dict[str, str]]:
    """An export rewritten into the new form, its plain chain recomputed; and the id map."""
    rewritten = _rewrite(lines)
    return rewritten.lines, rewritten.ids


@dataclass(frozen=True)
class _Rewritten:
    lines: list[bytes]
    ids: dict[str, str]  # old id -> new id, memories and entities
    entities: int  # how many of ``ids`` are entities
    digests: int  # admissions whose digests were sealed or voided


def _rewrite(lines: Iterable[bytes]) -> _Rewritten:
    rows = [json.loads(line) for line in lines]
    ids: dict[str, str] = {}
    entities = 0
    for row in rows:
        topic, state, position = row["topic"], row["state"], row["position"]
        if topic in (Memory.Recorded.TOPIC, Memory.Remembered.TOPIC):
            old = state["memory_id"]
            hashed = topic == Memory.Remembered.TOPIC or state.get("source") == "remember" or (
                state.get("source") == "host-summary" and state.get("tier") == "journal")
            run = state.get("run_hash")
            new = run_memory_id(run, 0) if run else _remember_id(position, state["timestamp"])
            if hashed and old not in ids and old != new and not (
                    run is None and old == _live_remember_id(position, state["timestamp"])):
                ids[old] = new
        elif topic == Entity.Named.TOPIC:
            old, name = state["entity_id"], state["name"]
            new = run_entity_id(f"rewrite:{position}", "entity")
            legacy = old == sha256_hex(f"{state['type']}\x00{fold(name)}") \
                if isinstance(name, str) else old != new  # a forgotten name: cannot tell
            if legacy and old not in ids:
                ids[old] = new
                entities += 1
    aggregates = {str(memory_uuid(o)): str(memory_uuid(n)) for o, n in ids.items()}
    aggregates |= {str(entity_uuid(o)): str(entity_uuid(n)) for o, n in ids.items()}
    out: list[bytes] = []
    chain = GENESIS
    digests = 0
    for row in rows:
        state = _mapped(row["state"], ids)
        if row["topic"] == Intake.Admitted.TOPIC and _digests_out(state):
            digests += 1
        oid = aggregates.get(row["originator_id"], row["originator_id"])
        raw = msgspec.json.encode(state, order="sorted")
        chain = chain_link(chain, row["position"], oid, row["originator_version"], row["topic"],
                           raw)
        out.append(msgspec.json.encode(
            {"chain": chain.hex(), "originator_id": oid,
             "originator_version": row["originator_version"], "position": row["position"],
             "state": msgspec.Raw(raw), "topic": row["topic"]}, order="sorted") + b"\n")
    return _Rewritten(out, ids, entities, digests)


def _remember_id(position: int, stamp: str) -> str:
    """A rewritten Remember's id: the position before it and its stored instant."""
    return remember_id(position - 1, stamp)


def _live_remember_id(position: int, stamp: str) -> str:
    """The id a Remember written in the new form got (its clock's ISO form of the instant)."""
    return remember_id(position - 1, datetime.fromisoformat(stamp).isoformat())


def _mapped(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_mapped(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _mapped(v, ids) for k, v in value.items()}
    return value


def _digests_out(state: dict[str, Any]) -> bool:
    """No digest or size of a turn left in the clear: a capture text's gives way to the
    sealed marker; a forgotten turn's record digest and size become tombstones. True when
    anything changed."""
    changed = False
    if state.get("payload_sha256") not in (None, SEALED_PAYLOAD):
        state["payload_sha256"], state["payload_bytes"] = SEALED_PAYLOAD, 0
        changed = True
    summary = state.get("summary")
    if isinstance(summary, dict) and _SEALED in summary:  # forgotten: its key is gone
        for field, void in (("content_sha256", ""), ("content_bytes", 0)):
            if not isinstance(state.get(field), dict):
                state[field] = {_SEALED: 1, "void": void}
                changed = True
    return changed


def rewrite_journal(root: str | Path, config: MemoryConfig | None = None, *,
                    key_store: str | Path | KeyStore | None = None) -> RewriteReport:
    """Rewrite ``root`` in place (module docstring); ``already`` when nothing hashes content."""
    root = Path(root).absolute()
    keys = KeyStore.resolve(key_store)
    new, old = root.with_name(root.name + _NEW), root.with_name(root.name + _OLD)
    if _finish_swap(root, new, old, keys):
        return _report_of(root, keys, already=True)
    shutil.rmtree(new, ignore_errors=True)  # a run killed before its swap
    opened = open_journal(root, writable=True, create=False, key_store=keys)
    try:
        rewritten = _rewrite(export_lines(opened))
        lines, ids = rewritten.lines, rewritten.ids
        old_root_id = opened.chain.root_id
        config = config if config is not None else effective(opened, None)
        if not ids and not rewritten.digests:
            return _report_of(root, keys, already=True)
        with tempfile.NamedTemporaryFile(dir=root.parent, prefix=f".{root.name}-rewrite-",
                                         suffix=".jsonl") as export:
            export.writelines(lines)
            export.flush()
            replay_export(export.name, new, config, key_store=keys)
        verify(opened, new, ids)
        crash_point("rewrite.before_swap")
        os.replace(root, old)
        crash_point("rewrite.inside_swap")
        os.replace(new, root)
        fsync_dir(root.parent)
    finally:
        opened.close()
        if opened.lock is not None:
            opened.lock.release()
    _remove_old(old, keys, old_root_id)
    report = _report_of(root, keys)
    return RewriteReport(position=report.position, memories=len(ids) - rewritten.entities,
                         entities=rewritten.entities, digests=rewritten.digests,
                         root_id=report.root_id)


def _finish_swap(root: Path, new: Path, old: Path, keys: KeyStore) -> bool:
    """A kill between the two renames left ``old`` and ``new`` and no ``root``: finish it."""
    if root.exists() or not (old.exists() and new.exists()):
        return False
    os.replace(new, root)
    fsync_dir(root.parent)
    marker = json.loads((old / MARKER_FILE).read_text("utf-8"))
    _remove_old(old, keys, marker.get("root_id"))
    return True


def _remove_old(old: Path, keys: KeyStore, root_id: str | None) -> None:
    """The old root and every key it had: they open what a forget there erased."""
    shutil.rmtree(old, ignore_errors=True)
    if root_id:
        shutil.rmtree(keys.path / root_id, ignore_errors=True)


def _report_of(root: Path, keys: KeyStore, *, already: bool = False) -> RewriteReport:
    opened = open_journal(root, writable=False, key_store=keys)
    try:
        position = opened.recorder.max_notification_id() or 0
        return RewriteReport(position=position, memories=0, entities=0, digests=0,
                             root_id=opened.chain.root_id or "", already=already)
    finally:
        opened.close()


def verify(before: OpenedJournal, after: Path, ids: dict[str, str]) -> None:
    """Every index row a replay of ``before`` folds, its ids mapped, is a row of ``after``'s
    index and nothing else is (rows compared as sets per table): the same memories, texts,
    statuses, links, audit lines."""
    # a Remember's supersession is attested by its line's id (sqlite_index: its authority)
    attested = {sha256_hex(f"remember:{o}"): sha256_hex(f"remember:{n}") for o, n in ids.items()}
    fold = fold_in_memory(iter_events(before, index_only=True))
    try:
        want = _rows(fold.conn, ids | attested)
    finally:
        fold.close()
    conn = open_active_index(after)
    if conn is None:
        raise IntegrityError("rewrite-journal: the rewritten root has no index; nothing was "
                             "swapped", code="rewrite_unverified")
    try:
        have = _rows(conn, {})
    finally:
        conn.close()
    for table in DUMP_TABLES:
        if want[table] != have[table]:
            missing = len(want[table] - have[table])
            extra = len(have[table] - want[table])
            raise IntegrityError(
                f"rewrite-journal: the rewritten root's {table} differs ({missing} rows "
                f"missing, {extra} extra); nothing was swapped", code="rewrite_unverified")


def _rows(conn: Any, ids: dict[str, str]) -> dict[str, set[str]]:
    return {table: set(_dumped(conn, table, columns, ids))
            for table, columns in DUMP_TABLES.items()}


def _dumped(conn: Any, table: str, columns: tuple[str, ...],
            ids: dict[str, str]) -> Iterator[str]:
    # a text key is the old id of its line (both hashed the text): a key, not a reference
    keep = {i for i, column in enumerate(columns) if column == "text_key"}
    for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table}"):
        yield json.dumps([ids.get(v, v) if isinstance(v, str) and i not in keep else v
                          for i, v in enumerate(row)])
