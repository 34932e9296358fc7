"""Strict model contracts for the three capture calls (SPEC E6-E11, E18-E24, E39-E40; DESIGN 6).

Each stage accepts **one exact, bounded JSON object** and nothing else. The parsers here are
provider-neutral and authoritative (E10): they never clamp, rescale or coerce a value, and any
violation raises :class:`~memory_es.capture.models.ModelError` with code
``model_invalid_output``, which fails the attempt and never counts as capture (E8). Messages are
one content-free line, ``<json path>: <rule>``; they may carry numbers and our own field names,
never model text.

Checks, in order:

1. the completion is at most 262,144 UTF-16 code units, counted **before parsing** (E9);
2. it is one valid JSON value, with **no duplicate key** in any object at any depth (E6);
3. it decodes into the stage's msgspec Structs with ``strict=True`` and
   ``forbid_unknown_fields``: no missing or unknown field, no wrong type (a JSON string is never
   a number, ``true`` is never a number; a JSON integer such as ``0`` or ``1`` *is* a JSON number
   and is accepted as a salience), no value outside its enum;
4. per-value rules (bounds, grammars, unsafe text) inside the Structs' ``__post_init__``;
5. whole-value rules (references resolve, exactly one decision per listed index, allowed
   targets, no ambiguous target collision) in the parsers.

Grammar (what the prompts state, E11)
-------------------------------------

Extraction (call 1, E2)::

    {"memories": [{"text": str, "kind": "note"|"event"|"task",
                   "labels": ["fact"|"preference"|"lesson", ...],
                   "source": "user"|"assistant"|"tool"|"document",
                   "salience": number in 0..1, "entities": [entity id, ...],
                   "fact": null | {"entity": entity id, "key": lowercase word,
                                   "value": str}  (optional)}, ...],
     "entities": [{"id": entity id, "name": str, "type": lowercase word}, ...],
     "relations": [{"from": entity id, "to": entity id, "relation": lowercase word}, ...]}

- at most 8 memories (E2), 32 entities, 32 relations, 8 entity refs per memory, 3 labels;
- an *entity id* is ``[a-z][a-z0-9_-]{0,31}`` (e.g. ``e1``, ``morgan``), unique in the plan;
  a memory's ``entities`` and a relation's ``from``/``to`` must name one of them (E26);
- a relation and an entity type are lowercase words ``[a-z][a-z0-9_]{0,63}`` (E11);
- memory text: non-blank, at most 2,048 UTF-8 bytes (our bound; the reference gives none),
  safe (below); entity name: non-blank, at most 256 UTF-8 bytes, safe;
- labels are distinct; the salience *floor* (E18) is a host rule applied after parsing, not a
  contract rule.

Review (call 2, E20-E24)::

    {"decisions": [{"index": int, "decision": "keep"|"drop"|"add_preference"}, ...]}

Exactly one decision per listed line index ``0..line_count-1`` (E24); the caller may narrow
the allowed decisions per line (e.g. ``drop`` only for assistant lines, E21-E22).

Reconcile (call 3, E4, E7), a tagged union on ``action``::

    {"decisions": [{"index": int, "action": "ADD"}
                 | {"index": int, "action": "NOOP", "target": id}
                 | {"index": int, "action": "UPDATE"|"SUPERSEDE", "target": id, "text": str}]}

Exactly one decision per candidate index ``0..candidate_count-1``; a target must be one of the
supplied ids; a target that an UPDATE or SUPERSEDE changes may not be named by any other
decision (the ambiguous target collision of E6).

Unsafe text (DESIGN 9.11): C0/C1 controls other than tab (so no newline), bidi embeddings,
overrides and isolates, lone surrogates (an escaped one fails JSON decoding), ``<!--`` and
``-->``, and credentials in common key formats (``sk-...``, ``AKIA...``, ``gh?_...``,
``xox?-...``, PEM private keys, JWTs, ``password=``-style assignments). Unsafe text rejects
the whole value; it is never cleaned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

import msgspec

from memory_es.capture.models import INVALID_OUTPUT, ModelError

__all__ = [
    "DECISIONS",
    "LABELS",
    "MAX_COMPLETION_UTF16",
    "MAX_ENTITIES",
    "MAX_MEMORIES",
    "MAX_RELATIONS",
    "MEMORY_KINDS",
    "SOURCES",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedMemory",
    "ExtractionPlan",
    "ReconcileAdd",
    "ReconcileDecision",
    "ReconcileNoop",
    "ReconcilePlan",
    "ReconcileSupersede",
    "ReconcileUpdate",
    "Relation",
    "ReviewDecision",
    "ReviewPlan",
    "check_safe_text",
    "parse_extraction",
    "parse_reconcile",
    "parse_review",
    "utf16_length",
]

MAX_COMPLETION_UTF16: Final = 262_144  # E9: JavaScript characters
MAX_MEMORIES: Final = 8  # E2
MAX_ENTITIES: Final = 32  # our bound on entities per plan
MAX_RELATIONS: Final = 32  # our bound on relations per plan
MAX_REFS: Final = 8  # entity refs per memory (our bound)
TEXT_MAX_BYTES: Final = 2_048  # memory / replacement text, UTF-8 bytes (our bound)
NAME_MAX_BYTES: Final = 256  # entity name, UTF-8 bytes (our bound)

MEMORY_KINDS: Final = ("note", "event", "task")  # K14; a task becomes a note later (A19)
LABELS: Final = ("fact", "preference", "lesson")  # E40
SOURCES: Final = ("user", "assistant", "tool", "document")  # E39
DECISIONS: Final = ("keep", "drop", "add_preference")  # E21

_ENTITY_ID = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_WORD = re.compile(r"[a-z][a-z0-9_]{0,63}")
_UNSAFE_CHARS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_COMMENT = re.compile("<!--|-->")
_CREDENTIALS: Final = (
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
    re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase|api[_-]?key|secret[_-]?key|client[_-]?secret"
        r"|access[_-]?token|auth[_-]?token)\s*[=:]\s*\S"
    ),
)

S = TypeVar("S")


def utf16_length(text: str) -> int:
    """``text``'s length in UTF-16 code units (JavaScript characters, E9)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def check_safe_text(text: str) -> str | None:
    """The name of the unsafe-text rule ``text`` breaks (DESIGN 9.11), or ``None`` if safe."""
    if _UNSAFE_CHARS.search(text):
        return "contains a control, bidi or surrogate character"
    if _COMMENT.search(text):
        return "contains an HTML comment marker"
    if any(p.search(text) for p in _CREDENTIALS):
        return "looks like a credential"
    return None


