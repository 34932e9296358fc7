"""The background worker and the operator transitions (SPEC B6-B9, B19-B24, B32, C1-C4, C16).

Background tests synchronise on observable state: ``wait_for`` polls ``store.inspect()``, the
snapshot file or a processor's flags every 5 ms against a real-time deadline. A fake clock
drives the backoff schedule: tests move it and call ``store.background.kick()``. Deterministic
tests use ``background=False`` and ``store.drain()``, which runs the worker's own attempt code.

Only one test pays the 10 s shutdown budget (B22); every other close is bounded by
``shutdown_timeout`` or ``close(timeout=...)``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import apsw
import pytest

import memory_es.store.attempts
from helpers_lock import LockHolder, hold_writer_lock
from memory_es.capture.scripted import ScriptedChat
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.errors import MemoryEsError
from memory_es.events import Intake, Memory, Root
from memory_es.history import iter_events, open_reader
from memory_es.ids import intake_uuid
from memory_es.intake import CATEGORIES, CompletedTurn, IntakeRecord
from memory_es.observe import ObserveProcessor
from memory_es.root import MemoryRoot
from memory_es.step import StepContext, StepFailure
from memory_es.store import MemoryStore
from memory_es.worker import (
    HEARTBEAT_SECONDS,
    RUNTIME_DIR,
    SNAPSHOT_FILE,
    WORKER_NICENESS,
    read_snapshot,
)

T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
FAST = 2.0  # shutdown_timeout for stores whose close should not wait long
BUDGET = 16  # B7
BUJO_CAPTURE = {
    "mode": "bujo",
    "writeMode": "capture",
    "embeddings": {"dim": 384},
    "llm": {"provider": "ollama", "model": "m"},
}
T = TypeVar("T")


class Clock:
    """A settable, tz-aware UTC clock."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def wait_for(predicate: Callable[[], T], what: str, timeout: float = 5.0) -> T:
    """Poll ``predicate`` every 5 ms until it returns something truthy (real-time deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


def rh(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()


def turn(run_id: str, answer: str, **kw: Any) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer, **kw)


def delay(k: int) -> timedelta:
    """B7, independently of the code: min(60 s x 2^(k-1), 6 h)."""
    return timedelta(seconds=min(60 * 2 ** (k - 1), 6 * 3600))


def record(store: MemoryStore, intake_id: str) -> IntakeRecord:
    (rec,) = store.inspect(intake_id).records
    return rec


def journal_events(root: Path) -> list[Any]:
    """Every event of the journal but the root's recorded configuration (the chain verifies on
    open), read-only and lock-free."""
    with open_reader(root) as opened:
        return [event for _position, event in iter_events(opened)
                if not isinstance(event, Root.Configured)]


def of(events: list[Any], cls: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def payload_ids(root: Path) -> set[str]:
    conn = apsw.Connection(str(root / "journal.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {row[0] for row in conn.execute("SELECT intake_id FROM payloads")}
    finally:
        conn.close()


# -- processors ------------------------------------------------------------------------------


class AlwaysFail(ObserveProcessor):
    """Fails every attempt, cycling through the fixed categories; ``succeed`` flips it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.succeed = False

    def process(self, admitted: Intake.Admitted, payload: bytes | None,
                ctx: StepContext) -> list[Any]:
        self.calls.append(admitted.run_hash)
        if self.succeed:
            return super().process(admitted, payload, ctx)
        raise StepFailure(CATEGORIES[(len(self.calls) - 1) % len(CATEGORIES)])


class Blocking(ObserveProcessor):
    """Blocks in the step until ``release`` is set; ignores cancellation unless cooperative."""

    def __init__(self, *, cooperative: bool = False) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.cooperative = cooperative
        self.contexts: list[StepContext] = []

    def process(self, admitted: Intake.Admitted, payload: bytes | None,
                ctx: StepContext) -> list[Any]:
        self.contexts.append(ctx)
        self.entered.set()
        try:
            if self.cooperative:
                ctx.cancel.wait(60)  # returns as soon as shutdown cancels the attempt
            else:
                self.release.wait(60)  # ignores ctx.cancel: a provider that hangs
            # claims success either way: a cancelled attempt's result must be discarded
            return super().process(admitted, payload, ctx)
        finally:
            self.finished.set()


