"""Answering a question, bound to one configuration: :class:`Recaller` holds its settings, the
embedder and the calibration they imply, decided once (DESIGN 9.4, G20), and is the one
orchestration of a recall both doors use (the writer's ``store.reading`` and the read-only
``MemoryRoot``), now or as of an instant.

A door supplies only what is its own: how it holds its index (a lock, a verified read), where
its vectors are (a live matrix, or one read afresh), whether embedding is paused, its host's
turn lookups (G34, G35) and, as of an instant, the fold of its journal. Without an embedder
(Lite, no embeddings block) every result is lexical-only and flagged ``degraded``; a provider
outage degrades the same way, never an exception (G20).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Protocol

import apsw
import numpy as np

from memory_es.embeddings import Embedder, EmbeddingError, embed_queries
from memory_es.errors import IndexUnavailableError
from memory_es.recall.as_of import AsOfState
from memory_es.recall.asking import Ask, has_content
from memory_es.recall.automatic import auto_block
from memory_es.recall.explicit import Lookup, deliberate, direct_lookup, recall
from memory_es.recall.rank.calibrations import calibration_for
from memory_es.recall.rank.render import Recall
from memory_es.recall.sections.guidance import GuidanceKind
from memory_es.recall.sections.profile import Profile, owner_profile
from memory_es.recall.sections.result import AutoContext, RecallResult
from memory_es.recall.setup import ReadSetup
from memory_es.text import iso_ms
from memory_es.vectors.matrix import VectorMatrix
from memory_es.vectors.pending import vector_backlog

if TYPE_CHECKING:  # an as-of fold's projection: built by the door that folds it
    from projections.sqlite_index import IndexProjection

Index = Callable[[], AbstractContextManager[apsw.Connection]]  # the door holds its index
Matrix = Callable[[Embedder, apsw.Connection], VectorMatrix]
Fold = Callable[[datetime], AsOfState]  # the fold of the door's journal at an instant


class Turns(Protocol):
    """A door's turn-scoped lookups (:class:`memory_es.host.turns.TurnLookups`)."""

    def original(self, turn: str) -> Lookup: ...

    def cached(self, turn: str, query: str) -> Lookup | None: ...

    def keep(self, turn: str, lookup: Lookup, *, original: bool = False) -> None: ...


log = logging.getLogger("memory_es")