def _text_rule(value: str, max_bytes: int) -> str | None:
    if not value.strip():
        return "must not be blank"
    unsafe = check_safe_text(value)
    if unsafe is not None:
        return unsafe
    size = len(value.encode("utf-8"))
    if size > max_bytes:
        return f"is {size} UTF-8 bytes, more than {max_bytes}"
    return None


def _require(field: str, rule: str | None) -> None:
    if rule is not None:
        raise ValueError(f"{field}: {rule}")


def _distinct(field: str, values: Sequence[str]) -> None:
    if len(set(values)) != len(values):
        raise ValueError(f"{field}: repeats a value")


def _at_most(field: str, values: Sequence[object], limit: int) -> None:
    if len(values) > limit:
        raise ValueError(f"{field}: has {len(values)} items, more than {limit}")


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


# --------------------------------------------------------------------------------------------
# Extraction


class ExtractedEntity(_Strict, frozen=True):
    """An entity of the plan, named by ``id`` from memories and relations."""

    id: str
    name: str
    type: str

    def __post_init__(self) -> None:
        if not _ENTITY_ID.fullmatch(self.id):
            raise ValueError("id: is not an entity id [a-z][a-z0-9_-]{0,31}")
        _require("name", _text_rule(self.name, NAME_MAX_BYTES))
        if not _WORD.fullmatch(self.type):
            raise ValueError("type: is not a lowercase word [a-z][a-z0-9_]{0,63}")


class Relation(_Strict, frozen=True):
    """A lowercase relation between two entities of the plan (``from``/``to`` in JSON)."""

    from_id: str = msgspec.field(name="from")
    to_id: str = msgspec.field(name="to")
    relation: str = msgspec.field(name="relation")

    def __post_init__(self) -> None:
        for field, value in (("from", self.from_id), ("to", self.to_id)):
            if not _ENTITY_ID.fullmatch(value):
                raise ValueError(f"{field}: is not an entity id [a-z][a-z0-9_-]{{0,31}}")
        if not _WORD.fullmatch(self.relation):
            raise ValueError("relation: is not a lowercase word [a-z][a-z0-9_]{0,63}")