class Capture:
    """A stand-in capture step (needs_model): resolves ``captured``; fails ids in ``fail_once``
    on their first attempt."""

    needs_model = True

    def __init__(self, fail_once: set[str] | None = None) -> None:
        self.fail_once = set(fail_once or ())

    def process(self, admitted: Intake.Admitted, payload: bytes | None,
                ctx: StepContext) -> list[Any]:
        assert payload is not None  # the capture text is there while the intake is pending
        if admitted.run_hash in self.fail_once:
            self.fail_once.discard(admitted.run_hash)
            raise StepFailure("model_timeout")
        return [Intake.resolved(run_hash=admitted.run_hash, version=ctx.revision, at=ctx.at,
                                outcome="captured")]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def clock() -> Clock:
    return Clock()


# --------------------------------------------------------------------------------------------
# B6: projection runs after the reply, in the background


def test_b6_background_worker_projects_an_admitted_turn_without_drain(root: Path) -> None:
    """B6/D2: with the default processor the worker (kicked by admission, attempt 1) writes the
    observation to daily/ and the index; no drain call. The root audits clean after close.

    The worker first goes idle (its start-up snapshot is out, it sleeps for a heartbeat);
    the resolution must then come well before the next heartbeat: the admission woke it."""
    with MemoryStore.open(root, shutdown_timeout=FAST) as store:
        wait_for(lambda: read_snapshot(root), "the worker's start-up snapshot")
        result = store.persist_completed_turn(turn("bg-1", "Kestrel-5521 booked the ferry"))
        assert result.status == "admitted"
        intake_id = rh("bg-1")
        wait_for(lambda: record(store, intake_id).state == "resolved", "resolution",
                 timeout=HEARTBEAT_SECONDS / 2)
        rec = record(store, intake_id)
        assert (rec.outcome, rec.attempts) == ("projected", 1)

        def daily_has_text() -> bool:
            return any("Kestrel-5521 booked the ferry" in p.read_text("utf-8")
                       for p in (root / "daily").glob("*.md"))

        wait_for(lambda: (root / "daily").is_dir() and daily_has_text(), "the daily file")
        hits = wait_for(lambda: store.lexical_search("Kestrel"), "the index")
        assert [h.text for h in hits] == ["Kestrel-5521 booked the ferry"]
    report = MemoryRoot.open(root).health()
    assert (report.status, report.findings) == ("clean", ())


# --------------------------------------------------------------------------------------------
# B7, B8, B32, C1: the backoff schedule through the worker


def test_b7_b8_worker_follows_the_backoff_schedule_to_dead_letter(
    root: Path, clock: Clock
) -> None:
    """B7/B8: each failure leaves the intake pending until next_due_at = failure instant +
    min(60 s x 2^(k-1), 6 h); the worker retries when the clock reaches it; the 16th failure
    dead-letters. C1/B32: inspect shows attempts, failures, next_due_at, the bounded category
    and counts, and nothing of the turn's content."""
    failing = AlwaysFail()
    answer = "Pangolin-3307 secret plans for Tuesday"
    with MemoryStore.open(root, clock=clock, processor=failing,
                          shutdown_timeout=FAST) as store:
        intake_id = rh("sched")
        assert store.persist_completed_turn(turn("sched", answer)).status == "admitted"
        for k in range(1, BUDGET + 1):
            wait_for(lambda k=k: record(store, intake_id).attempts == k, f"attempt {k}")
            rec = record(store, intake_id)
            assert rec.failures == k
            assert rec.category == CATEGORIES[(k - 1) % len(CATEGORIES)]
            counts = store.inspect().counts
            assert counts.transitions == 1 + k
            if k < BUDGET:
                assert rec.state == "pending"
                assert rec.due is False
                assert rec.attempts_left == BUDGET - k
                assert rec.next_due_at == clock.now + delay(k)
                assert (counts.pending, counts.delayed, counts.due) == (1, 1, 0)
                assert (counts.dead, counts.active) == (0, 1)
                clock.now += delay(k)
                store.background.kick()
            else:
                assert rec.state == "dead"
                assert (rec.next_due_at, rec.due, rec.attempts_left) == (None, False, 0)
                assert (counts.pending, counts.dead, counts.active) == (0, 1, 1)
        report = store.inspect()
        assert all(r.category in CATEGORIES for r in report.records)
        text = json.dumps(report.to_json())
        assert "Pangolin" not in text and "Tuesday" not in text

        # dead stays dead: a later pass (barrier: a second admission's first attempt) skips it
        clock.now += timedelta(days=30)
        store.background.kick()
        assert store.persist_completed_turn(turn("barrier", "other")).status == "admitted"
        wait_for(lambda: record(store, rh("barrier")).attempts == 1, "the barrier attempt")
        assert failing.calls.count(intake_id) == BUDGET
        assert record(store, intake_id).state == "dead"

    events = [e for e in journal_events(root) if e.originator_id == intake_uuid(intake_id)]
    failed = of(events, Intake.AttemptFailed)
    assert [e.attempt for e in failed] == list(range(1, BUDGET))
    assert [e.next_due_at - e.timestamp for e in failed] == [delay(k) for k in range(1, BUDGET)]
    (dead,) = of(events, Intake.DeadLettered)
    assert (dead.attempt, dead.category) == (BUDGET, CATEGORIES[(BUDGET - 1) % len(CATEGORIES)])


