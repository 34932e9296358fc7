"""Health's comparisons of the live root with a replay: files byte for byte, index rows column
by column, the sidecar, Markdown provenance, and the stored vectors (N1-N4, N11)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import apsw
import msgspec
import numpy as np

from memory_es.errors import (
    MemoryEsError,
)
from memory_es.vocabulary import TERMINAL_SQL, VECTOR_NORM_TOLERANCE
from projections.findings import Finding, read_regular
from projections.graph import SIDECAR_FILE, render_sidecar, sidecar_problem
from projections.index_schema import DUMP_ORDER, DUMP_TABLES, REPLAY_OWNED
from projections.markdown import read_provenance
from projections.replay import (
    managed_files,
)

# Fewer identical vectors than this can be honest (the same words); more are a poisoned store.
CONSTANT_MIN_ROWS = 3

def compare_files(root: Path, expected: dict[str, bytes]) -> Iterator[Finding]:
    live = set(managed_files(root))
    for rel in sorted(live | set(expected)):
        if rel not in expected:
            yield Finding("file_extra", rel, "no journal event implies this file")
        elif rel not in live:
            yield Finding("file_missing", rel, "replay writes this file; it is absent")
        else:
            try:
                data = read_regular(root / rel)
            except OSError as e:
                yield Finding("file_unreadable", rel, type(e).__name__)
                continue
            if data != expected[rel]:
                yield Finding("file_mismatch", rel,
                              f"{len(data)} bytes, replay gives {len(expected[rel])}; first "
                              f"difference on line {_first_diff_line(data, expected[rel])}")


def _first_diff_line(a: bytes, b: bytes) -> int:
    """1-based line of the first differing byte: where to look, without quoting content."""
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return a[:i].count(b"\n") + 1


def _rows(conn: apsw.Connection, table: str) -> Iterator[tuple[Any, ...]]:
    columns = ", ".join(DUMP_TABLES[table])
    order = DUMP_ORDER.get(table, "rowid")
    try:
        cursor = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
    except apsw.SQLError:  # an older generation without the capture tables: no rows
        return
    for row in cursor:
        yield tuple(row)


def _merge(want: Iterator[tuple[Any, ...]], have: Iterator[tuple[Any, ...]], keys: int = 1
           ) -> Iterator[tuple[Any, tuple[Any, ...] | None, tuple[Any, ...] | None]]:
    """Walk two key-ordered row streams together: (key, expected row, live row). The key is
    the first ``keys`` columns (the rowid, or a WITHOUT ROWID table's primary key)."""
    w, h = next(want, None), next(have, None)
    while w is not None or h is not None:
        wk = w[:keys] if w is not None else None
        hk = h[:keys] if h is not None else None
        if hk is None or (wk is not None and wk < hk):
            assert w is not None
            yield w[0], w, None
            w = next(want, None)
        elif wk is None or hk < wk:
            assert h is not None
            yield h[0], None, h
            h = next(have, None)
        else:
            assert w is not None
            yield w[0], w, h
            w, h = next(want, None), next(have, None)


def compare_index(live: apsw.Connection, expected: apsw.Connection,
                   rel: str) -> Iterator[Finding]:
    """Row by row, streaming both sides (memory stays flat however large the index)."""
    for table, columns in DUMP_TABLES.items():
        keys = DUMP_ORDER.get(table, "rowid").count(",") + 1
        for rowid, want, have in _merge(_rows(expected, table), _rows(live, table), keys):
            if want == have:
                continue
            if table == "memories_fts":
                yield Finding("fts_out_of_sync", rel, f"{table} rowid {rowid}")
            elif table in REPLAY_OWNED:  # N1, N2: never trusted as history
                yield Finding("canonical_mismatch", rel,
                              f"{table} rowid {rowid} differs from the journal's replay")
            elif have is None:
                yield Finding("index_row_missing", rel, f"{table} rowid {rowid}")
            elif want is None:
                yield Finding("index_row_extra", rel, f"{table} rowid {rowid}")
            else:
                changed = [c for c, a, b in zip(columns, want, have, strict=True) if a != b]
                yield Finding("index_row_changed", rel,
                              f"{table} rowid {rowid} columns {','.join(changed)}")


def compare_sidecar(root: Path, live: apsw.Connection) -> Iterator[Finding]:
    """N1, N8, F6: the sidecar is canonical and says exactly what the index holds."""
    path = root / SIDECAR_FILE
    try:
        data: bytes | None = read_regular(path)
    except FileNotFoundError:
        data = None
    except OSError as e:
        yield Finding("file_unreadable", SIDECAR_FILE, type(e).__name__)
        return
    if data is not None:
        problem = sidecar_problem(data)
        if problem is not None:
            yield Finding("sidecar_invalid", SIDECAR_FILE, problem)
            return
    try:
        want = render_sidecar(live)
    except apsw.SQLError:
        want = None
    except MemoryEsError as e:
        yield Finding(e.code, SIDECAR_FILE, "index replay state over the sidecar bounds")
        return
    if want != data:
        yield Finding("canonical_mismatch", SIDECAR_FILE,
                      "sidecar and index lifecycle/edges differ")


def audit_vectors(live: apsw.Connection, rel: str) -> Iterator[Finding]:
    """Stored vectors against the generation's live records (D4, D9, N14).
    Vectors are not events (health never compares them with replay) but what is stored must
    be usable: of the generation's one identity (``provider/model/dim``, meta
    ``vector_identity``), of that dimension, finite, for records that exist; and every live
    record without one must wait in the queue, or it would never be embedded. Counts only."""
    try:
        row: Any = live.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()
        count: Any = live.execute("SELECT count(*) FROM vectors").fetchone()
        stored = int(count[0])
    except apsw.SQLError:  # a generation from before vectors
        return
    if row is None:
        if stored:
            yield Finding("vector_identity_mismatch", rel,
                          f"{stored} vectors, the generation names no embedding identity")
        return
    identity = str(row[0])
    try:
        dim = int(msgspec.json.decode(identity)[2])
    except (msgspec.DecodeError, IndexError, KeyError, TypeError, ValueError):
        yield Finding("vector_identity_mismatch", rel, "unreadable embedding identity")
        return
    counts = {"orphan": 0, "identity": 0, "dimension": 0, "non_finite": 0, "not_unit": 0}
    first: bytes | None = None
    whole = 0  # vectors of the identity and dimension, finite and of unit length
    alike = True  # ... every one of them the same bytes
    for rowid, ident, blob, exists in live.execute(
            "SELECT v.rowid, v.identity, v.vector, m.rowid IS NOT NULL FROM vectors v "
            "LEFT JOIN memories m ON m.rowid = v.rowid ORDER BY v.rowid"):
        del rowid
        if not exists:
            counts["orphan"] += 1
        if ident != identity:
            counts["identity"] += 1
            continue
        data = bytes(blob)
        if len(data) != 4 * dim:
            counts["dimension"] += 1
            continue
        row = np.frombuffer(data, dtype=np.float32).astype(np.float64)
        norm = float(np.sqrt(row @ row))
        if not math.isfinite(norm):
            counts["non_finite"] += 1
        elif abs(norm - 1.0) > VECTOR_NORM_TOLERANCE:
            counts["not_unit"] += 1
        else:
            whole += 1
            if first is None:
                first = data
            elif data != first:
                alike = False
    said = {"orphan": ("vector_orphan", "vectors for records that do not exist"),
            "identity": ("vector_identity_mismatch", "vectors of another embedding identity"),
            "dimension": ("vector_dimension", f"vectors not of dimension {dim}"),
            "non_finite": ("vector_non_finite", "vectors holding NaN or infinity"),
            "not_unit": ("vector_not_unit", "vectors not of unit length (zeroed or scaled: "
                         "semantic recall cannot use them); run memory-es rebuild")}
    for key, n in counts.items():
        if n:
            code, what = said[key]
            yield Finding(code, rel, f"{n} {what}")
    if whole >= CONSTANT_MIN_ROWS and alike:
        yield Finding("vector_constant", rel,
                      f"all {whole} vectors are the same vector (semantic recall ranks "
                      "nothing); run memory-es rebuild")
    try:
        waiting: Any = live.execute(
            f"SELECT count(*) FROM memories m WHERE m.status NOT IN {TERMINAL_SQL} "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.rowid = m.rowid "
            "AND v.identity = ?) AND NOT EXISTS (SELECT 1 FROM vector_pending p "
            "WHERE p.rowid = m.rowid)", (identity,)).fetchone()
        unqueued = int(waiting[0])
    except apsw.SQLError:
        return
    if unqueued:
        yield Finding("vector_unqueued", rel,
                      f"{unqueued} live records with no vector and not queued for one")


def compare_provenance(root: Path, live: apsw.Connection,
                       rendered: Collection[str] = ()) -> Iterator[Finding]:
    """N4: each daily line's source_session must be what the index holds for that id.

    ``rendered``: files whose bytes are known to equal their rendering from an index equal
    to ``live`` (health, when both comparisons found nothing): their provenance is the
    index's by construction, so they are not parsed again (health time)."""
    indexed = dict(live.execute("SELECT id, source_session FROM memories"))
    for rel in managed_files(root):
        if not rel.startswith("daily/") or rel in rendered:
            continue
        try:
            marks = read_provenance(read_regular(root / rel))
        except OSError:
            continue
        for memory_id, session in sorted(marks.items()):
            if memory_id in indexed and indexed[memory_id] != session:
                yield Finding("source_session_mismatch", rel,
                              f"memory {memory_id[:12]}: Markdown and index disagree")


