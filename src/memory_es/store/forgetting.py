"""Forget that really erases: crypto-shredding plus projections.

Order, so that a kill at any boundary converges (never half-forgotten):

1. commit the content-free ``Memory.Forgotten`` / ``Intake.Forgotten`` events (before this
   the text is recallable and no event exists);
2. drop the vectors of the erased texts from the on-disk vector cache (keyed by the text's
   SHA-256: found while the keys still open the text), then destroy the record keys
   (``records.db``: secure_delete, commit, WAL truncated);
3. project: the index rows, daily/audit Markdown, ``graph.jsonl`` and the sidecar, then merge
   the FTS segments and VACUUM the index and the cache.

A writer that opens a root whose Forgotten events still have keys finishes steps 2 and 3
(:func:`complete_forgets`) before anything else. The receipt is content-free: ids, how
many texts went with each (no digest of any), events written, files rewritten and a byte
scan of every file under the root for each erased text.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import apsw
import msgspec

from memory_es.backup.ledger import holding
from memory_es.bounds import check_slug
from memory_es.browse.inventory import check_memory_id, resolve_id
from memory_es.errors import MemoryEsError, storage_kind
from memory_es.events import FORGOTTEN_TOPICS, Intake, Memory
from memory_es.fsutil import crash_point
from memory_es.ids import run_hash as run_hash_of
from memory_es.ids import sha256_hex
from memory_es.journal import OpenedJournal
from memory_es.store.admission import GroupCommit
from memory_es.store.forget_plan import Plan, Planner
from memory_es.store.projecting import LiveProjections
from memory_es.vectors.ann import discard_all
from memory_es.vectors.cache import CACHE_DIR, CACHE_FILE, discard_cache
from projections.forgetting import scrub_pending, vacuum
from projections.markdown import forget_rendered
from projections.replay import generation_dirs

Status = Literal["forgotten", "already_forgotten", "dry_run"]


class ByteScan(msgspec.Struct, frozen=True, kw_only=True):
    """Every file under the root read byte by byte for each erased text (SQLite files after
    VACUUM and a WAL checkpoint, so free pages and WAL frames are covered)."""

    files: int
    texts: int
    clean: bool
    found_in: list[str]


class Listed(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing a forget erases, as a dry run lists it; ``text`` only when asked for."""

    kind: str
    id: str
    text: str | None = None


class Retained(msgspec.Struct, frozen=True, kw_only=True):
    """A copy this forget cannot reach, and until when it can open the erased text."""

    where: str
    until: str


# What outlives every forget: copies of a destroyed key taken before it (README "Forget").
KEY_STORE_BACKUPS = Retained(
    where="key store backups taken before this forget: they hold the destroyed record keys, "
          "which open the sealed rows the journal keeps",
    until="those backups are destroyed")
# What a PostgreSQL server keeps of a deleted key row.
SERVER_RETAINED = Retained(
    where="the PostgreSQL server's write-ahead log, archived WAL, replicas and base backups "
          "(and dead tuples until vacuum reuses their pages): deleted key rows, wrapped under "
          "a key every host's key store keeps",
    until="the server recycles those WAL segments and every archive, replica and backup "
          "taken before this forget is gone")


# A reader that was reading when the forget ran (its snapshot held the index's WAL).
READER_SNAPSHOT = Retained(
    where="a reader's open snapshot of the index and the index's -wal",
    until="that reader closes and the next writer open or forget scrubs again "
          "(health: forget_unscrubbed)")


class ForgetReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """The content-free deletion receipt (``--json``); README "Forget" documents each field."""

    status: Status
    reason: str
    memory_ids: list[str]
    kept: list[str]
    turns: list[str]
    events: list[dict[str, Any]]
    erased: list[dict[str, str | int]]
    keys_destroyed: int
    files_rewritten: list[str]
    byte_scan: ByteScan | None
    listing: list[Listed] | None = None
    retained: list[Retained] = msgspec.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return msgspec.to_builtins(self, order="sorted")  # type: ignore[no-any-return]


def check_reason(reason: str) -> str:
    return check_slug(reason)


