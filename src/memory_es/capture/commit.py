"""The decided plan as events: one atomic commit per capture (SPEC E14-E17, E22, E26, E28,
E38, E41-E42, A16, A20-A21, F8, L10).

Each line's guarded decision becomes memory, lifecycle and thread events with run-derived ids
(E17), then the entities and relations its stored lines name, then ``Intake.Resolved``; the
worker appends them in one journal transaction. Replay state the sidecar could not hold fails
the attempt closed instead (F8).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memory_es.capture.contracts.extraction import AnyPlan
from memory_es.capture.reconcile import Decision, guard, intent_guard
from memory_es.capture.rules import Line, Turn
from memory_es.events import Entity, Intake, Memory
from memory_es.ids import entity_uuid, memory_uuid, run_memory_id, text_key
from memory_es.step import StepFailure
from memory_es.text import journal_text
from memory_es.vocabulary import (
    LIVE_STATUSES,
    SIDECAR_ENTRY_MAX_BYTES,
    SIDECAR_MAX_BYTES,
    SIDECAR_MAX_ENTRIES,
)

if TYPE_CHECKING:
    from memory_es.capture.reads import CaptureReads, StoredLine

log = logging.getLogger("memory_es")
THREAD_WEIGHT = 1.0  # A20, E42: a task update's note is fully on its thread


def commit_events(plan: AnyPlan, fresh: list[Line], choices: list[Decision], *,
                  keys: dict[str, str], reads: CaptureReads, admitted: Intake.Admitted,
                  turn: Turn, only: tuple[str, ...] | None, at: datetime,
                  version: int, intents: bool = False) -> list[Any]:
    """Every event of the capture, ending with ``Intake.Resolved`` at intake ``version``.

    ``keys`` maps plan entity refs to entity ids; ``only`` is ``capture.only`` (A16);
    ``intents``: ``memory.capture.intentLifecycle`` (a replacement inherits its target's
    end, M22).
    """
    commit = _Commit(reads=reads, at=at, keys=keys, admitted=admitted, turn=turn, only=only,
                     intents=intents)
    stored = commit.write_lines(fresh, choices)
    commit.check_sidecar_room()
    graph = commit.graph(plan, stored)
    outcome = "captured" if commit.events else "empty"
    return [*graph, *commit.events,
            Intake.resolved(run_hash=turn.run_hash, version=version, at=at, outcome=outcome)]


@dataclass
class _Commit:
    """Events of one capture, with the aggregate versions they advance."""

    reads: CaptureReads
    at: datetime
    keys: dict[str, str]  # plan entity ref -> entity id
    admitted: Intake.Admitted
    turn: Turn
    only: tuple[str, ...] | None
    intents: bool = False
    events: list[Any] = field(default_factory=list)
    versions: dict[UUID, int] = field(default_factory=dict)

    def follows(self, originator: UUID) -> int:
        """The version the next event of ``originator`` follows (and count that event)."""
        version = self.versions.get(originator)
        if version is None:
            version = self.reads.version(originator)
        self.versions[originator] = version + 1
        return version

    def write_lines(self, fresh: list[Line], choices: list[Decision]) -> list[tuple[str, Line]]:
        """Each line's guarded decision as events (E14-E16, E28, A16, A20-A21); returns the new
        lines (id, line) that the graph hangs on."""
        reads, turn, run_hash = self.reads, self.turn, self.turn.run_hash
        by_line = {d.line: d for d in choices}
        targets = reads.lines([d.target for d in choices if d.target is not None])
        stored_lines: list[tuple[str, Line]] = []
        changed: set[str | None] = set()
        # E16 also holds for the classifier's replacement texts and for lines of this commit:
        # text that is already a live line never becomes a second one.
        live = reads.duplicates([text_key(d.text) for d in choices if d.text])
        for line in fresh:
            decision = by_line.get(line.index, Decision(line.index, "ADD"))
            target = targets.get(decision.target) if decision.target else None
            decision = intent_guard(guard(decision, line, target, turn), line, target, turn)
            if decision.action in ("UPDATE", "SUPERSEDE"):
                if decision.target in changed:  # never two rewrites of one line (E6)
                    decision = Decision(line.index, "ADD")
                else:
                    changed.add(decision.target)
            if decision.action == "NOOP" or not self._allowed(line):
                continue
            new_id = run_memory_id(run_hash, line.index)
            if target is not None and target.kind == "task":
                # A20/A21: a task is never rewritten; the news is its own note
                if not self._add(new_id, line, line.text, live):
                    continue
                if decision.action == "SUPERSEDE":
                    self.events.append(Memory.superseded(
                        version=self.follows(memory_uuid(target.id)), at=self.at,
                        memory_id=target.id, by=new_id, status="invalidated", run_hash=run_hash))
                else:
                    self.events.append(Memory.threaded(
                        version=self.follows(memory_uuid(new_id)), at=self.at, memory_id=new_id,
                        to=target.id, weight=THREAD_WEIGHT, run_hash=run_hash))
                stored_lines.append((new_id, line))
            elif target is not None and decision.action in ("UPDATE", "SUPERSEDE"):
                assert decision.text is not None
                same = live.get(text_key(decision.text))
                restated = line.intent is not None and \
                    line.intent.changes(target.status, target.due_at)  # M21
                if not restated and (same == target.id or
                                     journal_text(decision.text) == journal_text(target.text)):
                    continue  # the line already says exactly this
                if same is not None and same != target.id:  # another live line says it
                    self.events.append(Memory.superseded(
                        version=self.follows(memory_uuid(target.id)), at=self.at,
                        memory_id=target.id, by=same, status="superseded", run_hash=run_hash))
                elif decision.action == "UPDATE":
                    self.events.append(Memory.text_updated(
                        version=self.follows(memory_uuid(target.id)), at=self.at,
                        memory_id=target.id, text=decision.text, session=turn.session,
                        run_hash=run_hash, fact=self._fact(line)))
                    live[text_key(decision.text)] = target.id
                elif self._add(new_id, line, decision.text, live, replacing=target):
                    self.events.append(Memory.superseded(
                        version=self.follows(memory_uuid(target.id)), at=self.at,
                        memory_id=target.id, by=new_id, status="superseded", run_hash=run_hash))
                    stored_lines.append((new_id, line))
            elif self._add(new_id, line, line.text, live):
                stored_lines.append((new_id, line))
        return stored_lines

    def check_sidecar_room(self) -> None:
        """F8, fail closed: never commit replay state the sidecar could not hold (the
        projection would then stop for good); the capture waits, content-free, instead."""
        adding = sum(isinstance(e, Memory.Superseded | Memory.Threaded) for e in self.events)
        if not adding:
            return
        entries, size = self.reads.replay_state()
        if entries + adding > SIDECAR_MAX_ENTRIES or \
                size + adding * SIDECAR_ENTRY_MAX_BYTES > SIDECAR_MAX_BYTES:
            log.warning("memory_degraded: the replay sidecar is full (%d entries, %d bytes); "
                        "capture waits", entries, size,
                        extra={"memory_event": "memory_degraded", "code": "sidecar_full"})
            raise StepFailure("io_error")

    def graph(self, plan: AnyPlan, stored: Sequence[tuple[str, Line]]) -> list[Any]:
        """Entities named by stored lines, relations between them (L1, L10, E22, E26)."""
        keys = self.keys
        named_by: dict[str, str] = {}  # plan ref -> first stored memory naming it
        for memory_id, line in stored:
            for ref in line.entities:
                named_by.setdefault(ref, memory_id)
        known = self.reads.known_entities([keys[ref] for ref in named_by])
        events: list[Any] = []
        for entity in plan.entities:
            key = keys[entity.id]
            if entity.id in named_by and key not in known:
                known.add(key)
                before = self.reads.version(entity_uuid(key))
                if before:  # named before, pruned by a forget since
                    events.append(Entity.named_again(
                        version=before, at=self.at, entity_id=key, name=entity.name,
                        type=entity.type))
                else:
                    events.append(Entity.named(at=self.at, entity_id=key, name=entity.name,
                                               type=entity.type))
                self.versions[entity_uuid(key)] = before + 1
        triples = [(keys[r.from_id], r.relation, keys[r.to_id]) for r in plan.relations
                   if r.from_id in named_by and r.to_id in named_by]
        stated = self.reads.known_relations(triples)
        for rel in plan.relations:
            triple = (keys[rel.from_id], rel.relation, keys[rel.to_id])
            if triple not in triples or triple in stated:
                continue
            stated.add(triple)
            both = [mid for mid, line in stored
                    if rel.from_id in line.entities and rel.to_id in line.entities]
            self.events.append(Entity.related(
                version=self.follows(entity_uuid(triple[0])), at=self.at, entity_id=triple[0],
                to=triple[2], relation=rel.relation,
                memory=both[0] if both else named_by[rel.from_id]))
        return events

    def _allowed(self, line: Line) -> bool:
        """A16: stored only if an accepted label has an allowed kind (unset: everything)."""
        return self.only is None or any(label in self.only for label in line.labels)

    def _add(self, memory_id: str, line: Line, text: str, live: dict[str, str],
             replacing: StoredLine | None = None) -> bool:
        """Capture ``text`` as a new line unless a live line (or one of this commit) already
        says it (E16); returns whether it was added. ``replacing``: the line it supersedes,
        which may say the same words when only its intention's state or end changes (M21)."""
        key = text_key(text)
        if key in live and (replacing is None or live[key] != replacing.id):
            return False
        live[key] = memory_id
        admitted, turn = self.admitted, self.turn
        status, due_at = self._terms(line, replacing)
        self.events.append(Memory.captured(
            at=admitted.timestamp, memory_id=memory_id, kind=line.kind, text=text,
            day=admitted.timestamp.date().isoformat(), status=status, labels=line.labels,
            entity_ids=[self.keys[ref] for ref in line.entities], scope=turn.scope,
            source=line.source, salience=line.salience, from_task=line.from_task,
            session=turn.session, run_hash=turn.run_hash, tier=admitted.tier,
            fact=self._fact(line)))
        self.versions[memory_uuid(memory_id)] = 1
        if due_at is not None:
            self.events.append(Memory.due_stated(
                version=self.follows(memory_uuid(memory_id)), at=admitted.timestamp,
                memory_id=memory_id, due_at=due_at))
        return True

    def _terms(self, line: Line, replacing: StoredLine | None) -> tuple[str, str | None]:
        """The new line's status and end (M15, M17, M22): as its honoured proposal states
        them; an unstated end is inherited from the line it replaces (with the intent
        lifecycle, or a proposal of its own), and so is an unstated state when it proposes."""
        intent = line.intent
        status = "open" if intent is None or intent.status is None else intent.status
        due_at = None if intent is None else intent.due_at
        if replacing is not None and (intent is not None or self.intents):
            if due_at is None:
                due_at = replacing.due_at
            if intent is not None and intent.status is None and \
                    replacing.status in LIVE_STATUSES:
                status = replacing.status
        return status, due_at

    def _fact(self, line: Line) -> dict[str, str] | None:
        if line.fact is None:
            return None
        return {"subject": self.keys[line.fact.entity], "key": line.fact.key,
                "value": line.fact.value}
