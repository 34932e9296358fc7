"""``memory-es migrate`` (C12, F1, F4, F13, C16): a Lite or Journal root's lines become BuJo
notes, through the configured Ollama chat model only.

The root is reopened as BuJo (a journalled reconfiguration) under the writer lock for the
whole run, so a running agent refuses it (the liveness fence), and only once every intake is
resolved (F13: pending capture work and a pending migration never coexist). Then:

1. a durable marker, ``Root.MigrationStarted``; while it stands no other writer opens the root;
2. per live legacy line, in journal order: one model call (:mod:`~memory_es.capture.contracts.
   migration`: 1 to 8 notes, parsed strictly), then one atomic commit holding the notes
   (``Memory.Captured``, ids from the line's id, on the line's day, with its session and
   turn) and the line's migration forget (``Memory.MigrationForgotten``: terminal, its instant
   a replay-owned lifecycle row the sidecar holds), projected before the next line;
3. the projection proved to match the journal (the sidecar against SQLite, every migrated
   line terminal), and only then the marker retired (``Root.MigrationFinished``, F4).

A kill anywhere leaves whole lines: running it again asks the model only for the lines left
and finishes. Replay never calls the model: the notes are in the journal. Without ``yes`` it
is a dry run (:func:`plan_migration`): read-only, beside a running agent too, no model call.
A line no note can hold (an unsafe text, longer than eight notes) is refused before the marker;
a standing marker can be retired without migrating the rest (:func:`abort_migration`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import apsw
from eventsourcing.persistence import StoredEvent

from memory_es.capture.contracts import (
    MAX_NOTES,
    MigratedNote,
    check_safe_text,
    migration_messages,
    parse_migration,
)
from memory_es.capture.contracts.common import TEXT_MAX_BYTES
from memory_es.capture.models import ChatModel, ModelError, timeout_seconds
from memory_es.config import MemoryConfig
from memory_es.embeddings import Embedder
from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.events import Memory, Root
from memory_es.fsutil import crash_point
from memory_es.ids import MIGRATION_UUID, memory_uuid, migrated_id
from memory_es.indexread import optional_rows
from memory_es.intake import utc_now
from memory_es.journal import DEFAULT_LOCK_TIMEOUT
from memory_es.keystore import KeyStore
from memory_es.progress import step
from memory_es.rootconfig import migration_pending, resolve_root

LEGACY_TIERS: Final = ("lite", "journal")
_LIVE: Final = ("open", "done", "scheduled", "migrated")
_LEGACY_SQL: Final = (
    "SELECT m.id, m.text, m.day, m.source, m.source_session, m.run_hash, m.status, "
    "m.recorded_at, COALESCE(t.insight, 0) FROM memories m "
    "LEFT JOIN memory_terms t ON t.rowid = m.rowid "
    f"WHERE m.tier IN {LEGACY_TIERS} AND m.status IN {_LIVE} ORDER BY m.rowid")
Clock = Callable[[], datetime]


@dataclass(frozen=True)
class MigrationReport:
    """What a run found and did: ``lines`` left to migrate when it began, ``migrated`` and
    ``notes`` by this run, ``already`` the lines an earlier, cut-short run migrated."""

    applied: bool
    resumed: bool
    lines: int
    migrated: int
    notes: int
    already: int
    model: str

    def to_json(self) -> dict[str, Any]:
        return {"applied": self.applied, "resumed": self.resumed, "lines": self.lines,
                "migrated": self.migrated, "notes": self.notes, "already": self.already,
                "model": self.model}


def check_migration_config(config: MemoryConfig | None) -> MemoryConfig:
    """The BuJo config the root becomes, with an Ollama chat model (C12: Ollama-only)."""
    if config is None or config.mode != "bujo":
        raise MemoryEsError('migrate_needs_bujo: give --config with memory.mode "bujo" and '
                            'an ollama memory.llm: the tier the root becomes',
                            code="migrate_needs_bujo")
    if config.llm is None or config.llm.provider != "ollama":
        provider = "none" if config.llm is None else str(config.llm.provider)
        raise MemoryEsError(f'migrate_ollama_only: migrate runs only on memory.llm.provider '
                            f'"ollama", not {provider} (C12)', code="migrate_ollama_only")
    return config


def plan_migration(root: str | Path | None, config: MemoryConfig | None, *,
                   key_store: str | Path | KeyStore | None = None) -> MigrationReport:
    """The dry run: what :func:`migrate_root` would do, read-only (safe beside a running
    agent), no model call. Refused like a migration would be."""
    from memory_es.root import MemoryRoot

    config = check_migration_config(config)
    assert config.llm is not None
    with MemoryRoot.open(resolve_root(root, config), config, key_store=key_store) as handle:
        with handle.reader() as opened:
            resumed = migration_pending(opened)
            already = _migrated_so_far(opened) if resumed else 0
        _check_resolved(handle.inspect().counts.active)
        with handle.index() as conn:
            lines = _legacy_lines(conn)
    _check_something(lines, resumed)
    _unmigratable(lines)
    return MigrationReport(False, resumed, len(lines), 0, 0, already, f"ollama:{config.llm.model}")


def migrate_root(root: str | Path | None, config: MemoryConfig | None, *,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, clock: Clock = utc_now,
                 key_store: str | Path | KeyStore | None = None,
                 embedder: Embedder | None = None) -> MigrationReport:
    """Migrate a Lite or Journal root into BuJo, or finish a migration a kill or a failed
    model call cut short. Refused (``migrate_*``) for a root that is running, has unresolved
    intakes, lines no note can hold, or nothing to migrate."""
    from memory_es.capture.factory import make_chat_model

    config = check_migration_config(config)
    assert config.llm is not None
    with _writer(root, config, lock_timeout, clock, key_store, embedder) as store:
        opened, journal, projections = store._opened, store.journal_writer, store.projections
        resumed = migration_pending(opened)
        _check_resolved(store.inspect().counts.active)
        projections.catch_up()
        lines = _legacy_lines(projections.get().index.conn)
        already = _migrated_so_far(opened) if resumed else 0
        _check_something(lines, resumed)
        _unmigratable(lines)
        chat = make_chat_model(config.llm)
        if not resumed:
            version = len(opened.recorder.aggregate_rows(MIGRATION_UUID))
            journal.commit_events([Root.migration_started(
                version=version, at=clock(), lines=len(lines),
                model={"provider": "ollama", "model": config.llm.model})])
            crash_point("migrate.after_marker")
        notes = 0
        for n, line in enumerate(lines):
            plan = _ask(chat, line, timeout_seconds(config.llm), n, len(lines))
            crash_point("migrate.before_commit")
            with journal.exclusive():
                version = len(opened.recorder.aggregate_rows(memory_uuid(line.id)))
                journal.commit_held(_line_events(line, plan.notes, version, clock()))
                projections.catch_up()
            notes += len(plan.notes)
            crash_point("migrate.after_commit")
            step("migrate", n + 1, len(lines))
        _retire(store, clock(), whole=True)
        store.drain()  # the notes' vectors, so recall is whole afterwards
        return MigrationReport(True, resumed, len(lines), len(lines), notes, already,
                               f"ollama:{config.llm.model}")


def abort_migration(root: str | Path | None, config: MemoryConfig | None = None, *,
                    lock_timeout: float = DEFAULT_LOCK_TIMEOUT, clock: Clock = utc_now,
                    key_store: str | Path | KeyStore | None = None) -> tuple[int, int]:
    """Retire a standing marker without migrating the rest: the lines migrated stay BuJo
    notes, the others stay as they were (live, on the BuJo root). Returns (migrated, left);
    ``migrate_not_pending`` when no migration stands."""
    with _writer(root, config, lock_timeout, clock, key_store, None) as store:
        if not migration_pending(store._opened):
            raise MemoryEsError("migrate_not_pending: no migration of this root is standing",
                                code="migrate_not_pending")
        store.projections.catch_up()
        left = len(_legacy_lines(store.projections.get().index.conn))
        migrated = _retire(store, clock(), whole=False)
        return migrated, left


def _writer(root: str | Path | None, config: MemoryConfig | None, lock_timeout: float,
            clock: Clock, key_store: str | Path | KeyStore | None,
            embedder: Embedder | None) -> Any:
    """The writer store migrate holds for its whole span (the liveness fence, C16)."""
    from memory_es.store import MemoryStore

    return MemoryStore.open(root, config, clock=clock, lock_timeout=lock_timeout,
                            background=False, control=False, create=False,
                            key_store=key_store, embedder=embedder, migrating=True)


def _check_resolved(unresolved: int) -> None:
    if unresolved:
        raise MemoryEsError(f"migrate_pending_work: {unresolved} intake(s) are not resolved; "
                            "run memory-es drain (or resolve them) first (F13)",
                            code="migrate_pending_work")


def _check_something(lines: list[Legacy], resumed: bool) -> None:
    if not lines and not resumed:
        raise MemoryEsError("migrate_nothing: this root holds no live Lite or Journal line",
                            code="migrate_nothing")


def _retire(store: Any, at: datetime, *, whole: bool) -> int:
    """F4: prove the projection matches the journal (``whole``: and no legacy line is left),
    then retire the marker. Returns the lines the migration migrated."""
    store.projections.catch_up()
    _prove(store.root, store.projections.get().index.conn, whole=whole)
    crash_point("migrate.before_finish")
    opened = store._opened
    migrated = _migrated_so_far(opened)
    version = len(opened.recorder.aggregate_rows(MIGRATION_UUID))
    store.journal_writer.commit_events([Root.migration_finished(
        version=version, at=at, migrated=migrated, notes=_notes_so_far(opened))])
    store.project()  # the index's position passes the retirement too
    return migrated


@dataclass(frozen=True)
class Legacy:
    """A live Lite or Journal line as migrate reads it from the index."""

    id: str
    text: str
    day: str
    source: str
    session: str | None
    run_hash: str | None
    status: str
    recorded: datetime
    insight: bool


def _legacy_lines(conn: apsw.Connection | None) -> list[Legacy]:
    if conn is None:
        return []
    return [Legacy(r[0], r[1], r[2], r[3], r[4], r[5], r[6], datetime.fromisoformat(r[7]),
                   bool(r[8])) for r in optional_rows(conn, _LEGACY_SQL, ())]


def _unmigratable(lines: list[Legacy]) -> None:
    """Refuse, before the marker, lines no note can hold (an unsafe text, or longer than
    eight notes): the model could never answer them within the contract."""
    bad = [(line.id, rule) for line in lines if (rule := _rule_of(line.text)) is not None]
    if bad:
        shown = ", ".join(f"{memory_id[:12]} ({rule})" for memory_id, rule in bad[:5])
        raise MemoryEsError(f"migrate_unmigratable: {len(bad)} line(s) cannot become notes: "
                            f"{shown}; forget them first (memory-es forget ID)",
                            code="migrate_unmigratable")


def _rule_of(text: str) -> str | None:
    unsafe = check_safe_text(text)
    if unsafe is not None:
        return unsafe
    if len(text.encode("utf-8")) > MAX_NOTES * TEXT_MAX_BYTES:
        return f"more than {MAX_NOTES} notes of {TEXT_MAX_BYTES} bytes"
    return None


def _ask(chat: ChatModel, line: Legacy, timeout: float, n: int, total: int) -> Any:
    """The model's notes for one line; a failure names the line and how to go on."""
    try:
        return parse_migration(chat.complete(migration_messages(line.id, line.day, line.text),
                                             timeout=timeout))
    except ModelError as e:
        raise ModelError(f"migrate: line {n + 1} of {total} ({line.id[:12]}): {e.code}: {e}; "
                         f"{n} migrated, run memory-es migrate --yes again to resume (or "
                         "--abort to stop here)", code=e.code) from e


