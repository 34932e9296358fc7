"""Call 3, the classifier, and the guards on its decisions (SPEC E4-E6, E12-E15, E28-E29, E32,
A20-A21; DESIGN 9.2, 9.10).

Only lines with a close stored line are offered, each with the stored lines the index found
(cosine or same entity, E29); clearly novel lines are ADDs without a call (E5). The guards then
turn a decision the host must not follow into a safe one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_es.capture.contracts import (
    ReconcileAdd,
    ReconcileNoop,
    ReconcileSupersede,
    parse_reconcile,
)
from memory_es.capture.models import Message, ModelError
from memory_es.capture.prompts import Offered, ReconcileCandidate, reconcile_messages
from memory_es.capture.rules import LESSON, PREFERENCE, Line, Turn
from memory_es.step import StepFailure
from memory_es.vocabulary import HISTORY_STATUSES, REMEMBER_SOURCE

if TYPE_CHECKING:
    from memory_es.capture.reads import CaptureReads, StoredLine

_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


@dataclass
class Decision:
    line: int
    action: str  # ADD | NOOP | UPDATE | SUPERSEDE
    target: str | None = None
    text: str | None = None


def _iso_dates(text: str) -> list[str]:
    return sorted(_ISO_DATE.findall(text))


def guard(decision: Decision, line: Line, target: StoredLine | None, turn: Turn) -> Decision:
    """The structural guards on a classifier decision (E14, E15, E28, A20, A21).

    A target that is gone or no longer live makes the decision an ADD. A task's UPDATE always
    stays an UPDATE (it becomes a threaded note, A20), even when dated.
    """
    if decision.action == "ADD" or (decision.action == "NOOP" and target is not None):
        return decision
    if target is None or target.status in HISTORY_STATUSES:
        return Decision(decision.line, "ADD")
    action = decision.action
    if action == "UPDATE" and decision.text is not None and target.kind != "task":
        new_dates = _iso_dates(decision.text)
        old_dates = _iso_dates(target.text)
        if new_dates and (not old_dates or old_dates[-1] < new_dates[-1]):
            action = "SUPERSEDE"  # E28: a dated update supersedes the undated / older line
    if LESSON in target.labels:
        return Decision(decision.line, "ADD")  # E15
    if target.source == REMEMBER_SOURCE and not target.replaceable:
        return Decision(decision.line, "ADD")  # J10: a Remember line is protected from scans
    if PREFERENCE in target.labels:
        owners = target.scope == "agent" and turn.owner and line.source == "user"
        if not owners:
            return Decision(decision.line, "ADD")  # E14-E15: never replace a peer's taste
        action = "SUPERSEDE"  # the old preference stays as superseded history
    return Decision(decision.line, action, decision.target, decision.text)


def intent_guard(decision: Decision, line: Line, target: StoredLine | None,
                 turn: Turn) -> Decision:
    """M21: an honoured intention change replaces the line it changes, the old sentence kept
    as history: a classifier UPDATE becomes a SUPERSEDE, and so does a NOOP whose stated state
    or end differs from the target's (through :func:`guard` again, so a protected line is
    never replaced). Other decisions and lines without a proposal are unchanged."""
    if line.intent is None or target is None:
        return decision
    if decision.action == "UPDATE":
        return Decision(decision.line, "SUPERSEDE", decision.target, decision.text)
    if decision.action == "NOOP" and line.intent.changes(target.status, target.due_at):
        return guard(Decision(decision.line, "SUPERSEDE", target.id, line.text), line, target,
                     turn)
    return decision


def reconcile(lines: list[Line], keys: dict[str, str], reads: CaptureReads,
              ask: Callable[[list[Message]], str], *, run_hash: str, day: str,
              final: bool) -> tuple[list[Decision], bool]:
    """Call 3 (through ``ask``) for the lines with a close stored line; clearly novel lines
    are ADDs. ``keys`` maps plan entity refs to entity ids; ``day`` is the admission day.

    Returns the decisions and whether the classifier answered (then they are retained).
    """
    if not lines:
        return [], False
    entity_ids = [[keys[ref] for ref in line.entities] for line in lines]
    fact_keys = [None if line.fact is None else (keys[line.fact.entity], line.fact.key)
                 for line in lines]
    close = reads.close_lines([line.text for line in lines], entity_ids, fact_keys)
    if close is None:
        if not final:
            raise StepFailure("embedding_unavailable")
        close = [[] for _ in lines]  # final attempt: ADD rather than drop (E32)
    asked = [(line, offered) for line, offered in zip(lines, close, strict=True) if offered]
    if not asked:
        return [Decision(line.index, "ADD") for line in lines], False  # E5: clearly novel
    # One alias per stored line across the whole prompt, so two candidates naming the
    # same line name the same id and a collision on it is caught (E6).
    aliases: dict[str, str] = {}  # memory id -> alias
    refs: list[dict[str, str]] = []  # per candidate: alias -> memory id
    candidates: list[ReconcileCandidate] = []
    for line, offered in asked:
        alias = {aliases.setdefault(s.id, f"m{len(aliases) + 1}"): s.id for s in offered}
        refs.append(alias)
        candidates.append(ReconcileCandidate(
            text=line.text, source=line.source, day=day,
            offered=[Offered(ref, s.text, s.day, s.labels)
                     for ref, s in zip(alias, offered, strict=True)]))
    try:
        plan = parse_reconcile(ask(reconcile_messages(run_hash, candidates)), len(candidates),
                               {i: set(alias) for i, alias in enumerate(refs)})
    except ModelError:
        if not final:
            raise
        return [Decision(line.index, "ADD") for line in lines], False  # E32, DESIGN 9.2
    chosen: dict[int, Decision] = {}
    for d in plan.decisions:
        line, _ = asked[d.index]
        if isinstance(d, ReconcileAdd):
            chosen[line.index] = Decision(line.index, "ADD")
        elif isinstance(d, ReconcileNoop):
            chosen[line.index] = Decision(line.index, "NOOP", refs[d.index][d.target])
        else:
            action = "SUPERSEDE" if isinstance(d, ReconcileSupersede) else "UPDATE"
            chosen[line.index] = Decision(line.index, action, refs[d.index][d.target], d.text)
    return [chosen.get(line.index, Decision(line.index, "ADD")) for line in lines], True
