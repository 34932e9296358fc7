"""The strict health auditor (N1-N4, N7, N11, N12, DESIGN 8).

Health replays the journal (up to the position the live index claims) into a scratch index,
renders the Markdown that replay implies, and compares with the live root: files byte for
byte, index rows column by column, FTS against rows, Markdown provenance against the index,
and the hygiene of every path. Findings carry a stable code, a root-relative path and a
content-free detail; memory text never appears (N12).
"""

from __future__ import annotations

import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

import apsw
import msgspec
import numpy as np

from memory_es.errors import (
    STORAGE_CODES,
    MemoryEsError,
    NotARootError,
    StorageError,
    storage_kind,
)
from memory_es.journal.lock import writer_alive
from memory_es.vocabulary import TERMINAL_STATUSES, sql_list
from projections.graph import SIDECAR_FILE, render_sidecar, sidecar_problem
from projections.markdown import read_provenance
from projections.replay import (
    CURRENT_FILE,
    INDEX_DB,
    INDEX_DIR,
    MARKDOWN_DIRS,
    ROOT_FILES,
    RUNTIME_DIR,
    build_generation,
    generation_dirs,
    generation_path,
    managed_files,
    open_active_index,
    read_current,
    render_all,
    render_one,
)
from projections.sqlite_index import DUMP_ORDER, DUMP_TABLES, REPLAY_OWNED, IndexProjection

EXIT_CLEAN, EXIT_FINDINGS, EXIT_CANNOT_AUDIT, EXIT_COULD_NOT_RUN = 0, 1, 2, 3

# Files the engine owns at the root; anything else (outside the managed dirs) is a stray.
_ROOT_FILES = {"journal.db", "journal.db-wal", "journal.db-shm", "journal.catalog",
               ".memory-es-schema", ".writer.lock"}
_SQLITE_SIDE = ("-wal", "-shm", "-journal")


HealthStatus = Literal["clean", "in_progress", "recoverable", "findings", "cannot_audit"]
# Findings the next writer open repairs by itself: what a killed writer left (issue 13 item 9)
# and projections behind the journal. A report holding only these is ``recoverable`` (exit 0),
# or ``in_progress`` while a writer holds the root; anything else is drift (``findings``).
RECOVERABLE = frozenset({"crash_residue", "projection_behind"})
RESIDUE_DETAIL = "left by a writer killed mid-write; the next writer open repairs it"
_TEMP_NAME = re.compile(r"^\.(?P<target>.+)\.tmp-\d+-[a-z0-9_]{8}$")
_GEN_FILES = {INDEX_DB + s for s in ("", "-wal", "-shm", "-journal")}


class Finding(msgspec.Struct, frozen=True, order=True):
    """One problem: stable ``code``, root-relative ``path``, content-free ``detail``.
    Findings order by code, then path, then detail."""

    code: str
    path: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "detail": self.detail}


class HealthReport(msgspec.Struct, frozen=True, kw_only=True):
    """The audit result; ``exit_code`` is what ``memory-es health`` exits with."""

    status: HealthStatus
    journal_position: int = 0
    projection_position: int = 0
    findings: tuple[Finding, ...] = ()
    vectors_pending: int | None = None  # live memories without a vector; None: not embedded
    worker: str | None = None  # "running", "stalled", "not_running"; None: not asked
    runtime: str | None = None  # the snapshot: "absent", "current", "stale", "invalid"

    @property
    def exit_code(self) -> int:
        """0 clean, in progress or recoverable (only crash residue and projections behind,
        which the next writer open repairs), 1 findings (drift), 2 no memory root there, 3
        could not run (the root could not be read: I/O, permissions, a lock)."""
        if self.status == "cannot_audit":
            if any(f.code == "not_a_root" for f in self.findings):
                return EXIT_CANNOT_AUDIT
            return EXIT_COULD_NOT_RUN
        if self.status in ("clean", "in_progress", "recoverable"):
            return EXIT_CLEAN
        return EXIT_FINDINGS

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "journal_position": self.journal_position,
                "projection_position": self.projection_position,
                "findings": [f.to_json() for f in sorted(self.findings)],
                "vectors_pending": self.vectors_pending, "worker": self.worker,
                "runtime": self.runtime}


