"""MemoryRoot: the read-only door to a memory root. It takes no lock and changes nothing
(C1, C2, C5, C9), so it is safe while an agent holds the root.

Every call opens the journal read-only and verifies its chain first (a tampered root is never
served), then reads one consistent snapshot: the journal in one SQLite read transaction, the
active index generation opened read-only. A read of the index (search, list, the journal,
the profile) recomputes only the links after the writer's verified checkpoint
(:mod:`memory_es.journal.checkpoint`); health, export and the event reads verify them all.
MemoryJournal snapshots (I*) live as long as the handle; its cursors work on any handle of the
same root (signed with the root's cursor key, the one file a reader may create:
``.runtime/journal-cursor.key``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, date, datetime, tzinfo
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import apsw
import msgspec

from memory_es.config.defaults import DEFAULT_MODE, DEFAULT_PATH
from memory_es.embeddings import (
    LOCAL_DIMS,
    Embedder,
    EmbeddingIdentity,
    configured_identity,
    local_embedder,
    local_identity,
    make_embedder,
)
from memory_es.errors import (
    IndexUnavailableError,
    MemoryEsError,
    storage_error,
    storage_kind,
)
from memory_es.fsutil import fsync_dir, private_temp
from memory_es.history import (
    KeptIntakes,
    check_sealed,
    checked_payload,
    export_lines,
    fold_intakes,
    forget_findings,
    iter_events,
    journal_guard,
    open_reader,
    sealed_findings,
    verified_journal_and_index,
)
from memory_es.journal import (
    JOURNAL_FILE,
    MARKER_FILE,
    Anchor,
    JournalRecorder,
    OpenedJournal,
    anchor_problems,
    make_anchor,
    open_journal,
)
from memory_es.keystore import KeyStore
from memory_es.progress import position, tracked
from memory_es.recall import Recall, Recaller, RecallResult
from memory_es.recall.as_of import AsOfState, AsOfStates, check_as_of
from memory_es.recall.asking import check_ask, check_limit, check_query, unavailable
from memory_es.recall.sections.profile import Profile
from memory_es.recall.setup import ReadSetup
from memory_es.rootconfig import RootConfig, journal_of, migration_pending, recorded
from memory_es.text import utc_now
from memory_es.validity import host_time_zone
from memory_es.vectors.ann import ann_paths, saved_state
from memory_es.vectors.kept import KeptMatrix
from memory_es.vectors.matrix import VectorMatrix
from memory_es.vectors.pending import embeddings_block, fill_read_only, vector_backlog
from memory_es.vocabulary import LIST_DEFAULT_LIMIT, REFLECT_SOON_DAYS
from projections.derived import unreadable
from projections.findings import Finding, HealthReport, with_findings
from projections.search import SearchHit, fts_search

if TYPE_CHECKING:  # what only some reads need is imported by them, on use
    from memory_es.browse.curation import CurateAudit
    from memory_es.browse.inventory import MemoryDetail, MemoryItem, MemoryList
    from memory_es.browse.journal import MemoryJournal
    from memory_es.browse.journal_page import JournalPage
    from memory_es.browse.journal_request import JournalFilter
    from memory_es.browse.reflect import Reflection
    from memory_es.calibration.report import CalibrationReport
    from memory_es.config import MemoryConfig
    from memory_es.intake import IntakeCounts, IntakeReport, IntakeView
    from memory_es.intake.report import ForgetLog
    from memory_es.store.access import AccessStat
    from memory_es.worker import WorkerSnapshot
    from projections.sqlite_index import IndexProjection

log = logging.getLogger("memory_es")


class MemoryRoot:
    """A read-only handle on ``root`` configured by ``config`` (defaults when None)."""

    def __init__(self, root: Path, config: MemoryConfig | None,
                 key_store: KeyStore | None = None, time_zone: tzinfo | None = None) -> None:
        self.root = root
        self.time_zone = time_zone
        self._config = config
        self._record: RootConfig | None = None  # what the root recorded, once read
        self._record_read = config is not None  # a given config is never replaced
        self._keys = KeyStore.resolve(key_store)
        self._journal = journal_of(config)
        self._chronology: MemoryJournal | None = None  # the journal's snapshots, on use
        self._bound: Recaller | None = None
        self._as_of = AsOfStates()
        self._vectors_kept = KeptMatrix()  # a long-lived handle reads each vector once
        self._intakes = KeptIntakes()  # ... and folds each intake once

    @classmethod
    def open(cls, root: str | Path | None = None,
             config: MemoryConfig | None = None, *,
             key_store: str | Path | KeyStore | None = None,
             time_zone: str | tzinfo | None = None) -> MemoryRoot:
        """A handle on ``root`` (default: ``memory.path`` of ``config``). Nothing is held open
        between calls; a root that is missing or not a memory root fails at the first call.
        ``key_store``: where the root's chain key is (default: ``$MEMORY_ES_KEY_STORE``, read
        now, else ``~/.local/state/memory-es/keys``). ``time_zone``: the host's zone that
        validity is read in (G15; default the process's)."""
        zone = host_time_zone(time_zone)
        path = Path(root) if root is not None else Path(
            config.path if config is not None else DEFAULT_PATH)
        return cls(path, config, KeyStore.resolve(key_store), zone)

    @property
    def config(self) -> MemoryConfig:
        """The config given to :meth:`open`, else the root's own recorded one (read on first
        use), else the defaults."""
        if self._config is None:
            from memory_es.config import MemoryConfig  # pydantic: only when asked for

            found = self._recorded()
            self._config = found.config() if found is not None else MemoryConfig()
        return self._config

    def root_id(self) -> str | None:
        """The root's id in the key store (None: a schema-1 root with no keyed chain), from a
        verified read of its journal."""
        with open_reader(self.root, self._keys, self._journal, checkpoint=True) as opened:
            return opened.chain.root_id

    def _note_record(self, opened: OpenedJournal) -> None:
        """Keep what the root recorded, from a journal a read has just verified (one pass)."""
        if not self._record_read:
            found = recorded(opened)
            self._record = found[1] if found is not None else None
            self._record_read = True

    def _recorded(self) -> RootConfig | None:
        """The root's recorded configuration (None: none recorded, or a config was given),
        from a read that verifies every link unless an index read already took it in."""
        if not self._record_read:
            with self.reader() as opened:
                self._note_record(opened)
        return self._record

    def _as_recorded(self) -> tuple[ReadSetup, str | None] | None:
        """Recall's settings and local model straight from the record, when no config was
        given and the record names no embeddings or the local provider's (which need no
        endpoint or key): a reading command then never builds the pydantic model. None:
        read them from :attr:`config`."""
        if self._config is not None:
            return None
        found = self._recorded()
        if found is None:
            return ReadSetup.recorded(DEFAULT_MODE), None  # the defaults (Lite never embeds)
        kept = found.embeddings
        if kept is None or found.tier == "lite":
            return ReadSetup.recorded(found.tier), None
        if kept.get("provider") != "local" or kept.get("model") not in LOCAL_DIMS:
            return None
        return ReadSetup.recorded(found.tier), str(kept["model"])

    def __enter__(self) -> MemoryRoot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Forget the journal snapshots (their cursors still work while the range is
        unchanged: any handle reads it again)."""
        self._chronology = None
        self._as_of.close()

    # -- the journal ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def reader(self) -> Iterator[OpenedJournal]:
        """The verified, read-only journal for the span of one read."""
        with open_reader(self.root, self._keys, self._journal) as opened:
            yield opened

    def inspect(self, intake_id: str | None = None) -> IntakeReport:
        """Content-free intake report: ``counts`` and ``records``, resolved ones too (C1, C2).
        A handle folds every intake once and then only what the journal appended since
        (:class:`~memory_es.history.KeptIntakes`)."""
        from memory_es.worker import worker_status

        with self._folded() as view:
            report = view.report(utc_now(), intake_id)
        return msgspec.structs.replace(report, vectors_pending=self.vector_backlog(),
                                       worker=worker_status(self.root))

    def forgets(self) -> ForgetLog:
        """Content-free forget receipts as the journal records them: how many, and the latest
        50 (memory or turn id, instant, reason, keys destroyed), newest first."""
        with self._folded() as view:
            return view.forget_log()

    def worker_snapshot(self) -> WorkerSnapshot:
        """What the background worker last published (``.runtime/snapshot.json``, content-free)
        beside whether one looks after this root now."""
        from memory_es.worker import read_worker

        return read_worker(self.root)

    def intake_counts(self) -> IntakeCounts:
        """:meth:`inspect`'s counts alone: no record listed (the web inspector's health page;
        on a large root the records are most of an inspect's cost)."""
        with self._folded() as view:
            return view.counts(utc_now())

    @contextlib.contextmanager
    def _folded(self) -> Iterator[IntakeView]:
        """The intake fold carried forward to the journal's head, for the span of one read
        (the next read's fold moves it on)."""
        # applied=None: the fold opens no sealed field, so no forgotten record's key needs
        # withholding (the scan for unfinished forgets reads every event's topic)
        with self._intakes.lock, open_reader(self.root, self._keys, self._journal,
                                             checkpoint=True, applied=None) as opened:
            yield self._intakes.fold(opened)

    def vector_backlog(self) -> int | None:
        """Live memories of the active index without a vector of the configured embedding
        identity (found lexically until embedded, D9); None when this config never embeds."""
        return self._vectors()[0]

    def ann_index(self) -> str | None:
        """The active generation's saved ANN index for the configured identity:
        "absent", "current", "stale" or "invalid"; None when this config never embeds."""
        return self._vectors(ann=True)[1]

    def _vectors(self, *, ann: bool = False,
                 whole_chain: bool = False) -> tuple[int | None, str | None]:
        """(vector backlog, the saved ANN index's state when ``ann``) from one verified read:
        health wants both (``whole_chain``: every link verified, as health does)."""
        identity = self._identity()
        if identity is None:
            return None, None
        with self._index(whole_chain=whole_chain) as conn:
            if conn is None:
                return 0, "absent" if ann else None
            backlog = vector_backlog(conn, identity.key)
            if not ann:
                return backlog, None
            files = ann_paths(Path(conn.filename).parent, identity.key)
            if not any(f.exists() for f in files):
                return backlog, "absent"
            matrix = VectorMatrix(identity.dim, identity.key)
            matrix.refresh(conn, identity.key)
            return backlog, saved_state(*files, identity.dim, matrix.rowids, matrix.matrix)

    def _identity(self) -> EmbeddingIdentity | None:
        """The configured embedding identity (None: this config never embeds), from the
        record when it names the local model, as :meth:`_recaller` reads it: counting a
        backlog (inspect, health) then never builds the pydantic model either."""
        light = self._as_recorded()
        if light is not None:
            return local_identity(light[1]) if light[1] is not None else None
        block = embeddings_block(self.config)
        return configured_identity(block) if block is not None else None

    def events(self) -> list[tuple[int, Any]]:
        """Every decoded event with its journal position, in order."""
        with self.reader() as opened:
            return list(iter_events(opened))

    def export(self, out: IO[bytes]) -> int:
        """Write the canonical JSONL export to ``out``; returns the number of events."""
        count = 0
        with self.reader() as opened:
            check_sealed(opened)  # every record opens, before a byte is written
            head = opened.recorder.max_notification_id() or 0
            for line in tracked("export", export_lines(opened), head):
                out.write(line)
                count += 1
        return count

    def export_to(self, path: str | Path) -> int:
        """Export to ``path`` atomically (owner-only: an export holds every memory)."""
        target = Path(path)
        fd, tmp = private_temp(target)  # never a pre-created file
        try:
            with os.fdopen(fd, "wb") as out:
                count = self.export(out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        fsync_dir(target.parent.resolve())
        return count

    def anchor(self) -> Anchor:
        """``memory-es anchor``: the signed head of the journal (root id, position, chain,
        MAC under the root's chain key). Keep it outside the root; ``health(expect_anchor=)``
        then detects a rollback to an older copy and a swap with another root."""
        with self.reader() as opened:
            return make_anchor(opened)

    def health(self, expect_anchor: Anchor | None = None, *, deep: bool = False
               ) -> HealthReport:
        """Replay the journal into scratch and compare with the live root (N*); with the
        vector backlog and whether a worker looks after the root (neither is drift). With
        ``expect_anchor``, a journal that does not extend the anchored head is a finding
        (``anchor_root_mismatch``, ``anchor_mac_invalid``, ``anchor_rollback``,
        ``anchor_fork``). The vector cache is checked too (``vector_cache_damaged``).
        Every record key a stored event references must exist or have been destroyed by a
        forget (``record_key_missing``). ``deep`` adds what reads every byte of a large root
        once more: every live sealed field decrypted (``record_seal_invalid``: a damaged key),
        every entry of the vector cache (``vector_cache_invalid``) and a sample of stored
        vectors embedded again (``vector_mismatch``)."""
        from memory_es.vectors.health import cache_findings
        from memory_es.worker import snapshot_state, worker_status
        from projections.health import audit

        root = self.root

        def opener(path: Path) -> OpenedJournal:
            with journal_guard(path):
                return open_journal(path, writable=False, key_store=self._keys,
                                    journal=self._journal)

        def events(opened: OpenedJournal, upto: int, after: int) -> Iterator[tuple[int, Any]]:
            with journal_guard(root):
                yield from tracked("health", iter_events(opened, after=after, upto=upto,
                                                         index_only=True), upto, position)

        def checks(opened: OpenedJournal) -> Iterator[Finding]:
            with journal_guard(root):
                self._note_record(opened)  # from the journal this audit verified: one pass
                yield from _payload_findings(opened)
                for code, path, detail in forget_findings(opened, root):
                    yield Finding(code, path, detail)
                yield from _leftover_findings(root, self._keys, opened)
                for code, path, detail in sealed_findings(opened, deep=deep):
                    yield Finding(code, path, detail)
                if migration_pending(opened):  # every writer open is refused until then
                    yield Finding("migration_pending", "journal", "a migrate was cut short: "
                                  "finish it with memory-es migrate --config BUJO.json --yes, "
                                  "or retire it with memory-es migrate --abort")
                if not opened.chain.keyed:
                    yield Finding("chain_unkeyed", MARKER_FILE, "schema 1: plain SHA-256 "
                                  "chain, edits with a recomputed chain go undetected; a "
                                  "writer open keys it")
                if expect_anchor is not None:
                    for code, path, detail in anchor_problems(opened, expect_anchor):
                        yield Finding(code, path, detail)

        report = audit(root, open_journal=opener, events_upto=events, journal_checks=checks)
        if report.status == "cannot_audit":
            return report
        extra = list(cache_findings(root, deep))
        if deep:
            with contextlib.suppress(MemoryEsError, apsw.Error):  # findings say what broke
                extra += list(self._sample_findings())
        report = with_findings(report, extra)
        try:
            backlog, ann = self._vectors(ann=True, whole_chain=True)
        except (MemoryEsError, apsw.Error):  # the findings already say what is broken
            backlog = ann = None
        return msgspec.structs.replace(report, vectors_pending=backlog, ann_index=ann,
                                       worker=worker_status(self.root),
                                       runtime=snapshot_state(self.root))

    def _sample_findings(self) -> Iterator[Finding]:
        """``health --deep``: a sample of stored vectors of the configured identity against a
        fresh embedding of their texts (:func:`memory_es.vectors.health.sample_findings`)."""
        from memory_es.vectors.health import sample_findings, sampled_rows

        embedder = self._recaller().embedder
        if embedder is None:
            return
        with self._index(whole_chain=True) as conn:
            if conn is None:
                return
            rel = os.path.relpath(conn.filename, self.root)
            rows = sampled_rows(conn, embedder.identity.key)
        yield from sample_findings(rel, rows, embedder)

    # -- the index --------------------------------------------------------------------------------

    def index(self) -> contextlib.AbstractContextManager[apsw.Connection | None]:
        """The active index generation, read-only, after the journal is verified (from the
        writer's checkpoint on); None when no generation was ever activated."""
        return self._index()

    @contextlib.contextmanager
    def _index(self, *, whole_chain: bool = False) -> Iterator[apsw.Connection | None]:
        with verified_journal_and_index(self.root, self._keys, self._journal,
                                        checkpoint=not whole_chain) as (opened, conn):
            self._note_record(opened)  # from the journal this read verified: one pass
            yield conn

    def search(self, query: str, limit: int = 5, *, explain: bool = False,
               as_of: datetime | str | None = None, kind: str | None = None,
               about: str | None = None) -> RecallResult:
        """``memory-es search``: hybrid recall, exactly :meth:`recall`."""
        return self.recall(query, limit, explain=explain, as_of=as_of, kind=kind, about=about)

    def lexical_search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """Raw FTS5 hits (bm25) of the active index, without vectors or scoring."""
        check_limit(limit)
        check_query(query)
        with self.index() as conn:
            return fts_search(conn, query, limit) if conn is not None else []

    def recall(self, query: str | None = None, limit: int = 5, *, explain: bool = False,
               as_of: datetime | str | None = None, kind: str | None = None,
               about: str | None = None, turn: str | None = None,
               use_original_query: bool = False) -> RecallResult:
        """``memory-es search`` (C9): the same config-aware hybrid scoring as
        ``MemoryStore.recall``, read-only. The query is embedded with the configured provider
        (Lite: lexical only); a provider outage degrades, flagged. ``as_of`` (an aware datetime
        or an ISO instant with its offset) answers from what the journal held at that instant:
        folded in memory, nothing written; a future instant is now.
        ``kind`` and ``about`` as on the store (G26-G28); this door owns no turn, so
        ``use_original_query`` is ``recall_original_unavailable`` (G34) and ``turn`` only
        checked."""
        ask = check_ask(query, limit, kind=kind, about=about, turn=turn,
                        original=use_original_query)
        if use_original_query:
            raise unavailable("the read-only MemoryRoot owns no automatic lookup")
        if as_of is not None:
            instant, now = check_as_of(as_of), utc_now()
            return self._recaller().answer_as_of(ask, instant, now=now, fold=self._fold,
                                                 fill=self._fill, limit=limit, explain=explain)
        try:
            with self.index() as conn:  # first: no index, no embedder built, nothing embedded
                if conn is None:
                    return RecallResult(recall=Recall(hits=()), degraded=True,
                                        reason="no_index")
                with self._vectors_kept.lock:
                    return self._recaller().answer(ask, lambda: contextlib.nullcontext(conn),
                                                   now=utc_now, limit=limit, explain=explain,
                                                   matrix=self._vectors_kept)
        except (IndexUnavailableError, apsw.Error):  # truncated, corrupt, unsafe
            return RecallResult(recall=Recall(hits=()), degraded=True, reason="index_unreadable")

    def _fold(self, instant: datetime) -> AsOfState:
        """The journal's fold at ``instant``, made inside one verified read of it."""
        with self.reader() as opened:
            head = opened.recorder.max_notification_id() or 0
            return self._as_of.cached(head, instant) or self._as_of.state(
                lambda upto: iter_events(opened, upto=upto), head, instant)

    def _fill(self, index: IndexProjection) -> None:
        """Vectors for an as-of fold: the root's cache read-only, the rest from the provider
        and kept nowhere (this door writes nothing); an outage leaves them lexical (D9)."""
        embedder = self._recaller().embedder
        if embedder is not None:
            fill_read_only(self.root, index.conn, embedder)

    def _recaller(self) -> Recaller:
        """Recall bound to this handle's config and embedder, made on first use and kept:
        a local model loads once per handle, not once per query."""
        if self._bound is None:
            light = self._as_recorded()
            if light is not None:
                setup, model = light
                embedder = local_embedder(model) if model is not None else None
            else:
                setup, block = ReadSetup.of(self.config), embeddings_block(self.config)
                embedder = make_embedder(block) if block is not None else None
            self._bound = Recaller(setup, embedder, self.time_zone)
        return self._bound

    def reflect(self, day: str | date | None = None, *,
                soon: int = REFLECT_SOON_DAYS) -> Reflection:
        """The due-state report (C13) for ``day`` (an ISO date; default today) in the host's
        zone: due today, overdue, scheduled, migrated, and validity ending within ``soon``
        days or ended. A past day is read from the journal as it stood at its end."""
        from memory_es.browse.reflect import check_day, check_soon, end_of, reflect, zone_name

        zone, now = self.time_zone, datetime.now(UTC)  # None: the process's zone, per instant
        chosen, soon = check_day(day), check_soon(soon)
        today = now.astimezone(zone).date()
        chosen = chosen or today
        moment = now if chosen == today else end_of(chosen, zone)
        if chosen >= today:
            with self.index() as conn:
                return reflect(conn, chosen, zone, zone_name(zone), moment, soon=soon)
        state = self._fold(moment)
        return reflect(state.index.conn, chosen, zone, zone_name(zone), moment, soon=soon,
                       as_of=True)

    def curate_audit(self, *, everything: bool = False,
                     now: datetime | None = None) -> CurateAudit:
        """The curate audit (C14): every live line ``memory.recall.intentExpiry`` would read
        differently, with why and its content (the operator's own view), judged at ``now``
        (default: now) in the host's zone; lines already decided only with ``everything``.
        BuJo only."""
        from memory_es.browse.curation import check_bujo, curate_audit, read_decisions

        check_bujo(self.config.mode)
        with verified_journal_and_index(self.root, self._keys, self._journal) as (opened, conn):
            return curate_audit(conn, read_decisions(opened), now=now or utc_now(),
                                tz=self.time_zone,
                                everything=everything,
                                intent_expiry=self.config.recall.intent_expiry)

    def access_stats(self, ids: Sequence[str]) -> dict[str, AccessStat]:
        """The writer's access telemetry of these ids (G30), read-only; nothing when the
        root has none."""
        from memory_es.store.access import read_access

        return read_access(self.root, list(ids))

    def profile(self) -> Profile:
        """``memory-es profile`` (C11, M9): the owner profile by the same rule as the
        automatic context (:meth:`MemoryStore.profile`), read-only; empty without an index."""
        with self.index() as conn:
            return self._recaller_for_profile().profile(conn, now=utc_now())

    def _recaller_for_profile(self) -> Recaller:
        """The profile needs no vectors: a bound recaller if one exists, else one without an
        embedder (no model is loaded for a profile, M7)."""
        if self._bound is not None:
            return self._bound
        light = self._as_recorded()
        return Recaller(light[0] if light is not None else ReadSetup.of(self.config), None,
                        self.time_zone)

    def list_memories(self, *, status: str | None = None,
                      since: str | date | datetime | None = None,
                      limit: int = LIST_DEFAULT_LIMIT, cursor: str | None = None) -> MemoryList:
        """``memory-es list``: stored memories, newest first (recording instant, then id);
        ``status`` one of open, superseded, invalidated; ``since`` an ISO date (UTC midnight)
        or instant (UTC unless it has an offset), inclusive; ``limit`` 1 to 1000; ``cursor``
        the ``cursor`` of an earlier page. Content-bearing, read-only."""
        from memory_es.browse.inventory import list_memories

        with self.index() as conn:
            return list_memories(conn, status=status, since=since, limit=limit,
                                 cursor=cursor, now=utc_now(), tz=self.time_zone)

    def memories(self, ids: Sequence[str]) -> tuple[MemoryItem, ...]:
        """The stored lines with these full ids, in that order (ids of no stored line are
        left out): what a graph's entity card lists. Content-bearing, read-only."""
        from memory_es.browse.inventory import memories_by_id

        with self.index() as conn:
            return memories_by_id(conn, ids, now=utc_now(), tz=self.time_zone)

    def show(self, memory_id: str) -> MemoryDetail:
        """``memory-es show``: everything stored about one memory (a full 64-hex id or a
        unique prefix of at least 8): text, status, currentness, capture metadata,
        entities, provenance, the supersession links both ways and the journal events of
        its aggregate. ``memory_not_found`` / ``memory_id_ambiguous`` otherwise. Read from
        the writer's verified checkpoint on, each decoded event's own link checked."""
        from memory_es.browse.inventory import show_memory

        with verified_journal_and_index(self.root, self._keys, self._journal,
                                        checkpoint=True) as (opened, conn):
            return show_memory(conn, opened, memory_id, now=utc_now(), tz=self.time_zone)

    def journal(self, request: Mapping[str, Any], *,
                filters: JournalFilter | None = None) -> JournalPage:
        """MemoryJournal (I*), tool-shaped: ``fromDate``, ``throughDate``, ``timeZone`` and
        ``limit``, or exactly ``{"cursor": ...}`` from an earlier page of any handle on this root
        (``journal_cursor_stale`` when the range's memories changed since its first page).
        ``filters`` narrows a first request (status, type, session, currentness) before the
        snapshot is cut; its cursor carries them."""
        if self._chronology is None:
            from memory_es.browse.journal import MemoryJournal
            from memory_es.browse.journal_key import RootCursorKey

            self._chronology = MemoryJournal(RootCursorKey(self.root))
        chronology = self._chronology
        with self.index() as conn:
            if conn is None:
                raise MemoryEsError("journal_unavailable: no index generation yet (run drain)",
                                    code="journal_unavailable")
            try:
                return chronology.call(conn, request, filters)
            except MemoryEsError as e:
                # The tool's generic journal_unavailable hides SQLite's error (I14); here a
                # generation SQLite cannot read is index_unreadable, as everywhere else
                #.
                cause = e.__cause__
                if e.code != "journal_unavailable" or not isinstance(cause, apsw.Error):
                    raise
                if storage_kind(cause) == "corrupt":
                    raise unreadable(Path(conn.filename), cause) from cause
                raise storage_error(cause, conn.filename, what="index",
                                    corrupt_code="index_unreadable") or e from cause

    def calibrate(self, labelled: str | Path, *,
                  embedder: Embedder | None = None) -> CalibrationReport:
        """Fit a recall calibration on a user's own labelled questions (see ``calibrate``)."""
        from memory_es.calibration.report import calibrate_root  # the fitting code: on use

        return calibrate_root(self.root, labelled, self.config, embedder=embedder,
                              key_store=self._keys)


def _leftover_findings(root: Path, keys: KeyStore, opened: OpenedJournal
                       ) -> Iterator[Finding]:
    """A journal a migration left behind still opens with a record key: a forget would not
    reach it (content-free: paths only)."""
    from memory_es.journal.migrate import leftovers

    on_postgres = not isinstance(opened.recorder, JournalRecorder)
    for path in leftovers(root, keys, opened.chain.root_id, on_postgres=on_postgres):
        shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        yield Finding("journal_leftover", shown, "a journal copy or record keys a migration "
                      "left; a forget does not reach them: run memory-es migrate-journal "
                      f"--to {'postgres' if on_postgres else 'sqlite'} again to remove them")


def _payload_findings(opened: OpenedJournal) -> Iterator[Finding]:
    """Every unresolved intake with capture text still has its exact payload (B5, B9)."""
    for record in fold_intakes(opened).unresolved():
        _, problem = checked_payload(opened, record)
        if problem is not None:
            yield Finding(f"payload_{problem}", JOURNAL_FILE, f"intake {record.id}")
