"""The three capture prompts (E11, E13-E15, E21, E27, A10-A11, A15).

Each prompt states the exact JSON fields, bounds and grammars its parser enforces
(:mod:`memory_es.capture.contracts`), so a well-behaved model answers in one shot. The first
lines of every user message are ``stage: <stage>`` and ``turn: <intake id>``: context for a
real model, and the key :class:`~memory_es.capture.scripted.ScriptedChat` answers by.

Prompts are pure functions of their inputs: the admission instant comes from the intake, never
from the clock, so a replayed attempt asks exactly the same question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory_es.capture.contracts import MAX_MEMORIES
from memory_es.capture.models import Message

EXTRACT_SYSTEM = f"""\
You curate a personal long-term memory. From one completed conversation turn, extract at most \
{MAX_MEMORIES} atomic, durable memories worth keeping, with the entities and relations they name.

Answer with exactly one JSON object and nothing else:
{{"memories": [{{"text": string, "kind": "note"|"event"|"task",
                "labels": array of distinct "fact"|"preference"|"lesson",
                "source": "user"|"assistant"|"tool"|"document",
                "salience": number from 0 to 1,
                "entities": array of entity ids named by this memory,
                "fact": null or {{"entity": entity id of this memory, "key": lowercase word,
                                 "value": string}}}}],
 "entities": [{{"id": entity id, "name": string, "type": lowercase word}}],
 "relations": [{{"from": entity id, "to": entity id, "relation": lowercase word}}]}}

Rules:
- Every field is required; no other field is allowed; arrays are complete (never partial).
- At most {MAX_MEMORIES} memories, 32 entities, 32 relations, 8 entity ids per memory.
- An entity id matches [a-z][a-z0-9_-]{{0,31}} (e.g. "e1") and is unique; memories and \
relations may only name ids listed in "entities". Give each memory only the entities it names.
- A relation and an entity type are lowercase words matching [a-z][a-z0-9_]{{0,63}} \
(e.g. "works_at", "person"). Relations are directed: from -> to.
- "fact" is optional: when a memory states one attribute of one of its entities, give it \
as a fact ("home_town", "employer", "birth_date" with a YYYY-MM-DD value); otherwise null.
- Salience is a number in 0..1 (how durable and useful the memory is). Never outside 0..1.
- Text is one line, at most 2048 bytes, without HTML comments, control characters or secrets.
- "source" says who asserted it: "user" for the human user's own words, "assistant" for the \
assistant's answer, "tool" for tool output, "document" for document text. An assistant recap \
of what the user said is not a first-party user report: its source is "assistant".
- Do not record an open to-do; a planned action is at most a note of the plan (kind "task").
- Time: resolve unambiguous relative dates ("yesterday", "next Friday") against the admission \
instant below and write the ISO date. Keep broad intervals when precision is unavailable. \
Write an age as a snapshot ("was 14 months old as of 2026-09-08"), never as a permanent \
current age. Never invent a date when none is given.
- Return {{"memories": [], "entities": [], "relations": []}} when nothing is worth keeping.
- The operator focus section, if any, guides what to select; it never changes these rules."""

# Appended to EXTRACT_SYSTEM only with memory.capture.intentLifecycle (M13-M20); with the
# switch off the prompt is byte-for-byte the one above (M33).
INTENT_RULES = """

Intentions (memory.capture.intentLifecycle):
- A memory of kind "task" may carry two more fields, both optional: "intentState": \
"planned"|"pending"|"done"|"abandoned", and "validTo": the intention's inclusive end. These \
two are the only optional fields; leave them out of every other memory.
- Give them only for a consequential intention that the user states in their own words in \
<turn-input> (source "user"). Never for an ordinary fact, never from the assistant's answer, \
a tool or a document, and never when the turn input is not the user's own.
- The text keeps the intention's meaning and state, in the user's language.
- "planned": set for later; "pending": still to do; "done": completed; "abandoned": given up.
- "validTo" is the last day the intention holds, inclusive: "YYYY-MM-DD" when no time zone \
is stated. Only when the user states a zone whose offset is certain, that day's last \
millisecond with the offset: "YYYY-MM-DDT23:59:59.999+HH:MM" (or "Z" for UTC); if the offset \
is uncertain, leave out both fields. Resolve a relative end against the admission instant's \
UTC calendar. An undated plan has no "validTo"; never invent a date or a zone.
- A sentence you split or shorten carries neither field."""

REVIEW_SYSTEM = """\
You review memory lines just extracted from one conversation turn. For every listed line \
give exactly one decision:
- "keep": keep the line as it is (when uncertain, keep);
- "drop": only for an assistant line that is general world information unrelated to the \
user, or a transient report about the assistant's own process or tooling;
- "add_preference": only for a user line that records the owner's own like, dislike or taste.
User-specific findings and consequential outcomes stay. You never change text.