def test_b32_step_failure_categories_are_a_fixed_set() -> None:
    """C1/B32: a failure category is one of a bounded, content-free set; free text is refused."""
    for category in CATEGORIES:
        assert StepFailure(category).category == category
    with pytest.raises(ValueError):
        StepFailure("the model said: Pangolin-3307")


def test_b8_unexpected_exception_counts_as_internal(root: Path, clock: Clock) -> None:
    """B8/B32: a step that raises anything but StepFailure is a failed attempt of category
    ``internal``: pending on the schedule, the worker survives, the message is not stored."""

    class Crashing(ObserveProcessor):
        calls = 0

        def process(self, admitted: Intake.Admitted, payload: bytes | None,
                    ctx: StepContext) -> list[Any]:
            Crashing.calls += 1
            raise RuntimeError("Quokka-9931 leaked the capture text")

    with MemoryStore.open(root, clock=clock, processor=Crashing(),
                          shutdown_timeout=FAST) as store:
        intake_id = rh("crash")
        assert store.persist_completed_turn(turn("crash", "x")).status == "admitted"
        wait_for(lambda: record(store, intake_id).attempts == 1, "the first attempt")
        rec = record(store, intake_id)
        assert (rec.state, rec.category) == ("pending", "internal")
        assert rec.next_due_at == clock.now + delay(1)
        clock.now += delay(1)
        store.background.kick()  # the worker thread survived the exception
        wait_for(lambda: record(store, intake_id).attempts == 2, "the second attempt")
        assert record(store, intake_id).category == "internal"
        assert "Quokka" not in json.dumps(store.inspect().to_json())
    out = io.BytesIO()
    MemoryRoot.open(root).export(out)
    assert b"Quokka" not in out.getvalue()


# --------------------------------------------------------------------------------------------
# B1/B6: admission never waits for the worker


def test_b6_admission_never_waits_for_a_busy_worker(root: Path, clock: Clock) -> None:
    """B1/B6: while the worker is blocked inside a step, another admission still returns
    ``admitted`` (the step is still blocked when it returns)."""
    blocking = Blocking()
    store = MemoryStore.open(root, clock=clock, processor=blocking, shutdown_timeout=FAST)
    try:
        assert store.persist_completed_turn(turn("first", "one")).status == "admitted"
        assert blocking.entered.wait(5), "the worker never started attempt 1"
        results: list[str] = []
        admit = threading.Thread(
            target=lambda: results.append(
                store.persist_completed_turn(turn("second", "two")).status),
            daemon=True)
        admit.start()
        admit.join(5)
        assert not admit.is_alive(), "admission waited for the worker"
        assert results == ["admitted"]
        assert not blocking.finished.is_set()  # the step was blocked the whole time
        assert record(store, rh("first")).state == "pending"
        blocking.release.set()
        wait_for(lambda: store.inspect().counts.resolved == 2, "both resolutions")
    finally:
        blocking.release.set()
        store.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")
def test_b6_the_worker_threads_run_nicer_than_the_host(root: Path, clock: Clock) -> None:
    """B1/B6: the worker's threads (the loop and the snapshot publisher) are
    WORKER_NICENESS nicer than the host's thread, so a host thread whose fsync returns gets a
    core before the worker's next time slice; the host's own thread is left as it was."""
    host = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    blocking = Blocking()
    store = MemoryStore.open(root, clock=clock, processor=blocking, shutdown_timeout=FAST)
    try:
        assert store.persist_completed_turn(turn("first", "one")).status == "admitted"
        assert blocking.entered.wait(5), "the worker never started attempt 1"
        threads = {t.name: t for t in threading.enumerate()}
        expected = min(19, host + WORKER_NICENESS)
        for name in ("memory-es-worker", "memory-es-snapshot"):
            tid = threads[name].native_id
            assert tid is not None
            assert os.getpriority(os.PRIO_PROCESS, tid) == expected, name
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == host
        blocking.release.set()
        wait_for(lambda: store.inspect().counts.resolved == 1, "the resolution")
    finally:
        blocking.release.set()
        store.close()


# --------------------------------------------------------------------------------------------
# C3: retry


