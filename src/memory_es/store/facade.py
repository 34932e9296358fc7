"""MemoryStore: the embeddable facade a host opens once and hands every completed turn.

Admission is the only thing on the host's answer path: validate, then append one Intake
event in a transaction that is fsynced before the call returns (B1). Everything else is done
by the collaborators this class wires together: group commit (``admission``), the attempt
runner and operator transitions (``attempts``), the live projections (``projecting``), vector
upkeep (``vectors``), the read path (``reading``) and the background work the worker drives
(``background``): a host reads the whole surface here, and none of it is a worker hook.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING, Any

import msgspec

from memory_es.bounds import check_intake_id, check_seconds
from memory_es.browse.curation import check_bujo
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.events import SEALED_FIELDS
from memory_es.history import fold_intakes, journal_guard
from memory_es.ids import entity_uuid, intake_uuid
from memory_es.intake import AdmissionResult, CompletedTurn, IntakeReport, utc_now
from memory_es.journal import DEFAULT_LOCK_TIMEOUT, OpenedJournal, open_journal
from memory_es.observe import ObserveProcessor
from memory_es.rootconfig import effective, journal_of, migration_pending, resolve_root
from memory_es.store.admission import GroupCommit
from memory_es.store.attempts import Attempts
from memory_es.store.background import Background
from memory_es.store.control import ControlServer
from memory_es.store.curation import Decision, check_decision, decide
from memory_es.store.forgetting import ForgetReceipt, Forgetter, complete_forgets
from memory_es.store.lifecycle import MarkResult, StatusResult, set_insight, set_status
from memory_es.store.projecting import LiveProjections
from memory_es.store.remembering import RememberResult, RememberTerms, remember
from memory_es.store.vectors import Vectors
from memory_es.validity import host_time_zone
from memory_es.vocabulary import LIST_DEFAULT_LIMIT
from projections.replay import DERIVED_ENTRIES, RebuildReport
from projections.search import SearchHit, status_of

if TYPE_CHECKING:
    from pathlib import Path

    from memory_es.browse.inventory import MemoryDetail, MemoryList
    from memory_es.browse.journal_page import JournalPage
    from memory_es.browse.journal_request import JournalFilter
    from memory_es.capture.models import ChatModel
    from memory_es.config import MemoryConfig
    from memory_es.embeddings import Embedder
    from memory_es.intake.admission import PreparedIntake
    from memory_es.keystore import KeyStore
    from memory_es.recall import AutoContext, RecallResult
    from memory_es.recall.sections.profile import Profile
    from memory_es.step import Processor
    from memory_es.store.access import AccessStat
    from memory_es.store.reading import StoreReads
    from projections.consolidation import ConsolidationSummary

log = logging.getLogger("memory_es")

DEFAULT_SHUTDOWN_TIMEOUT = 10.0  # B22

Clock = Callable[[], datetime]


class MemoryStore:
    """A writable memory root, held exclusively for the store's lifetime (B23, C16).

    Open with :meth:`open`; use as a context manager or call :meth:`close`.
    """

    def __init__(
        self, opened: OpenedJournal, config: MemoryConfig, clock: Clock, *,
        background: bool, processor: Processor | None, shutdown_timeout: float,
        embedder: Embedder | None = None, chat_model: ChatModel | None = None,
        classifier: ChatModel | None = None, time_zone: tzinfo | None = None,
        control: bool = False,
    ) -> None:
        self.config = config
        self.time_zone = time_zone
        self.root = opened.root
        self._opened = opened
        self._clock = clock
        self._shutdown_timeout = shutdown_timeout
        self._reads: StoreReads | None = None
        self._reads_lock = threading.Lock()
        if processor is None and config.is_capture:  # imported here: a heavy module
            from memory_es.capture.pipeline import capture_processor

            processor = capture_processor(config, chat_model, classifier)
        if processor is None:
            processor = ObserveProcessor()
        self.journal_writer = GroupCommit(opened, fold_intakes(opened, retain_resolved=False),
                                          self.root)
        self.journal_writer.settle_config(config, clock())
        complete_forgets(opened, self.root)  # a forget a kill interrupted: keys first
        self.projections = LiveProjections(opened, self.root, config.mode, self.journal_writer)
        self.projections.start()
        self.vectors = Vectors(config, self.root, embedder, self.journal_writer,
                               self.projections)
        self.attempts = Attempts(opened, self.journal_writer, self.projections, self.vectors,
                                 processor, clock)
        self.attempts.prune_payloads()
        self._forgetter = Forgetter(opened, self.journal_writer, self.projections, self.root,
                                    self.vectors.rows_removed)
        self.background = Background(self.root, self.journal_writer, self.attempts,
                                     self.projections, self.vectors, clock)
        self._control = self._serve_control() if control else None
        if background:
            self.background.start()

    @property
    def reads(self) -> StoreReads:
        """Recall, browsing and the journal reads, built on first use: a command that only
        writes (``admit``, ``remember``) never imports the recall engine."""
        with self._reads_lock:
            if self._reads is None:
                from memory_es.store.reading import StoreReads

                self._reads = StoreReads(self.config, self.journal_writer, self.projections,
                                         self.vectors, self._clock, self.root, self.time_zone)
            return self._reads

    @classmethod
    def open(
        cls, root: str | Path | None = None, config: MemoryConfig | None = None, *,
        clock: Clock = utc_now, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        background: bool = True, processor: Processor | None = None,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT, embedder: Embedder | None = None,
        chat_model: ChatModel | None = None, classifier: ChatModel | None = None,
        create: bool = True, key_store: str | Path | KeyStore | None = None,
        time_zone: str | tzinfo | None = None, control: bool | None = None,
        migrating: bool = False,
    ) -> MemoryStore:
        """Open (``create``: or create) the root, take its writer lock, verify its journal.

        ``config`` None: the root's recorded one; a change is recorded, or refused when it
        would strand retained capture plans (B26). ``background`` runs the worker (B6), else
        work runs on :meth:`drain`; ``shutdown_timeout`` bounds :meth:`close` (B22); the
        model arguments override the configured providers (D2, E31); ``key_store`` keeps the
        chain key; ``time_zone`` is the zone validity ends are read in (G15); ``control``
        (default: with ``background``) serves the control socket, so the CLI's writes reach
        this store while it holds the root (:mod:`memory_es.control`). A root whose
        ``migrate`` was cut short opens only for ``migrate`` itself (``migrating``, F13):
        ``migration_pending`` otherwise."""
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
            if not migrating and migration_pending(opened):
                raise MemoryEsError("migration_pending: a migrate of this root was cut short; "
                                    "finish it with memory-es migrate --config BUJO.json --yes "
                                    "or retire it with memory-es migrate --abort (F13)",
                                    code="migration_pending")
            config = effective(opened, config)
            return cls(opened, config, clock, background=background, processor=processor,
                       shutdown_timeout=shutdown_timeout, embedder=embedder,
                       chat_model=chat_model, classifier=classifier, time_zone=zone,
                       control=background if control is None else control)
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
        if self._control is not None:
            self._control.close()
            self._control = None
        self.background.stop(self._shutdown_timeout if timeout is None else timeout)
        if not self.journal_writer.close():
            return
        try:  # after a projection pass or vector write in flight (the worker's own hold)
            with self.journal_writer.projection_lock:
                if self._reads is not None:
                    self._reads.close()
                self.projections.close()
                self.vectors.close()
        finally:
            self._opened.close()

    def _serve_control(self) -> ControlServer | None:
        """The control socket, or None (logged) when the system will not give one: the store
        works without it, the CLI then waits for the writer lock as before."""
        try:
            return ControlServer(self, self.root, self._shutdown_timeout)
        except (OSError, MemoryEsError) as e:  # a runtime folder that is not ours, say
            log.warning("memory_es: no control socket for %s (%s): the CLI cannot write "
                        "beside this store", self.root, e)
            return None

    # -- admission ----------------------------------------------------------------------------

    def persist_completed_turn(self, turn: CompletedTurn) -> AdmissionResult:
        """Durably and idempotently admit one completed turn (A3, A4, B1-B5, B18, B27). Never
        raises: the result says what happened; a rejection logs ``memory_degraded`` (B4)."""
        try:
            result = self.journal_writer.admit_turn(turn, self.config, self._clock)
        except Exception as e:  # B4: the host's answer path must never see an exception
            log.exception("memory_es admission failed unexpectedly")
            result = AdmissionResult(status="rejected", code="internal_error",
                                     detail=type(e).__name__)
        if result.status == "admitted":
            if self._reads is not None:  # an in-turn write: the turns' lookups are stale
                self._reads.written()      # (G34); no reads yet, no lookups to clear
            self.background.kick()  # attempt 1 runs at admission, off the caller's path
        if result.status == "rejected":
            log.warning(
                "memory_degraded: turn not saved (code=%s, intake_id=%s)",
                result.code, result.intake_id,
                extra={"memory_event": "memory_degraded", "code": result.code,
                       "intake_id": result.intake_id},
            )
        return result

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

    # -- work in the foreground (the worker's side: store.background) -------------------------

    def drain(self, timeout: float | None = None, *, embed: bool = True) -> int:
        """Run every due intake now, then (``embed``) embed what waits for a vector, so recall
        is whole afterwards; returns the attempts made. ``timeout`` bounds it (D9)."""
        return self.background.drain(timeout, embed=embed)

    def project(self) -> None:
        """Catch the projections up with the journal now (the CLI's ``admit`` leaves the index
        at the journal head); logged, never raised (B21)."""
        self.background.project()

    def vector_backlog(self) -> int | None:
        """Live memories still waiting for a vector (D9); None when nothing is embedded."""
        return self.vectors.backlog()

    # -- writing (J*, K14) ----------------------------------------------------------------------

    def remember(self, text: str, *, about: str | None = None, supersedes: str | None = None,
                 replaceable: bool = False, valid_from: str | date | datetime | None = None,
                 valid_to: str | date | datetime | None = None,
                 due_at: str | date | datetime | None = None,
                 session: str | None = None) -> RememberResult:
        """Store one stated fact, recallable when this returns (J1); a repeat is a
        ``duplicate`` (J4), a credential refused (J5); the terms are BuJo's (J6-J10, G13)."""
        if not self.config.remember_tool.enabled:  # J2
            raise MemoryEsError("remember_disabled: memory.rememberTool.enabled is false",
                                code="remember_disabled")
        terms = RememberTerms.checked(about=about, supersedes=supersedes,
                                      replaceable=replaceable, valid_from=valid_from,
                                      valid_to=valid_to, due_at=due_at)
        result = remember(self._opened, self.journal_writer, self.projections, text,
                          session=session, tier=self.config.mode, now=self._clock(),
                          terms=terms)
        if result.status == "remembered" and self._reads is not None:
            self._reads.written()  # J13: the turns' cached searches are stale
        self.background.kick()  # the worker embeds the new line
        return result

    def set_status(self, memory_id: str, status: str, *,
                   reason: str | None = None) -> StatusResult:
        """Move a live line through the lifecycle, projected before this returns (K14)."""
        result = set_status(self._opened, self.journal_writer, self.projections, memory_id,
                            status, reason=reason, now=self._clock())
        self.background.kick()
        return result

    def curate(self, memory_id: str, decision: str, *, kind: str | None = None) -> Decision:
        """One reviewed decision of the curate audit (C14): ``keep``, ``drop``, ``undate`` or
        ``retype`` (``kind`` note, task or event), written through the lifecycle events with
        its content-free record, projected before this returns. BuJo only."""
        check_decision(decision, kind)
        check_bujo(self.config.mode)
        result = decide(self._opened, self.journal_writer, self.projections, memory_id,
                        decision, kind=kind, now=self._clock(), tz=self.time_zone)
        self.background.kick()
        return result

    def mark(self, memory_id: str, *, insight: bool) -> MarkResult:
        """Set or clear a line's insight marker (K14, H6; a ranking tie-breaker, G8)."""
        return set_insight(self._opened, self.journal_writer, self.projections, memory_id,
                           insight, now=self._clock())

    # -- reading (G*, H*, I*, M*): store/reading.py -------------------------------------------

    def recall(self, query: str | None = None, limit: int = 10, *, explain: bool = False,
               as_of: datetime | str | None = None, kind: str | None = None,
               about: str | None = None, turn: str | None = None,
               use_original_query: bool = False) -> RecallResult:
        """Hybrid MemoryRecall (G*), lexical-only and ``degraded`` on a provider outage;
        ``as_of`` reads the past, ``kind``/``about`` narrow it (G26-G28), ``turn`` and
        ``use_original_query`` share the host turn's lookups (G19, G30, G34, G35)."""
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
        """Turn cleanup (G34): the turn's lookups go; True when the turn was open."""
        return self.reads.end_turn(turn)

    def access_stats(self, ids: Sequence[str]) -> dict[str, AccessStat]:
        """Access telemetry of these ids (G30): last access and count; never ranking (G9)."""
        return self.reads.access_stats(ids)

    def auto_recall(self, text: str, *, session: str | None = None, owner: bool = True,
                    gate_owner_text: bool = True, turn: str | None = None) -> str:
        """The automatic "possibly relevant" block for a turn, or "" (H1-H22);
        :meth:`auto_context` also says why a block is missing."""
        return self.auto_context(text, session=session, owner=owner,
                                 gate_owner_text=gate_owner_text, turn=turn).text

    def auto_context(self, text: str, *, session: str | None = None, owner: bool = True,
                     gate_owner_text: bool = True, turn: str | None = None) -> AutoContext:
        """:meth:`auto_recall` with whether the block was whole, so the host can warn (H15),
        the owner profile first (M8); ``turn`` binds the turn's original question (G34)."""
        return self.reads.auto_recall(text, session=session, owner=owner,
                                      gate_owner_text=gate_owner_text, turn=turn)

    def profile(self) -> Profile:
        """The owner profile (M3-M7), read-only, even with ``memory.profile.enabled`` off."""
        return self.reads.profile()

    def journal(self, from_date: str, through_date: str, time_zone: str,
                limit: int = 10, *, filters: JournalFilter | None = None) -> JournalPage:
        """MemoryJournal (I*): memories recorded between two civil dates in an IANA zone,
        narrowed by ``filters`` (status, type, session, currentness) when given."""
        return self.reads.journal(from_date, through_date, time_zone, limit, filters)

    def journal_continue(self, cursor: str) -> JournalPage:
        """The page a signed MemoryJournal cursor names, from any handle on this root (I*)."""
        return self.reads.journal_continue(cursor)

    def search(self, query: str, limit: int = 5, *, explain: bool = False,
               as_of: datetime | str | None = None, kind: str | None = None,
               about: str | None = None) -> RecallResult:
        """Exactly :meth:`recall`: "search" means hybrid on every door, the CLI's included."""
        return self.recall(query, limit, explain=explain, as_of=as_of, kind=kind, about=about)

    def lexical_search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """Raw FTS5 hits of the active index by bm25, without vectors (diagnostics)."""
        return self.reads.lexical_search(query, limit)

    def list_memories(self, *, status: str | None = None,
                      since: str | date | datetime | None = None,
                      limit: int = LIST_DEFAULT_LIMIT, cursor: str | None = None) -> MemoryList:
        """Stored memories, newest first (``memory-es list``; :meth:`MemoryRoot.list_memories`)."""
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

    def admitted_hash(self, intake_id: str) -> str | None:
        """The content digest the turn of this intake id (the SHA-256 of its run id) was
        admitted with, resolved or not ("" once forgotten); None: no such turn."""
        return self._opened.recorder.admitted_content_hash(intake_uuid(intake_id))

    def status_of(self, memory_id: str) -> str | None:
        """A line's status in the index, caught up (None: no such line)."""
        with self.journal_writer.exclusive():
            self.projections.catch_up()
            return status_of(self.projections.get().index.conn, memory_id)

    def entity_events(self, entity_id: str) -> int:
        """How many events an entity has in the journal (0: none)."""
        return len(self._opened.recorder.aggregate_rows(entity_uuid(entity_id)))

    def active_turns(self) -> int:
        """Pending and dead turns, the bound admission keeps (B18)."""
        with self.journal_writer.cv:
            return self.journal_writer.view.active

    def commit_imported(self, events: Sequence[Any]) -> None:
        """Commit another store's lines and their receipt in one transaction and project
        them before returning (C6)."""
        with self.journal_writer.exclusive():
            self.journal_writer.commit_held(events)
            self.projections.catch_up()

    def admit_imported(self, items: Sequence[tuple[PreparedIntake, datetime]],
                       receipt: Callable[[list[AdmissionResult]], Sequence[Any]]
                       ) -> list[AdmissionResult]:
        """Admit turns another source recorded, each stamped with the source's own time,
        and the receipt ``receipt`` makes of their results, in one transaction (C6)."""
        writer = self.journal_writer
        return writer.admit_together(
            [(p, p.admitted(at, sealed=writer.seals)) for p, at in items], receipt)

    def consolidate(self) -> ConsolidationSummary:
        """Refresh BuJo's living ``index.md`` now (L6-L9, D13, D14); no model call."""
        with self.journal_writer.exclusive():
            self.projections.catch_up()
            summary = self.projections.get().consolidate()
        return msgspec.structs.replace(summary, tier=self.config.mode)

    def inspect(self, intake_id: str | None = None) -> IntakeReport:
        """Content-free intake report (C1, C2): counts, unresolved records (or the one asked
        for), the vector backlog and the worker's state."""
        self.journal_writer.catch_up()
        report = self.attempts.inspect(intake_id)
        try:
            backlog = self.vector_backlog()
        except MemoryEsError:  # a broken index must not hide the intakes
            backlog = None
        return msgspec.structs.replace(report, vectors_pending=backlog,
                                       worker=self.worker_status())

    def worker_status(self) -> str:
        """``running``, ``stalled`` (the worker thread is gone) or ``not_running``."""
        return self.background.status()

    def retry(self, intake_id: str | None = None) -> list[str]:
        """Give dead or delayed intakes (one, or all) a fresh 16-attempt budget, due now (C3)."""
        ids = self.attempts.retry(None if intake_id is None else check_intake_id(intake_id))
        self.background.kick()
        return ids

    def resolve(self, intake_id: str, reason_slug: str) -> None:
        """Record ``operator_resolved``: loss-accepting, duplicate protection kept (C4)."""
        self.attempts.resolve(check_intake_id(intake_id), reason_slug)
        self.project()

    def forget(self, memory_id: str | Sequence[str], *, reason: str, dry_run: bool = False,
               show_text: bool = False) -> ForgetReceipt:
        """Erase memories everywhere, journal included, and return the receipt; ``dry_run``
        lists what would go (texts only with ``show_text``)."""
        ids = [memory_id] if isinstance(memory_id, str) else list(memory_id)
        return self._forget(reason, dry_run, show_text, memory_ids=ids)

    def forget_turn(self, run_id: str, *, reason: str, dry_run: bool = False,
                    show_text: bool = False) -> ForgetReceipt:
        """Erase a resolved turn's content and the memories only it supports."""
        return self._forget(reason, dry_run, show_text, run_id=run_id)

    def _forget(self, reason: str, dry_run: bool, show_text: bool, *,
                memory_ids: Sequence[str] = (), run_id: str | None = None) -> ForgetReceipt:
        """Under the work lock (no capture reconciles against a line being erased); a
        forgotten memory's access telemetry goes with it (G30)."""
        with self.attempts.work_lock:
            receipt = self._forgetter.forget(reason=reason, now=self._clock(),
                                             memory_ids=memory_ids, run_id=run_id,
                                             dry_run=dry_run, show_text=show_text)
            if receipt.status == "forgotten":
                self.reads.forget_access(receipt.memory_ids)
            return receipt

    def forget_matching(self, query: str, *, reason: str, dry_run: bool = True,
                        limit: int = 20) -> ForgetReceipt:
        """Forget what a lexical search finds; a dry run listing it unless ``dry_run=False``."""
        ids = [hit.id for hit in self.lexical_search(query, limit)]
        if not ids:
            raise MemoryEsError("memory_not_found: no stored memory matches the query",
                                code="memory_not_found")
        return self.forget(ids, reason=reason, dry_run=dry_run, show_text=dry_run)

    def events(self) -> Iterator[tuple[int, str, int, str, bytes, bytes]]:
        """Every journal row in order (position, originator, version, topic, state, chain)."""
        return self._opened.recorder.rows()
