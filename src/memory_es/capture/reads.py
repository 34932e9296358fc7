"""What a capture step reads from the caught-up index: the :class:`CaptureReads` protocol
and :class:`IndexReads`, the store's implementation.

Every query runs through ``run`` (the store holds the journal like an admission leader while
it does), and only over live lines: superseded, invalidated and dropped lines are history and
never a duplicate, a reconcile target or a candidate (G22, DESIGN 9.8).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

import apsw
import numpy as np

from memory_es.vocabulary import HISTORY_STATUSES, SIDECAR_BYTES, sql_list

CLOSE_COSINE = 0.75  # DESIGN 9.10
SAME_ENTITY_LINES = 3  # E29
CLOSE_BY_COSINE = 5  # at most this many cosine-close live lines per candidate (our bound)
NEAREST_SCANNED = 50  # nearest vectors looked at per candidate, history included
_LIVE = f"m.status NOT IN {sql_list(HISTORY_STATUSES)}"
_LINE_SQL = ("SELECT m.id, m.text, m.day, m.kind, m.status, mm.labels, mm.scope, m.source, "
             "m.rowid, coalesce(mt.replaceable, 0), mt.due_at FROM memories m "
             "LEFT JOIN memory_meta mm ON mm.id = m.id LEFT JOIN memory_terms mt ON mt.id = m.id ")


@dataclass(frozen=True)
class StoredLine:
    """A stored memory as the classifier and the guards see it."""

    id: str
    text: str
    day: str
    kind: str
    status: str
    labels: tuple[str, ...]
    scope: str | None
    source: str
    replaceable: bool = False  # a Remember line a later capture may supersede (J10)
    due_at: str | None = None  # an intention's inclusive end, as stored (M17, M22)


class CaptureReads(Protocol):
    """What the step reads from the caught-up index (the store implements it)."""

    def duplicates(self, keys: Sequence[str]) -> dict[str, str]:
        """text key -> id of a live line with that key."""
        ...

    def close_lines(self, texts: Sequence[str], entity_ids: Sequence[Sequence[str]],
                    fact_keys: Sequence[tuple[str, str] | None] | None = None
                    ) -> list[list[StoredLine]] | None:
        """Per text: live lines at cosine >= 0.75, then up to 3 same-entity lines (those with
        the same fact key first, then the newest, E29). ``None`` when vectors are unavailable."""
        ...

    def lines(self, ids: Sequence[str]) -> dict[str, StoredLine]: ...

    def known_entities(self, ids: Sequence[str]) -> set[str]: ...

    def entity_ids(self) -> dict[tuple[str, str], str]:
        """``ids.name_key`` -> id of every stored entity: a plan's entity that names one is
        that node (L1)."""
        ...

    def known_relations(self, triples: Sequence[tuple[str, str, str]]
                        ) -> set[tuple[str, str, str]]: ...

    def version(self, originator_id: UUID) -> int:
        """The aggregate's last version in the journal (0 when it has none)."""
        ...

    def replay_state(self) -> tuple[int, int]:
        """(entries, bytes) of the replay sidecar as projected (F8)."""
        ...


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def _line(row: Any) -> StoredLine:
    labels = tuple(row[5].split(",")) if row[5] else ()
    return StoredLine(id=row[0], text=row[1], day=row[2], kind=row[3], status=row[4],
                      labels=labels, scope=row[6], source=row[7], replaceable=bool(row[9]),
                      due_at=row[10])


