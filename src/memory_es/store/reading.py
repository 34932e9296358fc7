"""The writer's read side: recall, the automatic block, MemoryJournal and lexical search over
the store's live index, with its own vector matrix (G*, H*, I*).

Reads hold the journal (``GroupCommit.exclusive``) so they see a committed index; the query is
embedded before, with no lock held. Recall and the automatic block are orchestrated by
:class:`~memory_es.recall.engine.Recaller` (``answer``, ``answer_as_of``, ``answer_auto``);
this door gives it the live index, the live matrix, the pause and the host's turns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime, tzinfo
from pathlib import Path

import apsw

from memory_es.browse.inventory import MemoryDetail, MemoryList, list_memories, show_memory
from memory_es.browse.journal import MemoryJournal
from memory_es.browse.journal_key import RootCursorKey
from memory_es.browse.journal_page import JournalPage
from memory_es.browse.journal_request import JournalFilter
from memory_es.config import MemoryConfig
from memory_es.errors import IndexUnavailableError, InvalidArgumentError
from memory_es.history import iter_events
from memory_es.host.turns import TurnLookups
from memory_es.journal import OpenedJournal
from memory_es.recall import AutoContext, Recaller, RecallResult
from memory_es.recall.as_of import AsOfState, AsOfStates, check_as_of
from memory_es.recall.asking import check_ask, check_limit, check_query, check_turn, has_content
from memory_es.recall.explicit import Lookup
from memory_es.recall.rank.select import owner_text_gate
from memory_es.recall.sections.profile import Profile
from memory_es.recall.setup import ReadSetup
from memory_es.store.access import AccessLog, AccessStat
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.store.vectors import Vectors
from projections.search import SearchHit, fts_search


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
        # (another process, the CLI, MemoryRoot) continues them (I*).
        self._chronology = MemoryJournal(RootCursorKey(root), clock)
        self._as_of = AsOfStates()
        self._turns = TurnLookups()  # the host's logical turns (G34, G35, G30)
        self._access = AccessLog(root)  # telemetry only (G30, G9)

    def recaller(self) -> Recaller:
        """Recall bound to this store's config and embedder (calibration decided once)."""
        if self._bound is None:
            self._bound = Recaller(ReadSetup.of(self._config), self._vectors.embedder(),
                                   self._tz)
        return self._bound

    def recall(self, query: str | None, limit: int, explain: bool = False, *,
               kind: str | None = None, about: str | None = None, turn: str | None = None,
               original: bool = False) -> RecallResult:
        """Deliberate recall (G*) through :meth:`Recaller.answer`, over the live index held
        by the journal, with the store's live matrix and its host's turns (G34, G35). The
        ids it delivers are counted once per turn (G30)."""
        ask = check_ask(query, limit, kind=kind, about=about, turn=turn, original=original)
        result = self.recaller().answer(
            ask, self._live_index, now=self._clock, limit=limit, explain=explain,
            original=original, embed=not self._vectors.paused, matrix=self._vectors.matrix,
            turns=self._turns)
        self._access.record(self._turns.first_delivery(ask.turn, result.delivered()),
                            self._clock())
        return result

    @contextlib.contextmanager
    def _live_index(self) -> Iterator[apsw.Connection]:
        """The live index, read holding the journal so it is a committed one (raises
        ``IndexUnavailableError`` when it cannot be read; logged at open)."""
        with self._journal.exclusive():
            yield self._projections.get().index.conn

    def end_turn(self, turn: str) -> bool:
        """Turn cleanup (G34): its lookups go; original-query mode is unavailable after."""
        checked = check_turn(turn)
        if checked is None:
            raise InvalidArgumentError("recall_invalid_turn: end_turn needs the turn id",
                                       code="recall_invalid_turn")
        return self._turns.end(checked)

    def written(self) -> None:
        """A non-duplicate memory write: cached lookups of open turns are stale (G34, J13)."""
        self._turns.written()

    def access_stats(self, ids: Sequence[str]) -> dict[str, AccessStat]:
        return self._access.stats(list(ids))

    def forget_access(self, ids: Sequence[str]) -> None:
        self._access.forget(list(ids))

    def recall_as_of(self, query: str | None, limit: int, explain: bool, as_of: datetime | str,
                     opened: OpenedJournal, *, kind: str | None = None,
                     about: str | None = None) -> RecallResult:
        """Recall over the journal's state at ``as_of`` (a future instant is now), through
        :meth:`Recaller.answer_as_of`; vectors from the cache first, no lock held (the
        provider may be called for text never embedded)."""
        ask = check_ask(query, limit, kind=kind, about=about)
        now = self._clock()
        instant = check_as_of(as_of)
        return self.recaller().answer_as_of(
            ask, instant, now=now, fold=lambda at: self._fold(opened, at),
            fill=self._vectors.fill, limit=limit, explain=explain,
            embed=not self._vectors.paused)

    def _fold(self, opened: OpenedJournal, instant: datetime) -> AsOfState:
        """The journal's fold at ``instant``: its events are read holding the journal, the
        fold made after, with no lock held."""
        with self._journal.exclusive():
            head = opened.recorder.max_notification_id() or 0
            state = self._as_of.cached(head, instant)
            events = [] if state is not None else list(iter_events(opened, upto=head))
        if state is None:
            state = self._as_of.state(lambda upto: (e for e in events if e[0] <= upto),
                                      head, instant)
        return state

    def close(self) -> None:
        self._as_of.close()
        self._access.close()

    def auto_recall(self, text: str, *, session: str | None, owner: bool,
                    gate_owner_text: bool, turn: str | None = None) -> AutoContext:
        """The automatic context; with ``turn``, its direct lookup becomes the turn's original
        lookup (G34), shared with an identical tool query (G35)."""
        turn = check_turn(turn)
        if turn is not None:
            self._turns.begin(turn)
            if not has_content(text):  # G34: an empty question seeds no original lookup
                self._turns.keep(turn, Lookup(text, None, ()), original=True)
        if not owner:
            return AutoContext("")
        return self.recaller().answer_auto(
            text, self._live_index, now=self._clock, session=session,
            lines=not gate_owner_text or owner_text_gate(text),
            embed=not self._vectors.paused, matrix=self._vectors.matrix, turn=turn,
            turns=self._turns)

    def profile(self) -> Profile:
        """The owner profile over the live index (M3-M7, C11); no index, no profile."""
        with self._journal.exclusive():
            try:
                conn = self._projections.get().index.conn
            except IndexUnavailableError:
                conn = None
            return self.recaller().profile(conn, now=self._clock())

    def journal(self, from_date: str, through_date: str, time_zone: str,
                limit: int, filters: JournalFilter | None = None) -> JournalPage:
        with self._journal.exclusive():
            return self._chronology.query(self._projections.get().index.conn, from_date,
                                          through_date, time_zone, limit, filters)

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
