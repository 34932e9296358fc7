"""Vectors and hybrid recall (D4, D6, D9, B25, G*): the read path over an index generation.

- ``VectorCache``: ``embeddings/cache.db`` at the root, outside generations, keyed by embedding
  identity + SHA-256 of the text, so rebuild and replay never re-embed unchanged text and a
  changed identity re-embeds (B25).
- ``embed_pending``: vectors for memories that lack one, in batches of 32, at most 256 texts in
  flight (D4, D6), cache first. The provider call happens without any store lock held.
- ``VectorMatrix``: the generation's vectors as one float32 matrix, searched exactly with numpy.
- ``recall``: FTS5 bm25 candidates union vector candidates (at most 50), scored by
  ``memory_es.scoring``. A provider outage degrades to lexical-only results, flagged, never an
  exception (G20).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memory_es.card import person_card
from memory_es.config import CalibrationConfig, MemoryConfig
from memory_es.embeddings import BATCH_SIZE, Embedder, EmbeddingIdentity
from memory_es.fsutil import make_private_dir
from memory_es.scoring import (
    MAX_CANDIDATES,
    NOMIC_V15,
    Calibration,
    Candidate,
    Fact,
    Recall,
    auto_select,
    background_select,
    format_recall,
    render_auto_block,
    render_background,
    score_all,
    select,
)
from memory_es.vocabulary import TERMINAL_STATUSES, sql_list
from projections.sqlite_index import connect_derived, fts_query

log = logging.getLogger("memory_es")

CACHE_DIR = "embeddings"
CACHE_FILE = "cache.db"
MAX_IN_FLIGHT = 256  # D6: at most 256 texts ...
MAX_IN_FLIGHT_BYTES = 2 * 1024 * 1024  # ... and 2 MiB in flight
RETRIEVER_DEPTH = MAX_CANDIDATES  # each retriever contributes its top 50
# G22: terminal records never enter a retriever, so they cannot crowd live ones out of the pool
_TERMINAL_SQL = sql_list(TERMINAL_STATUSES)


# Measured for the local all-MiniLM-L6-v2 int8 model on bench/data/recall_labelled.json by
# bench/recall_quality.py (213 memories, 163 answerable + 38 no-answer questions): the largest
# no-evidence cosine that keeps hybrid recall@5 at its best (0.25), and the recall floor that
# best separates answerable from no-answer best scores (0.408, balanced accuracy 0.72; 2-fold
# held-out figures in the README); the tail is the reference's scaled by 0.408 / 0.65. The
# automatic-block numbers are not measured on labels yet, so they stay at the reference's.
LOCAL_MINILM = Calibration(no_evidence_cosine=0.25, recall_floor=0.408, recall_tail=0.094,
                           auto_floor=0.62, auto_window=0.04)
CALIBRATIONS = {("local", "all-MiniLM-L6-v2-onnx-int8"): LOCAL_MINILM}


def calibration_for(identity: EmbeddingIdentity | None,
                    override: CalibrationConfig | None = None) -> Calibration:
    """Each embedding identity carries its own calibration (DESIGN 9.4): the configured
    ``memory.embeddings.calibration`` (``override``) when present, else the identity's shipped
    one (:data:`CALIBRATIONS`), else the reference's numbers (nomic-embed-text v1.5)."""
    if override is not None:
        return Calibration(no_evidence_cosine=override.no_evidence_cosine,
                           recall_floor=override.recall_floor,
                           recall_tail=override.recall_tail,
                           auto_floor=override.auto_floor,
                           auto_window=override.auto_window)
    if identity is None:
        return NOMIC_V15
    return CALIBRATIONS.get((identity.provider, identity.model), NOMIC_V15)


