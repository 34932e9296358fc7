"""Projecting an admitted intake without a model (A3, D2, D3, D5, D7, D8, D12).

The store turns each due intake into events here, committed in one transaction: the
``Memory.Recorded`` observation (Lite, Journal) and ``Intake.Resolved``. BuJo with
append-host-summary resolves with no memory: its only projection is the audit line, which
comes from the ``Intake.Admitted`` event itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from memory_es.events import Intake, Memory
from memory_es.ids import run_memory_id
from memory_es.step import StepContext
from memory_es.text import collapse_ws, journal_text


def observe(
    admitted: Intake.Admitted, *, revision: int, at: datetime,
    memory_exists: Callable[[str], bool], same_text: Callable[[str], str | None],
) -> list[Any]:
    """The events that resolve one admitted, model-free intake.

    A new memory's id comes from the run (never from the text: a forget must leave nothing
    that confirms a guessed text). Journal's content identity (D3, case-preserving NFKC) is
    the text key the index keeps for stored lines: a repeat converges on the stored line's id
    (D5), and after a forget the same text is new."""
    run_hash = admitted.run_hash
    if admitted.tier == "bujo":
        return [Intake.resolved(run_hash=run_hash, version=revision, at=at, outcome="projected")]
    memory_id = run_memory_id(run_hash, 0)
    if admitted.tier == "journal":
        text = journal_text(admitted.summary)
        stored = same_text(text) if text else None
        if stored is not None:  # D5: repeated content converges on one identity
            memory_id = stored
    else:
        text = collapse_ws(admitted.summary)
    if not text:
        return [Intake.resolved(run_hash=run_hash, version=revision, at=at, outcome="empty")]
    events: list[Any] = []
    if not memory_exists(memory_id):
        events.append(Memory.recorded(
            at=admitted.timestamp, memory_id=memory_id, kind="observation", text=text,
            day=admitted.timestamp.date().isoformat(), status="open", source="host-summary",
            session=admitted.session, run_hash=run_hash, tier=admitted.tier,
        ))
    events.append(Intake.resolved(run_hash=run_hash, version=revision, at=at,
                                  outcome="projected", memory_id=memory_id))
    return events


class ObserveProcessor:
    """The model-free step: Lite/Journal observations and BuJo audit resolution."""

    needs_model = False

    def process(self, admitted: Intake.Admitted, payload: bytes | None,
                ctx: StepContext) -> list[Any]:
        return observe(admitted, revision=ctx.revision, at=ctx.at,
                       memory_exists=ctx.memory_exists, same_text=ctx.same_text)