def hygiene(root: Path) -> Iterator[Finding]:
    """Every path under the root: no symlinks, ours, private, single link (B16, B17, N7)."""
    uid = os.geteuid()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                yield Finding("symlink", rel, "is a symbolic link")
                continue
            if st.st_uid != uid:
                yield Finding("foreign_owner", rel, f"owned by uid {st.st_uid}, expected {uid}")
            mode = stat.S_IMODE(st.st_mode)
            if mode & 0o077:
                yield Finding("unsafe_mode", rel, f"mode {mode:04o} has group/other bits")
            if stat.S_ISREG(st.st_mode) and st.st_nlink != 1:
                yield Finding("hard_link", rel, f"{st.st_nlink} hard links")


def _unexpected_files(root: Path, generation: int | None) -> Iterator[Finding]:
    """Files that are neither the journal, the active index generation, nor managed Markdown."""
    markdown = set(managed_files(root))  # compared against replay in _compare_files
    allowed_index = {"CURRENT"}
    if generation is not None:
        allowed_index |= {f"gen-{generation}/memory.db" + s for s in ("", *_SQLITE_SIDE)}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            rel = str((Path(dirpath) / name).relative_to(root))
            top, _, rest = rel.partition("/")
            if not rest and rel in _ROOT_FILES:
                continue
            if top == INDEX_DIR and rest in allowed_index:
                continue
            if rel in markdown:
                continue  # compared against replay below
            if top == RUNTIME_DIR and "/" not in rest:
                continue  # the worker's runtime snapshot (B19): not a projection
            if top == "embeddings" and rest in {"cache.db" + s for s in ("", *_SQLITE_SIDE)}:
                continue  # the vector cache: derived from providers, not from events
            yield Finding("file_extra", rel, "not a file memory_es manages")


def _compare_files(root: Path, expected: dict[str, bytes]) -> Iterator[Finding]:
    live = set(managed_files(root))
    for rel in sorted(live | set(expected)):
        if rel not in expected:
            yield Finding("file_extra", rel, "no journal event implies this file")
        elif rel not in live:
            yield Finding("file_missing", rel, "replay writes this file; it is absent")
        else:
            try:
                data = (root / rel).read_bytes()
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