class Forgetter:
    """The forget path of a writable store. Callers pass the attempts' work lock, so no
    capture runs against a memory while it is being erased."""

    def __init__(self, opened: OpenedJournal, journal: GroupCommit,
                 projections: LiveProjections, root: Path,
                 rows_removed: Callable[[], None] = lambda: None) -> None:
        self._opened = opened
        self._journal = journal
        self._projections = projections
        self._root = root
        self._rows_removed = rows_removed  # the ANN index: no file may keep their vectors
        self.reader_held = False  # the last forget's scrub found a reader holding the WAL

    # -- planning ---------------------------------------------------------------------------

    def _planner(self) -> Planner:
        self._projections.catch_up()
        return Planner(self._opened, self._projections.get().index.conn)

    def plan_memories(self, memory_ids: Iterable[str], *, keep_supported_by: str | None = None
                      ) -> Plan:
        """The plan for forgetting ``memory_ids`` (the caller holds the journal). With
        ``keep_supported_by`` (a turn being forgotten), a memory another live turn also
        supports is kept."""
        planner = self._planner()
        plan = Plan()
        support = planner.reconcile_support()
        conn = self._projections.get().index.conn
        # a unique prefix (8+ hex) names a stored line, as in show; a full id may name a line
        # already forgotten (no row left), which the journal answers
        full_ids = {ref if len(ref) == 64 else resolve_id(conn, ref)
                    for ref in map(check_memory_id, memory_ids)}
        full_ids |= planner.restated(full_ids)  # the same words in lines of their own
        for memory_id in sorted(full_ids):
            target = planner.memory(memory_id)
            if target is None:
                raise MemoryEsError(f"memory_not_found: no memory {memory_id}",
                                    code="memory_not_found")
            if target.kind == "forgotten":
                plan.already.append(memory_id)
                continue
            target.run_hashes |= support.get(memory_id, set())
            if keep_supported_by is not None:
                others = {r for r in target.run_hashes - {keep_supported_by}
                          if (t := planner.turn(r)) is not None and t.state != "forgotten"}
                if others:
                    plan.kept.append(memory_id)
                    continue
            plan.memories[memory_id] = target
        forgotten = set(plan.memories)
        for target in plan.memories.values():
            for run_hash in sorted(target.run_hashes):
                turn = planner.turn(run_hash)
                if turn is not None and turn.state != "forgotten":
                    self._check_resolved(run_hash)
                    plan.turns[run_hash] = turn
        candidates = {e for t in plan.memories.values() for e in t.entity_ids}
        plan.relation_keys = planner.relations(forgotten)
        if forgotten:
            plan.entities = planner.lone_entities(candidates, forgotten)
        return plan

    def plan_turn(self, run_id: str) -> tuple[str, Plan]:
        """The plan for forgetting one turn and the memories derived from it."""
        run_hash = run_hash_of(run_id)
        planner = self._planner()
        turn = planner.turn(run_hash)
        if turn is None:
            raise MemoryEsError(f"turn_not_found: no turn with run id {run_id!r}",
                                code="turn_not_found")
        self._check_resolved(run_hash)
        plan = self.plan_memories(planner.derived(run_hash), keep_supported_by=run_hash)
        if turn.state != "forgotten":
            plan.turns[run_hash] = turn
        return run_hash, plan

    def _check_resolved(self, run_hash: str) -> None:
        """Refuse to erase a turn still waiting for work (pending or dead): its capture
        needs the payload and plans a forget destroys. Resolve it first (C4)."""
        with self._journal.cv:
            record = self._journal.view.records.get(run_hash)
        if record is not None and record.state in ("pending", "dead"):
            raise MemoryEsError(
                f"turn_unresolved: intake {run_hash} is {record.state}: its capture still "
                "needs what a forget erases; let it finish or resolve it first "
                "(memory-es resolve ID SLUG)", code="turn_unresolved")

    # -- executing ---------------------------------------------------------------------------

    def execute(self, plan: Plan, reason: str, now: Any
                ) -> tuple[list[dict[str, Any]], list[str]]:
        """Steps 1-3 under the caller's hold of the journal; returns (events, files)."""
        before = _digests(self._root)
        events: list[Any] = []
        run_hashes = sorted(plan.turns)
        keys_root = self._opened.chain.root_id or ""
        for memory_id, target in sorted(plan.memories.items()):
            events.append(Memory.forgotten(
                version=target.version, at=now, memory_id=memory_id, reason=reason,
                key_ids=sorted(target.key_ids | _entity_keys(plan, memory_id)),
                keys_root=keys_root, entity_ids=sorted(plan.entities), run_hashes=run_hashes))
        for run_hash in run_hashes:
            turn = plan.turns[run_hash]
            events.append(Intake.forgotten(run_hash=run_hash, version=turn.version, at=now,
                                           reason=reason, key_ids=sorted(turn.key_ids),
                                           keys_root=keys_root))
        if not events:
            return [], []
        positions = self._opened.recorder.max_notification_id() or 0
        self._journal.commit_held(events)
        crash_point("forget.after_commit")
        purge_vector_cache(self._root, [sha256_hex(t) for t in plan.scan_texts()])
        self._rows_removed()
        crash_point("forget.after_cache")
        keys = self._opened.recorder.sealer.keys
        if keys is not None:
            keys.destroy(plan.key_ids())
        crash_point("forget.after_destroy")
        self._projections.catch_up()
        crash_point("forget.after_project")
        projector = self._projections.get()
        projector.scrub()
        self.reader_held = scrub_pending(projector.index.conn) == "reader"
        forget_rendered()  # no rendered bullet of the erased text stays in this process
        written = [{"topic": type(e).TOPIC, "position": positions + i + 1, "id": _event_id(e)}
                   for i, e in enumerate(events)]
        after = _digests(self._root)
        files = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        return written, files


    def forget(self, *, reason: str, now: Any, memory_ids: Iterable[str] = (),
               run_id: str | None = None, dry_run: bool = False,
               show_text: bool = False) -> ForgetReceipt:
        """Plan, then (unless ``dry_run``) erase, under one hold of the journal."""
        check_reason(reason)
        with self._journal.exclusive():
            if run_id is not None:
                run_hash, plan = self.plan_turn(run_id)
            else:
                run_hash, plan = None, self.plan_memories(memory_ids)
            if dry_run:
                return _receipt("dry_run", reason, plan, listing=_listing(plan, show_text))
            if not plan.memories and not plan.turns:
                return _receipt("already_forgotten", reason, plan)
            events, files = self.execute(plan, reason, now)
        del run_hash
        return _receipt("forgotten", reason, plan, events=events, files=files,
                        scan=byte_scan(self._root, plan.scan_texts()),
                        retained=self.retained(plan.key_ids()))

    def retained(self, key_ids: Sequence[int] = ()) -> list[Retained]:
        """The copies a forget on this root cannot reach (content-free): first each backup
        the key store's ledger says holds a destroyed key, by id, time and path."""
        on_server = self._opened.recorder.shared
        return [*self._backups(key_ids), KEY_STORE_BACKUPS,
                *([SERVER_RETAINED] if on_server else []),
                *([READER_SNAPSHOT] if self.reader_held else [])]

    def _backups(self, key_ids: Sequence[int]) -> list[Retained]:
        root_id, keys = self._opened.chain.root_id, self._opened.keys
        if root_id is None or keys is None:
            return []
        return [Retained(
            where=f"memory-es backup {e['backup_id']} taken {e['created_at']} at position "
                  f"{e['position']}" + (f" ({e['path']})" if e.get("path") else "")
                  + ": it holds the destroyed record keys",
            until="that backup file is destroyed")
            for e in holding(keys, root_id, key_ids)]


