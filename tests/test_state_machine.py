"""The intake state machine (DESIGN 5; SPEC B6-B8, B32, C3, C4): schedule, budget, fold.

Three layers, fastest first:

* ``backoff_delay`` against the exact B7 schedule;
* a Hypothesis rule-based machine that drives a bare ``IntakeView`` with the events the store
  commits, checked against an independent model of the schedule (B7), the retry rule (C3),
  the operator resolution (C4) and the fold's purity (B32: the view is a function of events);
* the real store (no worker thread) with a processor that fails N times, for random N.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import memory_es.intake as intake_module
from memory_es.events import Intake, Memory
from memory_es.history import iter_events, open_reader
from memory_es.ids import intake_uuid
from memory_es.intake import (
    CATEGORIES,
    CompletedTurn,
    IntakeView,
    PreparedIntake,
    backoff_delay,
    failure_event,
    prepare_turn,
)
from memory_es.observe import ObserveProcessor
from memory_es.root import MemoryRoot
from memory_es.step import StepContext, StepFailure
from memory_es.store import MemoryStore

T0 = datetime(2026, 5, 4, 9, 30, tzinfo=UTC)
SIX_HOURS = timedelta(hours=6)
BUDGET = 16  # B7: attempts per budget, written here rather than read from the code


def expected_delay(k: int) -> timedelta:
    """B7 written independently of the implementation: min(60 s x 2^(k-1), 6 h)."""
    return timedelta(seconds=min(60 * 2 ** (k - 1), 6 * 3600))


# --------------------------------------------------------------------------------------------
# backoff_delay (B7)


def test_b7_backoff_schedule_exact_values() -> None:
    """B7: initial delay one minute, doubling, capped at six hours from the 10th failure."""
    minutes = [backoff_delay(k) / timedelta(minutes=1) for k in range(1, BUDGET)]
    assert minutes == [1, 2, 4, 8, 16, 32, 64, 128, 256] + [360] * 6
    assert intake_module.MAX_ATTEMPTS == BUDGET


def test_b7_schedule_spans_more_than_a_day() -> None:
    """B7: the 15 delays between the 16 attempts sum to 2,671 min (> 24 h), DESIGN 5."""
    total = sum((backoff_delay(k) for k in range(1, BUDGET)), timedelta())
    assert total == timedelta(minutes=2671)
    assert total > timedelta(hours=24)


@given(st.integers(min_value=1, max_value=10_000))
def test_b7_delay_is_positive_capped_and_monotone(k: int) -> None:
    """B7: every delay is > 0, at most six hours, never shrinks, and matches the formula."""
    delay = backoff_delay(k)
    assert timedelta(0) < delay <= SIX_HOURS
    assert delay == expected_delay(k)
    if k > 1:
        assert backoff_delay(k - 1) <= delay


# --------------------------------------------------------------------------------------------
# IntakeView driven by generated event sequences (B7, B32, C3, C4)


def prepared(run_id: str) -> PreparedIntake:
    result = prepare_turn(
        CompletedTurn(run_id=run_id, outcome="success", answer=f"answer of {run_id}"),
        tier="lite", write_mode="append-host-summary", capture_cron=False,
        capture_webhook=False,
    )
    assert isinstance(result, PreparedIntake)
    return result


class Model:
    """What one intake should look like, kept without looking at the view."""

    def __init__(self, run_hash: str, at: datetime) -> None:
        self.id = run_hash
        self.state = "pending"
        self.attempts = 0
        self.failures = 0
        self.revision = 1
        self.next_due_at: datetime | None = at
        self.category: str | None = None
        self.outcome: str | None = None
        self.reason_slug: str | None = None
        self.processed = 0  # successful (non-operator) resolutions: must stay <= 1

    def due(self, now: datetime) -> bool:
        return self.state == "pending" and self.next_due_at is not None \
            and self.next_due_at <= now


class IntakeMachine(RuleBasedStateMachine):
    """Random fail / succeed / retry / resolve / clock moves over a few intakes."""

    def __init__(self) -> None:
        super().__init__()
        self.view = IntakeView()
        self.log: list[tuple[int, Any]] = []
        self.models: list[Model] = []
        self.now = T0

    def _apply(self, event: Any) -> None:
        before = self.view.transitions
        position = len(self.log) + 1
        self.log.append((position, event))
        self.view.apply(position, event)
        assert self.view.transitions == before + 1  # one transition per intake event

    @initialize(n=st.integers(min_value=1, max_value=3))
    def admit(self, n: int) -> None:
        for i in range(n):
            p = prepared(f"run-{i}")
            self._apply(p.admitted(self.now))
            self.models.append(Model(p.run_hash, self.now))

    def _model(self, i: int) -> Model:
        return self.models[i % len(self.models)]

    # -- the worker's side ------------------------------------------------------------------

    def _fail(self, m: Model, category: str) -> None:
        record = self.view.records[m.id]
        assert record.due(self.now)
        assert record in self.view.due(self.now)  # the worker would pick it up
        self._apply(failure_event(record, category, self.now))
        m.attempts += 1
        m.failures += 1
        m.revision += 1
        m.category = category
        if m.failures == BUDGET:  # B7: exactly the 16th failure dead-letters
            m.state, m.next_due_at = "dead", None
        else:
            m.next_due_at = self.now + expected_delay(m.failures)

    @rule(i=st.integers(0, 2), category=st.sampled_from(CATEGORIES))
    def fail(self, i: int, category: str) -> None:
        """A due intake's attempt failed; a delayed, dead or resolved one is not attempted."""
        m = self._model(i)
        if m.due(self.now):
            self._fail(m, category)
        else:
            assert not self.view.records[m.id].due(self.now)
            assert m.id not in {r.id for r in self.view.due(self.now)}

    @rule(i=st.integers(0, 2), categories=st.lists(st.sampled_from(CATEGORIES),
                                                   min_size=1, max_size=16))
    def fail_on_schedule(self, i: int, categories: list[str]) -> None:
        """Move the clock to each next due time and fail there: reaches dead letter often."""
        m = self._model(i)
        for category in categories:
            if m.state != "pending":
                break
            assert m.next_due_at is not None
            self.now = max(self.now, m.next_due_at)
            self._fail(m, category)

    @rule(i=st.integers(0, 2))
    def succeed(self, i: int) -> None:
        m = self._model(i)
        if not m.due(self.now):
            assert m.id not in {r.id for r in self.view.due(self.now)}
            return
        record = self.view.records[m.id]
        self._apply(Intake.resolved(run_hash=m.id, version=record.revision, at=self.now,
                                    outcome="projected", memory_id="m" * 64))
        m.attempts += 1
        m.revision += 1
        m.processed += 1
        m.state, m.next_due_at, m.outcome = "resolved", None, "projected"

    # -- the operator's side ----------------------------------------------------------------

    def _retry(self, targets: list[Model]) -> None:
        for m in targets:
            record = self.view.records[m.id]
            if not (m.state == "dead" or (m.state == "pending" and not m.due(self.now))):
                # C3: only dead or delayed work is retried; the view must agree it is neither
                assert record.state == "resolved" or record.due(self.now)
                continue
            assert record.state == "dead" or not record.due(self.now)
            self._apply(Intake.retry_requested(run_hash=m.id, version=record.revision,
                                               at=self.now))
            m.state, m.failures, m.next_due_at = "pending", 0, self.now
            m.revision += 1

    @rule(i=st.integers(0, 2))
    def retry_one(self, i: int) -> None:
        self._retry([self._model(i)])

    @rule()
    def retry_all(self) -> None:
        self._retry(list(self.models))

    @rule(i=st.integers(0, 2), slug=st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True))
    def operator_resolve(self, i: int, slug: str) -> None:
        m = self._model(i)
        if m.state == "resolved":
            return  # C4: the store refuses already_resolved; nothing is committed
        record = self.view.records[m.id]
        self._apply(Intake.resolved(run_hash=m.id, version=record.revision, at=self.now,
                                    outcome="operator_resolved", reason_slug=slug))
        m.revision += 1
        m.state, m.next_due_at = "resolved", None
        m.outcome, m.reason_slug = "operator_resolved", slug

    @rule(seconds=st.integers(min_value=0, max_value=8 * 3600))
    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @precondition(lambda self: self.view.next_due_at() is not None)
    @rule()
    def advance_to_next_due(self) -> None:
        nxt = self.view.next_due_at()
        assert nxt is not None
        self.now = max(self.now, nxt)

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def view_matches_model(self) -> None:
        for m in self.models:
            r = self.view.records[m.id]
            assert (r.state, r.attempts, r.failures, r.revision) == (
                m.state, m.attempts, m.failures, m.revision)
            assert r.next_due_at == m.next_due_at
            assert r.category == m.category
            assert (r.outcome, r.reason_slug) == (m.outcome, m.reason_slug)
            assert r.due(self.now) == m.due(self.now)
            assert m.processed <= 1  # resolved is terminal: never processed twice
            if r.state == "resolved":
                assert r.next_due_at is None
                assert not r.due(self.now)

    @invariant()
    def counts_are_consistent(self) -> None:
        if not self.models:
            return
        c = self.view.counts(self.now)
        assert c.total == len(self.models)
        assert c.pending + c.dead + c.resolved == c.total
        assert c.due + c.delayed == c.pending
        assert c.active == c.pending + c.dead == self.view.active
        assert c.transitions == len(self.log)
        states = Counter(m.state for m in self.models)
        assert (c.pending, c.dead, c.resolved) == (
            states["pending"], states["dead"], states["resolved"])
        assert c.due == sum(m.due(self.now) for m in self.models)
        pending_due = [m.next_due_at for m in self.models
                       if m.state == "pending" and m.next_due_at is not None]
        assert self.view.next_due_at() == (min(pending_due) if pending_due else None)
        assert [r.id for r in self.view.unresolved()] == [
            m.id for m in self.models if m.state != "resolved"]

    def teardown(self) -> None:
        """B32: the view is a pure function of the events: a replay gives identical records."""
        fresh = IntakeView()
        for position, event in self.log:
            fresh.apply(position, event)
        assert fresh.transitions == self.view.transitions
        assert fresh.active == self.view.active
        assert {k: msgspec.structs.asdict(v) for k, v in fresh.records.items()} == {
            k: msgspec.structs.asdict(v) for k, v in self.view.records.items()}
        assert fresh.report(self.now) == self.view.report(self.now)


IntakeMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None)
TestIntakeStateMachine = IntakeMachine.TestCase


@settings(max_examples=60, deadline=None)
@given(
    categories=st.lists(st.sampled_from(CATEGORIES), min_size=16, max_size=40),
    retry_after=st.sets(st.integers(min_value=1, max_value=40), max_size=3),
    late=st.integers(min_value=0, max_value=3600),
)
def test_b7_c3_failure_budget_counts_from_admission_or_retry(
    categories: list[str], retry_after: set[int], late: int
) -> None:
    """B7: dead exactly at the 16th failure since admission or the last retry; each delay is
    measured from the failure instant, however late the attempt ran; C3: retry is a fresh
    16-attempt budget, due now."""
    view = IntakeView()
    p = prepared("budget")
    events: list[Any] = [p.admitted(T0)]
    view.apply(1, events[0])
    now, since_retry = T0, 0
    for n, category in enumerate(categories, start=1):
        record = view.records[p.run_hash]
        if record.state == "dead" and n - 1 not in retry_after:
            break
        if n - 1 in retry_after and (record.state == "dead" or not record.due(now)):
            event = Intake.retry_requested(run_hash=p.run_hash, version=record.revision,
                                           at=now)
            events.append(event)
            view.apply(len(events), event)
            since_retry = 0
            assert (record.state, record.failures, record.next_due_at) == ("pending", 0, now)
        assert record.next_due_at is not None
        now = max(now, record.next_due_at) + timedelta(seconds=late)
        event = failure_event(record, category, now)
        events.append(event)
        view.apply(len(events), event)
        since_retry += 1
        assert record.attempts == n
        assert record.failures == since_retry
        assert record.category == category
        if since_retry == BUDGET:
            assert isinstance(event, Intake.DeadLettered)
            assert (record.state, record.next_due_at) == ("dead", None)
            assert view.due(now + timedelta(days=365)) == []
        else:
            assert isinstance(event, Intake.AttemptFailed)
            assert event.attempt == n
            assert event.next_due_at == now + expected_delay(since_retry)
            assert record.state == "pending"
            assert record.next_due_at == event.next_due_at
            assert not record.due(event.next_due_at - timedelta(milliseconds=1))
            assert record.due(event.next_due_at)
    replay = IntakeView()
    for position, event in enumerate(events, start=1):
        replay.apply(position, event)
    assert msgspec.structs.asdict(replay.records[p.run_hash]) == msgspec.structs.asdict(
        view.records[p.run_hash])


