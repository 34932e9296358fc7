"""The attempt step contract: what one attempt at an intake may use, return and raise.

It sits between the attempt runner (which builds the context and commits the result) and the
steps (model-free observation, BuJo capture), so neither side imports the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory_es.events import Intake
from memory_es.intake import CATEGORIES


class StepFailure(Exception):
    """A failed attempt, with a content-free category from ``CATEGORIES``."""

    def __init__(self, category: str) -> None:
        if category not in CATEGORIES:
            raise ValueError(f"unknown failure category {category!r}")
        super().__init__(category)
        self.category = category


def _no_retain(event: Any) -> None:
    raise RuntimeError("this step cannot retain intermediate events")


def _no_same_text(key: str) -> str | None:
    raise RuntimeError("this step cannot look stored texts up")


@dataclass(frozen=True)
class StepContext:
    """What a step may use: the intake's revision, the attempt instant, and cancellation.

    ``memory_exists`` says whether the journal holds a memory id; ``same_text`` gives the id
    of a stored (never a forgotten) Journal line or Remember note with this normal form, or
    None: how Journal's repeated content converges without an id derived from the text (D5).

    A capture step also gets: ``final`` (this is the 16th attempt of the budget, DESIGN 9.2),
    ``history`` (the intake's events so far, to resume after a retained stage), ``retain``
    (commit one intake event now, durably, E17) and ``reads`` (the caught-up index).
    """

    revision: int
    at: datetime
    cancel: threading.Event
    memory_exists: Callable[[str], bool]
    same_text: Callable[[str], str | None] = _no_same_text
    final: bool = False
    history: tuple[Any, ...] = ()
    retain: Callable[[Any], None] = _no_retain
    reads: Any = None


class Processor(Protocol):
    """One attempt at an intake: return the events that resolve it, or raise StepFailure.

    A step should check ``ctx.cancel`` at its blocking points; one that does not still cannot
    block shutdown (B22): its result is discarded.
    """

    needs_model: bool

    def process(self, admitted: Intake.Admitted, payload: bytes | None,
                ctx: StepContext) -> list[Any]: ...