def _listing(plan: Plan, show_text: bool) -> list[Listed]:
    """What a dry run lists: ids and kinds; the text only on the owner's explicit ask."""
    items = [Listed(kind="memory", id=m, text=" / ".join(t.texts) if show_text else None)
             for m, t in sorted(plan.memories.items())]
    items += [Listed(kind="turn", id=r) for r in sorted(plan.turns)]
    items += [Listed(kind="entity", id=e, text=" / ".join(names) if show_text else None)
              for e, (_, names) in sorted(plan.entities.items())]
    items += [Listed(kind="relations", id=m) for m in sorted(plan.relation_keys)]
    return items


def _receipt(status: Status, reason: str, plan: Plan, *, events: list[dict[str, Any]] | None
             = None, files: list[str] | None = None, scan: ByteScan | None = None,
             listing: list[Listed] | None = None, retained: list[Retained] | None = None
             ) -> ForgetReceipt:
    return ForgetReceipt(
        status=status, reason=reason,
        memory_ids=sorted(plan.memories) if plan.memories else sorted(plan.already),
        kept=sorted(plan.kept), turns=sorted(plan.turns), events=events or [],
        erased=plan.erased() if status != "already_forgotten" else [],
        keys_destroyed=len(plan.key_ids()) if status == "forgotten" else 0,
        files_rewritten=files or [], byte_scan=scan, listing=listing,
        retained=(retained or []) if status == "forgotten" else [])


