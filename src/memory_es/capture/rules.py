"""The deterministic host rules of capture (SPEC E16, E18-E22, E39-E40, A19; DESIGN 9.3).

What the host decides about a plan's lines from the turn's own facts, never from model text:
source bounding, task -> note, label gates, coarse owner facts, the salience floor, review
eligibility and decisions, structural duplicates, and which intention proposals are honoured
(M14-M16).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_es.capture.contracts import ExtractedFact, IntentMemory
from memory_es.capture.contracts.extraction import AnyPlan
from memory_es.events import Intake
from memory_es.ids import text_key

if TYPE_CHECKING:
    from memory_es.capture.reads import CaptureReads

SALIENCE_FLOOR = 0.5  # E18
PREFERENCE, LESSON, FACT = "preference", "lesson", "fact"
# M15: an intention's state as the note status it is stored with
INTENT_STATUS = {"planned": "scheduled", "pending": "open", "done": "done",
                 "abandoned": "dropped"}


@dataclass
class Turn:
    """Host facts about the turn (never from the model)."""

    run_hash: str
    owner: bool  # a host-verified owner turn (E14)
    human_text: bool  # the turn carries human user text (E39)
    scope: str  # agent | peer
    session: str | None


def turn_facts(admitted: Intake.Admitted) -> Turn:
    human = admitted.trigger == "human"
    owner = human and admitted.speaker_kind == "human-turn"
    return Turn(run_hash=admitted.run_hash, owner=owner, human_text=human,
                scope="agent" if owner or not human else "peer", session=admitted.session)


@dataclass
class Line:
    """One plan line on its way to the commit."""

    index: int  # position in the retained plan: the run-derived id's suffix
    text: str
    kind: str
    from_task: bool
    labels: list[str]
    source: str
    salience: float
    entities: list[str]  # plan entity refs
    fact: ExtractedFact | None = None
    reviewable: tuple[str, ...] = ()  # allowed review decisions; empty = not listed
    intent: Intent | None = None  # an honoured intention proposal (M14-M19)


@dataclass(frozen=True)
class Intent:
    """An honoured intention proposal: the status its state maps to (M15, None: not stated)
    and its inclusive end as written (M17, None: not stated); stored as the line's status and
    ``due_at``, never as a validity end."""

    status: str | None
    due_at: str | None

    def changes(self, status: str, due_at: str | None) -> bool:
        """Does it state another state or end than a stored line's (M21)? An unstated part
        changes nothing: repeating an intention without its end keeps the end (M22)."""
        return (self.status is not None and self.status != status) or \
            (self.due_at is not None and self.due_at != due_at)


def honoured_intent(m: object, source: str, turn: Turn) -> Intent | None:
    """M14, M16: a proposal counts only on a task line the host-verified owner states in
    their own turn; other speakers, triggers and assistant, tool or document claims, and
    ordinary facts (any other kind), supply none."""
    if not isinstance(m, IntentMemory) or (m.intent_state is None and m.valid_to is None):
        return None
    if not (turn.owner and source == "user" and m.kind == "task"):
        return None
    status = None if m.intent_state is None else INTENT_STATUS[m.intent_state]
    return Intent(status=status, due_at=m.valid_to)


def bound_plan(plan: AnyPlan, turn: Turn) -> list[Line]:
    """Source bounding, task -> note, label gates, coarse owner facts, salience floor,
    honoured intention proposals."""
    lines: list[Line] = []
    for i, m in enumerate(plan.memories):
        source = m.source
        if source == "user" and not turn.human_text:
            source = "assistant"  # E39: a user claim needs human user text
        if source == "assistant" and m.salience < SALIENCE_FLOOR:
            continue  # E18 (user, tool, document: no floor, E19)
        from_task = m.kind == "task"
        labels: list[str] = [label for label in m.labels
                             if label != PREFERENCE or source == "user"]
        if source == "user" and turn.owner and not from_task and FACT not in labels:
            labels.append(FACT)  # E40: the coarse owner fact
        lines.append(Line(index=i, text=m.text, kind="note" if from_task else m.kind,
                          from_task=from_task, labels=sorted(labels), source=source,
                          salience=m.salience, entities=list(m.entities), fact=m.fact,
                          intent=honoured_intent(m, source, turn)))
    for line in lines:
        if line.source == "assistant":
            line.reviewable = ("keep", "drop")
        elif line.source == "user" and turn.owner and PREFERENCE not in line.labels:
            line.reviewable = ("keep", "add_preference")
    return lines


def apply_review(lines: list[Line], decisions: Sequence[str | None]) -> list[Line]:
    """E21-E22: drop assistant lines, add a preference label; nothing else changes."""
    kept: list[Line] = []
    for line, decision in zip(lines, decisions, strict=True):
        if decision == "drop":
            continue
        if decision == "add_preference" and PREFERENCE not in line.labels:
            line.labels = sorted([*line.labels, PREFERENCE])
        kept.append(line)
    return kept


def fresh_lines(lines: Sequence[Line], reads: CaptureReads
                ) -> tuple[list[Line], list[tuple[Line, str]]]:
    """E16: the lines whose words, in order (NFKC, whitespace collapsed, case kept), are neither
    a live line nor an earlier line of the plan; the others are NOOPs, except (M21) a duplicate
    of a live line whose honoured proposal changes that line's state or end: returned apart,
    with that line's id, it supersedes it (a repeat without its end keeps the end, M22)."""
    first: dict[str, Line] = {}  # text key -> the plan's first line with it
    for line in lines:
        first.setdefault(text_key(line.text), line)
    stored_dupes = reads.duplicates(list(first))
    fresh = [line for key, line in first.items() if key not in stored_dupes]
    asked = {key: memory_id for key, memory_id in stored_dupes.items()
             if first[key].intent is not None}
    stored = reads.lines(list(asked.values())) if asked else {}
    restated: list[tuple[Line, str]] = []
    for key, memory_id in asked.items():
        line, target = first[key], stored.get(memory_id)
        if line.intent is not None and target is not None and \
                line.intent.changes(target.status, target.due_at):
            restated.append((line, memory_id))
    return fresh, sorted(restated, key=lambda pair: pair[0].index)
