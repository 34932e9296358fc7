"""The read path bound to one configuration: :class:`Recaller` holds the config, the embedder
and the calibration they imply, decided once (DESIGN 9.4, G20).

Each embedding identity carries its own calibration: the configured
``memory.embeddings.calibration`` when present, else the identity's shipped one
(:data:`CALIBRATIONS`), else the reference's numbers (``NOMIC_V15``, nomic-embed-text v1.5).
Without an embedder (Lite, no embeddings block) every result is lexical-only and flagged
``degraded``; a provider outage degrades the same way, never an exception.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, tzinfo

import apsw
import numpy as np

from memory_es.config import CalibrationConfig, EmbeddingsConfig, MemoryConfig
from memory_es.embeddings import Embedder, EmbeddingError, EmbeddingIdentity
from memory_es.recall.candidates import auto_block, check_query
from memory_es.recall.explicit import Lookup, deliberate, direct_lookup, recall
from memory_es.recall.guidance import GuidanceKind
from memory_es.recall.policy import ReadPolicy
from memory_es.recall.profile import Profile, owner_profile
from memory_es.recall.result import AutoContext, RecallResult
from memory_es.recall.score import NOMIC_V15, Calibration
from memory_es.recall.vectors import VectorMatrix, vector_backlog

log = logging.getLogger("memory_es")

# Fitted for the local provider's default model, USE multilingual v3 (512-d), by
# bench/recall_quality.py on the DEV splits of both labelled sets (296 questions) only
# (fit_hybrid: lexical weight, no-evidence cosine (the middle of the values that cost no dev
# ranking, calibrate.plateau_middle), a balanced-accuracy floor that flags at most 5 % of
# answerable dev questions, the narrowest tail that keeps the ranking's recall@5, and the
# automatic block's floor and window by fit_auto); the README reports the test splits.
LOCAL_USE = Calibration(no_evidence_cosine=0.06, recall_floor=0.235, recall_tail=0.40,
                        auto_floor=0.46, auto_window=0.04, lexical_weight=0.25)
# The same fit for all-MiniLM-L6-v2 int8, whose cosines sit higher
# (bench/recall_quality.py --model minilm).
LOCAL_MINILM = Calibration(no_evidence_cosine=0.12, recall_floor=0.396, recall_tail=0.40,
                           auto_floor=0.76, auto_window=0.05, lexical_weight=0.5)
CALIBRATIONS = {("local", "use-multilingual-v3"): LOCAL_USE,
                ("local", "all-MiniLM-L6-v2-onnx-int8"): LOCAL_MINILM}


def calibration_for(identity: EmbeddingIdentity | None,
                    override: CalibrationConfig | None = None) -> Calibration:
    """Each embedding identity carries its own calibration (DESIGN 9.4): the configured
    ``memory.embeddings.calibration`` (``override``) when present, else the identity's shipped
    one (:data:`CALIBRATIONS`), else the reference's numbers (nomic-embed-text v1.5)."""
    shipped = NOMIC_V15 if identity is None else CALIBRATIONS.get(
        (identity.provider, identity.model), NOMIC_V15)
    if override is not None:
        return Calibration(no_evidence_cosine=override.no_evidence_cosine,
                           recall_floor=override.recall_floor,
                           recall_tail=override.recall_tail,
                           auto_floor=override.auto_floor,
                           auto_window=override.auto_window,
                           lexical_weight=(shipped.lexical_weight
                                           if override.lexical_weight is None
                                           else override.lexical_weight))
    return shipped


def configured_calibration(config: MemoryConfig) -> CalibrationConfig | None:
    """The ``memory.embeddings.calibration`` override of ``config``, or None."""
    return config.embeddings.calibration if config.embeddings is not None else None


def embeddings_block(config: MemoryConfig) -> EmbeddingsConfig | None:
    """The embeddings block recall searches vectors with, or None: Lite never embeds (D2), and
    a config without a ``memory.embeddings`` block has no provider."""
    return config.embeddings if config.mode != "lite" else None