def _compare_index(live: apsw.Connection, expected: apsw.Connection,
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


def _compare_sidecar(root: Path, live: apsw.Connection) -> Iterator[Finding]:
    """N1, N8, F6: the sidecar is canonical and says exactly what the index holds."""
    path = root / SIDECAR_FILE
    try:
        data: bytes | None = path.read_bytes()
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


def _audit_vectors(live: apsw.Connection, rel: str) -> Iterator[Finding]:
    """Stored vectors against the generation's live records (issue 13 item 12; D4, D9, N14).
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
    counts = {"orphan": 0, "identity": 0, "dimension": 0, "non_finite": 0}
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
        elif not math.isfinite(float(np.frombuffer(data, dtype=np.float32).sum(
                dtype=np.float64))):
            counts["non_finite"] += 1
    said = {"orphan": ("vector_orphan", "vectors for records that do not exist"),
            "identity": ("vector_identity_mismatch", "vectors of another embedding identity"),
            "dimension": ("vector_dimension", f"vectors not of dimension {dim}"),
            "non_finite": ("vector_non_finite", "vectors holding NaN or infinity")}
    for key, n in counts.items():
        if n:
            code, what = said[key]
            yield Finding(code, rel, f"{n} {what}")
    try:
        waiting: Any = live.execute(
            f"SELECT count(*) FROM memories m WHERE m.status NOT IN {_TERMINAL} "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.rowid = m.rowid "
            "AND v.identity = ?) AND NOT EXISTS (SELECT 1 FROM vector_pending p "
            "WHERE p.rowid = m.rowid)", (identity,)).fetchone()
        unqueued = int(waiting[0])
    except apsw.SQLError:
        return
    if unqueued:
        yield Finding("vector_unqueued", rel,
                      f"{unqueued} live records with no vector and not queued for one")


def _compare_provenance(root: Path, live: apsw.Connection) -> Iterator[Finding]:
    """N4: each daily line's source_session must be what the index holds for that id."""
    indexed = dict(live.execute("SELECT id, source_session FROM memories"))
    for rel in managed_files(root):
        if not rel.startswith("daily/"):
            continue
        try:
            marks = read_provenance((root / rel).read_bytes())
        except OSError:
            continue
        for memory_id, session in sorted(marks.items()):
            if memory_id in indexed and indexed[memory_id] != session:
                yield Finding("source_session_mismatch", rel,
                              f"memory {memory_id[:12]}: Markdown and index disagree")


class Residue:
    """What a writer killed at a known boundary can leave, judged against replay (issue 13
    item 9). ``expected`` is the scratch replay at the live index position; ``future`` then
    extends it event by event to the journal head, rendering each file an event touches, so
    a file written ahead of the index commit (the Markdown, graph or sidecar of a flush the
    kill cut short) is one of those renderings, byte for byte."""

    def __init__(self, root: Path, expected: IndexProjection, want: dict[str, bytes],
                 active: int | None, head: int,
                 events: Callable[[int, int], Iterable[tuple[int, object]]]) -> None:
        self.root, self.expected, self.want = root, expected, want
        self.active, self.head, self._events = active, head, events
        self._future: dict[str, set[bytes | None]] | None = None

    def states(self, rel: str) -> set[bytes | None]:
        """Every content replay gives ``rel`` from the index position to the journal head
        (None: the file does not exist)."""
        if self._future is None:
            self._future = {}
            index = self.expected
            for position, event in self._events(index.position, self.head):
                index.touched = set()
                index.apply(position, event)
                for kind, day in sorted(index.touched):
                    path, data = render_one(index, kind, day)
                    self._future.setdefault(path, set()).add(data)
            index.touched = set()
        return {self.want.get(rel), *self._future.get(rel, ())}

    def holds_a_state(self, rel: str, *, ahead: bool = False) -> bool:
        """Is the live ``rel`` (or its absence) a state replay passes through? ``ahead``:
        one past the index position, never the state at it (a sidecar that equals replay
        but not the live index means the index was edited, not that a write ran ahead)."""
        try:
            data: bytes | None = (self.root / rel).read_bytes()
        except FileNotFoundError:
            data = None
        except OSError:
            return False
        if ahead and data == self.want.get(rel):
            return False
        return data in self.states(rel)

    def is_temp(self, rel: str) -> bool:
        """``.NAME.tmp-PID-XXXXXXXX`` beside a file the engine writes atomically, holding
        exactly what that write would have put there."""
        parent, _, name = rel.rpartition("/")
        match = _TEMP_NAME.match(name)
        if match is None:
            return False
        target = f"{parent}/{match['target']}" if parent else match["target"]
        try:
            data = (self.root / rel).read_bytes()
        except OSError:
            return False
        if (parent in MARKDOWN_DIRS and target.endswith(".md")) or target in ROOT_FILES:
            return data in self.states(target) - {None}
        if target == f"{INDEX_DIR}/{CURRENT_FILE}":  # the pointer to a generation built
            text = data.decode("ascii", "replace")  # but not yet activated
            number = text[4:-1] if text.startswith("gen-") and text.endswith("\n") else ""
            return number.isdigit() and int(number) != self.active and \
                generation_path(self.root, int(number)).is_file()
        return False

    def inactive_generations(self) -> set[str]:
        """Files of generations beside the active one that are exactly a replay of the
        journal up to their own position: a rebuild killed before it activated its new
        generation or removed the old one, or a first open killed before it pointed
        ``index/CURRENT`` at gen-1."""
        residue: set[str] = set()
        for number, directory in generation_dirs(self.root).items():
            if number == self.active:
                continue
            try:
                names = set(os.listdir(directory))
            except OSError:
                continue
            if INDEX_DB not in names or not names <= _GEN_FILES:
                continue
            if self._is_replay(directory / INDEX_DB):
                residue |= {f"{INDEX_DIR}/{directory.name}/{n}" for n in names}
        return residue

    def _is_replay(self, db: Path) -> bool:
        try:
            conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY
                                   | apsw.SQLITE_OPEN_NOFOLLOW)
        except apsw.Error:
            return False
        try:
            row: Any = conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()
            position = int(row[0]) if row is not None else 0
            if not 0 <= position <= self.head:
                return False
            with tempfile.TemporaryDirectory(prefix="memory-es-health-") as scratch:
                replay = build_generation(Path(scratch) / INDEX_DB, self._events(0, position))
                try:
                    return not any(_compare_index(conn, replay.conn, str(db)))
                finally:
                    replay.close()
        except (apsw.Error, TypeError, ValueError):
            return False
        finally:
            conn.close()