def fail_to_dead(store: MemoryStore, clock: Clock, intake_id: str, failures: int) -> None:
    """Drain ``failures`` failed attempts in the foreground, moving the clock to each due time."""
    for _ in range(failures):
        assert store.drain() == 1
        rec = record(store, intake_id)
        if rec.next_due_at is not None:
            clock.now = rec.next_due_at


def test_c3_retry_gives_a_dead_intake_a_fresh_budget(root: Path, clock: Clock) -> None:
    """C3/B7: retry turns dead into pending, due now, with 16 fresh attempts: it takes another
    16 failures to dead-letter it again."""
    failing = AlwaysFail()
    with MemoryStore.open(root, clock=clock, background=False, processor=failing) as store:
        intake_id = rh("dead")
        store.persist_completed_turn(turn("dead", "d"))
        fail_to_dead(store, clock, intake_id, BUDGET)
        assert record(store, intake_id).state == "dead"
        assert store.drain() == 0
        clock.now += timedelta(minutes=5)
        assert store.retry(intake_id) == [intake_id]
        rec = record(store, intake_id)
        assert (rec.state, rec.due, rec.failures, rec.attempts_left) == (
            "pending", True, 0, BUDGET)
        assert rec.attempts == BUDGET
        assert rec.next_due_at == clock.now
        fail_to_dead(store, clock, intake_id, BUDGET - 1)
        rec = record(store, intake_id)
        assert (rec.state, rec.failures) == ("pending", BUDGET - 1)
        fail_to_dead(store, clock, intake_id, 1)
        rec = record(store, intake_id)
        assert (rec.state, rec.attempts) == ("dead", 2 * BUDGET)
        # and a retried dead intake that then succeeds resolves once
        assert store.retry() == [intake_id]
        failing.succeed = True
        assert store.drain() == 1
        assert record(store, intake_id).outcome == "projected"
    events = journal_events(root)
    assert len(of(events, Intake.RetryRequested)) == 2
    assert len(of(events, Intake.DeadLettered)) == 2
    assert len(of(events, Memory.Recorded)) == 1


def test_c3_retry_makes_a_delayed_intake_due_now(root: Path, clock: Clock) -> None:
    """C3: a delayed intake (pending, not yet due) becomes due now with a fresh budget."""
    failing = AlwaysFail()
    with MemoryStore.open(root, clock=clock, background=False, processor=failing) as store:
        intake_id = rh("delayed")
        store.persist_completed_turn(turn("delayed", "d"))
        assert store.drain() == 1
        clock.now += timedelta(seconds=20)  # due after 60 s: still delayed
        assert record(store, intake_id).due is False
        assert store.retry() == [intake_id]
        rec = record(store, intake_id)
        assert (rec.state, rec.due, rec.failures) == ("pending", True, 0)
        assert rec.next_due_at == clock.now
        failing.succeed = True
        assert store.drain() == 1
        assert record(store, intake_id).state == "resolved"


def test_c3_retry_ignores_resolved_and_due_intakes(root: Path, clock: Clock) -> None:
    """C3: only dead or delayed work is retried; resolved and already-due intakes are left
    alone (no event); an unknown id is not_found; nothing to do is an empty list."""

    class FailOne(ObserveProcessor):
        def process(self, admitted: Intake.Admitted, payload: bytes | None,
                    ctx: StepContext) -> list[Any]:
            if admitted.run_hash == rh("delayed"):
                raise StepFailure("model_unavailable")
            return super().process(admitted, payload, ctx)

    with MemoryStore.open(root, clock=clock, background=False, processor=FailOne()) as store:
        assert store.retry() == []  # empty store
        store.persist_completed_turn(turn("done", "resolved one"))
        store.persist_completed_turn(turn("delayed", "delayed one"))
        assert store.drain() == 2
        assert store.retry(rh("done")) == []
        store.persist_completed_turn(turn("due", "due one"))  # pending and due now
        before = store.inspect().counts.transitions
        assert store.retry(rh("due")) == []
        assert store.inspect().counts.transitions == before
        assert store.retry() == [rh("delayed")]
        assert store.inspect().counts.transitions == before + 1
        assert store.retry() == []  # now due: nothing left to retry
        assert store.inspect().counts.transitions == before + 1
        assert record(store, rh("done")).state == "resolved"
        with pytest.raises(MemoryEsError) as err:
            store.retry("f" * 64)
        assert err.value.code == "not_found"
    (retried,) = of(journal_events(root), Intake.RetryRequested)
    assert retried.originator_id == intake_uuid(rh("delayed"))


# --------------------------------------------------------------------------------------------
# C4: resolve