class ExtractedFact(_Strict, frozen=True):
    """A memory's one structured attribute of one of its entities (person card, H20; E29):
    ``key`` a lowercase word such as ``home_town`` or ``birth_date`` (an ISO date value)."""

    entity: str
    key: str
    value: str

    def __post_init__(self) -> None:
        if not _ENTITY_ID.fullmatch(self.entity):
            raise ValueError("entity: is not an entity id [a-z][a-z0-9_-]{0,31}")
        if not _WORD.fullmatch(self.key):
            raise ValueError("key: is not a lowercase word [a-z][a-z0-9_]{0,63}")
        _require("value", _text_rule(self.value, NAME_MAX_BYTES))


class ExtractedMemory(_Strict, frozen=True, omit_defaults=True):
    """One atomic memory: text, kind, labels, model-assigned source, salience, entity refs,
    and optionally the one structured ``fact`` it states about one of those entities."""

    text: str
    kind: Literal["note", "event", "task"]
    labels: list[Literal["fact", "preference", "lesson"]]
    source: Literal["user", "assistant", "tool", "document"]
    salience: float
    entities: list[str]
    fact: ExtractedFact | None = None

    def __post_init__(self) -> None:
        _require("text", _text_rule(self.text, TEXT_MAX_BYTES))
        _at_most("labels", self.labels, len(LABELS))
        _distinct("labels", self.labels)
        if not 0.0 <= self.salience <= 1.0:  # also rejects NaN; never clamped (E10)
            raise ValueError(f"salience: {self.salience!r} is outside 0..1")
        _at_most("entities", self.entities, MAX_REFS)
        _distinct("entities", self.entities)
        for i, ref in enumerate(self.entities):
            if not _ENTITY_ID.fullmatch(ref):
                raise ValueError(f"entities[{i}]: is not an entity id [a-z][a-z0-9_-]{{0,31}}")
        if self.fact is not None and self.fact.entity not in self.entities:
            raise ValueError("fact.entity: is not one of this memory's entities")


class ExtractionPlan(_Strict, frozen=True):
    """The extraction call's whole answer (E2): up to 8 memories, their entities and relations."""

    memories: list[ExtractedMemory]
    entities: list[ExtractedEntity]
    relations: list[Relation]

    def __post_init__(self) -> None:
        _at_most("memories", self.memories, MAX_MEMORIES)
        _at_most("entities", self.entities, MAX_ENTITIES)
        _at_most("relations", self.relations, MAX_RELATIONS)
        ids = [e.id for e in self.entities]
        seen: set[str] = set()
        for i, entity_id in enumerate(ids):
            if entity_id in seen:
                raise ValueError(f"entities[{i}].id: repeats another entity's id")
            seen.add(entity_id)
        for i, memory in enumerate(self.memories):
            for j, ref in enumerate(memory.entities):
                if ref not in seen:
                    raise ValueError(f"memories[{i}].entities[{j}]: names no entity of the plan")
        for i, rel in enumerate(self.relations):
            for field, ref in (("from", rel.from_id), ("to", rel.to_id)):
                if ref not in seen:
                    raise ValueError(f"relations[{i}].{field}: names no entity of the plan")


# --------------------------------------------------------------------------------------------
# Review


class ReviewDecision(_Strict, frozen=True):
    """One review decision for listed line ``index`` (0-based), E21."""

    index: int
    decision: Literal["keep", "drop", "add_preference"]

    def __post_init__(self) -> None:
        if self.index < 0:
            raise ValueError(f"index: {self.index} is negative")


class ReviewPlan(_Strict, frozen=True):
    """The review call's whole answer: exactly one decision per listed line (E24)."""

    decisions: list[ReviewDecision]

    def decision_for(self, index: int) -> str:
        """The decision for listed line ``index``."""
        for d in self.decisions:
            if d.index == index:
                return d.decision
        raise KeyError(index)


# --------------------------------------------------------------------------------------------
# Reconcile


class _Reconcile(_Strict, frozen=True, tag_field="action"):
    index: int

    def __post_init__(self) -> None:
        if self.index < 0:
            raise ValueError(f"index: {self.index} is negative")


class ReconcileAdd(_Reconcile, frozen=True, tag="ADD"):
    """``{"index", "action": "ADD"}`` and nothing else (E7)."""