def _residue(root: Path, findings: list[Finding], residue: Residue) -> list[Finding]:
    """Findings on files a killed writer left (and the next writer open repairs) become
    ``crash_residue``; everything else, hand edits that look alike included, stays drift.
    Only a private file (no hygiene finding) can be residue."""
    unsafe = {f.path for f in findings if f.code in _HYGIENE}
    generations: set[str] | None = None
    out: list[Finding] = []
    for f in findings:
        rel = f.path
        is_residue = False
        if rel not in unsafe:
            if f.code in ("file_mismatch", "file_missing"):
                is_residue = residue.holds_a_state(rel)
            elif f.code == "canonical_mismatch" and rel == SIDECAR_FILE:
                is_residue = residue.holds_a_state(rel, ahead=True)
            elif f.code == "file_extra":
                if rel.startswith(f"{INDEX_DIR}/gen-"):
                    if generations is None:
                        generations = residue.inactive_generations()
                    is_residue = rel in generations
                elif ("/" not in rel and rel in ROOT_FILES) or \
                        (rel.split("/", 1)[0] in MARKDOWN_DIRS and "/." not in rel):
                    is_residue = residue.holds_a_state(rel)  # a new file, ahead
                else:
                    is_residue = residue.is_temp(rel)
        out.append(Finding("crash_residue", rel, RESIDUE_DETAIL) if is_residue else f)
    return out


_TERMINAL = sql_list(TERMINAL_STATUSES)
_HYGIENE = frozenset({"symlink", "foreign_owner", "unsafe_mode", "hard_link"})