def test_c4_resolve_records_operator_resolved_and_keeps_duplicate_protection(
    root: Path, clock: Clock
) -> None:
    """C4: operator_resolved with the reason slug, no memory claimed; the run id stays admitted
    forever (B10): same bytes -> duplicate, other bytes -> run_id_conflict, also after reopen."""
    with MemoryStore.open(root, clock=clock, background=False, processor=AlwaysFail()) as store:
        intake_id = rh("lost")
        store.persist_completed_turn(turn("lost", "the lost turn"))
        assert store.drain() == 1
        store.resolve(intake_id, "provider-retired")
        rec = record(store, intake_id)
        assert (rec.state, rec.outcome, rec.reason_slug) == (
            "resolved", "operator_resolved", "provider-retired")
        assert rec.attempts == 1  # the operator's resolution is not an attempt
        counts = store.inspect().counts
        assert (counts.active, counts.resolved, counts.pending) == (0, 1, 0)
        assert store.persist_completed_turn(turn("lost", "the lost turn")).status == "duplicate"
        other = store.persist_completed_turn(turn("lost", "different bytes"))
        assert (other.status, other.code) == ("rejected", "run_id_conflict")
        clock.now += timedelta(days=2)
        assert store.drain() == 0
    with MemoryStore.open(root, clock=clock, background=False) as store:
        assert store.persist_completed_turn(turn("lost", "the lost turn")).status == "duplicate"
        assert store.persist_completed_turn(turn("lost", "x")).code == "run_id_conflict"
        assert store.drain() == 0
    events = journal_events(root)
    (resolved,) = of(events, Intake.Resolved)
    assert (resolved.outcome, resolved.reason_slug, resolved.memory_id) == (
        "operator_resolved", "provider-retired", None)
    assert of(events, Memory.Recorded) == []
    assert len(of(events, Intake.Admitted)) == 1


@pytest.mark.parametrize("slug", ["", "Provider", "-lead", "has space", "a" * 65, "ünï", "a_b"])
def test_c4_resolve_refuses_bad_slugs(root: Path, clock: Clock, slug: str) -> None:
    """C4: the reason is a slug (1-64 of a-z, 0-9, '-', starting alphanumeric)."""
    with MemoryStore.open(root, clock=clock, background=False, processor=AlwaysFail()) as store:
        store.persist_completed_turn(turn("s", "x"))
        with pytest.raises(MemoryEsError) as err:
            store.resolve(rh("s"), slug)
        assert err.value.code == "invalid_slug"
        assert record(store, rh("s")).state == "pending"
        assert store.inspect().counts.transitions == 1


def test_c4_resolve_refuses_unknown_and_already_resolved(root: Path, clock: Clock) -> None:
    """C4: an unknown id is not_found; a resolved intake (by the worker or the operator) is
    already_resolved; refusals commit nothing. A 64-char slug is the longest accepted."""
    with MemoryStore.open(root, clock=clock, background=False) as store:
        with pytest.raises(MemoryEsError) as err:
            store.resolve("0" * 64, "gone")
        assert err.value.code == "not_found"
        store.persist_completed_turn(turn("a", "projected one"))
        store.persist_completed_turn(turn("b", "operator one"))
        store.resolve(rh("b"), "b" * 64)
        assert store.drain() == 1
        transitions = store.inspect().counts.transitions
        for intake_id in (rh("a"), rh("b")):
            with pytest.raises(MemoryEsError) as err:
                store.resolve(intake_id, "again")
            assert err.value.code == "already_resolved"
        assert store.inspect().counts.transitions == transitions
        assert record(store, rh("a")).outcome == "projected"
        assert record(store, rh("b")).reason_slug == "b" * 64


def test_c4_resolve_a_bujo_capture_intake_whose_model_is_down(
    root: Path, clock: Clock
) -> None:
    """C4/B5: a BuJo capture intake whose model is down stays pending on the backoff; the
    operator can accept its loss (no plan was retained). Health stays clean."""
    config = parse_config(BUJO_CAPTURE)
    model = ScriptedChat([{"stage": "extract", "turn": rh("cap"), "error": "model_unavailable"}])
    with MemoryStore.open(root, config, clock=clock, background=False,
                          chat_model=model) as store:
        intake_id = rh("cap")
        result = store.persist_completed_turn(
            turn("cap", "summary", capture_text="Wombat-1207 capture text"))
        assert result.status == "admitted"
        assert store.drain() == 1
        rec = record(store, intake_id)
        assert (rec.state, rec.due, rec.category, rec.retained) == (
            "pending", False, "model_unavailable", None)
        store.resolve(intake_id, "model-gone")
        rec = record(store, intake_id)
        assert (rec.state, rec.outcome) == ("resolved", "operator_resolved")
        assert store.persist_completed_turn(
            turn("cap", "summary", capture_text="Wombat-1207 capture text")
        ).status == "duplicate"
    assert payload_ids(root) == {intake_id}  # within the retained set (B9)
    assert MemoryRoot.open(root).health().status == "clean"


