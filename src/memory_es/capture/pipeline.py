"""The BuJo capture step (SPEC E1-E42, A10-A23; DESIGN 6, 9.2): at most three model calls per
turn, each validated strictly and retained as an event, then one atomic commit.

Each stage resumes from its retained event on a later attempt, never asking again (E17, E23):
extraction (``Intake.ExtractionRetained``), the host rules (:mod:`.rules`), review when a line
is eligible (``ReviewRetained``, E20-E25), structural duplicates, reconcile for lines with a
close stored line (``ReconcileRetained``, :mod:`.reconcile`), then the events (:mod:`.commit`).
On the final (16th) attempt a failed review keeps the unreviewed plan and a failed classifier
ADDs every non-duplicate line (E25, E32); a failed extraction dead-letters.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from memory_es.capture.commit import commit_events
from memory_es.capture.contracts import parse_extraction, parse_review, retained_plan
from memory_es.capture.contracts.extraction import AnyPlan
from memory_es.capture.factory import classifier_model, make_chat_model
from memory_es.capture.models import (
    ChatModel,
    Message,
    ModelError,
    timeout_seconds,
    to_step_failure,
)
from memory_es.capture.prompts import ReviewLine, TurnContext, extraction_messages, review_messages
from memory_es.capture.reconcile import Decision, reconcile
from memory_es.capture.rules import (
    Line,
    apply_review,
    bound_plan,
    fresh_lines,
    turn_facts,
)
from memory_es.events import Intake
from memory_es.ids import name_key, run_entity_id
from memory_es.observe import observe
from memory_es.step import StepContext

if TYPE_CHECKING:
    from memory_es.capture.reads import CaptureReads
    from memory_es.config import MemoryConfig

__all__ = ["CaptureProcessor", "capture_processor"]

log = logging.getLogger("memory_es")


@dataclass
class _Retained:
    """The stages an earlier attempt retained (E17, E23)."""

    plan: AnyPlan | None = None
    review: list[str | None] | None = None
    reconcile: list[Decision] | None = None

    @classmethod
    def from_history(cls, history: Sequence[Any]) -> _Retained:
        r = cls()
        for event in history:
            if isinstance(event, Intake.ExtractionRetained):
                r.plan = retained_plan(event.plan)  # M26: its proposals finish
            elif isinstance(event, Intake.ReviewRetained):
                r.review = list(event.decisions)
            elif isinstance(event, Intake.ReconcileRetained):
                r.reconcile = [Decision(**d) for d in event.decisions]
        return r


class CaptureProcessor:
    """The worker step for BuJo capture (``needs_model``); model-free intakes go to observe."""

    needs_model = True

    def __init__(self, model: ChatModel, *, classifier: ChatModel | None = None,
                 timeout: float = 60.0, focus: str | None = None,
                 only: Sequence[str] | None = None, intents: bool = False) -> None:
        self.model = model
        self.intents = intents  # memory.capture.intentLifecycle (M13)
        self.classifier = classifier if classifier is not None else model
        self.timeout = timeout
        self.focus = focus
        self.only = None if only is None else tuple(only)

    def _call(self, model: ChatModel, messages: list[Message], ctx: StepContext) -> str:
        if ctx.cancel.is_set():
            raise ModelError("cancelled before the model call", code="model_timeout")
        return model.complete(messages, timeout=self.timeout)

    def process(self, admitted: Intake.Admitted, payload: bytes | None,
                ctx: StepContext) -> list[Any]:
        if not (admitted.tier == "bujo" and admitted.write_mode == "capture"):
            return observe(admitted, revision=ctx.revision, at=ctx.at,
                           memory_exists=ctx.memory_exists, same_text=ctx.same_text)
        try:
            return self._capture(admitted, payload, ctx)
        except ModelError as e:  # E36: warn, stay pending, retry durably; content-free
            log.warning("memory_es capture attempt failed (intake %s): %s",
                        admitted.run_hash, e.code,
                        extra={"memory_event": "capture_failed", "code": e.code})
            raise to_step_failure(e) from None

    def _capture(self, admitted: Intake.Admitted, payload: bytes | None,
                 ctx: StepContext) -> list[Any]:
        run_hash = admitted.run_hash
        revision = ctx.revision
        reads: CaptureReads = ctx.reads
        if self.only is not None and not self.only:  # A16: an empty list suppresses capture
            return [Intake.resolved(run_hash=run_hash, version=revision, at=ctx.at,
                                    outcome="empty", reason_slug="capture-only-empty")]
        retained = _Retained.from_history(ctx.history)
        turn = turn_facts(admitted)

        def retain(event: Any) -> None:
            nonlocal revision
            ctx.retain(event)
            revision += 1

        # 1. extraction
        plan = retained.plan
        if plan is None:
            text = payload.decode("utf-8") if payload is not None else ""
            messages = extraction_messages(TurnContext(
                intake_id=run_hash, admitted_at=admitted.timestamp,
                source_label=admitted.source_label, capture_text=text,
                answer=admitted.summary, focus=self.focus, intents=self.intents))
            plan = parse_extraction(self._call(self.model, messages, ctx), intents=self.intents)
            retain(Intake.extraction_retained(
                run_hash=run_hash, version=revision, at=ctx.at,
                plan=msgspec.to_builtins(plan), model=self.model.name))
        # 2. host bounds
        lines = bound_plan(plan, turn)
        # 3. review
        decisions = retained.review
        if decisions is None:
            decisions = self._review(lines, len(plan.memories), run_hash, ctx)
            if decisions is not None:
                retain(Intake.review_retained(run_hash=run_hash, version=revision, at=ctx.at,
                                              decisions=decisions, model=self.model.name))
        if decisions is not None:
            lines = apply_review(lines, [decisions[line.index] for line in lines])
        # 4. structural duplicates, in the plan and against live lines; a duplicate that
        # changes its line's intention state or end replaces it (M21)
        fresh, restated = fresh_lines(lines, reads)
        # 5. reconcile
        stored = reads.entity_ids()  # ref -> the node it names, or a new one from this run
        keys = {e.id: stored.get(name_key(e.name, e.type)) or run_entity_id(run_hash, e.id)
                for e in plan.entities}
        choices = retained.reconcile
        if choices is None:
            choices, answered = reconcile(
                fresh, keys, reads, lambda messages: self._call(self.classifier, messages, ctx),
                run_hash=run_hash, day=admitted.timestamp.date().isoformat(), final=ctx.final)
            if answered:  # a crash before the commit must not ask the classifier again
                retain(Intake.reconcile_retained(
                    run_hash=run_hash, version=revision, at=ctx.at,
                    decisions=[asdict(d) for d in choices], model=self.classifier.name))
        # 6. guards, capture.only, events
        if restated:
            fresh = sorted([*fresh, *(line for line, _ in restated)], key=lambda ln: ln.index)
            choices = [*choices, *(Decision(line.index, "SUPERSEDE", target, line.text)
                                   for line, target in restated)]
        return commit_events(plan, fresh, choices, keys=keys, reads=reads, admitted=admitted,
                             turn=turn, only=self.only, at=ctx.at, version=revision,
                             intents=self.intents)

    def _review(self, lines: list[Line], count: int, run_hash: str,
                ctx: StepContext) -> list[str | None] | None:
        """Call 2 over the eligible lines (E20-E24): one decision per plan memory (``None``
        for an unlisted one), or ``None`` when no line is eligible or, on the final attempt,
        the review failed (E25: keep the unreviewed plan)."""
        listed = [line for line in lines if line.reviewable]
        if not listed:
            return None
        try:
            raw = self._call(self.model, review_messages(run_hash, [
                ReviewLine(line.text, line.source, line.labels, line.reviewable)
                for line in listed]), ctx)
            review = parse_review(raw, len(listed), allowed=[line.reviewable for line in listed])
        except ModelError:
            if not ctx.final:
                raise
            return None
        reviewed = {line.index: review.decision_for(i) for i, line in enumerate(listed)}
        return [reviewed.get(m) for m in range(count)]


class _DeferredChat:
    """The configured chat model, built on first use: a model that cannot be built (an
    unsupported provider) fails the capture attempt, never the store's open or admission."""

    def __init__(self, build: Callable[[], ChatModel], name: str) -> None:
        self._build = build
        self._model: ChatModel | None = None
        self.name = name

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        if self._model is None:
            self._model = self._build()
        return self._model.complete(messages, timeout=timeout)


def capture_processor(config: MemoryConfig, model: ChatModel | None = None,
                      classifier: ChatModel | None = None) -> CaptureProcessor:
    """The capture step ``config`` describes; ``model``/``classifier`` override the providers
    (a host's own runtime, or :class:`ScriptedChat` in tests and the demo)."""
    llm = config.llm
    assert llm is not None, "BuJo capture requires memory.llm (O4)"
    if model is None:
        model = _DeferredChat(lambda: make_chat_model(llm), f"{llm.provider}:{llm.model}")
    if classifier is None:
        chosen = model
        if config.capture.reconcile_model is not None:
            chosen = _DeferredChat(lambda: classifier_model(config, model),
                                   config.capture.reconcile_model)
        classifier = chosen
    return CaptureProcessor(model, classifier=classifier, timeout=timeout_seconds(llm),
                            focus=config.capture.focus, only=config.capture.only,
                            intents=config.capture.intent_lifecycle)