class Recaller:
    """Recall for one configuration and embedder (``None``: lexical only).

    ``calibration`` is the one this pair implies (:func:`calibration_for`); explicit recall
    expands one graph hop in BuJo (L4). The connection, the clock and the vectors stay the
    caller's: a store passes its own live matrix, a read-only caller uses :meth:`search`.
    """

    def __init__(self, config: MemoryConfig, embedder: Embedder | None,
                 tz: tzinfo | None = None) -> None:
        self.config = config
        self.embedder = embedder
        self.tz = tz  # the host's zone (G15); None: the process's zone
        self.calibration = calibration_for(embedder.identity if embedder is not None else None,
                                           configured_calibration(config))
        self.expand = config.mode == "bujo"
        self.policy = ReadPolicy.of(config)  # intentExpiry, recency: BuJo only (M24-M33)

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
            vector: np.ndarray = self.embedder.embed([text])[0]
        except EmbeddingError as e:
            log.warning("memory_recall_unavailable: %s (code=%s)", unavailable, e.code)
            return None
        return vector

    def load_matrix(self, conn: apsw.Connection) -> VectorMatrix:
        """The index's vectors of this embedder's identity, read into a new matrix."""
        if self.embedder is None:
            raise ValueError("a lexical Recaller has no vectors to load")
        identity = self.embedder.identity
        matrix = VectorMatrix(identity.dim)
        matrix.refresh(conn, identity.key)
        return matrix

    def recall(self, conn: apsw.Connection, query: str, *, now: datetime,
               query_vector: np.ndarray | None, matrix: VectorMatrix | None,
               limit: int = 10, explain: bool = False, kind: GuidanceKind | None = None,
               about: str | None = None) -> RecallResult:
        """MemoryRecall over ``conn`` (G*): lexical-only when ``query_vector`` or ``matrix`` is
        None; flagged ``degraded`` with its reason whenever the semantic side is not whole.
        ``kind`` / ``about``: the guidance and fact-sheet options (G26-G28)."""
        result = recall(conn, query, now=now, query_vector=query_vector, matrix=matrix,
                        limit=limit, expand=self.expand, calibration=self.calibration,
                        scoring=self.config.recall.scoring, explain=explain, tz=self.tz,
                        kind=kind, about=about, policy=self.policy)
        return self._flagged(conn, result, query_vector, matrix)

    def lookup(self, conn: apsw.Connection, query: str, *, query_vector: np.ndarray | None,
               matrix: VectorMatrix | None, session: str | None = None) -> Lookup:
        """One direct lookup of ``query`` a turn can reuse (G34, G35); ``session`` excludes
        the current conversation, as the automatic block does (H21)."""
        return direct_lookup(conn, query, query_vector=query_vector, matrix=matrix,
                             calibration=self.calibration, scoring=self.config.recall.scoring,
                             exclude_session=session)

    def reuse(self, conn: apsw.Connection, lookup: Lookup, *, now: datetime,
              matrix: VectorMatrix | None, limit: int = 10, explain: bool = False,
              original: bool = False, kind: GuidanceKind | None = None,
              about: str | None = None) -> RecallResult:
        """MemoryRecall over an earlier lookup, never retrieving or embedding again: uncut in
        original-query mode (``original``, G19, G34), else exactly :meth:`recall`."""
        result = deliberate(conn, lookup, now=now, matrix=matrix, calibration=self.calibration,
                            scoring=self.config.recall.scoring, limit=limit,
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
        return owner_profile(conn, now=now, tz=self.tz, max_bytes=self.config.max_bytes,
                             enabled=self.config.profile.enabled)

    def auto_block(self, conn: apsw.Connection, text: str, *, now: datetime,
                   query_vector: np.ndarray | None, matrix: VectorMatrix | None,
                   session: str | None, lines: bool = True,
                   lookup: Lookup | None = None) -> AutoContext:
        """The automatic context for ``text`` (H1-H22; see :func:`auto_block`) and whether it
        was whole: no block, ``degraded``, without an embedder or a query vector (H15). With
        ``memory.profile.enabled`` the owner profile comes first, and stays when the block
        cannot be made (M8): it needs no vector. A line the profile shows is not repeated
        below it. ``lookup``: the turn's direct lookup of ``text``, already made (G34)."""
        profile = self.profile(conn, now=now) if self.config.profile.enabled else None
        shown = profile.text if profile is not None else ""
        if self.embedder is None:
            return AutoContext(shown, degraded=True, reason="lexical_only", profile=shown)
        pending = vector_backlog(conn, self.embedder.identity.key)
        if query_vector is None or matrix is None:
            return AutoContext(shown, degraded=True, reason="provider_unavailable",
                               vectors_pending=pending, profile=shown)
        block = auto_block(conn, text, now=now, query_vector=query_vector, matrix=matrix,
                           session=session, lines=lines, calibration=self.calibration,
                           scoring=self.config.recall.scoring, tz=self.tz,
                           reserved_bytes=len(shown.encode("utf-8")) + 2 if shown else 0,
                           scored=None if lookup is None else lookup.scored,
                           shown=[] if profile is None else [e.id for e in profile.entries],
                           policy=self.policy)
        whole = "\n\n".join(part for part in (shown, block) if part)
        if pending:
            return AutoContext(whole, degraded=True, reason="vectors_pending",
                               vectors_pending=pending, profile=shown)
        return AutoContext(whole, profile=shown)

    def search(self, conn: apsw.Connection, query: str, *, now: datetime,
               limit: int = 10, explain: bool = False, kind: GuidanceKind | None = None,
               about: str | None = None) -> RecallResult:
        """A read-only caller's whole recall (``memory-es search``): embed the query, read the
        matrix only when that worked, then :meth:`recall`."""
        check_query(query)
        query_vector = self.embed_query(query)
        matrix = self.load_matrix(conn) if query_vector is not None else None
        return self.recall(conn, query, now=now, query_vector=query_vector, matrix=matrix,
                           limit=limit, explain=explain, kind=kind, about=about)