def audit(
    root: Path,
    *,
    open_journal: Callable[[Path], Any],
    events_upto: Callable[[Any, int, int], Iterable[tuple[int, object]]],
    journal_checks: Callable[[Any], Iterable[Finding]] = lambda opened: (),
) -> HealthReport:
    """Audit ``root``. The journal side is injected so projections stay store-agnostic:
    ``open_journal(root)`` opens it read-only (raising MemoryEsError with a ``code``),
    ``events_upto(opened, upto, after)`` yields decoded events in (after, upto], and
    ``journal_checks(opened)`` adds intake findings (payloads).

    A storage failure never escapes (issue 13 item 10): a damaged journal is the finding
    ``journal_corrupt``, a damaged index ``index_unreadable``; when the journal cannot be read
    at all (I/O, permissions, a lock: :class:`StorageError` of another kind) the status is
    ``cannot_audit`` with that one finding (exit 3)."""
    root = Path(root)
    if not os.path.lexists(root):
        return HealthReport(status="cannot_audit", findings=(Finding("not_a_root", ".", "absent"),))
    try:
        findings = list(hygiene(root))
    except OSError as e:  # a directory we may not list
        return _could_not_run(root, e)
    try:
        opened = open_journal(root)
    except NotARootError:
        return HealthReport(status="cannot_audit",
                            findings=(Finding("not_a_root", ".", "no journal"),))
    except StorageError as e:
        if e.kind != "corrupt":
            return _could_not_run(root, e)
        findings.append(Finding(e.code, _rel(root, e), "journal failed closed"))
        return HealthReport(status="findings", findings=tuple(sorted(set(findings))))
    except MemoryEsError as e:
        findings.append(Finding(e.code, _rel(root, e), "journal failed closed"))
        return HealthReport(status="findings", findings=tuple(sorted(set(findings))))
    try:
        return _audit_opened(root, opened, findings, events_upto, journal_checks)
    except StorageError as e:  # the journal, read after it verified
        if e.kind != "corrupt":
            return _could_not_run(root, e)
        return HealthReport(status="findings", findings=tuple(sorted(
            {*findings, Finding(e.code, _rel(root, e), "journal failed closed")})))
    except (apsw.Error, OSError) as e:  # the live index read mid-audit, or the scratch
        if storage_kind(e) == "corrupt":
            return HealthReport(status="findings", findings=tuple(sorted(
                {*findings, Finding("index_unreadable", INDEX_DIR,
                                    f"{type(e).__name__}; run memory-es rebuild")})))
        if storage_kind(e) is None:
            raise
        return _could_not_run(root, e)
    finally:
        opened.close()


def _could_not_run(root: Path, error: BaseException) -> HealthReport:
    """Health could not read what it audits: ``cannot_audit``, one content-free finding."""
    if isinstance(error, StorageError):
        return HealthReport(status="cannot_audit", findings=(
            Finding(error.code, _rel(root, error), "health could not read it"),))
    kind = storage_kind(error)
    code = {"io": "io_error", "busy": "busy"}.get(kind or "", "sqlite_error")
    path = getattr(error, "filename", None)
    rel = _relpath(root, path) if path else "."
    return HealthReport(status="cannot_audit", findings=(
        Finding(code, rel, f"health could not read it ({type(error).__name__})"),))