class IndexReads:
    """CaptureReads over the store's index.

    ``run(fn)`` calls ``fn(conn)`` with the caught-up index; ``nearest(vectors, k)`` gives each
    vector's top ``k`` (rowid, cosine) among stored vectors; ``embed(texts)`` embeds candidate
    texts (None when the provider is unavailable); ``version(uuid)`` reads the journal;
    ``entities(conn)`` reads the stored entities by name (the index's own query).
    """

    def __init__(self, run: Callable[[Callable[[apsw.Connection], Any]], Any],
                 embed: Callable[[Sequence[str]], list[np.ndarray] | None],
                 nearest: Callable[[list[np.ndarray], int], list[list[tuple[int, float]]]],
                 version: Callable[[UUID], int],
                 entities: Callable[[apsw.Connection], dict[tuple[str, str], str]]) -> None:
        self._run = run
        self._embed = embed
        self._nearest = nearest
        self._version = version
        self._entities = entities

    def entity_ids(self) -> dict[tuple[str, str], str]:
        found: dict[tuple[str, str], str] = self._run(self._entities)
        return found

    def duplicates(self, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}

        def query(conn: apsw.Connection) -> dict[str, str]:
            rows = conn.execute(
                f"SELECT mm.text_key, m.id FROM memory_meta mm JOIN memories m ON m.id = mm.id "
                f"WHERE mm.text_key IN ({_marks(keys)}) AND {_LIVE} ORDER BY m.rowid",
                list(keys))
            found: dict[str, str] = {}
            for key, memory_id in rows:
                found.setdefault(key, memory_id)
            return found
        result: dict[str, str] = self._run(query)
        return result

    def close_lines(self, texts: Sequence[str], entity_ids: Sequence[Sequence[str]],
                    fact_keys: Sequence[tuple[str, str] | None] | None = None
                    ) -> list[list[StoredLine]] | None:
        vectors = self._embed(texts)
        if vectors is None:
            return None
        # Wide enough that superseded history close to the text cannot crowd live lines out
        nearest = self._nearest(vectors, NEAREST_SCANNED) if vectors else []

        def query(conn: apsw.Connection) -> list[list[StoredLine]]:
            out: list[list[StoredLine]] = []
            keys = fact_keys if fact_keys is not None else [None] * len(entity_ids)
            for hits, entities, fact in zip(nearest, entity_ids, keys, strict=True):
                rowids = [rowid for rowid, cos in hits if cos >= CLOSE_COSINE]
                lines: list[StoredLine] = []
                if rowids:
                    by_rowid = {row[8]: _line(row) for row in conn.execute(
                        _LINE_SQL + f"WHERE m.rowid IN ({_marks(rowids)}) AND {_LIVE}", rowids)}
                    lines = [by_rowid[r] for r in rowids if r in by_rowid][:CLOSE_BY_COSINE]
                if entities:  # E29: up to 3 same-entity lines, no vector score: those sharing
                    seen = {line.id for line in lines}  # the structured fact key first
                    subject, key = fact if fact is not None else ("", "")
                    rows = conn.execute(
                        _LINE_SQL + "JOIN memory_entities me ON me.memory_id = m.id "
                        f"WHERE me.entity_id IN ({_marks(entities)}) AND {_LIVE} GROUP BY m.id "
                        "ORDER BY (mm.fact_subject IS ? AND mm.fact_key IS ?) DESC, "
                        "m.recorded_at DESC, m.rowid DESC LIMIT ?",
                        [*entities, subject, key, SAME_ENTITY_LINES + len(seen)])
                    extra = [line for line in map(_line, rows) if line.id not in seen]
                    lines += extra[:SAME_ENTITY_LINES]
                out.append(lines)
            return out
        result: list[list[StoredLine]] = self._run(query)
        return result

    def lines(self, ids: Sequence[str]) -> dict[str, StoredLine]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}

        def query(conn: apsw.Connection) -> dict[str, StoredLine]:
            return {row[0]: _line(row) for row in conn.execute(
                _LINE_SQL + f"WHERE m.id IN ({_marks(wanted)})", wanted)}
        result: dict[str, StoredLine] = self._run(query)
        return result

    def known_entities(self, ids: Sequence[str]) -> set[str]:
        wanted = sorted(set(ids))
        if not wanted:
            return set()
        result: set[str] = self._run(lambda conn: {row[0] for row in conn.execute(
            f"SELECT id FROM entities WHERE id IN ({_marks(wanted)})", wanted)})
        return result

    def known_relations(self, triples: Sequence[tuple[str, str, str]]
                        ) -> set[tuple[str, str, str]]:
        wanted = sorted(set(triples))

        def query(conn: apsw.Connection) -> set[tuple[str, str, str]]:
            found: set[tuple[str, str, str]] = set()
            for triple in wanted:
                if conn.execute("SELECT 1 FROM relations WHERE src = ? AND relation = ? "
                                "AND dst = ?", triple).fetchone():
                    found.add(triple)
            return found
        result: set[tuple[str, str, str]] = self._run(query) if wanted else set()
        return result

    def replay_state(self) -> tuple[int, int]:
        """(entries, bytes) of the replay sidecar at the projected position (F8)."""
        def query(conn: apsw.Connection) -> tuple[int, int]:
            counts: list[Any] = [conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
                                 for table in ("lifecycle", "threads")]
            entries = sum(int(c[0]) for c in counts)
            row: Any = conn.execute("SELECT value FROM meta WHERE key = ?",
                                    (SIDECAR_BYTES,)).fetchone()
            return entries, int(row[0]) if row else 0
        result: tuple[int, int] = self._run(query)
        return result

    def version(self, originator_id: UUID) -> int:
        return self._version(originator_id)
