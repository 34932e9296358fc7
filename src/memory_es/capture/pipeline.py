"""The BuJo capture step (E1-E42, A10-A23, DESIGN 6, 9.2, 9.10): at most three model calls per
turn, each validated strictly and retained as an event, then one atomic commit.

Stages, each resumed from its retained event on a later attempt (never asked again, E17, E23):

1. **extract** (call 1): the plan, retained as ``Intake.ExtractionRetained``;
2. host bounds (deterministic): a ``user`` claim on a turn with no human text becomes
   ``assistant`` (E39); a task line becomes a history note with no coarse fact (A19); the
   ``preference`` label needs a user line; owner user lines get the coarse ``fact`` label (E40);
   assistant lines under salience 0.5 are dropped with the entities and relations only they
   named (E18-E19);
3. **review** (call 2, only when a line is eligible, E20-E25), retained as ``ReviewRetained``;
4. structural duplicates (E16): the same words in the same order (NFKC, whitespace collapsed,
   case kept, DESIGN 9.3) as a live line, or as an earlier line of the plan, is a NOOP;
5. **reconcile** (call 3, E4, E12-E13, E29), only for lines with a close stored line (cosine
   >= 0.75 or a shared entity, DESIGN 9.10); clearly novel lines are ADDed without a call.
   Retained as ``ReconcileRetained`` with real target ids, so a crash before the commit never
   asks again;
6. guards (E14, E15, E28, A20, A21), ``capture.only`` (A16, L10), then the events: memories,
   lifecycle, threads, entities, relations and ``Intake.Resolved(captured)`` in one journal
   transaction with run-derived ids (E17, E38, L3).

On the final (16th) attempt, a failed review keeps the unreviewed plan and a failed classifier
ADDs every non-duplicate line (E25, E32, DESIGN 9.2); a failed extraction dead-letters.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

import msgspec

from memory_es.capture.contracts import (
    ExtractedFact,
    ExtractionPlan,
    ReconcileAdd,
    ReconcileNoop,
    ReconcileSupersede,
    parse_extraction,
    parse_reconcile,
    parse_review,
)
from memory_es.capture.models import (
    ChatModel,
    Message,
    ModelError,
    classifier_model,
    make_chat_model,
    timeout_seconds,
    to_step_failure,
)
from memory_es.capture.prompts import (
    Offered,
    ReconcileCandidate,
    ReviewLine,
    TurnContext,
    extraction_messages,
    reconcile_messages,
    review_messages,
)
from memory_es.events import Entity, Intake, Memory, entity_uuid, memory_uuid
from memory_es.observe import observe
from memory_es.step import StepContext, StepFailure
from memory_es.text import entity_key, journal_text, run_memory_id, text_key
from memory_es.vocabulary import (
    HISTORY_STATUSES,
    SIDECAR_ENTRY_MAX_BYTES,
    SIDECAR_MAX_BYTES,
    SIDECAR_MAX_ENTRIES,
)

if TYPE_CHECKING:
    from memory_es.config import MemoryConfig

__all__ = ["CaptureProcessor", "CaptureReads", "StoredLine", "bound_plan", "capture_processor",
           "guard", "turn_facts"]

log = logging.getLogger("memory_es")
SALIENCE_FLOOR = 0.5  # E18
CLOSE_COSINE = 0.75  # DESIGN 9.10
SAME_ENTITY_LINES = 3  # E29
THREAD_WEIGHT = 1.0  # A20, E42: a task update's note is fully on its thread
PREFERENCE, LESSON, FACT = "preference", "lesson", "fact"
_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


@dataclass(frozen=True)
class StoredLine:
    """A stored memory as the classifier and the guards see it."""

    id: str
    text: str
    day: str
    kind: str
    status: str
    labels: tuple[str, ...]
    scope: str | None
    source: str


class CaptureReads(Protocol):
    """What the step reads from the caught-up index (the store implements it)."""

    def duplicates(self, keys: Sequence[str]) -> dict[str, str]:
        """text key -> id of a live line with that key."""
        ...

    def close_lines(self, texts: Sequence[str], entity_ids: Sequence[Sequence[str]],
                    fact_keys: Sequence[tuple[str, str] | None] | None = None
                    ) -> list[list[StoredLine]] | None:
        """Per text: live lines at cosine >= 0.75, then up to 3 same-entity lines (those with
        the same fact key first, then the newest, E29). ``None`` when vectors are unavailable."""
        ...

    def lines(self, ids: Sequence[str]) -> dict[str, StoredLine]: ...

    def known_entities(self, ids: Sequence[str]) -> set[str]: ...

    def known_relations(self, triples: Sequence[tuple[str, str, str]]
                        ) -> set[tuple[str, str, str]]: ...

    def version(self, originator_id: UUID) -> int:
        """The aggregate's last version in the journal (0 when it has none)."""
        ...

    def replay_state(self) -> tuple[int, int]:
        """(entries, bytes) of the replay sidecar as projected (F8)."""
        ...


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


