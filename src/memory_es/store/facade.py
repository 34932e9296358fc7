"""MemoryStore: the embeddable facade a host opens once and hands every completed turn.

Admission is the only thing on the host's answer path: validate, then append one Intake
event in a transaction that is fsynced before the call returns (B1). Everything else is done
by the collaborators this class wires together: group commit (``admission``), the attempt
runner and operator transitions (``attempts``), the live projections (``projecting``) and
vector upkeep (``vectors``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime, tzinfo
from pathlib import Path

import msgspec

from memory_es.bounds import check_intake_id, check_seconds
from memory_es.browse.inventory import MemoryDetail, MemoryList
from memory_es.browse.journal_page import JournalPage
from memory_es.capture.models import ChatModel
from memory_es.capture.pipeline import capture_processor
from memory_es.config import ConfigError, MemoryConfig
from memory_es.embeddings import Embedder
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.events import SEALED_FIELDS, Root
from memory_es.history import fold_intakes, journal_guard
from memory_es.intake import (
    AdmissionResult,
    CompletedTurn,
    IntakeReport,
    prepare_turn,
    utc_now,
)
from memory_es.journal import DEFAULT_LOCK_TIMEOUT, OpenedJournal, open_journal
from memory_es.keystore import KeyStore
from memory_es.observe import ObserveProcessor
from memory_es.recall import AutoContext, RecallResult
from memory_es.recall.sections.profile import Profile
from memory_es.rootconfig import RootConfig, effective, journal_of, resolve_root, settle
from memory_es.step import Processor
from memory_es.store.access import AccessStat
from memory_es.store.admission import GroupCommit
from memory_es.store.attempts import Attempts
from memory_es.store.forgetting import ForgetReceipt, Forgetter, complete_forgets
from memory_es.store.lifecycle import MarkResult, StatusResult, set_insight, set_status
from memory_es.store.projecting import LiveProjections
from memory_es.store.reading import StoreReads
from memory_es.store.remembering import RememberResult, RememberTerms, remember
from memory_es.store.vectors import Vectors
from memory_es.validity import host_time_zone
from memory_es.vocabulary import LIST_DEFAULT_LIMIT
from memory_es.worker import Worker, publish_snapshot
from projections.consolidation import ConsolidationSummary
from projections.replay import DERIVED_ENTRIES, RebuildReport
from projections.search import SearchHit

log = logging.getLogger("memory_es")

# How long a drain waits, at most, for other hosts to finish intakes they hold leases on.
_WAIT_FOR_OTHERS = 60.0
DEFAULT_SHUTDOWN_TIMEOUT = 10.0  # B22

Clock = Callable[[], datetime]


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


class MemoryStore:
    """A writable memory root, held exclusively for the store's lifetime (B23, C16).

    Open with :meth:`open`; use as a context manager or call :meth:`close`.
    """

    def __init__(
        self, opened: OpenedJournal, config: MemoryConfig, clock: Clock, *,
        background: bool, processor: Processor | None, shutdown_timeout: float,
        embedder: Embedder | None = None, chat_model: ChatModel | None = None,
        classifier: ChatModel | None = None, time_zone: tzinfo | None = None,
    ) -> None:
        self.config = config
        self.time_zone = time_zone
        self.root = opened.root
        self._opened = opened
        self._clock = clock
        self._shutdown_timeout = shutdown_timeout
        if processor is None:
            processor = (capture_processor(config, chat_model, classifier)
                         if config.is_capture else ObserveProcessor())
        self.journal_writer = GroupCommit(opened, fold_intakes(opened, retain_resolved=False),
                                          self.root)
        self._record_config(opened, config)
        complete_forgets(opened, self.root)  # a forget a kill interrupted: keys first
        self.projections = LiveProjections(opened, self.root, config.mode, self.journal_writer)
        try:
            self.projections.catch_up()
            self.projections.get().scrub()
        except MemoryEsError as e:  # admission must not depend on a healthy index
            log.warning("memory_degraded: projections unavailable (code=%s); run memory-es "
                        "rebuild", e.code, extra={"memory_event": "memory_degraded",
                                                  "code": e.code})
        self.vectors = Vectors(config, self.root, embedder, self.journal_writer,
                               self.projections)
        self.attempts = Attempts(opened, self.journal_writer, self.projections, self.vectors,
                                 processor, clock)
        self.attempts.prune_payloads()
        self.reads = StoreReads(config, self.journal_writer, self.projections, self.vectors,
                                clock, self.root, time_zone)
        self._forgetter = Forgetter(opened, self.journal_writer, self.projections, self.root,
                                    self.vectors.rows_removed)
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
        create: bool = True,
        key_store: str | Path | KeyStore | None = None,
        time_zone: str | tzinfo | None = None,
    ) -> MemoryStore:
        """Open (creating if absent, unless ``create`` is false) the root, take its writer
        lock and verify its journal.

        ``config`` None means the root's own recorded configuration (defaults for a new root);
        a config that differs from the recorded one is recorded as a reconfiguration, or
        refused (``reconfigure_refused``) when it would strand retained capture plans (B26).

        With ``background`` (the default) a worker thread projects admitted turns as they
        arrive and retries failures on the durable backoff schedule; without it, work runs
        only on :meth:`drain` (operator commands use that). ``processor`` is the attempt step
        (default: model-free projection). ``shutdown_timeout`` bounds :meth:`close` (B22).
        ``embedder`` overrides the provider ``memory.embeddings`` names (Journal and BuJo only:
        Lite never embeds, D2). ``chat_model`` and ``classifier`` override the chat models
        ``memory.llm`` and ``memory.capture.reconcileModel`` name (BuJo capture only, E31).
        ``key_store`` is where the root's chain key is kept (default: ``$MEMORY_ES_KEY_STORE``,
        read now, else ``~/.local/state/memory-es/keys``).
        ``time_zone`` is the host's zone (an IANA name or a ``tzinfo``) that date-only
        validity ends and the automatic block's dates are read in (G15); default: the
        process's own zone.
        """
        check_seconds("lock_timeout", lock_timeout)
        zone = host_time_zone(time_zone)
        check_seconds("shutdown_timeout", shutdown_timeout)
        path = resolve_root(root, config)
        journal = journal_of(config)
        with journal_guard(path):  # a damaged journal.db: journal_corrupt
            opened = open_journal(path, writable=True, lock_timeout=lock_timeout,
                                  create=create, derived=DERIVED_ENTRIES, key_store=key_store,
                                  seal=SEALED_FIELDS, journal=journal)
        try:
            config = effective(opened, config)
            return cls(opened, config, clock, background=background, processor=processor,
                       shutdown_timeout=shutdown_timeout, embedder=embedder,
                       chat_model=chat_model, classifier=classifier, time_zone=zone)
        except BaseException:
            opened.close()
            raise

    def _record_config(self, opened: OpenedJournal, config: MemoryConfig) -> None:
        """Record the config this root runs with (first use, or a change) in the same
        transaction as the next thing written (an open that writes nothing leaves no trace),
        or refuse a change that would strand retained capture plans (B26) before anything is
        written."""
        now = self._clock()
        with self.journal_writer.cv:
            report = self.journal_writer.view.report(now)
        retained = any(r.retained is not None and r.state != "resolved" for r in report.records)
        event = settle(opened, config, at=now, retained_plans=retained)
        if event is None:
            return
        self.journal_writer.preface = [event]
        if isinstance(event, Root.Reconfigured):
            log.warning("memory_reconfigured: %s", RootConfig.of(config).describe(),
                        extra={"memory_event": "memory_reconfigured"})

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
        if not self.journal_writer.close():
            return
        try:
            self.reads.close()
            self.projections.close()
            self.vectors.close()
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
        if result.status == "admitted":
            self.reads.written()  # an in-turn write: the turns' lookups are stale (G34)
            self.kick()  # attempt 1 runs at admission, off the caller's path
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
        return self.journal_writer.admit(
            prepared, prepared.admitted(self._clock(), sealed=self.journal_writer.seals))

    @property
    def root_id(self) -> str | None:
        """The root's id in the key store (None: a schema-1 root with no keyed chain)."""
        return self._opened.recorder.chain.root_id

    @property
    def commits(self) -> int:
        """Journal transactions written by admission (group commit shares them)."""
        return self.journal_writer.commits

    @property
    def batch_sizes(self) -> dict[int, int]:
        """How many group-commit batches held each number of admissions."""
        with self.journal_writer.cv:
            return dict(self.journal_writer.batch_sizes)

    # -- background work (the worker's WorkSource) -------------------------------------------

    def drain(self, timeout: float | None = None, *, embed: bool = True) -> int:
        """Run every due intake in the foreground now, then (``embed``) embed every memory
        still waiting for a vector, so recall is whole afterwards; returns how many attempts
        were made (:meth:`vector_backlog` tells what embedding left).

        Shares the worker's attempt code and lock, so both paths behave alike. A broken index
        fails the drain before anything is resolved. ``timeout`` bounds the time spent; a
        provider outage leaves the vectors to the worker (recall finds them lexically, D9).
        """
        deadline = None if timeout is None else \
            time.monotonic() + check_seconds("timeout", timeout)
        with self.journal_writer.exclusive():
            self.projections.get()
        attempts = 0
        cancel = threading.Event()
        waited = 0.0  # for another host's outcomes of intakes it leased (shared journal)
        while deadline is None or time.monotonic() < deadline:
            done = self.run_due(cancel)
            attempts += done
            if not done:
                if not self.attempts.elsewhere or waited >= _WAIT_FOR_OTHERS:
                    break
                time.sleep(0.05)
                waited += 0.05
        with self.journal_writer.exclusive():
            self.projections.catch_up()  # foreground: a projection error surfaces
        if embed:
            self.vectors.embed_all(deadline)
        return attempts

    def vector_backlog(self) -> int | None:
        """Live memories still waiting for a vector (found lexically until then, D9); None
        when this tier or config never embeds."""
        return self.vectors.backlog()

    def run_due(self, cancel: threading.Event) -> int:
        """One pass over the due queue (see :class:`Attempts`), after folding in what other
        hosts appended to a shared journal (their intakes, and what they resolved)."""
        self.journal_writer.catch_up()
        return self.attempts.run_due(cancel)

    def project(self) -> None:
        """Catch projections up with the journal; logged, never raised (B21)."""
        self.projections.project()

    def embed_pending(self) -> int:
        """Embed memories that lack a vector; until then they are found lexically (D9)."""
        return self.vectors.embed_pending()

    def seconds_until_due(self, cap: float) -> float:
        return self.attempts.seconds_until_due(cap)

    def kick(self) -> None:
        """Wake the worker now (tests that move a fake clock call this)."""
        if self._worker is not None:
            self._worker.kick()

    def publish_snapshot(self, state: str) -> None:
        """Republish ``.runtime/snapshot.json`` (B19-B21): content-free counts and liveness."""
        now = self._clock()
        with self.journal_writer.cv:
            counts = self.journal_writer.view.counts(now)
            retained = self.journal_writer.view.retained_count()
        publish_snapshot(self.root, {
            "pid": os.getpid(), "heartbeat": now.isoformat(timespec="milliseconds"),
            "counts": counts.to_json(), "shutdown": state,
            # B19, N13: the downstream queues: intakes due and dead, capture plans held,
            # lines waiting for a vector (read beside the writer: no journal hold)
            "queue": {"due": counts.due, "dead": counts.dead, "capture_retained": retained,
                      "embedding": self.vectors.backlog_nowait()},
        })

    # -- Remember (J*) ------------------------------------------------------------------------

    def remember(self, text: str, *, about: str | None = None, supersedes: str | None = None,
                 replaceable: bool = False, valid_from: str | date | datetime | None = None,
                 valid_to: str | date | datetime | None = None,
                 due_at: str | date | datetime | None = None,
                 session: str | None = None) -> RememberResult:
        """Store one explicitly stated fact now, recallable when this returns (J1); an exact
        repeat is a ``duplicate`` (J4, J11); a credential is refused with nothing written
        (J5, ``remember_credential``); off with ``memory.rememberTool.enabled: false`` (J2).

        BuJo also takes the enhanced options (J6): ``about`` an existing person's entity id
        (J7), ``supersedes`` the id of a current captured note or event, or of an enhanced
        Remember line, which becomes history (J8), ``replaceable`` (a later scan may
        supersede it, J10), and its validity: ``valid_from`` / ``valid_to`` / ``due_at`` as
        ISO dates (inclusive civil days) or instants with their offset (G13-G15). Lite and
        Journal take text only (``remember_text_only``)."""
        if not self.config.remember_tool.enabled:
            raise MemoryEsError("remember_disabled: memory.rememberTool.enabled is false",
                                code="remember_disabled")
        terms = RememberTerms.checked(about=about, supersedes=supersedes,
                                      replaceable=replaceable, valid_from=valid_from,
                                      valid_to=valid_to, due_at=due_at)
        result = remember(self._opened, self.journal_writer, self.projections, text,
                          session=session, tier=self.config.mode, now=self._clock(),
                          terms=terms)
        if result.status == "remembered":
            self.reads.written()  # J13: the turns' cached searches are stale
        self.kick()  # the worker embeds the new line
        return result

    def set_status(self, memory_id: str, status: str, *,
                   reason: str | None = None) -> StatusResult:
        """Move a live line through the lifecycle (K14): open, done, scheduled, migrated, or
        the terminal dropped, as a ``Memory.StatusChanged`` event projected before this
        returns. ``memory_id`` is a full id or a unique prefix of at least 8; ``reason`` an
        optional slug. ``status_transition_refused`` for a move the lifecycle forbids."""
        result = set_status(self._opened, self.journal_writer, self.projections, memory_id,
                            status, reason=reason, now=self._clock())
        self.kick()
        return result

    def mark(self, memory_id: str, *, insight: bool) -> MarkResult:
        """Set or clear a stored line's insight marker (K14): shown on the line in recall, the
        automatic block and the daily Markdown, kept when the line closes (H6), a small
        ranking tie-breaker (G8)."""
        return set_insight(self._opened, self.journal_writer, self.projections, memory_id,
                           insight, now=self._clock())

    # -- reading (G*, H*, I*): see store/reading.py ------------------------------------------

    def recall(self, query: str | None = None, limit: int = 10, *, explain: bool = False,
               as_of: datetime | str | None = None, kind: str | None = None,
               about: str | None = None, turn: str | None = None,
               use_original_query: bool = False) -> RecallResult:
        """Hybrid MemoryRecall (G*): FTS5 bm25 and vector candidates, lexical evidence fused
        with the cosine (``memory.recall.scoring``). Never raises for a provider outage: the
        result is lexical-only and ``degraded`` with its reason. ``explain`` adds each hit's
        score parts and the cut it passed. ``as_of`` (an aware datetime or an ISO instant with
        its offset) answers from what the journal held at that instant (a future one is now):
        lines superseded since are current, later lines absent.

        ``kind`` (``"preference"`` / ``"lesson"``) narrows the "Preferences & lessons" section
        and lifts its floor (G26, G27); ``about`` (a person's entity id or unique prefix)
        gives that person's fact sheet and no guidance section (G27, G28). ``turn`` names the
        host's logical turn (see :meth:`auto_context`): an identical normalized query in it
        shares one lookup (G35), delivered ids are counted once in it (G30), and
        ``use_original_query=True`` (instead of ``query``) reuses the turn's automatic lookup
        uncut (G19, G34; ``recall_original_unavailable`` when it cannot)."""
        if as_of is not None:
            if turn is not None or use_original_query:
                raise InvalidArgumentError("recall_query_conflict: as_of reads the past and "
                                           "takes no turn or use_original_query",
                                           code="recall_query_conflict")
            return self.reads.recall_as_of(query, limit, explain, as_of, self._opened,
                                           kind=kind, about=about)
        return self.reads.recall(query, limit, explain, kind=kind, about=about, turn=turn,
                                 original=use_original_query)

    def end_turn(self, turn: str) -> bool:
        """Turn cleanup (G34): the turn's lookups go, so original-query mode is unavailable
        for it from now on; True when the turn was open."""
        return self.reads.end_turn(turn)

    def access_stats(self, ids: Sequence[str]) -> dict[str, AccessStat]:
        """Access telemetry of these memory ids (G30): ``last_accessed_at`` and
        ``access_count`` of those ever delivered; telemetry only, never ranking (G9)."""
        return self.reads.access_stats(ids)

    def auto_recall(self, text: str, *, session: str | None = None, owner: bool = True,
                    gate_owner_text: bool = True, turn: str | None = None) -> str:
        """The automatic "possibly relevant" block for a turn, or "" (H1-H22): nothing for
        Lite or degraded results (H15), for turns that are not host-verified owner turns
        (``owner=False``, H16), or for owner text of at most 16 code points when the gate
        applies (H14; the labelled background stays, H19); the current conversation's
        records (``session``) are excluded (H21). :meth:`auto_context` also says why a
        block is missing, so the host can warn."""
        return self.auto_context(text, session=session, owner=owner,
                                 gate_owner_text=gate_owner_text, turn=turn).text

    def auto_context(self, text: str, *, session: str | None = None, owner: bool = True,
                     gate_owner_text: bool = True, turn: str | None = None) -> AutoContext:
        """:meth:`auto_recall` with whether the block was whole: ``degraded`` with its
        ``reason`` (``lexical_only``, ``provider_unavailable``: no block, the host warns
        instead, H15; ``vectors_pending``: made from the memories that have vectors) and the
        count of memories still waiting for one. With ``memory.profile.enabled`` the owner
        profile (:meth:`profile`) comes first, for owner turns only, and stays when the
        provider fails (M8); ``profile`` holds that part. Wrap it in a
        :class:`~memory_es.host.receipts.ReceiptCache` for a retained provider session
        (M10-M12). ``turn`` opens (or continues) the host's logical turn and binds this
        lookup as its original question's (G34), until :meth:`end_turn`."""
        return self.reads.auto_recall(text, session=session, owner=owner,
                                      gate_owner_text=gate_owner_text, turn=turn)

    def profile(self) -> Profile:
        """The owner profile (M3-M7): whole entries of owner-stated facts and agent-scope
        preferences, current and open, newest day first, within 600 code points and
        ``memory.maxBytes``. Read-only; computed even when ``memory.profile.enabled`` is off
        (``enabled`` says whether :meth:`auto_context` carries it)."""
        return self.reads.profile()

    def journal(self, from_date: str, through_date: str, time_zone: str,
                limit: int = 10) -> JournalPage:
        """MemoryJournal (I*): memories recorded between two inclusive civil dates in an
        explicit IANA zone, from a frozen snapshot; continue with :meth:`journal_continue`."""
        return self.reads.journal(from_date, through_date, time_zone, limit)

    def journal_continue(self, cursor: str) -> JournalPage:
        """The page a MemoryJournal cursor names. The cursor is signed with the root's key,
        so one from any handle or process on this root works; from the frozen snapshot on the
        handle that issued it, else only while the range is unchanged
        (``journal_cursor_stale``); an altered or foreign cursor is ``journal_cursor_invalid``."""
        return self.reads.journal_continue(cursor)

    def search(self, query: str, limit: int = 5, *, explain: bool = False,
               as_of: datetime | str | None = None, kind: str | None = None,
               about: str | None = None) -> RecallResult:
        """The reference's ``memory search``: hybrid recall, exactly :meth:`recall` (one
        meaning for "search" on every door, the CLI's included)."""
        return self.recall(query, limit, explain=explain, as_of=as_of, kind=kind, about=about)

    def lexical_search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """Raw FTS5 hits of the active index ranked by bm25, without vectors or scoring
        (diagnostics)."""
        return self.reads.lexical_search(query, limit)

    def list_memories(self, *, status: str | None = None,
                      since: str | date | datetime | None = None,
                      limit: int = LIST_DEFAULT_LIMIT, cursor: str | None = None) -> MemoryList:
        """Stored memories, newest first (``memory-es list``; :meth:`MemoryRoot.list_memories`
        documents the arguments). Content-bearing: ``inspect`` stays content-free."""
        return self.reads.list_memories(status=status, since=since, limit=limit,
                                        cursor=cursor)

    def show(self, memory_id: str) -> MemoryDetail:
        """Everything stored about one memory (``memory-es show``; :meth:`MemoryRoot.show`)."""
        return self.reads.show(memory_id, self._opened)

    # -- operators (C1-C4, C8) ------------------------------------------------------------------

    def rebuild(self) -> RebuildReport:
        """Replay the journal into a new index generation and matching Markdown (D10, C8)."""
        with self.journal_writer.exclusive():
            report = self.projections.rebuild(before_activate=self.vectors.fill)
            self.vectors.forget_matrix()
        return msgspec.structs.replace(report, vectors_pending=self.vector_backlog())

    def consolidate(self) -> ConsolidationSummary:
        """Refresh the living ``index.md`` now (``memory-es consolidate``; L6-L9, D13): catch
        the projections up, then re-render the file from the index. Projection-only: no model
        call, nothing written to the journal or the index. The flush already refreshes it after
        every pass that changed the graph or the lines; this is the on-demand run. Lite and
        Journal keep no ``index.md`` (D14): there it does nothing, and ``tier`` says so."""
        with self.journal_writer.exclusive():
            self.projections.catch_up()
            summary = self.projections.get().consolidate()
        return msgspec.structs.replace(summary, tier=self.config.mode)

    def inspect(self, intake_id: str | None = None) -> IntakeReport:
        """Content-free intake report (C1, C2): counts, and the unresolved records (or the one
        asked for, resolved or not), with the vector backlog and whether this handle's
        worker runs. ``memory-es inspect`` lists resolved ones too. On a shared journal,
        every host's intakes."""
        self.journal_writer.catch_up()
        report = self.attempts.inspect(intake_id)
        try:
            backlog = self.vector_backlog()
        except MemoryEsError:  # a broken index must not hide the intakes
            backlog = None
        return msgspec.structs.replace(report, vectors_pending=backlog,
                                       worker=self.worker_status())

    def worker_status(self) -> str:
        """``running``; ``stalled`` when this handle's worker thread is gone; ``not_running``
        for a handle opened without ``background`` (work runs only on :meth:`drain`)."""
        if self._worker is None:
            return "not_running"
        return "running" if self._worker.live_state() == "running" else "stalled"

    def retry(self, intake_id: str | None = None) -> list[str]:
        """Give dead or delayed intakes (one, or all) a fresh 16-attempt budget, due now."""
        ids = self.attempts.retry(None if intake_id is None else check_intake_id(intake_id))
        self.kick()
        return ids

    def resolve(self, intake_id: str, reason_slug: str) -> None:
        """Record ``operator_resolved``: loss-accepting, duplicate protection kept (C4)."""
        self.attempts.resolve(check_intake_id(intake_id), reason_slug)
        self.project()

    def forget(self, memory_id: str | Sequence[str], *, reason: str, dry_run: bool = False,
               show_text: bool = False) -> ForgetReceipt:
        """Erase a memory (or several) everywhere: a content-free
        ``Forgotten`` event, its record keys destroyed (and those of the turns that state it),
        every projection rewritten; returns the deletion receipt. ``dry_run`` lists what would
        go (texts only with ``show_text``); unknown id: ``memory_not_found``; forgetting again:
        ``already_forgotten``."""
        ids = [memory_id] if isinstance(memory_id, str) else list(memory_id)
        with self.attempts.work_lock:  # no capture reconciles against a line being erased
            return self._forgot(self._forgetter.forget(
                reason=reason, now=self._clock(), memory_ids=ids, dry_run=dry_run,
                show_text=show_text))

    def forget_turn(self, run_id: str, *, reason: str, dry_run: bool = False,
                    show_text: bool = False) -> ForgetReceipt:
        """Erase a turn's content and every memory derived from it that no other live turn
        supports; ``turn_not_found``; ``turn_unresolved`` (pending or dead:
        resolve it first) refused."""
        with self.attempts.work_lock:
            return self._forgot(self._forgetter.forget(
                reason=reason, now=self._clock(), run_id=run_id, dry_run=dry_run,
                show_text=show_text))

    def _forgot(self, receipt: ForgetReceipt) -> ForgetReceipt:
        """A forgotten memory's access telemetry goes with it (G30)."""
        if receipt.status == "forgotten":
            self.reads.forget_access(receipt.memory_ids)
        return receipt

    def forget_matching(self, query: str, *, reason: str, dry_run: bool = True,
                        limit: int = 20) -> ForgetReceipt:
        """Forget what a lexical search for ``query`` finds (at most ``limit`` lines). A dry
        run by default: the receipt lists the ids and texts (the owner's own search); call
        again with ``dry_run=False`` to erase them. ``memory_not_found`` when nothing
        matches."""
        ids = [hit.id for hit in self.lexical_search(query, limit)]
        if not ids:
            raise MemoryEsError("memory_not_found: no stored memory matches the query",
                                code="memory_not_found")
        return self.forget(ids, reason=reason, dry_run=dry_run, show_text=dry_run)

    def events(self) -> Iterator[tuple[int, str, int, str, bytes, bytes]]:
        """Every journal row in order (position, originator, version, topic, state, chain)."""
        return self._opened.recorder.rows()
