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
is a dry run that calls no model and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import apsw

from memory_es.capture.contracts import MigratedNote, migration_messages, parse_migration
from memory_es.capture.models import ChatModel, ModelError, timeout_seconds
from memory_es.config import MemoryConfig
from memory_es.embeddings import Embedder
from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.events import Memory, Root
from memory_es.fsutil import crash_point
from memory_es.ids import MIGRATION_UUID, memory_uuid, migrated_id
from memory_es.intake import utc_now
from memory_es.journal import DEFAULT_LOCK_TIMEOUT
from memory_es.keystore import KeyStore
from memory_es.progress import step
from memory_es.rootconfig import migration_pending

LEGACY_TIERS: Final = ("lite", "journal")
_LIVE: Final = ("open", "done", "scheduled", "migrated")
_LEGACY_SQL: Final = ("SELECT id, text, day, source, source_session, run_hash FROM memories "
                      f"WHERE tier IN {LEGACY_TIERS} AND status IN {_LIVE} ORDER BY rowid")
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


def migrate_root(root: str | Path | None, config: MemoryConfig | None, *, yes: bool = False,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, clock: Clock = utc_now,
                 key_store: str | Path | KeyStore | None = None,
                 embedder: Embedder | None = None) -> MigrationReport:
    """Migrate (``yes``) or plan the migration of a Lite or Journal root into BuJo; resumes a
    migration a kill cut short. Refused (``migrate_*``) for a root that is running, has
    unresolved intakes, or has nothing to migrate."""
    from memory_es.capture.factory import make_chat_model
    from memory_es.store import MemoryStore

    config = check_migration_config(config)
    assert config.llm is not None
    model_name = f"ollama:{config.llm.model}"
    with MemoryStore.open(root, config, clock=clock, lock_timeout=lock_timeout,
                          background=False, control=False, create=False, key_store=key_store,
                          embedder=embedder, migrating=True) as store:
        opened, journal, projections = store._opened, store.journal_writer, store.projections
        resumed = migration_pending(opened)
        unresolved = store.inspect().counts.active
        if unresolved:
            raise MemoryEsError(f"migrate_pending_work: {unresolved} intake(s) are not resolved; "
                                "run memory-es drain (or resolve them) first (F13)",
                                code="migrate_pending_work")
        projections.catch_up()
        lines = _legacy_lines(projections.get().index.conn)
        already = _migrated_so_far(opened) if resumed else 0
        if not lines and not resumed:
            raise MemoryEsError("migrate_nothing: this root holds no live Lite or Journal line",
                                code="migrate_nothing")
        if not yes:
            return MigrationReport(False, resumed, len(lines), 0, 0, already, model_name)
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
                version = len(opened.recorder.aggregate_rows(memory_uuid(line[0])))
                journal.commit_held(_line_events(line, plan.notes, version, clock()))
                projections.catch_up()
            notes += len(plan.notes)
            crash_point("migrate.after_commit")
            step("migrate", n + 1, len(lines))
        _prove(store.root, projections.get().index.conn)
        crash_point("migrate.before_finish")
        version = len(opened.recorder.aggregate_rows(MIGRATION_UUID))
        journal.commit_events([Root.migration_finished(
            version=version, at=clock(), migrated=already + len(lines),
            notes=_notes_so_far(opened))])
        store.drain()  # the notes' vectors, so recall is whole afterwards
        return MigrationReport(True, resumed, len(lines), len(lines), notes, already,
                               model_name)


Legacy = tuple[str, str, str, str, str | None, str | None]  # id, text, day, source, session, run


def _legacy_lines(conn: apsw.Connection) -> list[Legacy]:
    return [tuple(row) for row in conn.execute(_LEGACY_SQL)]


def _ask(chat: ChatModel, line: Legacy, timeout: float, n: int, total: int) -> Any:
    """The model's notes for one line; a failure names the line and how to resume."""
    try:
        return parse_migration(chat.complete(migration_messages(line[0], line[2], line[1]),
                                             timeout=timeout))
    except ModelError as e:
        raise ModelError(f"migrate: line {n + 1} of {total} ({line[0][:12]}): {e.code}: {e}; "
                         f"{n} migrated, run memory-es migrate again to resume",
                         code=e.code) from e


def _line_events(line: Legacy, notes: list[MigratedNote], version: int,
                 at: datetime) -> list[Any]:
    """One line's commit: its notes (a task becomes a note, A19) and its migration forget."""
    memory_id, _text, day, source, session, run = line
    ids = [migrated_id(memory_id, i) for i in range(len(notes))]
    events: list[Any] = [Memory.captured(
        at=at, memory_id=new_id, kind="note" if note.kind == "task" else note.kind,
        text=note.text, day=day, status="open",
        labels=[] if note.kind == "task" else list(note.labels), entity_ids=[],
        scope="agent", source=source, salience=note.salience,
        from_task=note.kind == "task", session=session, run_hash=run, tier="bujo", fact=None)
        for new_id, note in zip(ids, notes, strict=True)]
    events.append(Memory.migration_forgotten(version=version, at=at, memory_id=memory_id,
                                             into=ids))
    return events


def _prove(root: Path, conn: apsw.Connection) -> None:
    """F4: the projection matches the journal before the marker is retired: no legacy line
    is left live, and the sidecar equals the SQLite lifecycle it was rendered from."""
    from projections.compare import compare_sidecar

    left = conn.execute(f"SELECT COUNT(*) FROM memories WHERE tier IN {LEGACY_TIERS} "
                        f"AND status IN {_LIVE}").fetchone()
    findings = list(compare_sidecar(root, conn))
    if (left is not None and left[0]) or findings:
        raise IntegrityError("migrate_unverified: the projection does not match the journal "
                             "after migrating; run memory-es rebuild, then migrate again",
                             code="migrate_unverified")


def _migrated_so_far(opened: Any) -> int:
    """The lines migrated since the standing marker (a resumed run's ``already``)."""
    return sum(1 for _ in _since_marker(opened, Memory.MigrationForgotten.TOPIC))


def _notes_so_far(opened: Any) -> int:
    return sum(len(e.into) for e in _since_marker(opened, Memory.MigrationForgotten.TOPIC))


def _since_marker(opened: Any, topic: str) -> list[Any]:
    """The ``topic`` events after the last migration marker, decoded."""
    from memory_es.history import iter_events

    rows = opened.recorder.aggregate_rows(MIGRATION_UUID)
    start = rows[-1][0] if rows else 0
    return [e for _, e in iter_events(opened, after=start)
            if getattr(type(e), "TOPIC", None) == topic]