def configured_calibration(config: MemoryConfig) -> CalibrationConfig | None:
    """The ``memory.embeddings.calibration`` override of ``config``, or None."""
    return config.embeddings.calibration if config.embeddings is not None else None


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache:
    """Vectors by (identity, sha256(text)): survive rebuilds, replays and generations."""

    def __init__(self, root: Path) -> None:
        directory = root / CACHE_DIR
        make_private_dir(directory)
        path = directory / CACHE_FILE
        self.conn = connect_derived(path, create=not os.path.lexists(path))
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (identity TEXT NOT NULL, sha256 TEXT NOT NULL, "
            "vector BLOB NOT NULL, PRIMARY KEY (identity, sha256)) WITHOUT ROWID")

    def get_many(self, identity: str, shas: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for sha in shas:
            row = self.conn.execute("SELECT vector FROM vectors WHERE identity = ? AND sha256 = ?",
                                    (identity, sha)).fetchone()
            if row is not None:
                found[sha] = bytes(row[0])
        return found

    def put_many(self, identity: str, items: Sequence[tuple[str, bytes]]) -> None:
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                  [(identity, sha, blob) for sha, blob in items])

    def close(self) -> None:
        self.conn.close()


@dataclass
class PendingTexts:
    """Memories of the active generation that wait for a vector of this identity."""

    rowids: list[int]
    texts: list[str]


def pending_texts(conn: apsw.Connection, identity: str, limit: int = MAX_IN_FLIGHT) -> PendingTexts:
    """Up to ``limit`` texts (and at most 2 MiB) lacking a vector for ``identity`` (D6).

    A changed identity drops every vector and queues every memory again (B25). Reads only the
    queue the projection keeps (``vector_pending``), never every memory.
    """
    row: Any = conn.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()
    if row is None or row[0] != identity:
        with conn:
            conn.execute("DELETE FROM vectors WHERE identity != ?", (identity,))
            conn.execute("INSERT OR IGNORE INTO vector_pending SELECT m.rowid FROM memories m "
                         "LEFT JOIN vectors v ON v.rowid = m.rowid WHERE v.rowid IS NULL")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('vector_identity', ?)", (identity,))
    rows = conn.execute(
        "SELECT m.rowid, m.text FROM vector_pending p JOIN memories m ON m.rowid = p.rowid "
        f"WHERE m.status NOT IN {_TERMINAL_SQL} ORDER BY p.rowid LIMIT ?", (limit,))
    pending = PendingTexts([], [])
    size = 0
    for rowid, text in rows:
        size += len(text.encode("utf-8"))
        if pending.rowids and size > MAX_IN_FLIGHT_BYTES:
            break
        pending.rowids.append(rowid)
        pending.texts.append(text)
    return pending


def embed_texts(embedder: Embedder, cache: VectorCache | None,
                texts: Sequence[str]) -> list[bytes]:
    """float32 vectors for ``texts``: cached ones reused, the rest embedded in batches of 32.

    Raises EmbeddingError when the provider fails; nothing is cached for a failed batch.
    """
    identity = embedder.identity.key
    shas = [text_sha256(t) for t in texts]
    cached = cache.get_many(identity, shas) if cache is not None else {}
    missing = [i for i, sha in enumerate(shas) if sha not in cached]
    for start in range(0, len(missing), BATCH_SIZE):
        chunk = missing[start:start + BATCH_SIZE]
        vectors = embedder.embed([texts[i] for i in chunk])
        fresh = [(shas[i], vectors[n].astype(np.float32).tobytes()) for n, i in enumerate(chunk)]
        cached.update(fresh)
        if cache is not None:
            cache.put_many(identity, fresh)
    return [cached[sha] for sha in shas]


def store_vectors(conn: apsw.Connection, identity: str, rowids: Sequence[int],
                  blobs: Sequence[bytes]) -> None:
    with conn:
        conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                         [(r, identity, b) for r, b in zip(rowids, blobs, strict=True)])
        conn.executemany("DELETE FROM vector_pending WHERE rowid = ?", [(r,) for r in rowids])


