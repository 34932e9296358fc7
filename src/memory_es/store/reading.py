"""The writer's read side: recall, the automatic block, MemoryJournal and lexical search over
the store's live index, with its own vector matrix (G*, H*, I*).

Reads hold the journal (``GroupCommit.exclusive``) so they see a committed index; the query is
embedded before, with no lock held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, date, datetime, tzinfo
from pathlib import Path

from memory_es.config import MemoryConfig
from memory_es.errors import IndexUnavailableError
from memory_es.history import iter_events
from memory_es.journal import OpenedJournal
from memory_es.recall import (
    AutoContext,
    JournalPage,
    MemoryJournal,
    Recall,
    Recaller,
    RecallResult,
    check_limit,
    check_query,
    owner_text_gate,
)
from memory_es.recall.as_of import AsOfStates, check_as_of, recall_as_of
from memory_es.recall.inventory import MemoryDetail, MemoryList, list_memories, show_memory
from memory_es.recall.journal_key import RootCursorKey
from memory_es.recall.profile import Profile
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.store.vectors import Vectors
from projections.search import SearchHit, fts_search

log = logging.getLogger("memory_es")


class StoreReads:
    """What :class:`MemoryStore` answers from its own index."""

    def __init__(self, config: MemoryConfig, journal: GroupCommit,
                 projections: LiveProjections, vectors: Vectors,
                 clock: Callable[[], datetime], root: Path, tz: tzinfo | None = None) -> None:
        self._config = config
        self._tz = tz  # the host's zone (G15); None: the process's
        self._journal = journal
        self._projections = projections
        self._vectors = vectors
        self._clock = clock
        self._bound: Recaller | None = None
        # Snapshots live per handle; cursors are signed with the root's key, so any handle
        # (another process, the CLI, MemoryRoot) continues them (I*, issue 13 item 16).
        self._chronology = MemoryJournal(RootCursorKey(root), clock)
        self._as_of = AsOfStates()

    def recaller(self) -> Recaller:
        """Recall bound to this store's config and embedder (calibration decided once)."""
        if self._bound is None:
            self._bound = Recaller(self._config, self._vectors.embedder(), self._tz)
        return self._bound

    def recall(self, query: str, limit: int, explain: bool = False) -> RecallResult:
        recaller = self.recaller()
        query_vector = None if self._vectors.paused else recaller.embed_query(query)
        with self._journal.exclusive():
            try:
                conn = self._projections.get().index.conn
            except IndexUnavailableError:  # logged at open; admission goes on (issue 13)
                return RecallResult(recall=Recall(hits=()), degraded=True,
                                    reason="index_unreadable")
            matrix = (self._vectors.matrix(recaller.embedder, conn)
                      if recaller.embedder is not None else None)
            return recaller.recall(conn, query, now=self._clock(), query_vector=query_vector,
                                   matrix=matrix, limit=limit, explain=explain)

    def recall_as_of(self, query: str, limit: int, explain: bool, as_of: datetime | str,
                     opened: OpenedJournal) -> RecallResult:
        """Recall over the journal's state at ``as_of`` (issue 14 item 5; a future instant is
        now). The events are read holding the journal; the fold, the vectors (cache first,
        no lock held: the provider may be called for text never embedded) and recall after."""
        check_limit(limit)
        check_query(query)
        now = self._clock()
        instant = min(check_as_of(as_of), now).astimezone(UTC)
        recaller = self.recaller()
        query_vector = None if self._vectors.paused else recaller.embed_query(query)
        with self._journal.exclusive():
            head = opened.recorder.max_notification_id() or 0
            state = self._as_of.cached(head, instant)
            events = [] if state is not None else list(iter_events(opened, upto=head))
        if state is None:
            state = self._as_of.state(lambda upto: (e for e in events if e[0] <= upto),
                                      head, instant)
        if query_vector is not None and recaller.embedder is not None:  # lexical: none
            state.fill(self._vectors.fill, recaller.embedder.identity.key)
        return recall_as_of(recaller, state, query, instant=instant,
                            query_vector=query_vector, limit=limit, explain=explain)

    def close(self) -> None:
        self._as_of.close()

    def auto_recall(self, text: str, *, session: str | None, owner: bool,
                    gate_owner_text: bool) -> AutoContext:
        if not owner:
            return AutoContext("")
        lines = not gate_owner_text or owner_text_gate(text)
        recaller = self.recaller()
        query_vector = None
        if recaller.embedder is not None and self._vectors.paused:  # M8: say why, once
            log.warning("memory_recall_unavailable: no automatic block (provider paused)")
        elif recaller.embedder is not None:
            query_vector = recaller.embed_query(text, unavailable="no automatic block")
        with self._journal.exclusive():
            try:
                conn = self._projections.get().index.conn
            except IndexUnavailableError:
                return AutoContext("", degraded=True, reason="index_unreadable")
            matrix = (self._vectors.matrix(recaller.embedder, conn)
                      if recaller.embedder is not None and query_vector is not None else None)
            return recaller.auto_block(conn, text, now=self._clock(), query_vector=query_vector,
                                       matrix=matrix, session=session, lines=lines)

    def profile(self) -> Profile:
        """The owner profile over the live index (M3-M7, C11); no index, no profile."""
        with self._journal.exclusive():
            try:
                conn = self._projections.get().index.conn
            except IndexUnavailableError:
                conn = None
            return self.recaller().profile(conn, now=self._clock())

    def journal(self, from_date: str, through_date: str, time_zone: str,
                limit: int) -> JournalPage:
        with self._journal.exclusive():
            return self._chronology.query(self._projections.get().index.conn, from_date,
                                          through_date, time_zone, limit)

    def journal_continue(self, cursor: str) -> JournalPage:
        with self._journal.exclusive():
            return self._chronology.continue_(self._projections.get().index.conn, cursor)

    def lexical_search(self, query: str, limit: int) -> list[SearchHit]:
        check_limit(limit)
        check_query(query)
        with self._journal.exclusive():
            return fts_search(self._projections.get().index.conn, query, limit)

    def list_memories(self, *, status: str | None, since: str | date | datetime | None,
                      limit: int, cursor: str | None) -> MemoryList:
        with self._journal.exclusive():
            return list_memories(self._projections.get().index.conn, status=status,
                                 since=since, limit=limit, cursor=cursor, now=self._clock(),
                                 tz=self._tz)

    def show(self, memory_id: str, opened: OpenedJournal) -> MemoryDetail:
        with self._journal.exclusive():
            return show_memory(self._projections.get().index.conn, opened, memory_id,
                               now=self._clock(), tz=self._tz)
