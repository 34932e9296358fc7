"""The reconcile contract (call 3; SPEC E4, E6-E7), a tagged union on ``action``::

    {"decisions": [{"index": int, "action": "ADD"}
                 | {"index": int, "action": "NOOP", "target": id}
                 | {"index": int, "action": "UPDATE"|"SUPERSEDE", "target": id, "text": str}]}

Exactly one decision per candidate index ``0..candidate_count-1``; a target must be one of the
ids offered; a target that an UPDATE or SUPERSEDE changes may not be named by any other
decision (the ambiguous target collision of E6).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from memory_es.capture.contracts.common import (
    NAME_MAX_BYTES,
    TEXT_MAX_BYTES,
    Index,
    NonBlank,
    Strict,
    check_indices,
    decode,
    invalid,
    require,
    text_rule,
)


class _Reconcile(Strict, frozen=True, tag_field="action"):
    index: Index


class ReconcileAdd(_Reconcile, frozen=True, tag="ADD"):
    """``{"index", "action": "ADD"}`` and nothing else (E7)."""


class ReconcileNoop(_Reconcile, frozen=True, tag="NOOP"):
    """``{"index", "action": "NOOP", "target"}``: the candidate is already stored (E7)."""

    target: NonBlank

    def __post_init__(self) -> None:
        require("target", text_rule(self.target, NAME_MAX_BYTES))


class _Rewrite(_Reconcile, frozen=True):
    """A decision that replaces a target's text: both fields required and safe (E7)."""

    target: NonBlank
    text: NonBlank

    def __post_init__(self) -> None:
        require("target", text_rule(self.target, NAME_MAX_BYTES))
        require("text", text_rule(self.text, TEXT_MAX_BYTES))


class ReconcileUpdate(_Rewrite, frozen=True, tag="UPDATE"):
    """``{"index", "action": "UPDATE", "target", "text"}``: complete replacement text (E7)."""


class ReconcileSupersede(_Rewrite, frozen=True, tag="SUPERSEDE"):
    """``{"index", "action": "SUPERSEDE", "target", "text"}``: complete new text (E7, E13)."""


ReconcileDecision = ReconcileAdd | ReconcileNoop | ReconcileUpdate | ReconcileSupersede


class ReconcilePlan(Strict, frozen=True):
    """The reconcile call's whole answer: exactly one decision per candidate index."""

    decisions: list[ReconcileDecision]


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
    plan = decode(raw, ReconcilePlan)
    check_indices([d.index for d in plan.decisions], candidate_count)
    changed: dict[str, int] = {}
    named: dict[str, int] = {}
    for i, d in enumerate(plan.decisions):
        if isinstance(d, ReconcileAdd):
            continue
        offered = targets.get(d.index, ()) if isinstance(targets, Mapping) else targets
        if d.target not in offered:
            raise invalid(f"decisions[{i}].target: is not an id offered for index {d.index}")
        changes = isinstance(d, ReconcileUpdate | ReconcileSupersede)
        other = changed.get(d.target) if not changes else named.get(d.target)
        if other is not None:
            raise invalid(
                f"decisions[{i}].target: collides with decisions[{other}] on the same target"
            )
        if changes:
            changed[d.target] = i
        named.setdefault(d.target, i)
    return plan