class VectorMatrix:
    """The active generation's vectors in memory, refreshed incrementally by rowid."""

    def __init__(self, dim: int, identity: str = "") -> None:
        self.dim = dim
        self.identity = identity
        self._rowids = np.zeros(0, dtype=np.int64)
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._size = 0
        self._last = 0
        self._readd: set[int] = set()  # forgotten rows to read again once re-embedded

    @property
    def rowids(self) -> np.ndarray:
        return self._rowids[:self._size]

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix[:self._size]

    def forget(self, rowids: Sequence[int]) -> None:
        """Drop these rows (their vector went stale or they left recall); a row that gets a
        vector again is re-read by the next :meth:`refresh`."""
        gone = np.isin(self.rowids, np.asarray(rowids, dtype=np.int64))
        self._matrix[:self._size][gone] = 0.0
        self._rowids[:self._size][gone] = -1
        self._readd.update(int(r) for r in rowids)

    def refresh(self, conn: apsw.Connection, identity: str) -> None:
        rows = list(conn.execute(
            "SELECT v.rowid, v.vector FROM vectors v JOIN memories m ON m.rowid = v.rowid "
            f"WHERE v.identity = ? AND v.rowid > ? AND m.status NOT IN {_TERMINAL_SQL} "
            "ORDER BY v.rowid", (identity, self._last)))
        self._append(rows)
        if rows:
            self._last = int(rows[-1][0])
        # A row below the high-water mark still waiting for its vector (a text rewritten before
        # this matrix existed, or since) is read once it has one.
        self._readd.update(r[0] for r in _optional_rows(
            conn, "SELECT rowid FROM vector_pending WHERE rowid <= ?", (self._last,)))
        wanted = sorted(r for r in self._readd if r <= self._last)
        if not wanted:
            return
        marks = ",".join("?" * len(wanted))
        back = list(conn.execute(
            "SELECT v.rowid, v.vector FROM vectors v JOIN memories m ON m.rowid = v.rowid "
            f"WHERE v.identity = ? AND v.rowid IN ({marks}) AND m.status NOT IN {_TERMINAL_SQL} "
            "ORDER BY v.rowid", (identity, *wanted)))
        self._readd.difference_update(r[0] for r in back)
        # a row that left recall for good is not waited for
        self._readd.difference_update(r[0] for r in conn.execute(
            f"SELECT rowid FROM memories WHERE rowid IN ({marks}) AND status IN {_TERMINAL_SQL}",
            wanted))
        self._append(back)

    def _append(self, rows: list[Any]) -> None:
        if not rows:
            return
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        block = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32)
        end = self._size + len(rows)
        if end > len(self._rowids):  # grow by doubling: appends stay amortised O(1)
            capacity = max(end, 2 * len(self._rowids), 64)
            rowids = np.zeros(capacity, dtype=np.int64)
            matrix = np.zeros((capacity, self.dim), dtype=np.float32)
            rowids[:self._size] = self.rowids
            matrix[:self._size] = self.matrix
            self._rowids, self._matrix = rowids, matrix
        self._rowids[self._size:end] = ids
        self._matrix[self._size:end] = block.reshape(len(rows), self.dim)
        self._size = end

    def top_many(self, queries: Sequence[np.ndarray], k: int) -> list[list[tuple[int, float]]]:
        """:meth:`top` for several queries with one pass over the matrix."""
        if not queries:
            return []
        if not self._size:
            return [[] for _ in queries]
        sims = self.matrix @ np.stack(queries).astype(np.float32).T
        k = min(k, self._size)
        out = []
        for column in sims.T:
            best = np.argpartition(-column, k - 1)[:k]
            best = best[np.argsort(-column[best], kind="stable")]
            out.append([(int(self.rowids[i]), float(column[i])) for i in best
                        if self.rowids[i] >= 0])
        return out

    def top(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine) of the ``k`` nearest rows; rows are L2-normalised, so dot = cosine."""
        if not len(self.rowids):
            return []
        sims = self.matrix @ query.astype(np.float32)
        k = min(k, len(sims))
        best = np.argpartition(-sims, k - 1)[:k]
        best = best[np.argsort(-sims[best], kind="stable")]
        return [(int(self.rowids[i]), float(sims[i])) for i in best if self.rowids[i] >= 0]

    def cosine(self, query: np.ndarray, rowid: int) -> float | None:
        hit = np.nonzero(self.rowids == rowid)[0]
        return float(self.matrix[hit[0]] @ query) if len(hit) else None


@dataclass(frozen=True)
class RecallResult:
    """What an agent gets back: hits, the evidence flag, and whether vectors were used."""

    recall: Recall
    degraded: bool  # True: lexical only (no provider, provider down, or Lite)

    @property
    def text(self) -> str:
        return format_recall(self.recall)

    def to_json(self) -> dict[str, Any]:
        return {"degraded": self.degraded, "evidence": self.recall.evidence,
                "notes": list(self.recall.notes),
                "results": [h.structured() for h in self.recall.hits]}


def _lexical_ranks(conn: apsw.Connection, query: str) -> dict[int, int]:
    """bm25 top 50 of live memories. The FTS query runs alone (a join would cost a row
    lookup per match); terminal rows are then dropped and the ranking refilled past them."""
    match = fts_query(query)
    if not match:
        return {}
    live: list[int] = []
    offset, page = 0, RETRIEVER_DEPTH * 2
    while len(live) < RETRIEVER_DEPTH:
        rowids = [r[0] for r in conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY bm25(memories_fts), rowid LIMIT ? OFFSET ?", (match, page, offset))]
        if not rowids:
            break
        marks = ",".join("?" * len(rowids))
        terminal = {r[0] for r in conn.execute(
            f"SELECT rowid FROM memories WHERE rowid IN ({marks}) "
            f"AND status IN {_TERMINAL_SQL}", rowids)}
        live.extend(r for r in rowids if r not in terminal)
        offset += page
    return {rowid: rank for rank, rowid in enumerate(live[:RETRIEVER_DEPTH], start=1)}


def session_key(session: str | None) -> str | None:
    """A conversation id without its daily ``#YYYY-MM-DD`` bucket (H21)."""
    if session is None:
        return None
    base, sep, bucket = session.rpartition("#")
    if sep and len(bucket) == 10 and bucket[4] == "-" and bucket[7] == "-" \
            and bucket.replace("-", "").isdigit():
        return base
    return session


