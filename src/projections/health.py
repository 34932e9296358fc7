"""The strict health auditor (N1-N4, N7, N11, N12, DESIGN 8).

Health replays the journal (up to the position the live index claims) into a scratch index,
renders the Markdown that replay implies, and compares with the live root: files byte for
byte, index rows column by column, FTS against rows, Markdown provenance against the index,
and the hygiene of every path. Findings carry a stable code, a root-relative path and a
content-free detail; memory text never appears (N12).
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import apsw

from memory_es.errors import (
    STORAGE_CODES,
    MemoryEsError,
    NotARootError,
    StorageError,
    storage_kind,
)
from memory_es.journal.lock import writer_alive
from projections.compare import (
    audit_vectors,
    compare_files,
    compare_index,
    compare_provenance,
    compare_sidecar,
)
from projections.consistency import RUNTIME_DIR, projection_lock
from projections.derived import (
    INDEX_DB,
    INDEX_DIR,
    generation_path,
    open_active_index,
    read_current,
)
from projections.findings import (
    RECOVERABLE,
    Finding,
    HealthReport,
)
from projections.replay import build_generation, managed_files, render_all
from projections.residue import Residue, classify_residue

# Files the engine owns at the root; anything else (outside the managed dirs) is a stray.
_JOURNAL_FILES = ("journal.db", "journal.db-wal", "journal.db-shm", "journal.catalog")
# ``*.migrated``: what a move of the journal to PostgreSQL left behind (journal.migrate)
_ROOT_FILES = {*_JOURNAL_FILES, *(name + ".migrated" for name in _JOURNAL_FILES),
               ".memory-es-schema", ".writer.lock"}
_SQLITE_SIDE = ("-wal", "-shm", "-journal")



def hygiene(root: Path) -> Iterator[Finding]:
    """Every path under the root: no symlinks, ours, private, single link (B16, B17, N7)."""
    uid = os.geteuid()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            try:
                st = os.lstat(path)
            except FileNotFoundError:  # a live writer's temp file, renamed since the listing
                continue
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


_ANN_FILE = re.compile(r"vectors-[0-9a-f]{16}\.(?:faiss|json)")


def _unexpected_files(root: Path, generation: int | None) -> Iterator[Finding]:
    """Files that are neither the journal, the active index generation, nor managed Markdown."""
    markdown = set(managed_files(root))  # compared against replay in compare_files
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
            if top == INDEX_DIR and generation is not None \
                    and _ANN_FILE.fullmatch(rest.removeprefix(f"gen-{generation}/")):
                continue  # the ANN index of the generation's vectors: a cache (root.health)
            if rel in markdown:
                continue  # compared against replay below
            if top == RUNTIME_DIR and "/" not in rest:
                continue  # the worker's runtime snapshot (B19): not a projection
            if top == "embeddings" and rest in {"cache.db" + s for s in ("", *_SQLITE_SIDE)}:
                continue  # the vector cache: derived from providers, not from events
            yield Finding("file_extra", rel, "not a file memory_es manages")




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

    A storage failure never escapes: a damaged journal is the finding
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
    # Shared with live writers' flushes and rebuilds, and taken before the journal is read, so
    # the index can never be ahead of the journal snapshot and files and rows are of one
    # position (N3). A root with no lock file yet has no writer-made index either (the writer
    # makes the lock first); if one appears while we audit unlocked, audit again, locked.
    for attempt in (1, 2):
        with projection_lock(root, shared=True) as held:
            report = _audit_journal(root, list(findings), open_journal, events_upto,
                                    journal_checks)
            if held or attempt == 2 or not os.path.lexists(root / INDEX_DIR / "CURRENT"):
                return report
    raise AssertionError("unreachable")


def _audit_journal(
    root: Path,
    findings: list[Finding],
    open_journal: Callable[[Path], Any],
    events_upto: Callable[[Any, int, int], Iterable[tuple[int, object]]],
    journal_checks: Callable[[Any], Iterable[Finding]],
) -> HealthReport:
    """Open the journal and audit the projections against it (the caller holds the lock)."""
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
    # never projection_behind.
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
                    findings = classify_residue(root, findings, Residue(
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
        # Truncated, corrupt, unsafe: nothing in it can be compared.
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
                    file_drift = list(compare_files(root, want))
                    index_drift = list(compare_index(live, expected.conn, rel))
                    findings += file_drift + index_drift
                    differ = {f.path for f in file_drift}
                    rendered = () if index_drift else [r for r in want if r not in differ]
                    findings += list(compare_provenance(root, live, rendered))
                    findings += list(compare_sidecar(root, live))
                    findings += list(audit_vectors(live, rel))
                    findings = classify_residue(root, findings, Residue(
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
