"""The extraction contract (call 1; SPEC E2, E6, E10-E11, E26, E39-E40)::

    {"memories": [{"text": str, "kind": "note"|"event"|"task",
                   "labels": ["fact"|"preference"|"lesson", ...],
                   "source": "user"|"assistant"|"tool"|"document",
                   "salience": number in 0..1, "entities": [entity id, ...],
                   "fact": null | {"entity": entity id, "key": lowercase word,
                                   "value": str}  (optional)}, ...],
     "entities": [{"id": entity id, "name": str, "type": lowercase word}, ...],
     "relations": [{"from": entity id, "to": entity id, "relation": lowercase word}, ...]}

At most 8 memories (E2), 32 entities, 32 relations, 8 entity refs per memory, 3 distinct
labels. An entity id is ``[a-z][a-z0-9_-]{0,31}``, unique in the plan, and every reference
names one (E26); relations, types and fact keys are lowercase words ``[a-z][a-z0-9_]{0,63}``
(E11). Memory text is non-blank, safe and at most 2,048 UTF-8 bytes; an entity name or fact
value at most 256. The salience floor (E18) is a host rule, not a contract rule.

With ``memory.capture.intentLifecycle`` (M13-M19) a memory may also carry the optional
``intentState`` (planned | pending | done | abandoned) and ``validTo``, the intention's
inclusive end: a civil date ``YYYY-MM-DD`` or its last millisecond in a stated zone,
``YYYY-MM-DDT23:59:59.999Z`` / ``...±HH:MM``. That is a separate contract
(:class:`IntentExtractionPlan`): with the switch off the fields are unknown, and so refused,
exactly as before (M33). A retained plan is always read with the wider one, so a plan admitted
with the switch on finishes its proposals after it is turned off (M26).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Annotated, Final, Literal

import msgspec

from memory_es.capture.contracts.common import (
    NAME_MAX_BYTES,
    TEXT_MAX_BYTES,
    EntityId,
    NonBlank,
    Salience,
    Strict,
    Word,
    decode,
    distinct,
    require,
    text_rule,
)

MAX_MEMORIES: Final = 8  # E2
MAX_ENTITIES: Final = 32  # our bound on entities per plan
MAX_RELATIONS: Final = 32  # our bound on relations per plan
MAX_REFS: Final = 8  # entity refs per memory (our bound)

MEMORY_KINDS: Final = ("note", "event", "task")  # K14; a task becomes a note later (A19)
LABELS: Final = ("fact", "preference", "lesson")  # E40
SOURCES: Final = ("user", "assistant", "tool", "document")  # E39
INTENT_STATES: Final = ("planned", "pending", "done", "abandoned")  # M15
# M17, M19: a civil date, or its inclusive last millisecond with a Z or ±HH:MM offset
_INCLUSIVE_END = re.compile(
    r"\A(\d{4}-\d{2}-\d{2})(?:T23:59:59\.999(?:Z|[+-](\d{2}):(\d{2})))?\Z")


class ExtractedEntity(Strict, frozen=True):
    """An entity of the plan, named by ``id`` from memories and relations."""

    id: EntityId
    name: NonBlank
    type: Word

    def __post_init__(self) -> None:
        require("name", text_rule(self.name, NAME_MAX_BYTES))


class Relation(Strict, frozen=True):
    """A lowercase relation between two entities of the plan (``from``/``to`` in JSON)."""

    from_id: EntityId = msgspec.field(name="from")
    to_id: EntityId = msgspec.field(name="to")
    relation: Word


class ExtractedFact(Strict, frozen=True):
    """A memory's one structured attribute of one of its entities (person card, H20; E29):
    ``key`` a lowercase word such as ``home_town`` or ``birth_date`` (an ISO date value)."""

    entity: EntityId
    key: Word
    value: NonBlank

    def __post_init__(self) -> None:
        require("value", text_rule(self.value, NAME_MAX_BYTES))


class ExtractedMemory(Strict, frozen=True, omit_defaults=True):
    """One atomic memory: text, kind, labels, model-assigned source, salience, entity refs,
    and optionally the one structured ``fact`` it states about one of those entities."""

    text: NonBlank
    kind: Literal["note", "event", "task"]
    labels: Annotated[list[Literal["fact", "preference", "lesson"]],
                      msgspec.Meta(max_length=len(LABELS))]
    source: Literal["user", "assistant", "tool", "document"]
    salience: Salience
    entities: Annotated[list[EntityId], msgspec.Meta(max_length=MAX_REFS)]
    fact: ExtractedFact | None = None

    def __post_init__(self) -> None:
        require("text", text_rule(self.text, TEXT_MAX_BYTES))
        distinct("labels", self.labels)
        distinct("entities", self.entities)
        if self.fact is not None and self.fact.entity not in self.entities:
            raise ValueError("fact.entity: is not one of this memory's entities")


class ExtractionPlan(Strict, frozen=True):
    """The extraction call's whole answer (E2): up to 8 memories, their entities and relations."""

    memories: Annotated[list[ExtractedMemory], msgspec.Meta(max_length=MAX_MEMORIES)]
    entities: Annotated[list[ExtractedEntity], msgspec.Meta(max_length=MAX_ENTITIES)]
    relations: Annotated[list[Relation], msgspec.Meta(max_length=MAX_RELATIONS)]

    def __post_init__(self) -> None:
        check_refs(self.memories, self.entities, self.relations)