class Recaller:
    """Recall for one configuration and embedder (``None``: lexical only).

    ``calibration`` is the one this pair implies (:func:`calibration_for`); explicit recall
    expands one graph hop in BuJo (L4). The connection, the clock and the vectors stay the
    caller's: :meth:`answer` takes them from the door (a store's live matrix, or one read
    afresh).
    """

    def __init__(self, setup: ReadSetup, embedder: Embedder | None,
                 tz: tzinfo | None = None) -> None:
        self.setup = setup
        self.embedder = embedder
        self.tz = tz  # the host's zone (G15); None: the process's zone
        self.calibration = calibration_for(embedder.identity if embedder is not None else None,
                                           setup.calibration)
        self.expand = setup.mode == "bujo"
        self.policy = setup.policy  # intentExpiry, recency: BuJo only (M24-M33)

    @property
    def lexical(self) -> bool:
        """True when there is no embedder: every result is lexical-only, ``degraded`` (G20)."""
        return self.embedder is None

    def embed_query(self, text: str, *,
                    unavailable: str = "lexical only") -> np.ndarray | None:
        """The query's vector; None without an embedder or when the provider fails (logged
        as ``memory_recall_unavailable: <unavailable>``, content-free; the result then
        degrades, G20)."""
        if self.embedder is None:
            return None
        try:
            vector: np.ndarray = embed_queries(self.embedder, [text])[0]
        except EmbeddingError as e:
            log.warning("memory_recall_unavailable: %s (code=%s)", unavailable, e.code)
            return None
        return vector

    def load_matrix(self, conn: apsw.Connection) -> VectorMatrix:
        """The index's vectors of this embedder's identity, read into a new matrix."""
        if self.embedder is None:
            raise ValueError("a lexical Recaller has no vectors to load")
        return _fresh_matrix(self.embedder, conn)

    def recall(self, conn: apsw.Connection, query: str, *, now: datetime,
               query_vector: np.ndarray | None, matrix: VectorMatrix | None,
               limit: int = 10, explain: bool = False, kind: GuidanceKind | None = None,
               about: str | None = None) -> RecallResult:
        """MemoryRecall over ``conn`` (G*): lexical-only when ``query_vector`` or ``matrix`` is
        None; flagged ``degraded`` with its reason whenever the semantic side is not whole.
        ``kind`` / ``about``: the guidance and fact-sheet options (G26-G28)."""
        result = recall(conn, query, now=now, query_vector=query_vector, matrix=matrix,
                        limit=limit, expand=self.expand, calibration=self.calibration,
                        scoring=self.setup.scoring, explain=explain, tz=self.tz,
                        kind=kind, about=about, policy=self.policy)
        return self._flagged(conn, result, query_vector, matrix)

    def lookup(self, conn: apsw.Connection, query: str, *, query_vector: np.ndarray | None,
               matrix: VectorMatrix | None, session: str | None = None) -> Lookup:
        """One direct lookup of ``query`` a turn can reuse (G34, G35); ``session`` excludes
        the current conversation, as the automatic block does (H21)."""
        return direct_lookup(conn, query, query_vector=query_vector, matrix=matrix,
                             calibration=self.calibration, scoring=self.setup.scoring,
                             exclude_session=session)

    def reuse(self, conn: apsw.Connection, lookup: Lookup, *, now: datetime,
              matrix: VectorMatrix | None, limit: int = 10, explain: bool = False,
              original: bool = False, kind: GuidanceKind | None = None,
              about: str | None = None) -> RecallResult:
        """MemoryRecall over an earlier lookup, never retrieving or embedding again: uncut in
        original-query mode (``original``, G19, G34), else exactly :meth:`recall`."""
        result = deliberate(conn, lookup, now=now, matrix=matrix, calibration=self.calibration,
                            scoring=self.setup.scoring, limit=limit,
                            expand=self.expand, explain=explain, tz=self.tz,
                            original=original, kind=kind, about=about,
                            policy=self.policy)
        return self._flagged(conn, result, lookup.query_vector, matrix)

    def _flagged(self, conn: apsw.Connection, result: RecallResult,
                 query_vector: np.ndarray | None, matrix: VectorMatrix | None) -> RecallResult:
        if self.embedder is None:
            return replace(result, degraded=True, reason="lexical_only")
        pending = vector_backlog(conn, self.embedder.identity.key)
        if query_vector is None or matrix is None:
            return replace(result, degraded=True, reason="provider_unavailable",
                           vectors_pending=pending)
        if pending:
            return replace(result, degraded=True, reason="vectors_pending",
                           vectors_pending=pending)
        return result

    def profile(self, conn: apsw.Connection | None, *, now: datetime) -> Profile:
        """The owner profile (M3-M7) under this config's ``memory.maxBytes``; computed whether
        or not ``memory.profile.enabled`` is set (the read-only views preview it, C11), which
        the result's ``enabled`` says."""
        return owner_profile(conn, now=now, tz=self.tz, max_bytes=self.setup.max_bytes,
                             enabled=self.setup.profile)

    def auto_block(self, conn: apsw.Connection, text: str, *, now: datetime,
                   query_vector: np.ndarray | None, matrix: VectorMatrix | None,
                   session: str | None, lines: bool = True,
                   lookup: Lookup | None = None) -> AutoContext:
        """The automatic context for ``text`` (H1-H22; see :func:`auto_block`) and whether it
        was whole: no block, ``degraded``, without an embedder or a query vector (H15). With
        ``memory.profile.enabled`` the owner profile comes first, and stays when the block
        cannot be made (M8): it needs no vector. A line the profile shows is not repeated
        below it. ``lookup``: the turn's direct lookup of ``text``, already made (G34)."""
        profile = self.profile(conn, now=now) if self.setup.profile else None
        shown = profile.text if profile is not None else ""
        if self.embedder is None:
            return AutoContext(shown, degraded=True, reason="lexical_only", profile=shown)
        pending = vector_backlog(conn, self.embedder.identity.key)
        if query_vector is None or matrix is None:
            return AutoContext(shown, degraded=True, reason="provider_unavailable",
                               vectors_pending=pending, profile=shown)
        block = auto_block(conn, text, now=now, query_vector=query_vector, matrix=matrix,
                           session=session, lines=lines, calibration=self.calibration,
                           scoring=self.setup.scoring, tz=self.tz,
                           reserved_bytes=len(shown.encode("utf-8")) + 2 if shown else 0,
                           scored=None if lookup is None else lookup.scored,
                           shown=[] if profile is None else [e.id for e in profile.entries],
                           policy=self.policy)
        whole = "\n\n".join(part for part in (shown, block) if part)
        if pending:
            return AutoContext(whole, degraded=True, reason="vectors_pending",
                               vectors_pending=pending, profile=shown)
        return AutoContext(whole, profile=shown)

    def answer(self, ask: Ask, index: Index, *, now: Callable[[], datetime], limit: int,
               explain: bool = False, original: bool = False, embed: bool = True,
               matrix: Matrix | None = None, turns: Turns | None = None) -> RecallResult:
        """One deliberate recall of a checked question (G*), the whole of it: embed the query
        (unless ``embed`` is off, a pause, or the turn already has a lookup: never embedded
        twice, G35), open the door's ``index`` (``index_unreadable`` when it cannot be read),
        take the vectors (``matrix``: the door's live one; default read afresh) only when
        there is a query vector, then select. A door that must not embed without an index
        (the read-only one: no index, no embedder built) passes the index it already holds.

        A door with ``turns`` reuses and keeps its turn's lookups (G34 original-query mode,
        G35 an identical query earlier in the turn; never one an outage degraded) and selects
        over a lookup (:meth:`reuse`); a door without one recalls afresh (:meth:`recall`).
        ``now`` is read once the index is held."""
        lookup = None
        if turns is not None and ask.turn is not None:
            lookup = (turns.original(ask.turn) if original
                      else turns.cached(ask.turn, ask.query))
        query_vector = self.embed_query(ask.query) if lookup is None and embed else None
        with contextlib.ExitStack() as held:
            try:
                conn = held.enter_context(index())
            except IndexUnavailableError:  # logged where it was found
                return RecallResult(recall=Recall(hits=()), degraded=True,
                                    reason="index_unreadable")
            vector = query_vector if lookup is None else lookup.query_vector
            vectors = None
            if self.embedder is not None and vector is not None:
                vectors = (matrix or _fresh_matrix)(self.embedder, conn)
            if turns is None:
                return self.recall(conn, ask.query, now=now(), query_vector=query_vector,
                                   matrix=vectors, limit=limit, explain=explain,
                                   kind=ask.kind, about=ask.about)
            if lookup is None:
                lookup = self.lookup(conn, ask.query, query_vector=query_vector,
                                     matrix=vectors)
                if ask.turn is not None and (query_vector is not None
                                             or self.embedder is None):
                    turns.keep(ask.turn, lookup)
            return self.reuse(conn, lookup, now=now(), matrix=vectors, limit=limit,
                              explain=explain, original=original, kind=ask.kind,
                              about=ask.about)

    def answer_auto(self, text: str, index: Index, *, now: Callable[[], datetime],
                    session: str | None, lines: bool = True, embed: bool = True,
                    matrix: Matrix | None = None, turn: str | None = None,
                    turns: Turns | None = None) -> AutoContext:
        """The automatic context for ``text`` (H1-H22), the whole of it: embed (a pause, ``embed``
        off, is said once in the log, M8), open the door's ``index`` (``index_unreadable``
        when it cannot be read), take the vectors, and with ``turn`` make the direct lookup
        the turn's original one (G34), shared with an identical tool query (G35), then
        :meth:`auto_block`. ``lines``: the short-owner-text gate's verdict (H14)."""
        query_vector = None
        if self.embedder is not None and not embed:
            log.warning("memory_recall_unavailable: no automatic block (provider paused)")
        elif self.embedder is not None:
            query_vector = self.embed_query(text, unavailable="no automatic block")
        with contextlib.ExitStack() as held:
            try:
                conn = held.enter_context(index())
            except IndexUnavailableError:
                return AutoContext("", degraded=True, reason="index_unreadable")
            vectors = None
            if self.embedder is not None and query_vector is not None:
                vectors = (matrix or _fresh_matrix)(self.embedder, conn)
            lookup = None
            if turns is not None and turn is not None and vectors is not None \
                    and has_content(text):
                lookup = self.lookup(conn, text, query_vector=query_vector, matrix=vectors,
                                     session=session)
                turns.keep(turn, lookup, original=True)
            return self.auto_block(conn, text, now=now(), query_vector=query_vector,
                                   matrix=vectors, session=session, lines=lines,
                                   lookup=lookup)

    def answer_as_of(self, ask: Ask, as_of: datetime, *, now: datetime, fold: Fold,
                     fill: Callable[[IndexProjection], None], limit: int,
                     explain: bool = False, embed: bool = True) -> RecallResult:
        """Recall over the door's journal as it was at ``as_of`` (a future instant is
        ``now``): embed the query (unless ``embed`` is off), take the door's ``fold`` of its
        journal at that instant, give it its vectors (``fill``: the vector cache first, then
        the provider; lexical recall needs none), then :meth:`recall` over it with
        currentness judged at the instant. The result says which instant and journal
        position it answers from."""
        instant = min(as_of, now).astimezone(UTC)
        query_vector = self.embed_query(ask.query) if embed else None
        state = fold(instant)
        matrix = None
        if self.embedder is not None and query_vector is not None:
            identity = self.embedder.identity.key
            state.fill(fill, identity)
            conn = state.index.conn
            matrix = state.matrices.get(identity)
            if matrix is None:
                matrix = state.matrices[identity] = self.load_matrix(conn)
            else:
                matrix.refresh(conn, identity)  # vectors a later fill added (incremental)
        result = self.recall(state.index.conn, ask.query, now=instant,
                             query_vector=query_vector, matrix=matrix, limit=limit,
                             explain=explain, kind=ask.kind, about=ask.about)
        return replace(result, as_of=iso_ms(instant), position=state.position)


def _fresh_matrix(embedder: Embedder, conn: apsw.Connection) -> VectorMatrix:
    """The index's vectors of ``embedder``'s identity, read into a new matrix (a one-shot
    reader's: it loads, answers and goes)."""
    identity = embedder.identity
    matrix = VectorMatrix(identity.dim, identity.key)  # the key names the model's question axis
    matrix.refresh(conn, identity.key)
    return matrix