# --------------------------------------------------------------------------------------------
# B22: shutdown


def test_b22_close_drains_due_work(root: Path) -> None:
    """B22: close lets due work drain before it stops the worker."""
    with MemoryStore.open(root, shutdown_timeout=5.0) as store:
        for i in range(5):
            assert store.persist_completed_turn(turn(f"d{i}", f"drained {i}")).status == \
                "admitted"
    report = MemoryRoot.open(root).inspect()
    assert report.counts.resolved == 5
    assert report.counts.pending == 0


def test_b22_a_hanging_step_cannot_block_close(root: Path) -> None:
    """B22: a step that ignores cancellation hangs; close() with the default 10 s budget
    returns after it (not when the step does), cancels the attempt (ctx.cancel set), commits
    nothing (pending, no AttemptFailed/Resolved, even once the abandoned step returns), and the
    intake resolves after a restart (B6)."""
    hanging = Blocking()
    store = MemoryStore.open(root, processor=hanging)
    try:
        assert store.persist_completed_turn(turn("hang", "Ocelot-8814 hangs")).status == \
            "admitted"
        assert hanging.entered.wait(5), "the worker never started the attempt"
        started = time.monotonic()
        store.close()
        elapsed = time.monotonic() - started
        # the 10 s budget plus slack for a loaded machine (10.51 s once in CI); the step is
        # still hanging when close returns (below), which is what shows it did not block
        assert elapsed <= 15.0, f"close took {elapsed:.2f} s"
        assert hanging.contexts[0].cancel.is_set()
        assert not hanging.finished.is_set()
    finally:
        hanging.release.set()
    assert hanging.finished.wait(5)
    (rec,) = MemoryRoot.open(root).inspect().records
    assert (rec.state, rec.attempts, rec.due) == ("pending", 0, True)
    assert [type(e) for e in journal_events(root)] == [Intake.Admitted]
    with MemoryStore.open(root, shutdown_timeout=FAST) as store:  # restart resumes it
        wait_for(lambda: record(store, rh("hang")).state == "resolved", "the resumed step")
    assert MemoryRoot.open(root).health().status == "clean"


def test_b22_cooperative_cancellation(root: Path) -> None:
    """B22: close(timeout) cancels a step that honours ctx.cancel; its result is discarded
    and the intake stays pending until a restart resolves it."""
    cooperative = Blocking(cooperative=True)
    store = MemoryStore.open(root, processor=cooperative)
    assert store.persist_completed_turn(turn("coop", "cooperates")).status == "admitted"
    assert cooperative.entered.wait(5), "the worker never started the attempt"
    closer = threading.Thread(target=store.close, kwargs={"timeout": 0.5}, daemon=True)
    closer.start()
    closer.join(5)
    assert not closer.is_alive(), "close did not return"
    assert cooperative.finished.is_set()
    assert cooperative.contexts[0].cancel.is_set()
    (rec,) = MemoryRoot.open(root).inspect().records
    assert (rec.state, rec.attempts) == ("pending", 0)
    assert [type(e) for e in journal_events(root)] == [Intake.Admitted]
    with MemoryStore.open(root, background=False) as store:
        assert store.drain() == 1
        assert record(store, rh("coop")).outcome == "projected"


# --------------------------------------------------------------------------------------------
# B19-B21: the runtime snapshot


def snapshot_path(root: Path) -> Path:
    return root / RUNTIME_DIR / SNAPSHOT_FILE


def test_b19_b20_snapshot_after_admission(root: Path, clock: Clock) -> None:
    """B19/B20: after an admission the worker republishes .runtime/snapshot.json (0600):
    this pid, a heartbeat, content-free counts that match inspect, shutdown state running.
    After close it no longer claims to be running."""
    store = MemoryStore.open(root, clock=clock, shutdown_timeout=FAST)
    try:
        assert store.persist_completed_turn(
            turn("snap", "Axolotl-4470 remembers the gate code")).status == "admitted"
        snap = wait_for(lambda: (s := read_snapshot(root)) and s["counts"]["resolved"] == 1
                        and s, "a snapshot with the resolution")
        assert stat.S_IMODE(os.stat(snapshot_path(root)).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(root / RUNTIME_DIR).st_mode) == 0o700
        assert snap["pid"] == os.getpid()
        assert snap["shutdown"] == "running"
        assert datetime.fromisoformat(snap["heartbeat"]) == clock.now
        counts = store.inspect().counts
        assert snap["counts"] == counts.to_json()
        assert counts.total == counts.resolved == 1
        assert counts.transitions == 2
        assert {"pending", "dead", "resolved", "due", "transitions"} <= set(snap["counts"])
        raw = snapshot_path(root).read_bytes()
        assert b"Axolotl" not in raw and b"gate code" not in raw
    finally:
        store.close()
    after = read_snapshot(root)
    assert after is not None
    assert after["shutdown"] != "running"