def check_refs(memories: Sequence[ExtractedMemory], entities: Sequence[ExtractedEntity],
               relations: Sequence[Relation]) -> None:
    """E26: entity ids are unique and every reference names one of them."""
    seen: set[str] = set()
    for i, entity in enumerate(entities):
        if entity.id in seen:
            raise ValueError(f"entities[{i}].id: repeats another entity's id")
        seen.add(entity.id)
    for i, memory in enumerate(memories):
        for j, ref in enumerate(memory.entities):
            if ref not in seen:
                raise ValueError(f"memories[{i}].entities[{j}]: names no entity of the plan")
    for i, rel in enumerate(relations):
        for field, ref in (("from", rel.from_id), ("to", rel.to_id)):
            if ref not in seen:
                raise ValueError(f"relations[{i}].{field}: names no entity of the plan")


def inclusive_end_rule(value: str) -> str | None:
    """Why ``value`` is not an inclusive civil end (M17, M19), or None."""
    found = _INCLUSIVE_END.match(value)
    if found is None:
        return "is not YYYY-MM-DD or YYYY-MM-DDT23:59:59.999 with Z or an offset"
    try:
        date.fromisoformat(found.group(1))
    except ValueError:
        return "is not a calendar date"
    if found.group(2) is not None and (int(found.group(2)) > 14 or int(found.group(3)) > 59):
        return "is not a UTC offset within ±14:00"
    return None


class IntentMemory(ExtractedMemory, frozen=True, omit_defaults=True):
    """A memory of the intent-lifecycle contract (M14-M19): optionally a consequential
    intention's state and inclusive end. The host decides whether it is honoured
    (:func:`memory_es.capture.rules.bound_plan`)."""

    intent_state: Literal["planned", "pending", "done", "abandoned"] | None = \
        msgspec.field(default=None, name="intentState")
    valid_to: str | None = msgspec.field(default=None, name="validTo")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.valid_to is not None:
            require("validTo", inclusive_end_rule(self.valid_to))


class IntentExtractionPlan(Strict, frozen=True):
    """The extraction answer with ``memory.capture.intentLifecycle`` (M13): as
    :class:`ExtractionPlan`, each memory an :class:`IntentMemory`."""

    memories: Annotated[list[IntentMemory], msgspec.Meta(max_length=MAX_MEMORIES)]
    entities: Annotated[list[ExtractedEntity], msgspec.Meta(max_length=MAX_ENTITIES)]
    relations: Annotated[list[Relation], msgspec.Meta(max_length=MAX_RELATIONS)]

    def __post_init__(self) -> None:
        check_refs(self.memories, self.entities, self.relations)


AnyPlan = ExtractionPlan | IntentExtractionPlan


def parse_extraction(raw: str, *, intents: bool = False) -> AnyPlan:
    """The extraction call's plan, or :class:`ModelError` ``model_invalid_output`` (E6-E11);
    ``intents``: the intent-lifecycle contract (M13-M19)."""
    if intents:
        return decode(raw, IntentExtractionPlan)
    return decode(raw, ExtractionPlan)


def retained_plan(builtins: object) -> AnyPlan:
    """A retained plan (E17), read with the wider contract so that proposals admitted with the
    switch on finish after it is turned off (M26); a plan without them stays an
    :class:`ExtractionPlan`."""
    plan = msgspec.convert(builtins, IntentExtractionPlan, strict=True)
    if any(m.intent_state is not None or m.valid_to is not None for m in plan.memories):
        return plan
    return msgspec.convert(builtins, ExtractionPlan, strict=True)