def candidate_pool(
    conn: apsw.Connection,
    query: str,
    *,
    query_vector: np.ndarray | None,
    matrix: VectorMatrix | None,
    exclude_session: str | None = None,
) -> list[Candidate]:
    """FTS5 bm25 top 50 union vector top 50, best ranks first, at most 50 (G31).

    ``exclude_session`` drops records of the current conversation before scoring (H21).
    """
    lexical = _lexical_ranks(conn, query)
    vector_ranks: dict[int, int] = {}
    cosines: dict[int, float] = {}
    if query_vector is not None and matrix is not None:
        for rank, (rowid, cos) in enumerate(matrix.top(query_vector, RETRIEVER_DEPTH), start=1):
            vector_ranks[rowid] = rank
            cosines[rowid] = cos
    excluded = session_key(exclude_session)
    pool = sorted(set(lexical) | set(vector_ranks),
                  key=lambda r: (min(lexical.get(r, 10**9), vector_ranks.get(r, 10**9)), r))
    candidates: list[Candidate] = []
    for rowid in pool:
        if len(candidates) >= MAX_CANDIDATES:
            break
        row = conn.execute("SELECT id, text, kind, status, recorded_at, source_session "
                           "FROM memories WHERE rowid = ?", (rowid,)).fetchone()
        if row is None:
            continue
        session = row[5]
        if excluded is not None and session not in (None, "unknown") \
                and session_key(session) == excluded:
            continue
        cosine = cosines.get(rowid)
        if cosine is None and query_vector is not None and matrix is not None:
            cosine = matrix.cosine(query_vector, rowid)  # a lexical hit that has a vector
        candidates.append(_candidate(row, cosine, lexical.get(rowid), vector_ranks.get(rowid)))
    return with_entity_names(conn, candidates)