def test_b20_snapshot_shows_an_admission_while_a_step_runs(root: Path, clock: Clock) -> None:
    """B20: the snapshot is republished immediately after admission, so newly accepted work
    shows even while the worker is busy inside a long step."""
    blocking = Blocking()
    store = MemoryStore.open(root, clock=clock, processor=blocking, shutdown_timeout=FAST)
    try:
        assert store.persist_completed_turn(turn("busy", "one")).status == "admitted"
        assert blocking.entered.wait(5)
        assert store.persist_completed_turn(turn("queued", "two")).status == "admitted"
        wait_for(lambda: (s := read_snapshot(root)) is not None
                 and s["counts"]["total"] == 2, "a snapshot counting both admissions")
    finally:
        blocking.release.set()
        store.close()


def test_b21_a_failing_snapshot_publish_never_blocks_the_transition(
    root: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """B21: with .runtime unusable (a file, not a directory) the publish fails with a logged
    warning, and the intake still resolves durably."""
    MemoryStore.open(root, background=False).close()
    shutil.rmtree(root / RUNTIME_DIR)  # the projection lock lives there since issue 15
    (root / RUNTIME_DIR).write_text("not a directory")
    os.chmod(root / RUNTIME_DIR, 0o600)
    with caplog.at_level(logging.WARNING, logger="memory_es"), MemoryStore.open(
        root, clock=clock, shutdown_timeout=FAST
    ) as store:
        assert store.persist_completed_turn(turn("nosnap", "still saved")).status == "admitted"
        wait_for(lambda: record(store, rh("nosnap")).state == "resolved", "resolution")
    assert any("snapshot publish failed" in r.getMessage() for r in caplog.records)
    events = journal_events(root)
    (resolved,) = of(events, Intake.Resolved)
    assert resolved.outcome == "projected"
    assert len(of(events, Memory.Recorded)) == 1
    assert read_snapshot(root) is None
    assert (root / RUNTIME_DIR).read_text() == "not a directory"


# --------------------------------------------------------------------------------------------
# B9, B10: payload retention


def test_b9_b10_resolved_payloads_beyond_the_retained_set_are_pruned(
    root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B9: only the payloads of the newest RESOLVED_PAYLOADS_KEPT resolutions stay (newest by
    resolution, not admission); B10: the Admitted events stay, so a pruned run id is still a
    duplicate (same bytes) or a conflict (other bytes); health stays clean."""
    monkeypatch.setattr(memory_es.store.attempts, "RESOLVED_PAYLOADS_KEPT", 3)
    config = parse_config(BUJO_CAPTURE)
    ids = [rh(f"cap-{i}") for i in range(5)]
    capture = Capture(fail_once={ids[0], ids[1]})  # resolved last: 2, 3, 4, then 0, 1
    turns = [turn(f"cap-{i}", f"summary {i}", capture_text=f"capture text {i}")
             for i in range(5)]
    with MemoryStore.open(root, config, clock=clock, background=False,
                          processor=capture) as store:
        for t in turns:
            assert store.persist_completed_turn(t).status == "admitted"
        assert payload_ids(root) == set(ids)
        assert store.drain() == 5
        assert payload_ids(root) == set(ids)  # 3 resolved: all within the retained set
        clock.now += timedelta(minutes=1)
        assert store.drain() == 2
        assert store.inspect().counts.resolved == 5
        assert payload_ids(root) == {ids[4], ids[0], ids[1]}
        # an operator resolution is a resolution too: it pushes the oldest kept one out
        late = turn("cap-5", "summary 5", capture_text="capture text 5")
        assert store.persist_completed_turn(late).status == "admitted"
        store.resolve(rh("cap-5"), "accepted-loss")
        assert payload_ids(root) == {ids[0], ids[1], rh("cap-5")}
        assert store.persist_completed_turn(turns[2]).status == "duplicate"
        conflict = store.persist_completed_turn(
            turn("cap-2", "summary 2", capture_text="other text"))
        assert (conflict.status, conflict.code) == ("rejected", "run_id_conflict")
    with MemoryStore.open(root, config, clock=clock, background=False) as store:
        assert store.persist_completed_turn(turns[3]).status == "duplicate"
        assert store.persist_completed_turn(turns[4]).status == "duplicate"
        assert payload_ids(root) == {ids[0], ids[1], rh("cap-5")}
    events = journal_events(root)
    assert [e.run_hash for e in of(events, Intake.Admitted)] == [*ids, rh("cap-5")]
    assert sorted(e.outcome for e in of(events, Intake.Resolved)) == [
        "captured"] * 5 + ["operator_resolved"]
    assert MemoryRoot.open(root).health().status == "clean"


# --------------------------------------------------------------------------------------------
# C3, C4, C16: the CLI behind the liveness fence

@pytest.fixture
def holder(root: Path) -> Iterator[LockHolder]:
    """An agent process holding the root's writer lock, its one intake still pending."""
    with hold_writer_lock(root, [("held", "held answer")]) as h:
        yield h


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_c16_retry_and_resolve_refuse_while_the_agent_runs(
    capsys: pytest.CaptureFixture[str], root: Path, holder: LockHolder
) -> None:
    """C16/C3/C4: retry and resolve exit 3 (could not run: lock held) with one line naming
    the holder pid while an agent holds the root; once it stops they work (and resolve is then
    refused as already done: exit 1)."""
    intake_id = rh("held")
    for argv in (("retry",), ("retry", intake_id), ("resolve", intake_id, "lost-it")):
        code, out, err = cli(capsys, "--root", str(root), *argv)
        assert code == 3, (argv, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("memory-es: error:")
        assert f"pid {holder.pid}" in lines[0]
        assert out == ""
    assert holder.release() == (0, "closed\n"), holder.stderr

    code, out, err = cli(capsys, "--root", str(root), "retry")
    assert (code, err) == (0, "")
    assert out == "nothing to retry: no dead or delayed intake matched\n"
    code, out, err = cli(capsys, "--root", str(root), "resolve", intake_id, "lost-it")
    assert (code, err) == (0, "")
    assert out.startswith(f"resolved {intake_id}: operator_resolved (lost-it)")
    code, _out, err = cli(capsys, "--root", str(root), "resolve", intake_id, "lost-it")
    assert code == 1
    assert "already resolved" in err


def test_c3_cli_retry_resolve_drain_on_a_stopped_root(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    """C3/C4: CLI outputs and exit codes: retry no-op (exit 0), retry of a delayed intake,
    drain's summary, malformed ids and bad slugs (exit 2, one line)."""
    past = Clock(datetime(2001, 1, 1, tzinfo=UTC))
    with MemoryStore.open(root, clock=past, background=False, processor=AlwaysFail()) as store:
        store.persist_completed_turn(turn("late", "later"))
        assert store.drain() == 1
    # the CLI's real clock is far past 2001: the failed intake is due again, not delayed
    code, out, _ = cli(capsys, "--root", str(root), "retry")
    assert (code, out) == (0, "nothing to retry: no dead or delayed intake matched\n")
    code, out, _ = cli(capsys, "--root", str(root), "drain")
    assert code == 0
    assert out == "ran 1 attempt; pending=0 (due=0, delayed=0) dead=0 resolved=1\n"
    code, out, _ = cli(capsys, "--root", str(root), "drain")
    assert (code, out) == (0, "ran 0 attempts; pending=0 (due=0, delayed=0) dead=0 resolved=1\n")

    with MemoryStore.open(root, background=False, processor=AlwaysFail()) as store:
        store.persist_completed_turn(turn("delayed", "later"))
        assert store.drain() == 1  # real clock: due again in a minute
    code, out, _ = cli(capsys, "--root", str(root), "retry", rh("delayed"))
    assert (code, out) == (
        0, f"retry {rh('delayed')}: fresh budget of 16 attempts, due now\n")
    assert MemoryRoot.open(root).inspect(rh("delayed")).records[0].due is True

    for argv in (("retry", "xyz"), ("retry", "A" * 64), ("resolve", "1234", "slug"),
                 ("resolve", rh("delayed"), "Bad Slug"), ("retry", "f" * 64)):
        code, out, err = cli(capsys, "--root", str(root), *argv)
        assert code == 2, argv
        assert out == ""
        assert len(err.strip().splitlines()) == 1
        assert err.startswith("memory-es: error:")
    assert MemoryRoot.open(root).inspect(rh("delayed")).records[0].state == "pending"