def _audit_opened(root: Path, opened: Any, findings: list[Finding],
                  events_upto: Callable[[Any, int, int], Iterable[tuple[int, object]]],
                  journal_checks: Callable[[Any], Iterable[Finding]]) -> HealthReport:
    head = opened.recorder.max_notification_id() or 0
    # Journal ahead of the catalog (its suffix verified with the chain key): with a writer
    # holding the root it is a commit whose catalog write is in flight; with none, its own
    # finding (a crash the next writer open recovers, or rows appended outside memory-es),
    # never projection_behind (issue 13 item 11).
    catalog_at = getattr(opened, "recovered_from", None)
    ahead = catalog_at is not None and not writer_alive(root)
    if ahead:
        findings.append(Finding("journal_ahead_of_catalog", "journal.catalog",
                                f"journal at {head}, catalog at {catalog_at}, no writer holds "
                                "the lock; the next writer open verifies and adopts the suffix"))
    findings += list(journal_checks(opened))
    try:
        generation = read_current(root)
    except MemoryEsError as e:  # nothing in index/ can be judged without the pointer
        findings.append(Finding(e.code, "index/CURRENT", "unreadable"))
        findings += [f for f in _unexpected_files(root, None)
                     if not f.path.startswith(INDEX_DIR + "/")]
        return HealthReport(status="findings", journal_position=head,
                            findings=tuple(sorted(set(findings))))
    findings += list(_unexpected_files(root, generation))
    live_db = generation_path(root, generation) if generation is not None else None
    if live_db is None or not live_db.is_file():
        if head:
            findings.append(Finding("index_missing", INDEX_DIR, "no active generation"))
        if findings:  # e.g. a first open killed before it pointed index/CURRENT at gen-1
            with tempfile.TemporaryDirectory(prefix="memory-es-health-") as scratch:
                nothing = build_generation(Path(scratch) / INDEX_DB, ())
                try:
                    findings = _residue(root, findings, Residue(
                        root, nothing, {}, generation, head,
                        lambda after, upto: events_upto(opened, upto, after)))
                finally:
                    nothing.close()
        return _report(root, head, 0, findings)
    live: apsw.Connection | None = None
    try:
        live = open_active_index(root)
        assert live is not None
        row: Any = live.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()
        position = int(row[0])
    except (MemoryEsError, apsw.Error, TypeError, ValueError) as e:
        # Truncated, corrupt, unsafe: nothing in it can be compared (issue 13 item 2).
        if live is not None:
            live.close()
        if storage_kind(e) in ("io", "busy"):  # a read-only disk is no damage to rebuild
            return _could_not_run(root, StorageError(
                f"{live_db}: cannot read the index ({type(e).__name__})",
                code=STORAGE_CODES[storage_kind(e) or "io"], kind="io", path=str(live_db)))
        findings.append(Finding("index_unreadable", str(live_db.relative_to(root)),
                                f"{type(e).__name__}; run memory-es rebuild"))
        return HealthReport(status="findings", journal_position=head,
                            findings=tuple(sorted(set(findings))))
    try:
        rel = str(live_db.relative_to(root))
        try:
            with tempfile.TemporaryDirectory(prefix="memory-es-health-") as scratch:
                expected = build_generation(Path(scratch) / "memory.db",
                                            events_upto(opened, position, 0))
                try:
                    want = render_all(expected)
                    findings += list(_compare_files(root, want))
                    findings += list(_compare_index(live, expected.conn, rel))
                    findings += list(_compare_provenance(root, live))
                    findings += list(_compare_sidecar(root, live))
                    findings += list(_audit_vectors(live, rel))
                    findings = _residue(root, findings, Residue(
                        root, expected, want, generation, head,
                        lambda after, upto: events_upto(opened, upto, after)))
                finally:
                    expected.close()
        except apsw.Error as e:
            if storage_kind(e) != "corrupt":
                raise
            findings.append(Finding("index_unreadable", rel,
                                    f"{type(e).__name__}; run memory-es rebuild"))
    finally:
        live.close()
    drift = [f for f in findings if f.code not in RECOVERABLE]
    if position > head:
        findings.append(Finding("projection_ahead", INDEX_DIR,
                                f"index at {position}, journal at {head}"))
    elif position < head and not drift:
        findings.append(Finding("projection_behind", INDEX_DIR,
                                f"index at {position}, journal at {head}"))
    if ahead:  # the index lags the uncatalogued suffix: that is the one finding to show
        findings = [f for f in findings if f.code != "projection_behind"]
    return _report(root, head, position, findings)


def _report(root: Path, head: int, position: int, findings: list[Finding]) -> HealthReport:
    """The status: drift is ``findings``; only what the next writer open repairs is
    ``in_progress`` while a writer holds the root (no findings shown, as for work in flight)
    and ``recoverable`` when none does; nothing is ``clean``."""
    if findings and all(f.code in RECOVERABLE for f in findings):
        if writer_alive(root):
            return HealthReport(status="in_progress", journal_position=head,
                                projection_position=position)
        return HealthReport(status="recoverable", journal_position=head,
                            projection_position=position, findings=tuple(sorted(set(findings))))
    return HealthReport(status="findings" if findings else "clean", journal_position=head,
                        projection_position=position, findings=tuple(sorted(set(findings))))


def _rel(root: Path, error: Exception) -> str:
    """The root-relative path an error message starts with ('.' when it names none)."""
    return _relpath(root, str(error).split(": ", 1)[0])


def _relpath(root: Path, path: object) -> str:
    try:
        return str(Path(str(path)).resolve().relative_to(root.resolve())) or "."
    except (ValueError, OSError):
        return "."