def _candidate(row: Any, cosine: float | None, lexical_rank: int | None,
               vector_rank: int | None) -> Candidate:
    session = row[5]
    return Candidate(
        id=row[0], text=row[1], type=row[2], status=row[3],
        created_at=datetime.fromisoformat(row[4].replace("Z", "+00:00")),
        cosine=cosine, lexical_rank=lexical_rank, vector_rank=vector_rank,
        attribution="source conversation unknown" if session in (None, "unknown") else None,
    )


def _optional_rows(conn: apsw.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """Reads of tables newer than some index generations (graph, vector queue): a generation
    from before them simply has no such rows."""
    try:
        return list(conn.execute(sql, params))
    except apsw.SQLError:
        return []


def with_entity_names(conn: apsw.Connection, candidates: list[Candidate]) -> list[Candidate]:
    """Each candidate with the names of its associated entities (name anchors, G7) and its
    structured fact (conflicting evidence, G16)."""
    if not candidates:
        return candidates
    ids = [c.id for c in candidates]
    names: dict[str, list[str]] = {}
    for memory_id, name in _optional_rows(
            conn, f"SELECT me.memory_id, e.name FROM memory_entities me JOIN entities e "
                  f"ON e.id = me.entity_id WHERE me.memory_id IN ({','.join('?' * len(ids))}) "
                  "ORDER BY me.memory_id, me.ord", ids):
        names.setdefault(memory_id, []).append(name)
    facts = {row[0]: Fact(subject=row[1], property=row[2], scope=row[3], value=row[4])
             for row in _optional_rows(
                 conn, "SELECT id, fact_subject, fact_key, scope, fact_value FROM memory_meta "
                       f"WHERE id IN ({','.join('?' * len(ids))}) AND fact_key IS NOT NULL", ids)}
    if not names and not facts:
        return candidates
    return [replace(c, entity_names=tuple(names.get(c.id, ())), fact=facts.get(c.id))
            if c.id in names or c.id in facts else c for c in candidates]


def expand_one_hop(conn: apsw.Connection, seeds: list[Candidate], *,
                   query_vector: np.ndarray | None,
                   matrix: VectorMatrix | None) -> list[Candidate]:
    """L4: the seeds, then live memories that share an entity with a seed or name an entity
    directly related to one; cut to the candidate bound before scoring.

    Deterministic: neighbours come in journal order. They carry no retriever rank, only
    their cosine when they have a vector.
    """
    room = MAX_CANDIDATES - len(seeds)
    if room <= 0 or not seeds:
        return seeds
    marks = ",".join("?" * len(seeds))
    seed_ids = [c.id for c in seeds]
    entities = {r[0] for r in _optional_rows(
        conn, f"SELECT entity_id FROM memory_entities WHERE memory_id IN ({marks})", seed_ids)}
    if not entities:
        return seeds
    emarks = ",".join("?" * len(entities))
    elist = sorted(entities)
    related = {r[0] for r in _optional_rows(
        conn, f"SELECT dst FROM relations WHERE src IN ({emarks}) UNION "
              f"SELECT src FROM relations WHERE dst IN ({emarks})", [*elist, *elist])}
    hop = sorted(entities | related)
    hmarks = ",".join("?" * len(hop))
    rows = _optional_rows(
        conn, "SELECT m.id, m.text, m.kind, m.status, m.recorded_at, m.source_session, m.rowid "
              f"FROM memories m WHERE m.id IN (SELECT memory_id FROM memory_entities "
              f"WHERE entity_id IN ({hmarks})) AND m.id NOT IN ({marks}) "
              f"AND m.status NOT IN {_TERMINAL_SQL} ORDER BY m.rowid LIMIT ?",
        [*hop, *seed_ids, room])
    neighbours = []
    for row in rows:
        cosine = None
        if query_vector is not None and matrix is not None:
            cosine = matrix.cosine(query_vector, row[6])
        neighbours.append(_candidate(row, cosine, None, None))
    return [*seeds, *with_entity_names(conn, neighbours)]


def recall(
    conn: apsw.Connection,
    query: str,
    *,
    now: datetime,
    query_vector: np.ndarray | None,
    matrix: VectorMatrix | None,
    calibration: Calibration = NOMIC_V15,
    limit: int = 10,
    expand: bool = False,
) -> RecallResult:
    """Hybrid recall over one index connection (G*).

    ``query_vector`` is None when vectors are unavailable (Lite, no provider, provider down):
    the result is then lexical-only and flagged ``degraded`` (G20), never an exception.
    ``expand`` (BuJo only, L4-L5) adds one hop of graph neighbours to the pool.
    """
    degraded = query_vector is None or matrix is None
    candidates = candidate_pool(conn, query, query_vector=query_vector, matrix=matrix)
    if expand:
        candidates = expand_one_hop(conn, candidates, query_vector=query_vector, matrix=matrix)
    scored = score_all(query, candidates, calibration)
    result = select(scored, calibration, now=now, mode="degraded" if degraded else "explicit")
    trimmed = Recall(hits=result.hits[:limit], evidence=result.evidence, notes=result.notes)
    return RecallResult(recall=trimmed, degraded=degraded)


def auto_block(
    conn: apsw.Connection,
    text: str,
    *,
    now: datetime,
    query_vector: np.ndarray,
    matrix: VectorMatrix,
    session: str | None,
    calibration: Calibration = NOMIC_V15,
    lines: bool = True,
) -> str:
    """The automatic context: the "possibly relevant" block (H1-H11, H21, H22: direct hits only),
    the labelled background of the owner's preferences and verified lessons (H19), and the card
    of each person the text names (H20), together under ~2.5 KB (H12). ``lines=False`` drops
    only the block (the short-owner-text gate, H14)."""
    candidates = candidate_pool(conn, text, query_vector=query_vector, matrix=matrix,
                                exclude_session=session)
    scored = score_all(text, candidates, calibration)
    hits = auto_select(scored, calibration, now=now, tz=UTC) if lines else ()
    background = background_select(scored, labelled_background(conn, candidates), calibration,
                                   now=now, tz=UTC, exclude=[h.id for h in hits])
    parts = [part for part in (render_auto_block(hits, UTC),
                               render_background(background, UTC)) if part]
    used = sum(len(part.encode("utf-8")) + 2 for part in parts)
    card = person_card(conn, text, now=now, tz=UTC, budget_bytes=CONTEXT_BUDGET_BYTES - used)
    return "\n\n".join([*parts, card] if card else parts)


CONTEXT_BUDGET_BYTES = 2_500  # H12: the whole automatic context stays under about 2.5 KB


def labelled_background(conn: apsw.Connection, candidates: Sequence[Candidate]
                        ) -> dict[str, str]:
    """id -> label for pool memories that may join the labelled background (H19): the owner's
    own (scope ``agent``) preferences, and lessons the user or a document stated (verified:
    an assistant's lesson is not)."""
    ids = [c.id for c in candidates]
    if not ids:
        return {}
    out: dict[str, str] = {}
    for memory_id, labels, source in _optional_rows(
            conn, f"SELECT m.id, mm.labels, m.source FROM memory_meta mm JOIN memories m "
                  f"ON m.id = mm.id WHERE mm.id IN ({','.join('?' * len(ids))}) "
                  "AND mm.scope = 'agent'", ids):
        kinds = labels.split(",")
        if "preference" in kinds:
            out[memory_id] = "preference"
        elif "lesson" in kinds and source in ("user", "document"):
            out[memory_id] = "lesson"
    return out