def _entity_keys(plan: Plan, memory_id: str) -> set[int]:
    keys: set[int] = set()
    for entity_keys, _ in plan.entities.values():
        keys |= entity_keys
    if memory_id in plan.relation_keys:
        keys |= plan.relation_keys[memory_id][0]
    return keys


def _event_id(event: Any) -> str:
    return str(getattr(event, "memory_id", None) or getattr(event, "run_hash", ""))


def purge_vector_cache(root: Path, shas: list[str]) -> None:
    """Drop the cached vectors of erased texts (every embedding identity), then VACUUM. A
    cache SQLite reports damaged is deleted whole instead (a cache: the forget goes on, and
    no copy of it keeps the erased texts' vectors)."""
    path = root / CACHE_DIR / CACHE_FILE
    if not shas or not os.path.lexists(path):
        return
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE
                               | apsw.SQLITE_OPEN_NOFOLLOW)
        try:
            conn.setbusytimeout(5000)
            conn.execute("PRAGMA secure_delete=ON")
            with conn:
                conn.executemany("DELETE FROM vectors WHERE sha256 = ?", [(s,) for s in shas])
            vacuum(conn)
        finally:
            conn.close()
    except apsw.Error as e:
        if storage_kind(e) != "corrupt":
            raise
        discard_cache(root, e)


def _digests(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in _files(root):
        if path.name.endswith("-shm"):  # SQLite's shared-memory index: no stored content
            continue
        try:
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            continue
    return out


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for directory, _dirs, names in os.walk(root):
        found.extend(Path(directory) / name for name in names)
    return sorted(found)


def byte_scan(root: Path, texts: list[str]) -> ByteScan:
    """Read every file under ``root`` and report any that still holds an erased text."""
    needles = [t.encode("utf-8") for t in texts]
    files = _files(root)
    found: set[str] = set()
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(n in data for n in needles):
            found.add(str(path.relative_to(root)))
    return ByteScan(files=len(files), texts=len(needles), clean=not found,
                    found_in=sorted(found))


def complete_forgets(opened: OpenedJournal, root: Path) -> int:
    """A writer's open: finish step 2 of any forget a kill interrupted (its keys still
    exist): drop the cached vectors of what they open, then destroy them. Returns how many
    keys it destroyed. Step 3 follows from the projections' own catch-up and scrub."""
    keys = opened.recorder.sealer.keys
    if keys is None:
        return 0
    wanted: list[int] = []
    for row in opened.recorder.rows_of(list(FORGOTTEN_TOPICS)):
        event = msgspec.json.decode(row[4])
        if event["keys_root"] == opened.chain.root_id:  # ids are local to the root's store
            wanted.extend(event["key_ids"])
    present = keys.present(sorted(set(wanted)))
    if not present:
        return 0
    purge_vector_cache(root, [sha256_hex(t) for t in _texts_under(opened, set(present))])
    for generation in generation_dirs(root).values():  # the ANN index files
        discard_all(generation)
    keys.destroy(present)
    return len(present)


def _texts_under(opened: OpenedJournal, key_ids: set[int]) -> list[str]:
    """The texts (memory lines, turn summaries) sealed under ``key_ids``, opened."""
    from eventsourcing.persistence import StoredEvent

    from memory_es.journal.sealing import state_key_ids

    texts: list[str] = []
    topics = [Memory.Recorded.TOPIC, Memory.Captured.TOPIC, Memory.TextUpdated.TOPIC,
              Memory.Remembered.TOPIC, Intake.Admitted.TOPIC]
    for _pos, oid, version, topic, state in opened.recorder.rows_of(topics):
        if key_ids.intersection(state_key_ids(state)):
            event: Any = opened.app.mapper.to_domain_event(StoredEvent(oid, version, topic,
                                                                       state))
            texts.append(str(getattr(event, "text", None) or getattr(event, "summary", "")))
    return texts
