"""The deterministic host rules of capture (SPEC E16, E18-E22, E39-E40, A19; DESIGN 9.3).

What the host decides about a plan's lines from the turn's own facts, never from model text:
source bounding, task -> note, label gates, coarse owner facts, the salience floor, review
eligibility and decisions, and structural duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_es.capture.contracts import ExtractedFact, ExtractionPlan
from memory_es.events import Intake
from memory_es.ids import text_key

if TYPE_CHECKING:
    from memory_es.capture.reads import CaptureReads

SALIENCE_FLOOR = 0.5  # E18
PREFERENCE, LESSON, FACT = "preference", "lesson", "fact"


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


def bound_plan(plan: ExtractionPlan, turn: Turn) -> list[Line]:
    """Source bounding, task -> note, label gates, coarse owner facts, salience floor."""
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
                          salience=m.salience, entities=list(m.entities), fact=m.fact))
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


def fresh_lines(lines: Sequence[Line], reads: CaptureReads) -> list[Line]:
    """E16: the lines whose words, in order (NFKC, whitespace collapsed, case kept), are neither
    a live line nor an earlier line of the plan; the others are NOOPs."""
    first: dict[str, Line] = {}  # text key -> the plan's first line with it
    for line in lines:
        first.setdefault(text_key(line.text), line)
    stored_dupes = reads.duplicates(list(first))
    return [line for key, line in first.items() if key not in stored_dupes]