@dataclass
class Decision:
    line: int
    action: str  # ADD | NOOP | UPDATE | SUPERSEDE
    target: str | None = None
    text: str | None = None


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


# --------------------------------------------------------------------------------------------
# Host bounds (deterministic)


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
    if PREFERENCE in target.labels:
        owners = target.scope == "agent" and turn.owner and line.source == "user"
        if not owners:
            return Decision(decision.line, "ADD")  # E14-E15: never replace a peer's taste
        action = "SUPERSEDE"  # the old preference stays as superseded history
    return Decision(decision.line, action, decision.target, decision.text)


# --------------------------------------------------------------------------------------------
# The step


@dataclass
class _Retained:
    plan: ExtractionPlan | None = None
    review: list[str | None] | None = None
    reconcile: list[Decision] | None = None

    @classmethod
    def from_history(cls, history: Sequence[Any]) -> _Retained:
        r = cls()
        for event in history:
            if isinstance(event, Intake.ExtractionRetained):
                r.plan = msgspec.convert(event.plan, ExtractionPlan, strict=True)
            elif isinstance(event, Intake.ReviewRetained):
                r.review = list(event.decisions)
            elif isinstance(event, Intake.ReconcileRetained):
                r.reconcile = [Decision(**d) for d in event.decisions]
        return r


@dataclass
class _Commit:
    """Events of one capture, with the aggregate versions they advance."""

    reads: CaptureReads
    at: Any
    keys: dict[str, str]  # plan entity ref -> entity id
    events: list[Any] = field(default_factory=list)
    versions: dict[UUID, int] = field(default_factory=dict)

    def next_version(self, originator: UUID) -> int:
        version = self.versions.get(originator)
        if version is None:
            version = self.reads.version(originator)
        self.versions[originator] = version + 1
        return version + 1

    def append(self, cls: type[Any], originator: UUID, **fields: Any) -> None:
        self.events.append(cls(originator_id=originator,
                               originator_version=self.next_version(originator),
                               timestamp=self.at, **fields))


