"""MemoryStore: the embeddable facade a host opens once and hands every completed turn.

Admission is the only thing on the host's answer path: validate, then append one Intake
event in a transaction that is fsynced before the call returns (B1). Concurrent callers share
transactions (group commit): the first waiting caller commits everyone queued so far, and
each caller returns once the commit holding its event is durable.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from eventsourcing.persistence import StoredEvent

from memory_es.capture.models import ChatModel
from memory_es.capture.pipeline import capture_processor
from memory_es.capture.reads import IndexReads
from memory_es.config import ConfigError, MemoryConfig
from memory_es.embeddings import Embedder, EmbeddingError, make_embedder
from memory_es.errors import MemoryEsError
from memory_es.events import Intake, Memory, intake_event, intake_uuid, memory_uuid
from memory_es.fsutil import crash_point
from memory_es.intake import (
    MAX_ACTIVE,
    MAX_ATTEMPTS,
    RETAINED_STAGE,
    AdmissionResult,
    CompletedTurn,
    IntakeState,
    IntakeView,
    PreparedIntake,
    failure_event,
    prepare_turn,
    record_json,
    utc_now,
)
from memory_es.journal import DEFAULT_LOCK_TIMEOUT, OpenedJournal, Payload, open_journal
from memory_es.observe import ObserveProcessor
from memory_es.reader import fold_intakes, iter_events
from memory_es.recall import (
    MemoryJournal,
    RecallResult,
    VectorCache,
    VectorMatrix,
    auto_block,
    calibration_for,
    configured_calibration,
    embed_texts,
    owner_text_gate,
    pending_texts,
    recall,
    store_vectors,
)
from memory_es.step import Processor, StepContext, StepFailure
from memory_es.worker import Worker, publish_snapshot
from projections.replay import Projector, RebuildReport, rebuild
from projections.sqlite_index import IndexProjection, fts_search

log = logging.getLogger("memory_es")
ATTEMPT_BATCH = 256  # attempts committed per journal transaction
RESOLVED_PAYLOADS_KEPT = 4096  # B9
DEFAULT_SHUTDOWN_TIMEOUT = 10.0  # B22
EMBED_RETRY_SECONDS = 30.0  # after a provider outage, the worker tries again this much later
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")

Clock = Callable[[], datetime]


def _batches(due: list[IntakeState]) -> Iterator[list[IntakeState]]:
    """Due records in admission order: runs of up to 256 model-free records; a capture alone."""
    batch: list[IntakeState] = []
    for record in due:
        if record.needs_model:
            if batch:
                yield batch
                batch = []
            yield [record]
        else:
            batch.append(record)
            if len(batch) == ATTEMPT_BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def resolve_root(root: str | Path | None, config: MemoryConfig) -> Path:
    """--root wins, then ``memory.path`` from config (default ``./.memory``)."""
    return Path(root) if root is not None else Path(config.path)


def require_writable(store: object, config: MemoryConfig) -> None:
    """B27/O8: a config that writes completed turns needs a store that can admit them.

    Hosts that plug in their own (possibly read-only) store call this at start-up.
    """
    if config.write_mode != "disabled" and not callable(
        getattr(store, "persist_completed_turn", None)
    ):
        raise ConfigError([
            f'memory.writeMode: "{config.write_mode}" requires a writable store '
            f"({type(store).__name__} has no persist_completed_turn)"
        ])


class _Request:
    """One caller's admission in the group-commit queue.

    The caller builds its event and stored form itself, so the serial commit path holds only
    the SQL and the fsync. ``wake`` is a lock created held and released exactly once: with a
    result, or to hand over leadership (a bare lock is the cheapest one-shot signal).
    """

    __slots__ = ("event", "payload", "prepared", "result", "stored", "wake")

    def __init__(self, prepared: PreparedIntake, event: Any, stored: StoredEvent) -> None:
        self.prepared = prepared
        self.event = event
        self.stored = stored
        self.payload = (
            Payload(prepared.run_hash, prepared.fields["payload_sha256"], prepared.payload)
            if prepared.payload is not None else None
        )
        self.result: AdmissionResult | None = None
        self.wake = threading.Lock()
        self.wake.acquire()


class MemoryStore:
    """A writable memory root, held exclusively for the store's lifetime (B23, C16).

    Open with :meth:`open`; use as a context manager or call :meth:`close`.
    """

    def __init__(
        self, opened: OpenedJournal, config: MemoryConfig, clock: Clock, *,
        background: bool, processor: Processor | None, shutdown_timeout: float,
        embedder: Embedder | None = None, chat_model: ChatModel | None = None,
        classifier: ChatModel | None = None,
    ) -> None:
        self._opened = opened
        self.config = config
        self.root = opened.recorder.path.parent
        self._clock = clock
        if processor is None:
            processor = (capture_processor(config, chat_model, classifier)
                         if config.is_capture else ObserveProcessor())
        self._processor: Processor = processor
        self._shutdown_timeout = shutdown_timeout
        self._work_lock = threading.Lock()  # one attempt at a time per root (B23)
        self._view = fold_intakes(opened, retain_resolved=False)
        self._cv = threading.Condition()
        self._queue: list[_Request] = []
        self._committing = False
        self._last_batch = 0
        self._closed = False
        self.commits = 0  # journal transactions written by admission (group commit shares them)
        self._projector: Projector | None = None
        try:
            self._catch_up()
        except MemoryEsError as e:  # admission must not depend on a healthy index
            log.warning("memory_degraded: projections unavailable (code=%s); run memory-es "
                        "rebuild", e.code, extra={"memory_event": "memory_degraded",
                                                  "code": e.code})
        self._prune_payloads()
        self._embedder = embedder
        self._vector_cache: VectorCache | None = None
        self._matrix: VectorMatrix | None = None
        self._matrix_rewrites = 0  # entries of the index's ``rewritten`` the matrix has seen
        self._embed_pause_until = 0.0  # after a provider outage, try again later (monotonic)
        self._chronology = MemoryJournal()  # snapshots and cursor key live per handle (I*)
        self._worker = Worker(self) if background else None

    @classmethod
    def open(
        cls,
        root: str | Path | None = None,
        config: MemoryConfig | None = None,
        *,
        clock: Clock = utc_now,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        background: bool = True,
        processor: Processor | None = None,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        embedder: Embedder | None = None,
        chat_model: ChatModel | None = None,
        classifier: ChatModel | None = None,
    ) -> MemoryStore:
        """Open (creating if absent) the root, take its writer lock and verify its journal.

        With ``background`` (the default) a worker thread projects admitted turns as they
        arrive and retries failures on the durable backoff schedule; without it, work runs
        only on :meth:`drain` (operator commands use that). ``processor`` is the attempt step
        (default: model-free projection). ``shutdown_timeout`` bounds :meth:`close` (B22).
        ``embedder`` overrides the provider ``memory.embeddings`` names (Journal and BuJo only:
        Lite never embeds, D2). ``chat_model`` and ``classifier`` override the chat models
        ``memory.llm`` and ``memory.capture.reconcileModel`` name (BuJo capture only, E31).
        """
        config = config if config is not None else MemoryConfig()
        opened = open_journal(resolve_root(root, config), writable=True,
                              lock_timeout=lock_timeout)
        try:
            return cls(opened, config, clock, background=background, processor=processor,
                       shutdown_timeout=shutdown_timeout, embedder=embedder,
                       chat_model=chat_model, classifier=classifier)
        except BaseException:
            opened.close()
            raise

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout: float | None = None) -> None:
        """Drain due work for up to ``timeout`` (default 10 s), cancel the active attempt,
        then release the journal and the writer lock (B22). Unfinished work stays pending."""
        worker, self._worker = self._worker, None  # a second close() finds nothing to stop
        if worker is not None:
            worker.stop(self._shutdown_timeout if timeout is None else timeout)
        with self._cv:
            if self._closed:
                return
            self._closed = True
            while self._committing:
                self._cv.wait()
        try:
            if self._projector is not None:
                self._projector.close()
            if self._vector_cache is not None:
                self._vector_cache.close()
        finally:
            self._opened.close()

    # -- admission ----------------------------------------------------------------------------

    def persist_completed_turn(self, turn: CompletedTurn) -> AdmissionResult:
        """Durably and idempotently admit one completed turn (A3, A4, B1-B5, B18, B27).

        Never raises for a bad turn or a failed write: the result says what happened, and a
        rejection also logs a content-free ``memory_degraded`` warning (B4).
        """
        try:
            result = self._admit(turn)
        except Exception as e:  # B4: the host's answer path must never see an exception
            log.exception("memory_es admission failed unexpectedly")
            result = AdmissionResult(status="rejected", code="internal_error",
                                     detail=type(e).__name__)
        if result.status == "admitted" and self._worker is not None:
            self._worker.kick()  # attempt 1 runs at admission, off the caller's path
        if result.status == "rejected":
            log.warning(
                "memory_degraded: turn not saved (code=%s, intake_id=%s)",
                result.code, result.intake_id,
                extra={"memory_event": "memory_degraded", "code": result.code,
                       "intake_id": result.intake_id},
            )
        return result

    def _admit(self, turn: CompletedTurn) -> AdmissionResult:
        prepared = prepare_turn(
            turn,
            tier=self.config.mode,
            write_mode=self.config.write_mode,
            capture_cron=self.config.capture.cron,
            capture_webhook=self.config.capture.webhook,
        )
        if isinstance(prepared, AdmissionResult):
            return prepared
        event = Intake.admitted(at=self._clock(), **prepared.fields)
        request = _Request(prepared, event, self._opened.app.mapper.to_stored_event(event))
        with self._cv:
            if self._closed:
                return AdmissionResult(status="rejected", intake_id=prepared.run_hash,
                                       code="store_closed", detail="the store is closed")
            self._queue.append(request)
            leader = not self._committing
            self._committing = True
        if not leader:
            request.wake.acquire()
            if request.result is not None:
                return request.result
        # Leader: commit everything queued so far, then hand over to the next waiter, if any.
        # Under concurrency (the last batch was shared), yielding the GIL once lets callers
        # that are mid-preparation join this batch; a lone caller never pays for it.
        if self._last_batch > 1:
            time.sleep(0)
        with self._cv:
            batch, self._queue = self._queue, []
            self._last_batch = len(batch)
        try:
            self._commit(batch)
        finally:
            self._release_commit()
        assert request.result is not None
        return request.result

    def _release_commit(self) -> None:
        """Hand the journal to the next queued admission, or free it."""
        with self._cv:
            if self._queue:
                self._queue[0].wake.release()
            else:
                self._committing = False
                self._cv.notify_all()

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold the journal like an admission leader (drain, operator transitions)."""
        with self._cv:
            if self._closed:
                raise MemoryEsError(f"{self.root}: the store is closed", code="store_closed")
            while self._committing:
                self._cv.wait()
            self._committing = True
        try:
            yield
        finally:
            self._release_commit()

    # -- projection ---------------------------------------------------------------------------

    def drain(self, timeout: float | None = None) -> int:
        """Run every due intake in the foreground now; returns how many attempts were made.

        Shares the worker's attempt code and lock, so both paths behave alike. A broken index
        fails the drain before anything is resolved. ``timeout`` bounds the time spent.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._exclusive():
            self._projections()
        attempts = 0
        cancel = threading.Event()
        while deadline is None or time.monotonic() < deadline:
            done = self.run_due(cancel)
            attempts += done
            if not done:
                break
        with self._exclusive():
            self._catch_up()  # foreground: a projection error surfaces to the operator
        return attempts

    def run_due(self, cancel: threading.Event) -> int:
        """One pass over the due queue, in admission order, committing as it goes.

        Model-free attempts share transactions (up to 256); a capture is its own transaction
        and first catches projections up, so it reconciles against every earlier capture.
        """
        with self._work_lock:
            now = self._clock()
            with self._cv:
                due = self._view.due(now, with_model=self._processor.needs_model)
            attempts = 0
            for batch in _batches(due):
                if cancel.is_set():
                    break
                attempts += self._attempt(batch, cancel)
            if attempts:
                self._prune_payloads()
            return attempts

    def _attempt(self, records: list[IntakeState], cancel: threading.Event) -> int:
        """Run the step for each record; commit every outcome in one transaction.

        Returns how many attempts were committed (0 if cancelled: records stay pending).
        """
        app = self._opened.app
        recorder = self._opened.recorder
        events: list[Any] = []
        new_ids: set[str] = set()
        for record in records:
            # A capture resumes from its retained stages; a model-free step needs only the first
            history = [app.mapper.to_domain_event(stored) for stored in app.recorder.select_events(
                intake_uuid(record.id), lte=None if record.needs_model else 1)]
            admitted = history[0]
            assert isinstance(admitted, Intake.Admitted)
            payload = self._opened.recorder.payload(record.id) if record.payload_sha256 else None
            ctx = StepContext(
                revision=record.revision, at=self._clock(), cancel=cancel,
                memory_exists=lambda mid: mid in new_ids or recorder.has_events(memory_uuid(mid)),
                final=record.failures + 1 >= MAX_ATTEMPTS, history=tuple(history),
                retain=self._retain, reads=self._capture_reads(record))
            crash_point("worker.before_step")
            try:
                if ctx.reads is not None:
                    self._ready_for_capture()
                step_events = self._processor.process(
                    admitted, payload.data if payload else None, ctx)
            except StepFailure as failure:
                step_events = [failure_event(record, failure.category, self._clock())]
            except Exception as e:  # logged content-free: a message may quote the turn
                log.warning("memory_es step failed unexpectedly (intake %s): %s", record.id,
                            type(e).__name__)
                step_events = [failure_event(record, "internal", self._clock())]
            if cancel.is_set():
                return 0  # shutdown: nothing of this batch is committed (B22)
            events += step_events
            new_ids.update(e.memory_id for e in step_events
                           if isinstance(e, Memory.Recorded | Memory.Captured))
        crash_point("worker.before_commit")
        try:
            with self._exclusive():
                positions = self._opened.recorder.insert_events(
                    [app.mapper.to_stored_event(e) for e in events])
                self._apply(positions, events)
        except MemoryEsError as e:
            if e.code == "store_closed":
                return 0
            raise
        crash_point("worker.after_commit")
        return len(records)

    # -- capture (E*): what a model step reads and retains -------------------------------------

    def _capture_reads(self, record: IntakeState) -> IndexReads | None:
        """Index reads for a capture attempt; None for model-free records."""
        if not record.needs_model:
            return None
        return IndexReads(run=self._index_run, embed=self._embed_candidates,
                          nearest=self._nearest, version=self._aggregate_version)

    def _ready_for_capture(self) -> None:
        """Projections caught up (a capture reconciles against every earlier one)."""
        try:
            with self._exclusive():
                self._catch_up()
        except MemoryEsError as e:
            log.warning("memory_degraded: capture waits for projections (code=%s)", e.code)
            raise StepFailure("io_error") from None

    def _retain(self, event: Any) -> None:
        """Commit a capture stage's output now (E17, E23): a retry resumes after it."""
        self._commit_events([event])
        crash_point(f"capture.after_{RETAINED_STAGE[type(event)]}")

    def _index_run(self, fn: Callable[[Any], Any]) -> Any:
        with self._exclusive():
            return fn(self._projections().index.conn)

    def _embed_candidates(self, texts: Sequence[str]) -> list[Any] | None:
        """Vectors for candidate texts, after embedding every stored line that lacks one;
        None while the provider is unavailable (the capture retries, DESIGN 9.10)."""
        embedder = self._vectors()
        if embedder is None:
            return None
        while self.embed_pending():
            pass  # cheap when nothing waits: the projection keeps the queue
        if time.monotonic() < self._embed_pause_until:
            return None
        if not texts:
            return []
        try:
            return [np.frombuffer(blob, dtype=np.float32)
                    for blob in embed_texts(embedder, self._vector_cache, list(texts))]
        except EmbeddingError as e:
            log.warning("memory_degraded: capture waits for embeddings (code=%s)", e.code)
            return None

    def _nearest(self, vectors: list[Any], k: int) -> list[list[tuple[int, float]]]:
        embedder = self._vectors()
        assert embedder is not None
        with self._exclusive():
            matrix = self._vector_matrix(embedder, self._projections().index.conn)
            return matrix.top_many(vectors, k)

    def _aggregate_version(self, originator_id: Any) -> int:
        last = self._opened.recorder.select_events(originator_id, desc=True, limit=1)
        return int(last[0].originator_version) if last else 0

    def project(self) -> None:
        """Catch projections up with the journal (the worker calls this after each pass).

        A failure is logged, never raised: it cannot undo a committed transition (B21), and
        health reports the lag until a later pass or a rebuild succeeds.
        """
        try:
            with self._exclusive():
                if self._projector is None or \
                        self._projector.position < (self._opened.recorder.max_notification_id()
                                                    or 0):
                    self._catch_up()
        except Exception as e:
            log.warning("memory_degraded: projection catch-up failed (%s)", type(e).__name__)

    def _prune_payloads(self) -> None:
        """B9: keep the payloads of the newest 4,096 resolved intakes; events stay forever."""
        with self._cv:
            ids = self._view.prunable_payloads(RESOLVED_PAYLOADS_KEPT)
        if ids:
            try:
                self._opened.recorder.delete_payloads(ids)
            except Exception as e:
                log.warning("memory_es payload pruning failed (%s)", type(e).__name__)

    def seconds_until_due(self, cap: float) -> float:
        """How long the worker may sleep: until the next due intake, at most ``cap``."""
        with self._cv:
            nxt = self._view.next_due_at(with_model=self._processor.needs_model)
        if nxt is None:
            return cap
        return max(0.0, min(cap, (nxt - self._clock()).total_seconds()))

    def kick(self) -> None:
        """Wake the worker now (tests that move a fake clock call this)."""
        if self._worker is not None:
            self._worker.kick()

    def publish_snapshot(self, state: str) -> None:
        """Republish ``.runtime/snapshot.json`` (B19-B21): content-free counts and liveness."""
        now = self._clock()
        with self._cv:
            counts = self._view.counts(now)
        publish_snapshot(self.root, {
            "pid": os.getpid(), "heartbeat": now.isoformat(timespec="milliseconds"),
            "counts": counts, "shutdown": state, "queue": {"due": counts["due"]},
        })

    # -- operator transitions (C3, C4): the caller holds the writer lock ---------------------

    def retry(self, intake_id: str | None = None) -> list[str]:
        """Give dead or delayed intakes (one, or all) a fresh 16-attempt budget, due now."""
        with self._work_lock:
            now = self._clock()
            with self._cv:
                if intake_id is not None:
                    candidates = [self._record(intake_id)]
                else:
                    candidates = self._view.unresolved()
                targets = [r for r in candidates if r.state == "dead"
                           or (r.state == "pending" and not r.due(now))]
            events = [intake_event(Intake.RetryRequested, run_hash=r.id, version=r.revision,
                                   at=now) for r in targets]
            self._commit_events(events)
        self.kick()
        return [r.id for r in targets]

    def resolve(self, intake_id: str, reason_slug: str) -> None:
        """Record ``operator_resolved``: loss-accepting, duplicate protection kept (C4).

        Refuses a pending record with a retained capture plan: its next attempt completes it
        (DESIGN 5). A dead one may be resolved."""
        if not SLUG.fullmatch(reason_slug):
            raise MemoryEsError(
                f"reason slug {reason_slug!r} must be 1-64 of a-z, 0-9 and '-', starting "
                "with a letter or digit", code="invalid_slug")
        with self._work_lock:
            with self._cv:
                record = self._record(intake_id)
            if record.state == "resolved":
                raise MemoryEsError(f"intake {intake_id} is already resolved "
                                    f"({record.outcome}); nothing to do", code="already_resolved")
            if record.retained is not None and record.state == "pending":
                raise MemoryEsError(
                    f"intake {intake_id} has a retained capture plan (stage "
                    f"{record.retained}) that its next attempt completes without asking the "
                    "model again; resolving it would lose that capture", code="plan_retained")
            event = Intake.resolved(run_hash=record.id, version=record.revision,
                                    at=self._clock(), outcome="operator_resolved",
                                    reason_slug=reason_slug)
            self._commit_events([event])
        self._prune_payloads()
        self.project()

    def _record(self, intake_id: str) -> IntakeState:
        """One intake's state: from the view if unresolved, else folded from the journal."""
        record = self._view.records.get(intake_id)
        if record is not None:
            return record
        view = IntakeView()
        app = self._opened.app
        for stored in app.recorder.select_events(intake_uuid(intake_id)):
            view.apply(0, app.mapper.to_domain_event(stored))
        if intake_id not in view.records:
            raise MemoryEsError(f"no intake with id {intake_id}", code="not_found")
        return view.records[intake_id]

    def _commit_events(self, events: list[Any]) -> None:
        if not events:
            return
        app = self._opened.app
        with self._exclusive():
            positions = self._opened.recorder.insert_events(
                [app.mapper.to_stored_event(e) for e in events])
            self._apply(positions, events)

    def _apply(self, positions: Sequence[int] | None, events: Sequence[Any]) -> None:
        """Fold committed events into the view; readers of the view hold ``_cv`` too."""
        assert positions is not None
        with self._cv:
            for position, event in zip(positions, events, strict=True):
                self._view.apply(position, event)

    # -- vectors and recall (D4, D6, D9, G*) --------------------------------------------------

    def _vectors(self) -> Embedder | None:
        """The embedder for this tier, created on first use; Lite never embeds (D2, N14)."""
        if self.config.mode == "lite":
            return None
        if self._embedder is None and self.config.embeddings is not None:
            self._embedder = make_embedder(self.config.embeddings)
        if self._embedder is not None and self._vector_cache is None:
            self._vector_cache = VectorCache(self.root)
        return self._embedder

    def embed_pending(self) -> int:
        """Embed memories that lack a vector (batches of 32, at most 256 / 2 MiB in flight).

        The provider is called with no lock held; a failure is logged and retried later, and
        until then those memories are found lexically (D9). Returns how many were embedded.
        """
        embedder = self._vectors()
        if embedder is None or time.monotonic() < self._embed_pause_until:
            return 0
        identity = embedder.identity.key
        with self._exclusive():
            pending = pending_texts(self._projections().index.conn, identity)
        if not pending.rowids:
            return 0
        try:
            blobs = embed_texts(embedder, self._vector_cache, pending.texts)
        except EmbeddingError as e:
            self._embed_pause_until = time.monotonic() + EMBED_RETRY_SECONDS
            log.warning("memory_degraded: embedding unavailable (code=%s); lexical recall "
                        "until the provider answers", e.code)
            return 0
        with self._exclusive():
            conn = self._projections().index.conn
            store_vectors(conn, identity, pending.rowids, blobs)
            self._vector_matrix(embedder, conn)
        return len(pending.rowids)

    def _fill_vectors(self, index: IndexProjection) -> None:
        """Vectors for a new generation before it is activated (D10, C8): from the cache
        (no provider call for unchanged text, B25), the rest from the provider. An outage
        leaves those to the worker; recall meanwhile finds them lexically (D9)."""
        embedder = self._vectors()
        if embedder is None:
            return
        identity = embedder.identity.key
        while True:
            pending = pending_texts(index.conn, identity)
            if not pending.rowids:
                return
            try:
                blobs = embed_texts(embedder, self._vector_cache, pending.texts)
            except EmbeddingError as e:
                log.warning("memory_degraded: rebuild without some vectors (code=%s)", e.code)
                return
            store_vectors(index.conn, identity, pending.rowids, blobs)

    def _vector_matrix(self, embedder: Embedder, conn: Any) -> VectorMatrix:
        """The in-memory matrix for this identity (a new identity starts a new one), told which
        rows went stale since it last looked (text updates, invalidations), then refreshed."""
        rewritten = self._projections().index.rewritten
        if self._matrix is None or self._matrix.identity != embedder.identity.key \
                or self._matrix_rewrites > len(rewritten):
            self._matrix = VectorMatrix(embedder.identity.dim, embedder.identity.key)
            self._matrix_rewrites = len(rewritten)
        if self._matrix_rewrites < len(rewritten):
            self._matrix.forget(rewritten[self._matrix_rewrites:])
            self._matrix_rewrites = len(rewritten)
        self._matrix.refresh(conn, embedder.identity.key)
        return self._matrix

    def recall(self, query: str, limit: int = 10) -> RecallResult:
        """Hybrid MemoryRecall (G*): FTS5 bm25 and vector candidates, scored embedding-first.

        Never raises for a provider outage: the result is lexical-only and ``degraded``.
        """
        embedder = self._vectors()
        query_vector = None
        if embedder is not None and time.monotonic() >= self._embed_pause_until:
            try:
                query_vector = embedder.embed([query])[0]
            except EmbeddingError as e:
                log.warning("memory_recall_unavailable: lexical only (code=%s)", e.code)
        with self._exclusive():
            conn = self._projections().index.conn
            matrix = self._vector_matrix(embedder, conn) if embedder is not None else None
            return recall(conn, query, now=self._clock(), query_vector=query_vector,
                          matrix=matrix, limit=limit, expand=self.config.mode == "bujo",
                          calibration=calibration_for(embedder.identity if embedder else None,
                                                      configured_calibration(self.config)))

    def journal(self, from_date: str, through_date: str, time_zone: str,
                limit: int = 10) -> dict[str, Any]:
        """MemoryJournal (I*): memories recorded between two inclusive civil dates in an
        explicit IANA zone, from a frozen snapshot; continue with :meth:`journal_continue`."""
        with self._exclusive():
            return self._chronology.query(self._projections().index.conn, from_date,
                                          through_date, time_zone, limit)

    def journal_continue(self, cursor: str) -> dict[str, Any]:
        """The next page of a MemoryJournal snapshot (HMAC cursor bound to this handle)."""
        return self._chronology.continue_(None, cursor)

    def auto_recall(self, text: str, *, session: str | None = None, owner: bool = True,
                    gate_owner_text: bool = True) -> str:
        """The automatic "possibly relevant" block for a turn, or "" (H1-H22).

        Nothing for Lite or degraded results (H15), for turns that are not host-verified owner
        turns (``owner=False``, H16), or for owner text of at most 16 code points when the gate
        applies (H14; the labelled background stays, H19). Records of the current conversation
        (``session``) are excluded (H21).
        """
        if not owner:
            return ""
        lines = not gate_owner_text or owner_text_gate(text)
        embedder = self._vectors()
        if embedder is None or time.monotonic() < self._embed_pause_until:
            return ""
        try:
            query_vector = embedder.embed([text])[0]
        except EmbeddingError as e:
            log.warning("memory_recall_unavailable: no automatic block (code=%s)", e.code)
            return ""
        with self._exclusive():
            conn = self._projections().index.conn
            matrix = self._vector_matrix(embedder, conn)
            return auto_block(conn, text, now=self._clock(), query_vector=query_vector,
                              matrix=matrix, session=session, lines=lines,
                              calibration=calibration_for(embedder.identity,
                                                          configured_calibration(self.config)))

    def rebuild(self) -> RebuildReport:
        """Replay the journal into a new index generation and matching Markdown (D10, C8)."""
        with self._exclusive():
            if self._projector is not None:
                self._projector.close()
                self._projector = None
            report = rebuild(self.root, iter_events(self._opened),
                             before_activate=self._fill_vectors)
            self._matrix = None
            self._catch_up()
            return report

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """Lexical FTS5 search over the active index (bm25; the hybrid recall issue extends it)."""
        with self._exclusive():
            return fts_search(self._projections().index.conn, query, limit)

    def _projections(self) -> Projector:
        """The open projections, opened on first use (a broken index raises here, not at open)."""
        if self._projector is None:
            self._projector = Projector.open(self.root, self.config.mode)
        return self._projector

    def _catch_up(self) -> None:
        projector = self._projections()
        projector.catch_up(iter_events(self._opened, after=projector.position))

    def _commit(self, batch: list[_Request]) -> None:
        """Decide every queued request, write the admitted ones in one transaction."""
        decided: dict[str, str] = {}  # run_hash -> content hash admitted in this batch
        to_write: list[_Request] = []
        rides_on_write: list[int] = []  # results that are only true if the write succeeds
        results: list[AdmissionResult] = []
        active = self._view.active
        for i, req in enumerate(batch):
            p = req.prepared
            known = self._view.records.get(p.run_hash)
            known_hash = (known.content_sha256 if known else decided.get(p.run_hash)
                          or self._opened.recorder.admitted_content_hash(intake_uuid(p.run_hash)))
            if known is None and p.run_hash in decided:
                rides_on_write.append(i)
            if known_hash is not None:
                results.append(self._repeat_result(p, known_hash))
            elif active + len(to_write) >= MAX_ACTIVE:
                results.append(AdmissionResult(
                    status="rejected", intake_id=p.run_hash, code="too_many_active_records",
                    detail=f"{MAX_ACTIVE} active (pending + dead) records already",
                ))
            else:
                decided[p.run_hash] = p.content_sha256
                to_write.append(req)
                rides_on_write.append(i)
                results.append(AdmissionResult(status="admitted", intake_id=p.run_hash))
        if to_write:
            try:
                self._write(to_write)
            except Exception as e:
                log.error("memory_es journal write failed: %s", type(e).__name__)
                for i in rides_on_write:
                    results[i] = AdmissionResult(
                        status="rejected", intake_id=batch[i].prepared.run_hash,
                        code="journal_write_failed", detail=type(e).__name__,
                    )
        for req, result in zip(batch, results, strict=True):
            req.result = result
            req.wake.release()

    @staticmethod
    def _repeat_result(p: PreparedIntake, known_hash: str) -> AdmissionResult:
        """B3: same bytes is a successful duplicate; other bytes fail closed."""
        if known_hash == p.content_sha256:
            return AdmissionResult(status="duplicate", intake_id=p.run_hash)
        return AdmissionResult(
            status="rejected", intake_id=p.run_hash, code="run_id_conflict",
            detail="this run id was admitted with different content",
        )

    def _write(self, requests: list[_Request]) -> None:
        payloads = [r.payload for r in requests if r.payload is not None]
        positions = self._opened.recorder.insert_events(
            [r.stored for r in requests], payloads=payloads
        )
        self.commits += 1
        self._apply(positions, [r.event for r in requests])

    # -- operator views -----------------------------------------------------------------------

    def inspect(self, intake_id: str | None = None) -> dict[str, Any]:
        """Content-free intake report (C1, C2): counts, and the unresolved records (or the one
        asked for, resolved or not). ``memory-es inspect`` lists resolved ones too."""
        now = self._clock()
        with self._cv:
            report = self._view.report(now, intake_id)
            if intake_id is None or report["records"]:
                return report
            try:
                record = self._record(intake_id)
            except MemoryEsError:
                return report
        report["records"] = [record_json(record, now)]
        return report

    def events(self) -> Iterator[tuple[int, str, int, str, bytes, bytes]]:
        """Every journal row in order (position, originator, version, topic, state, chain)."""
        return self._opened.recorder.rows()


def rebuild_root(root: str | Path, *, lock_timeout: float = 0.0) -> RebuildReport:
    """``memory-es rebuild``: rebuild projections with the writer lock (C15, C16).

    Needs no working index: the journal alone decides. Refuses, naming the holder, while an
    agent holds the root.
    """
    opened = open_journal(Path(root), writable=True, lock_timeout=lock_timeout)
    try:
        return rebuild(Path(root), iter_events(opened))
    finally:
        opened.close()