class ReconcileNoop(_Reconcile, frozen=True, tag="NOOP"):
    """``{"index", "action": "NOOP", "target"}``: the candidate is already stored (E7)."""

    target: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _require("target", _text_rule(self.target, NAME_MAX_BYTES))


class _Rewrite(_Reconcile, frozen=True):
    """A decision that replaces a target's text: both fields required and safe (E7)."""

    target: str
    text: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _require("target", _text_rule(self.target, NAME_MAX_BYTES))
        _require("text", _text_rule(self.text, TEXT_MAX_BYTES))


class ReconcileUpdate(_Rewrite, frozen=True, tag="UPDATE"):
    """``{"index", "action": "UPDATE", "target", "text"}``: complete replacement text (E7)."""


class ReconcileSupersede(_Rewrite, frozen=True, tag="SUPERSEDE"):
    """``{"index", "action": "SUPERSEDE", "target", "text"}``: complete new text (E7, E13)."""


ReconcileDecision = ReconcileAdd | ReconcileNoop | ReconcileUpdate | ReconcileSupersede


class ReconcilePlan(_Strict, frozen=True):
    """The reconcile call's whole answer: exactly one decision per candidate index."""

    decisions: list[ReconcileDecision]


# --------------------------------------------------------------------------------------------
# Parsing


def _invalid(message: str) -> ModelError:
    return ModelError(message, code=INVALID_OUTPUT)


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers which of its keys were repeated."""

    duplicates: list[str]


def _object_hook(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj:
            obj.duplicates.append(key)
        obj[key] = value
    return obj


def _shown_key(key: str) -> str:
    """A key as a message may show it: one of our field names, else ``<key>`` (content-free)."""
    return key if key in _FIELD_NAMES else "<key>"


def _find_duplicate(value: Any, path: str) -> str | None:
    if isinstance(value, _Object):
        if value.duplicates:
            return f"{path or '$'}: duplicate key {_shown_key(value.duplicates[0])!r}"
        for key, child in value.items():
            shown = _shown_key(key)
            found = _find_duplicate(child, f"{path}.{shown}" if path else shown)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found = _find_duplicate(child, f"{path}[{i}]")
            if found is not None:
                return found
    return None


_AT = re.compile(r"^(?P<head>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_PATH_PART = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[\d+\]")


def _safe_path(path: str) -> str:
    """A msgspec path made only of our field names and indices; anything else (a model key
    that forged a path) is replaced by ``$``, so no model text reaches a message."""
    pos = 0
    while pos < len(path):
        part = _PATH_PART.match(path, pos)
        if part is None or (part.group(1) is not None and part.group(1) not in _FIELD_NAMES):
            return ""
        pos = part.end()
    return path
_FIELD_RULE = re.compile(r"^(?P<field>[A-Za-z_][A-Za-z0-9_\[\].]*): (?P<rule>.*)$", re.DOTALL)


def _content_free(error: msgspec.ValidationError) -> str:
    """``path: rule`` from a msgspec validation error, without any model-supplied string."""
    match = _AT.match(str(error))
    head = match.group("head") if match else str(error)
    path = _safe_path(((match.group("path") or "") if match else "").lstrip("."))
    fr = _FIELD_RULE.match(head)
    if fr is not None:  # one of our __post_init__ rules: "field: rule"
        field = fr.group("field")
        full = f"{path}.{field}" if path and not field.startswith("[") else path + field
        return f"{full}: {fr.group('rule')}"
    if head.startswith("Object contains unknown field"):
        rule = "unknown field"
    elif head.startswith(("Invalid enum value", "Invalid value")):
        rule = "value is not one of the allowed values"
    elif head.startswith("Object missing required field"):
        rule = head.replace("Object missing", "missing")
    else:
        rule = re.sub(r"'[^']*'", "'...'", head)
    return f"{path or '$'}: {rule}"


def _decode(raw: str, kind: type[S]) -> S:
    if not isinstance(raw, str):
        raise _invalid(f"$: completion must be text, got {type(raw).__name__}")
    length = utf16_length(raw)
    if length > MAX_COMPLETION_UTF16:  # E9, before any parsing
        raise _invalid(
            f"$: completion is {length} UTF-16 code units, more than {MAX_COMPLETION_UTF16}"
        )
    try:
        tree = json.loads(raw, object_pairs_hook=_object_hook)
    except (ValueError, RecursionError) as e:
        raise _invalid("$: not one valid JSON value") from e
    duplicate = _find_duplicate(tree, "")
    if duplicate is not None:
        raise _invalid(duplicate)
    try:
        return msgspec.json.decode(raw.encode("utf-8", "surrogatepass"), type=kind, strict=True)
    except msgspec.ValidationError as e:
        raise _invalid(_content_free(e)) from e
    except msgspec.DecodeError as e:
        raise _invalid("$: not one valid JSON value") from e


def _check_indices(indices: Sequence[int], count: int) -> None:
    seen: set[int] = set()
    for i, index in enumerate(indices):
        if index >= count:
            listed = f"0..{count - 1}" if count else "none (nothing is listed)"
            raise _invalid(f"decisions[{i}].index: {index} is not a listed index: {listed}")
        if index in seen:
            raise _invalid(f"decisions[{i}].index: {index} has another decision")
        seen.add(index)
    missing = sorted(set(range(count)) - seen)
    if missing:
        raise _invalid(f"decisions: no decision for index {missing[0]}")


def parse_extraction(raw: str) -> ExtractionPlan:
    """The extraction call's plan, or :class:`ModelError` ``model_invalid_output`` (E6-E11)."""
    return _decode(raw, ExtractionPlan)


