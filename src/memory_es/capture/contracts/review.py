"""The review contract (call 2; SPEC E20-E24)::

    {"decisions": [{"index": int, "decision": "keep"|"drop"|"add_preference"}, ...]}

Exactly one decision per listed line index ``0..line_count-1`` (E24); the caller may narrow
the decisions allowed per line (``drop`` only for assistant lines, E21-E22).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final, Literal

from memory_es.capture.contracts.common import Index, Strict, check_indices, decode, invalid

DECISIONS: Final = ("keep", "drop", "add_preference")  # E21


class ReviewDecision(Strict, frozen=True):
    """One review decision for listed line ``index`` (0-based), E21."""

    index: Index
    decision: Literal["keep", "drop", "add_preference"]


class ReviewPlan(Strict, frozen=True):
    """The review call's whole answer: exactly one decision per listed line (E24)."""

    decisions: list[ReviewDecision]

    def decision_for(self, index: int) -> str:
        """The decision for listed line ``index``."""
        for d in self.decisions:
            if d.index == index:
                return d.decision
        raise KeyError(index)


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
    plan = decode(raw, ReviewPlan)
    check_indices([d.index for d in plan.decisions], line_count)
    if allowed is not None:
        for i, d in enumerate(plan.decisions):
            if d.decision not in allowed[d.index]:
                raise invalid(f"decisions[{i}].decision: not allowed for line {d.index}")
    return plan