def _line_events(line: Legacy, notes: list[MigratedNote], version: int,
                 at: datetime) -> list[Any]:
    """One line's commit: its notes (a task becomes a note, A19), each recorded when the line
    was, with its status and insight marker, then the line's migration forget at ``at``."""
    ids = [migrated_id(line.id, i) for i in range(len(notes))]
    events: list[Any] = []
    for new_id, note in zip(ids, notes, strict=True):
        events.append(Memory.captured(
            at=line.recorded, memory_id=new_id,
            kind="note" if note.kind == "task" else note.kind, text=note.text, day=line.day,
            status=line.status, labels=[] if note.kind == "task" else list(note.labels),
            entity_ids=[], scope="agent", source=line.source, salience=note.salience,
            from_task=note.kind == "task", session=line.session, run_hash=line.run_hash,
            tier="bujo", fact=None))
        if line.insight:
            events.append(Memory.marked(version=1, at=at, memory_id=new_id, insight=True))
    events.append(Memory.migration_forgotten(version=version, at=at, memory_id=line.id,
                                             into=ids))
    return events


def _prove(root: Path, conn: apsw.Connection, *, whole: bool) -> None:
    """F4: the projection matches the journal before the marker is retired: the sidecar
    equals the SQLite lifecycle it was rendered from and (``whole``) no legacy line is left
    live."""
    from projections.compare import compare_sidecar

    left = conn.execute(f"SELECT COUNT(*) FROM memories WHERE tier IN {LEGACY_TIERS} "
                        f"AND status IN {_LIVE}").fetchone()
    findings = list(compare_sidecar(root, conn))
    if (whole and left is not None and left[0]) or findings:
        raise IntegrityError("migrate_unverified: the projection does not match the journal "
                             "after migrating; run memory-es rebuild, then migrate again",
                             code="migrate_unverified")


def _migrated_so_far(opened: Any) -> int:
    """The lines migrated since the standing marker (a resumed run's ``already``)."""
    return len(_forgotten_since_marker(opened))


def _notes_so_far(opened: Any) -> int:
    return sum(len(e.into) for e in _forgotten_since_marker(opened))


def _forgotten_since_marker(opened: Any) -> list[Memory.MigrationForgotten]:
    """The migration forgets after the last migration marker: only those rows are read and
    decoded (content-free events, found by topic), never the journal between."""
    rows = opened.recorder.aggregate_rows(MIGRATION_UUID)
    start = rows[-1][0] if rows else 0
    mapper = opened.app.mapper
    return [mapper.to_domain_event(StoredEvent(oid, version, topic, state))
            for position, oid, version, topic, state
            in opened.recorder.rows_of([Memory.MigrationForgotten.TOPIC]) if position > start]