# --------------------------------------------------------------------------------------------
# The real store, foreground (B6, B7, B8): a processor that fails N times, then succeeds


class Clock:
    """A settable UTC clock (tz-aware)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Flaky(ObserveProcessor):
    """Fails each intake ``failures[run_hash]`` times (cycling categories), then projects."""

    def __init__(self, failures: dict[str, int]) -> None:
        self.failures = failures
        self.calls: Counter[str] = Counter()

    def process(self, admitted: Intake.Admitted, payload: bytes | None,
                ctx: StepContext) -> list[Any]:
        n = self.calls[admitted.run_hash]
        self.calls[admitted.run_hash] += 1
        if n < self.failures[admitted.run_hash]:
            raise StepFailure(CATEGORIES[n % len(CATEGORIES)])
        return super().process(admitted, payload, ctx)


def journal_events(root: Path) -> list[Any]:
    """Every event of ``root``'s journal, decoded, after the chain verified (read-only)."""
    with open_reader(root) as opened:
        return [event for _position, event in iter_events(opened)]


@settings(max_examples=12, deadline=None)
@given(ns=st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=3),
       late=st.integers(min_value=0, max_value=120))
def test_b6_b7_store_fails_n_times_then_resolves_or_dead_letters(
    ns: list[int], late: int
) -> None:
    """B7/B8: N failures leave the intake pending on the schedule; it resolves when N < 16
    and is dead-lettered at the 16th failure otherwise. Exactly one Memory.Recorded per
    resolved intake (no duplicate processing), and the journal verifies on reopen (B6)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        clock = Clock(T0)
        turns = [CompletedTurn(run_id=f"flaky-{i}", outcome="success", answer=f"note {i}")
                 for i in range(len(ns))]
        ids = [prepared(t.run_id).run_hash for t in turns]
        flaky = Flaky(dict(zip(ids, ns, strict=True)))
        with MemoryStore.open(root, clock=clock, background=False, processor=flaky) as store:
            for t in turns:
                assert store.persist_completed_turn(t).status == "admitted"
            for _ in range(40):
                counts = store.inspect().counts
                if counts.pending == 0:
                    break
                due = counts.due
                assert store.drain() == due  # one attempt per due intake, no more
                pending = [r for r in store.inspect().records if r.state == "pending"]
                if pending:
                    nxt = min(r.next_due_at for r in pending if r.next_due_at is not None)
                    assert nxt > clock.now  # nothing due is left behind by a drain
                    clock.now = nxt + timedelta(seconds=late)
            report = store.inspect()
            # the live store lists unresolved records; a resolved one is looked up by id
            states = {rid: store.inspect(rid).records[0] for rid in ids}
        assert report.counts.pending == 0
        for rid, n in zip(ids, ns, strict=True):
            record = states[rid]
            if n < BUDGET:
                assert (record.state, record.outcome) == ("resolved", "projected")
                assert record.attempts == n + 1
            else:
                assert record.state == "dead"
                assert record.attempts == record.failures == BUDGET
            assert flaky.calls[rid] == min(n + 1, BUDGET)

        events = journal_events(root)  # verifies the hash chain on reopen
        for rid, n in zip(ids, ns, strict=True):
            mine = [e for e in events if e.originator_id == intake_uuid(rid)]
            failed = [e for e in mine if isinstance(e, Intake.AttemptFailed)]
            assert len(failed) == min(n, BUDGET - 1)
            assert [e.attempt for e in failed] == list(range(1, len(failed) + 1))
            for e in failed:
                assert e.category in CATEGORIES
                assert e.next_due_at == e.timestamp + expected_delay(e.attempt)
            dead = [e for e in mine if isinstance(e, Intake.DeadLettered)]
            resolved = [e for e in mine if isinstance(e, Intake.Resolved)]
            recorded = [e for e in events if isinstance(e, Memory.Recorded)
                        and e.run_hash == rid]
            if n < BUDGET:
                assert (len(dead), len(resolved), len(recorded)) == (0, 1, 1)
            else:
                assert (len(dead), len(resolved), len(recorded)) == (1, 0, 0)
                assert dead[0].attempt == BUDGET
        # reopening folds the same states, and the root audits clean
        with MemoryStore.open(root, clock=clock, background=False) as store:
            assert store.inspect() == report
            assert store.drain() == 0  # dead stays dead; resolved is never processed again
        assert MemoryRoot.open(root).health().status == "clean"