Answer with exactly one JSON object and nothing else:
{"decisions": [{"index": integer, "decision": "keep"|"drop"|"add_preference"}]}
with exactly one decision per listed index, no other field, and only the decisions listed as \
allowed for that line."""

RECONCILE_SYSTEM = """\
You reconcile new memory candidates with memories already stored. For every candidate give \
exactly one decision:
- {"index": i, "action": "ADD"}: new information (also a different detail about the same \
subject: other details stay separate lines);
- {"index": i, "action": "NOOP", "target": id}: already stored with the same meaning;
- {"index": i, "action": "UPDATE", "target": id, "text": complete new text}: the same fact, \
refined or completed, in one line;
- {"index": i, "action": "SUPERSEDE", "target": id, "text": complete new text}: the candidate \
contradicts or replaces the stored line (a changed state, a correction).
The user's own word wins, in any language: when a candidate sourced to the user contradicts a \
stored line, including an assistant inference, estimate or recommendation whose claim or \
premise the user corrects, SUPERSEDE that line; do not update it or add beside it.
Judge time by each line's observation date: a newer dated state replaces an older one.
A target must be one of the ids offered for that candidate; no target may be changed by two \
decisions. Answer with exactly one JSON object and nothing else:
{"decisions": [...one decision per candidate index...]}"""


def _header(stage: str, turn: str) -> str:
    return f"stage: {stage}\nturn: {turn}\n"


@dataclass(frozen=True)
class TurnContext:
    """What the prompts may say about the turn: host-owned, never model output."""

    intake_id: str
    admitted_at: datetime
    source_label: str  # User | scheduled-task | webhook (A10)
    capture_text: str
    answer: str
    focus: str | None
    intents: bool = False  # memory.capture.intentLifecycle (M13)


def extraction_system(intents: bool) -> str:
    """Call 1's system prompt: exactly :data:`EXTRACT_SYSTEM` unless ``intents`` (M33)."""
    return EXTRACT_SYSTEM + INTENT_RULES if intents else EXTRACT_SYSTEM


def extraction_messages(turn: TurnContext) -> list[Message]:
    """Call 1 (E2, E11, E27, A10, A11, A15; M14-M20 with ``turn.intents``)."""
    at = turn.admitted_at.isoformat(timespec="seconds").replace("+00:00", "Z")
    parts = [_header("extract", turn.intake_id), f"Admission instant (UTC): {at}\n"]
    if turn.focus:
        parts.append("<operator-focus>\n" + turn.focus + "\n</operator-focus>\n")
    parts.append(f"<turn-input source=\"{turn.source_label}\">\n{turn.capture_text}\n"
                 "</turn-input>\n")
    parts.append(f"<assistant-answer>\n{turn.answer}\n</assistant-answer>\n")
    return [Message("system", extraction_system(turn.intents)),
            Message("user", "".join(parts))]


@dataclass(frozen=True)
class ReviewLine:
    text: str
    source: str
    labels: Sequence[str]
    allowed: Sequence[str]


def review_messages(intake_id: str, lines: Sequence[ReviewLine]) -> list[Message]:
    """Call 2 (E20-E24): only the eligible lines, each with its allowed decisions."""
    listed = "".join(
        f"{i}. [{line.source}; labels: {', '.join(line.labels) or 'none'}; allowed: "
        f"{', '.join(line.allowed)}] {line.text}\n" for i, line in enumerate(lines))
    return [Message("system", REVIEW_SYSTEM),
            Message("user", _header("review", intake_id) + "Lines:\n" + listed)]


@dataclass(frozen=True)
class Offered:
    ref: str  # the id the classifier names
    text: str
    day: str
    labels: Sequence[str]


@dataclass(frozen=True)
class ReconcileCandidate:
    text: str
    source: str
    day: str
    offered: Sequence[Offered]


def reconcile_messages(intake_id: str, candidates: Sequence[ReconcileCandidate]) -> list[Message]:
    """Call 3 (E4, E12-E13, E29): every candidate with the stored lines offered for it."""
    parts = [_header("reconcile", intake_id), "Candidates:\n"]
    for i, c in enumerate(candidates):
        parts.append(f"{i}. [source {c.source}; observed {c.day}] {c.text}\n")
        for o in c.offered:
            labels = f"; labels {', '.join(o.labels)}" if o.labels else ""
            parts.append(f"   - id {o.ref} [observed {o.day}{labels}] {o.text}\n")
    return [Message("system", RECONCILE_SYSTEM), Message("user", "".join(parts))]
