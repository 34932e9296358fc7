"""What a forget erases, found from the journal and the index before
anything is written.

A memory's text is stated by its own events (Recorded / Captured / TextUpdated / Remembered),
by the relations it states, by the entities only it names, and by every turn that supports it: the
turn's summary, its payload and its retained capture plans say the same thing. Support is read
from the journal: the run hash on the memory's own events, ``Intake.Resolved(memory_id)``
(Lite, Journal) and a retained reconcile decision that confirms or restates it (BuJo capture:
NOOP or UPDATE; a SUPERSEDE replaces its target, no support). The plan holds every record key
to destroy and, for the receipt and the byte scan, the SHA-256 of each erased text (the texts
themselves never leave this process).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from memory_es.events import Entity, Intake, Memory
from memory_es.ids import entity_uuid, intake_uuid, memory_uuid
from memory_es.indexread import optional_rows
from memory_es.journal import OpenedJournal
from memory_es.journal.sealing import state_key_ids

_MEMORY_TEXT = (Memory.Recorded, Memory.Captured, Memory.TextUpdated, Memory.Remembered)
_RETAINED = (Intake.ExtractionRetained.TOPIC, Intake.ReviewRetained.TOPIC,
             Intake.ReconcileRetained.TOPIC)


@dataclass
class Target:
    """One memory to forget: the keys of its events and what they state."""

    memory_id: str
    version: int  # its aggregate's last version (the Forgotten event follows it)
    texts: list[str] = field(default_factory=list)
    key_ids: set[int] = field(default_factory=set)
    run_hashes: set[str] = field(default_factory=set)
    entity_ids: set[str] = field(default_factory=set)
    kind: str = "memory"


@dataclass
class Turn:
    """One turn whose content is erased: its version, keys and texts (summary, payload)."""

    run_hash: str
    version: int
    key_ids: set[int] = field(default_factory=set)
    texts: list[str] = field(default_factory=list)
    state: str = "resolved"


@dataclass
class Plan:
    """Everything one forget destroys, decided before the journal is touched."""

    memories: dict[str, Target] = field(default_factory=dict)
    turns: dict[str, Turn] = field(default_factory=dict)
    entities: dict[str, tuple[set[int], list[str]]] = field(default_factory=dict)
    relation_keys: dict[str, tuple[set[int], list[str]]] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)

    def key_ids(self) -> list[int]:
        keys: set[int] = set()
        for target in self.memories.values():
            keys |= target.key_ids
        for turn in self.turns.values():
            keys |= turn.key_ids
        for entity_keys, _ in (*self.entities.values(), *self.relation_keys.values()):
            keys |= entity_keys
        return sorted(keys)

    def scan_texts(self) -> list[str]:
        """What must be nowhere under the root afterwards: every version of each memory's
        text and each erased turn's summary and payload (entity names and relation words are
        hashed in the receipt but not scanned: other lines may say the same word)."""
        texts = [t for m in self.memories.values() for t in m.texts]
        texts += [t for turn in self.turns.values() for t in turn.texts]
        return sorted({t for t in texts if t.strip()})

    def erased(self) -> list[dict[str, str | int]]:
        """Content-free: kind, id and how many texts went with each (every version of a
        memory, a turn's summary and payload). No digest: a receipt kept in a log must not
        confirm a guess at what was erased."""
        out: list[dict[str, str | int]] = [
            {"kind": "memory", "id": m.memory_id, "texts": len(m.texts)}
            for m in self.memories.values()]
        out += [{"kind": "turn", "id": turn.run_hash, "texts": len(turn.texts)}
                for turn in self.turns.values()]
        out += [{"kind": "entity", "id": eid, "texts": len(texts)}
                for eid, (_, texts) in self.entities.items()]
        out += [{"kind": "relation", "id": mid, "texts": len(texts)}
                for mid, (_, texts) in self.relation_keys.items()]
        return sorted(out, key=lambda e: (str(e["kind"]), str(e["id"])))


class Planner:
    """Reads the journal (decoding sealed content while its keys exist) and the index."""

    def __init__(self, opened: OpenedJournal, index: Any) -> None:
        self._opened = opened
        self._recorder = opened.recorder
        self._mapper = opened.app.mapper
        self._index = index  # the live index connection (caught up by the caller)

    def decode(self, row: tuple[int, str, int, str, bytes]) -> Any:
        _position, oid, version, topic, state = row
        return self._mapper.to_domain_event(StoredEvent(oid, version, topic, state))

    def _rows(self, aggregate: Any) -> list[tuple[int, str, int, str, bytes]]:
        return [(p, str(aggregate), v, t, s)
                for p, v, t, s in self._recorder.aggregate_rows(aggregate)]

    def memory(self, memory_id: str) -> Target | None:
        """The memory's own events (None: no such memory); ``kind`` ``forgotten`` when a
        Forgotten event already ends it."""
        rows = self._rows(memory_uuid(memory_id))
        if not rows:
            return None
        target = Target(memory_id, rows[-1][2])
        for row in rows:
            if row[3] == Memory.Forgotten.TOPIC:
                target.kind = "forgotten"
                return target
            event = self.decode(row)
            target.key_ids.update(state_key_ids(row[4]))
            if isinstance(event, _MEMORY_TEXT):
                target.texts.append(event.text)
                run_hash = getattr(event, "run_hash", None)  # a Remembered line has no turn
                if run_hash:
                    target.run_hashes.add(run_hash)
            if isinstance(event, Memory.Captured):
                target.entity_ids.update(event.entity_ids)
        for row in self._recorder.rows_of([Intake.Resolved.TOPIC], needle=memory_id):
            if self.decode(row).memory_id == memory_id:
                target.run_hashes.add(self._run_hash_of(row[1]))
        return target

    def _run_hash_of(self, intake_oid: str) -> str:
        first = self._recorder.aggregate_rows(UUID(intake_oid))[0]
        return str(self.decode((first[0], intake_oid, first[1], first[2], first[3])).run_hash)

    def reconcile_support(self) -> dict[str, set[str]]:
        """memory id -> run hashes whose retained reconcile decisions target it."""
        support: dict[str, set[str]] = {}
        for row in self._recorder.rows_of([Intake.ReconcileRetained.TOPIC]):
            for target in _supported(self.decode(row).decisions):
                support.setdefault(target, set()).add(self._run_hash_of(row[1]))
        return support

    def turn(self, run_hash: str) -> Turn | None:
        """A turn's content keys and texts (None: never admitted)."""
        rows = self._rows(intake_uuid(run_hash))
        if not rows:
            return None
        turn = Turn(run_hash, rows[-1][2])
        for row in rows:
            event = self.decode(row)
            if row[3] == Intake.Admitted.TOPIC:
                turn.texts.append(event.summary)
            if row[3] == Intake.Admitted.TOPIC or row[3] in _RETAINED:
                turn.key_ids.update(state_key_ids(row[4]))
            if row[3] == Intake.Forgotten.TOPIC:
                turn.state = "forgotten"
        payload_key = self._recorder.payload_key(run_hash)
        if payload_key is not None:
            turn.key_ids.add(payload_key)
            payload = self._recorder.payload(run_hash)
            if payload is not None:
                turn.texts.append(payload.data.decode("utf-8", "replace"))
        return turn

    def relations(self, memory_ids: set[str]) -> dict[str, tuple[set[int], list[str]]]:
        """The Related events the forgotten memories state: their keys and relation words."""
        found: dict[str, tuple[set[int], list[str]]] = {}
        for memory_id in sorted(memory_ids):
            for row in self._recorder.rows_of([Entity.Related.TOPIC], needle=memory_id):
                event = self.decode(row)
                if event.memory == memory_id:
                    keys, words = found.setdefault(memory_id, (set(), []))
                    keys.update(state_key_ids(row[4]))
                    words.append(event.relation)
        return found

    def lone_entities(self, candidates: set[str], forgotten: set[str]
                      ) -> dict[str, tuple[set[int], list[str]]]:
        """Entities named only by forgotten lines (no other memory links or relates them),
        with the keys of their Named and Related events and their names."""
        pruned: dict[str, tuple[set[int], list[str]]] = {}
        marks = ",".join("?" * len(forgotten))
        for entity_id in sorted(candidates):
            linked = self._index.execute(
                f"SELECT 1 FROM memory_entities WHERE entity_id = ? AND memory_id NOT IN "
                f"({marks}) UNION ALL SELECT 1 FROM relations WHERE (src = ? OR dst = ?) "
                f"AND memory NOT IN ({marks}) LIMIT 1",
                [entity_id, *sorted(forgotten), entity_id, entity_id, *sorted(forgotten)],
            ).fetchone()
            if linked is not None:
                continue
            keys: set[int] = set()
            names: list[str] = []
            for row in self._rows(entity_uuid(entity_id)):
                keys.update(state_key_ids(row[4]))
                if row[3] in (Entity.Named.TOPIC, Entity.NamedAgain.TOPIC):
                    names.append(self.decode(row).name)
            pruned[entity_id] = (keys, names)
        return pruned

    def restated(self, memory_ids: set[str]) -> set[str]:
        """The other lines that hold what ``memory_ids`` say: a legacy line and the notes
        ``migrate`` made of it (``MigrationForgotten.into``, either way), and a line and the
        copy of its very text that superseded it (a curate retype, either way), followed to
        the end. A forget of one erases them all: its words would survive in the others."""
        found, todo = set(memory_ids), sorted(memory_ids)
        while todo:
            memory_id = todo.pop()
            linked: set[str] = set()
            for row in self._recorder.rows_of([Memory.MigrationForgotten.TOPIC],
                                              needle=memory_id):
                event = self.decode(row)
                if memory_id == event.memory_id or memory_id in event.into:
                    linked |= {event.memory_id, *event.into}
            text = self._text_of(memory_id)
            if text is not None:
                for older, newer in optional_rows(
                        self._index, "SELECT memory_id, by FROM lifecycle "
                                     "WHERE memory_id = ? OR by = ?", (memory_id, memory_id)):
                    other = newer if older == memory_id else older
                    if other and self._text_of(other) == text:
                        linked.add(other)
            for other in sorted(linked - found):
                found.add(other)
                todo.append(other)
        return found - set(memory_ids)

    def _text_of(self, memory_id: str) -> str | None:
        row: Any = self._index.execute("SELECT text FROM memories WHERE id = ?",
                                       (memory_id,)).fetchone()
        return None if row is None else str(row[0])

    def derived(self, run_hash: str) -> set[str]:
        """Memories a turn made or confirmed: its own lines (the index's run hash), a
        Resolved naming one, and the targets of its retained reconcile decisions."""
        found = {str(r[0]) for r in self._index.execute(
            "SELECT id FROM memories WHERE run_hash = ?", (run_hash,))}
        for row in self._rows(intake_uuid(run_hash)):
            if row[3] == Intake.Resolved.TOPIC:
                memory_id = self.decode(row).memory_id
                if memory_id:
                    found.add(memory_id)
            elif row[3] == Intake.ReconcileRetained.TOPIC:
                found.update(_supported(self.decode(row).decisions))
        for row in self._recorder.rows_of([Memory.TextUpdated.TOPIC], needle=run_hash):
            event = self.decode(row)
            if event.run_hash == run_hash:
                found.add(event.memory_id)
        return found


def _supported(decisions: list[Any]) -> list[str]:
    """The targets a turn's reconcile decisions confirm (NOOP) or restate (UPDATE); a
    SUPERSEDE replaces its target with a line of its own, which is no support."""
    return [d["target"] for d in decisions if isinstance(d, dict)
            and d.get("action") in ("NOOP", "UPDATE") and isinstance(d.get("target"), str)]