class CaptureProcessor:
    """The worker step for BuJo capture (``needs_model``); model-free intakes go to observe."""

    needs_model = True

    def __init__(self, model: ChatModel, *, classifier: ChatModel | None = None,
                 timeout: float = 60.0, focus: str | None = None,
                 only: Sequence[str] | None = None) -> None:
        self.model = model
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
                           memory_exists=ctx.memory_exists)
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
                answer=admitted.summary, focus=self.focus))
            plan = parse_extraction(self._call(self.model, messages, ctx))
            retain(Intake.extraction_retained(
                run_hash=run_hash, version=revision, at=ctx.at,
                plan=msgspec.to_builtins(plan), model=self.model.name))
        # 2. host bounds
        lines = bound_plan(plan, turn)
        # 3. review
        listed = [line for line in lines if line.reviewable]
        decisions = retained.review
        if decisions is None and listed:
            try:
                raw = self._call(self.model, review_messages(run_hash, [
                    ReviewLine(line.text, line.source, line.labels, line.reviewable)
                    for line in listed]), ctx)
                review = parse_review(raw, len(listed),
                                      allowed=[line.reviewable for line in listed])
                reviewed = {line.index: review.decision_for(i) for i, line in enumerate(listed)}
                decisions = [reviewed.get(m) for m in range(len(plan.memories))]
                retain(Intake.review_retained(run_hash=run_hash, version=revision, at=ctx.at,
                                              decisions=decisions, model=self.model.name))
            except ModelError:
                if not ctx.final:
                    raise
                decisions = None  # E25: the final attempt keeps the unreviewed plan
        if decisions is not None:
            lines = apply_review(lines, [decisions[line.index] for line in lines])
        # 4. structural duplicates, in the plan and against live lines
        first: dict[str, Line] = {}  # text key -> the plan's first line with it
        for line in lines:
            first.setdefault(text_key(line.text), line)
        stored_dupes = reads.duplicates(list(first))
        fresh = [line for key, line in first.items() if key not in stored_dupes]
        # 5. reconcile
        keys = {e.id: entity_key(e.name, e.type) for e in plan.entities}  # ref -> entity id
        choices = retained.reconcile
        if choices is None:
            choices, answered = self._reconcile(fresh, keys, reads, ctx, run_hash, admitted)
            if answered:  # a crash before the commit must not ask the classifier again
                retain(Intake.reconcile_retained(
                    run_hash=run_hash, version=revision, at=ctx.at,
                    decisions=[asdict(d) for d in choices], model=self.classifier.name))
        # 6. guards, capture.only, events
        commit = _Commit(reads=reads, at=ctx.at, keys=keys)
        stored = self._write_lines(fresh, choices, commit, admitted, turn)
        self._check_sidecar_room(commit, reads)
        graph = self._graph(plan, stored, reads, commit)
        outcome = "captured" if commit.events else "empty"
        return [*graph, *commit.events,
                Intake.resolved(run_hash=run_hash, version=revision, at=ctx.at,
                                outcome=outcome)]

    def _write_lines(self, fresh: list[Line], choices: list[Decision], commit: _Commit,
                     admitted: Intake.Admitted, turn: Turn) -> list[tuple[str, Line]]:
        """Each line's guarded decision as events (E14-E16, E28, A16, A20-A21); returns the new
        lines (id, line) that the graph hangs on."""
        reads, run_hash = commit.reads, turn.run_hash
        by_line = {d.line: d for d in choices}
        targets = reads.lines([d.target for d in choices if d.target is not None])
        stored_lines: list[tuple[str, Line]] = []
        changed: set[str | None] = set()
        # E16 also holds for the classifier's replacement texts and for lines of this commit:
        # text that is already a live line never becomes a second one.
        live = reads.duplicates([text_key(d.text) for d in choices if d.text])
        for line in fresh:
            decision = by_line.get(line.index, Decision(line.index, "ADD"))
            target = targets.get(decision.target) if decision.target else None
            decision = guard(decision, line, target, turn)
            if decision.action in ("UPDATE", "SUPERSEDE"):
                if decision.target in changed:  # never two rewrites of one line (E6)
                    decision = Decision(line.index, "ADD")
                else:
                    changed.add(decision.target)
            if decision.action == "NOOP" or not self._allowed(line):
                continue
            new_id = run_memory_id(run_hash, line.index)
            if target is not None and target.kind == "task":
                # A20/A21: a task is never rewritten; the news is its own note
                if not self._add(commit, admitted, new_id, line, line.text, turn, live):
                    continue
                if decision.action == "SUPERSEDE":
                    commit.append(Memory.Superseded, memory_uuid(target.id),
                                  memory_id=target.id, by=new_id, status="invalidated",
                                  run_hash=run_hash)
                else:
                    commit.append(Memory.Threaded, memory_uuid(new_id), memory_id=new_id,
                                  to=target.id, weight=THREAD_WEIGHT, run_hash=run_hash)
                stored_lines.append((new_id, line))
            elif target is not None and decision.action in ("UPDATE", "SUPERSEDE"):
                assert decision.text is not None
                same = live.get(text_key(decision.text))
                if same == target.id or journal_text(decision.text) == journal_text(target.text):
                    continue  # the line already says exactly this
                if same is not None:  # another live line says it: the target is history
                    commit.append(Memory.Superseded, memory_uuid(target.id),
                                  memory_id=target.id, by=same, status="superseded",
                                  run_hash=run_hash)
                elif decision.action == "UPDATE":
                    commit.append(Memory.TextUpdated, memory_uuid(target.id),
                                  memory_id=target.id, text=decision.text,
                                  session=turn.session, run_hash=run_hash,
                                  fact=self._fact(commit, line))
                    live[text_key(decision.text)] = target.id
                elif self._add(commit, admitted, new_id, line, decision.text, turn, live):
                    commit.append(Memory.Superseded, memory_uuid(target.id),
                                  memory_id=target.id, by=new_id, status="superseded",
                                  run_hash=run_hash)
                    stored_lines.append((new_id, line))
            elif self._add(commit, admitted, new_id, line, line.text, turn, live):
                stored_lines.append((new_id, line))
        return stored_lines

    @staticmethod
    def _check_sidecar_room(commit: _Commit, reads: CaptureReads) -> None:
        """F8, fail closed: never commit replay state the sidecar could not hold (the
        projection would then stop for good); the capture waits, content-free, instead."""
        adding = sum(isinstance(e, Memory.Superseded | Memory.Threaded) for e in commit.events)
        if not adding:
            return
        entries, size = reads.replay_state()
        if entries + adding > SIDECAR_MAX_ENTRIES or \
                size + adding * SIDECAR_ENTRY_MAX_BYTES > SIDECAR_MAX_BYTES:
            log.warning("memory_degraded: the replay sidecar is full (%d entries, %d bytes); "
                        "capture waits", entries, size,
                        extra={"memory_event": "memory_degraded", "code": "sidecar_full"})
            raise StepFailure("io_error")

    def _allowed(self, line: Line) -> bool:
        """A16: stored only if an accepted label has an allowed kind (unset: everything)."""
        return self.only is None or any(label in self.only for label in line.labels)

    def _add(self, commit: _Commit, admitted: Intake.Admitted, memory_id: str, line: Line,
             text: str, turn: Turn, live: dict[str, str]) -> bool:
        """Capture ``text`` as a new line unless a live line (or one of this commit) already
        says it (E16); returns whether it was added."""
        key = text_key(text)
        if key in live:
            return False
        live[key] = memory_id
        self._captured(commit, admitted, memory_id, line, text, turn)
        return True

    @staticmethod
    def _fact(commit: _Commit, line: Line) -> dict[str, str] | None:
        if line.fact is None:
            return None
        return {"subject": commit.keys[line.fact.entity], "key": line.fact.key,
                "value": line.fact.value}

    def _captured(self, commit: _Commit, admitted: Intake.Admitted, memory_id: str,
                  line: Line, text: str, turn: Turn) -> None:
        commit.events.append(Memory.captured(
            at=admitted.timestamp, memory_id=memory_id, kind=line.kind, text=text,
            day=admitted.timestamp.date().isoformat(), status="open", labels=line.labels,
            entity_ids=[commit.keys[ref] for ref in line.entities], scope=turn.scope,
            source=line.source, salience=line.salience, from_task=line.from_task,
            session=turn.session, run_hash=turn.run_hash, tier=admitted.tier,
            fact=self._fact(commit, line)))
        commit.versions[memory_uuid(memory_id)] = 1

    def _graph(self, plan: ExtractionPlan, stored: list[tuple[str, Line]], reads: CaptureReads,
               commit: _Commit) -> list[Any]:
        """Entities named by stored lines, relations between them (L1, L10, E22, E26)."""
        keys = commit.keys
        named_by: dict[str, str] = {}  # plan ref -> first stored memory naming it
        for memory_id, line in stored:
            for ref in line.entities:
                named_by.setdefault(ref, memory_id)
        known = reads.known_entities([keys[ref] for ref in named_by])
        events: list[Any] = []
        for entity in plan.entities:
            key = keys[entity.id]
            if entity.id in named_by and key not in known:
                known.add(key)
                events.append(Entity.named(at=commit.at, entity_id=key, name=entity.name,
                                           type=entity.type))
                commit.versions[entity_uuid(key)] = 1
        triples = [(keys[r.from_id], r.relation, keys[r.to_id]) for r in plan.relations
                   if r.from_id in named_by and r.to_id in named_by]
        stated = reads.known_relations(triples)
        for rel in plan.relations:
            triple = (keys[rel.from_id], rel.relation, keys[rel.to_id])
            if triple not in triples or triple in stated:
                continue
            stated.add(triple)
            both = [mid for mid, line in stored
                    if rel.from_id in line.entities and rel.to_id in line.entities]
            commit.append(Entity.Related, entity_uuid(triple[0]), entity_id=triple[0],
                          to=triple[2], relation=rel.relation,
                          memory=both[0] if both else named_by[rel.from_id])
        return events

    def _reconcile(self, lines: list[Line], keys: dict[str, str], reads: CaptureReads,
                   ctx: StepContext, run_hash: str, admitted: Intake.Admitted
                   ) -> tuple[list[Decision], bool]:
        """Call 3 for the lines with a close stored line; clearly novel lines are ADDs.

        Returns the decisions and whether the classifier answered (then they are retained).
        """
        if not lines:
            return [], False
        entity_ids = [[keys[ref] for ref in line.entities] for line in lines]
        fact_keys = [None if line.fact is None else (keys[line.fact.entity], line.fact.key)
                     for line in lines]
        close = reads.close_lines([line.text for line in lines], entity_ids, fact_keys)
        if close is None:
            if not ctx.final:
                raise StepFailure("embedding_unavailable")
            close = [[] for _ in lines]  # final attempt: ADD rather than drop (E32)
        asked = [(line, offered) for line, offered in zip(lines, close, strict=True) if offered]
        if not asked:
            return [Decision(line.index, "ADD") for line in lines], False  # E5: clearly novel
        # One alias per stored line across the whole prompt, so two candidates naming the
        # same line name the same id and a collision on it is caught (E6).
        aliases: dict[str, str] = {}  # memory id -> alias
        refs: list[dict[str, str]] = []
        candidates: list[ReconcileCandidate] = []
        day = admitted.timestamp.date().isoformat()
        for line, offered in asked:
            alias = {aliases.setdefault(s.id, f"m{len(aliases) + 1}"): s.id for s in offered}
            refs.append(alias)
            candidates.append(ReconcileCandidate(
                text=line.text, source=line.source, day=day,
                offered=[Offered(ref, s.text, s.day, s.labels)
                         for ref, s in zip(alias, offered, strict=True)]))
        try:
            raw = self._call(self.classifier, reconcile_messages(run_hash, candidates), ctx)
            plan = parse_reconcile(raw, len(candidates),
                                   {i: set(alias) for i, alias in enumerate(refs)})
        except ModelError:
            if not ctx.final:
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
                chosen[line.index] = Decision(line.index, action, refs[d.index][d.target],
                                              d.text)
        return [chosen.get(line.index, Decision(line.index, "ADD")) for line in lines], True


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
                            focus=config.capture.focus, only=config.capture.only)