def parse_review(
    raw: str, line_count: int, *, allowed: Sequence[Collection[str]] | None = None
) -> ReviewPlan:
    """The review decisions for lines ``0..line_count-1``: exactly one each (E24).

    ``allowed[i]``, when given, narrows the decisions allowed for line ``i`` (e.g. no ``drop``
    for a user, tool or document line, E22); a disallowed decision rejects the whole review.
    """
    if line_count < 0:
        raise ValueError("line_count must not be negative")
    if allowed is not None and len(allowed) != line_count:
        raise ValueError("allowed must give one set of decisions per listed line")
    plan = _decode(raw, ReviewPlan)
    _check_indices([d.index for d in plan.decisions], line_count)
    if allowed is not None:
        for i, d in enumerate(plan.decisions):
            if d.decision not in allowed[d.index]:
                raise _invalid(f"decisions[{i}].decision: not allowed for line {d.index}")
    return plan


def parse_reconcile(
    raw: str,
    candidate_count: int,
    targets: Collection[str] | Mapping[int, Collection[str]],
) -> ReconcilePlan:
    """The reconcile decisions for candidates ``0..candidate_count-1`` (E4, E6, E7).

    ``targets`` is the set of existing ids offered to the classifier, or a mapping from a
    candidate index to the ids offered for that candidate; a NOOP, UPDATE or SUPERSEDE must
    name one of them. A target an UPDATE or SUPERSEDE changes may not be named by any other
    decision (an ambiguous target collision).
    """
    if candidate_count < 0:
        raise ValueError("candidate_count must not be negative")
    if isinstance(targets, str):
        raise TypeError("targets must be a collection of ids, not one string")
    plan = _decode(raw, ReconcilePlan)
    _check_indices([d.index for d in plan.decisions], candidate_count)
    changed: dict[str, int] = {}
    named: dict[str, int] = {}
    for i, d in enumerate(plan.decisions):
        if isinstance(d, ReconcileAdd):
            continue
        offered = targets.get(d.index, ()) if isinstance(targets, Mapping) else targets
        if d.target not in offered:
            raise _invalid(f"decisions[{i}].target: is not an id offered for index {d.index}")
        changes = isinstance(d, ReconcileUpdate | ReconcileSupersede)
        other = changed.get(d.target) if not changes else named.get(d.target)
        if other is not None:
            raise _invalid(
                f"decisions[{i}].target: collides with decisions[{other}] on the same target"
            )
        if changes:
            changed[d.target] = i
        named.setdefault(d.target, i)
    return plan


# Every JSON field name of the three contracts: the only keys a message may show.
_FIELD_NAMES: Final = frozenset(
    field.encode_name
    for struct in (ExtractedEntity, ExtractedFact, Relation, ExtractedMemory, ExtractionPlan,
                   ReviewDecision, ReviewPlan, ReconcileAdd, ReconcileNoop, ReconcileUpdate,
                   ReconcileSupersede, ReconcilePlan)
    for field in msgspec.structs.fields(struct)
) | {"action"}
