"""Replay driver, index generations and rebuild (DESIGN 7, D10, C8, C15, K10).

``Projector`` owns a root's projections: the active index generation
(``index/gen-N/memory.db``, named by ``index/CURRENT``) and the Markdown tree (``daily/``,
``audit/``). It folds events in journal order; ``flush`` renders the days those events touched
from the index, rewrites a file only when its bytes change, then commits the index position.
``rebuild`` replays a whole journal into a new generation, then activates it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import apsw
import msgspec

from memory_es.errors import IndexUnavailableError, MemoryEsError, UnsafePathError
from memory_es.fsutil import (
    atomic_write,
    check_private,
    crash_point,
    make_private_dir,
    remove_stale_temps,
)
from memory_es.vocabulary import GRAPH_BYTES, SIDECAR_BYTES
from projections.consistency import RUNTIME_DIR, ensure_lock, projection_lock
from projections.consolidation import (
    INDEX_FILE,
    ConsolidationSummary,
    is_bujo,
    preview,
    render_index,
    render_preview,
)
from projections.forgetting import scrub
from projections.graph import (
    GRAPH_FILE,
    SIDECAR_FILE,
    SIDECAR_TAIL,
    render_graph,
    render_sidecar,
    sidecar_append,
)
from projections.markdown import render_audit, render_daily
from projections.sqlite_index import IndexProjection

INDEX_DIR = "index"
CURRENT_FILE = "CURRENT"
INDEX_DB = "memory.db"
MARKDOWN_DIRS = ("daily", "audit")
_RENDER = {"daily": render_daily, "audit": render_audit}
# Whole-root files rendered from index tables (touched as (kind, "")).
_ROOT_RENDER = {"graph": (GRAPH_FILE, render_graph), "sidecar": (SIDECAR_FILE, render_sidecar),
                "index": (INDEX_FILE, render_index)}
# Kinds whose change can change index.md (L6): the graph, the lines, BuJo's audit rows.
INDEX_INPUTS = frozenset({"graph", "daily", "audit"})
ROOT_FILES = tuple(path for path, _ in _ROOT_RENDER.values())
# What a root holds only once its journal has projected something: a fresh journal is never
# started beside these.
DERIVED_ENTRIES = (INDEX_DIR, *MARKDOWN_DIRS, *ROOT_FILES)


def render_one(index: IndexProjection, kind: str, day: str) -> tuple[str, bytes | None]:
    """One managed file's path and bytes (None: the file should not exist)."""
    if kind in _ROOT_RENDER:
        path, render = _ROOT_RENDER[kind]
        return path, render(index.conn)
    rows = index.day_rows(kind, day)  # a day a forget emptied has no file
    return day_file(kind, day), _RENDER[kind](day, rows) if rows else None


def day_file(kind: str, day: str) -> str:
    """Root-relative path of one day's file."""
    return f"{kind}/{day}.md"


def read_current(root: Path) -> int | None:
    """The active generation number, or None when no index was ever activated."""
    path = root / INDEX_DIR / CURRENT_FILE
    if not os.path.lexists(path):
        return None
    check_private(path, is_dir=False)
    text = path.read_text("ascii", errors="replace").strip()
    if not text.startswith("gen-") or not text[4:].isdigit():
        raise MemoryEsError(f"{path}: not a generation pointer; run memory-es rebuild",
                            code="index_pointer_invalid")
    return int(text[4:])


def generation_path(root: Path, generation: int) -> Path:
    return root / INDEX_DIR / f"gen-{generation}" / INDEX_DB


def unreadable(db: Path, error: BaseException) -> IndexUnavailableError:
    """The one error for an index generation SQLite cannot read."""
    return IndexUnavailableError(
        f"{db}: index unreadable ({type(error).__name__}); run memory-es rebuild",
        code="index_unreadable")


def check_index_files(db: Path, *, writer: bool) -> None:
    """The generation's file and SQLite's ``-wal`` / ``-shm`` beside it are regular files,
    never a symlink SQLite would follow, else :class:`IndexUnavailableError`. A ``writer``
    (which writes them) also needs them private: ours, 0600, one link (B16, B17); a reader
    leaves those rules to health's hygiene findings."""
    if not os.path.lexists(db):
        raise IndexUnavailableError(
            f"{db}: active index generation is missing; run memory-es rebuild",
            code="index_missing")
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        try:
            if writer:
                check_private(path, is_dir=False)
            elif not stat.S_ISREG(st.st_mode):
                raise UnsafePathError(f"{path}: is not a regular file", code="not_a_regular_file")
        except UnsafePathError as e:
            raise IndexUnavailableError(f"{e}; run memory-es rebuild",
                                        code="index_unreadable") from e


def open_active_index(root: Path) -> apsw.Connection | None:
    """The active generation's index, opened read-only; None when none was ever activated.
    A generation that is missing or not a regular file raises :class:`IndexUnavailableError`;
    one SQLite cannot parse raises ``apsw.Error`` at its first query (opening reads nothing,
    so a call refused after this leaves the root as it was)."""
    generation = read_current(root)
    if generation is None:
        return None
    db = generation_path(root, generation)
    check_index_files(db, writer=False)
    try:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY
                               | apsw.SQLITE_OPEN_NOFOLLOW)
        # A writer opening or closing the same generation briefly holds WAL recovery or a
        # checkpoint: a reader waits for it (as the writer's own connections do) instead of
        # raising BusyError into the host (found by tests/test_open_close_cycles.py).
        conn.setbusytimeout(5000)
    except (apsw.Error, OSError) as e:
        raise unreadable(db, e) from e
    return conn


def _write_if_changed(root: Path, relpath: str, data: bytes | None) -> bool:
    path = root / relpath
    if data is None:
        if os.path.lexists(path):
            os.unlink(path)
            return True
        return False
    make_private_dir(path.parent)
    if _holds(path, data):
        return False
    atomic_write(path, data)  # also replaces a symlink, hard link or unsafe file (item 7)
    return True


def _holds(path: Path, data: bytes) -> bool:
    """Is ``path`` already a private regular file (ours, 0600, one link, B16, B17) holding
    exactly ``data``? Equal bytes in an unsafe file are not enough: rebuild repairs it."""
    try:
        check_private(path, is_dir=False)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, UnsafePathError):
        return False
    with os.fdopen(fd, "rb") as f:
        return f.read() == data


class Projector:
    """The live projections of one root, fed in journal order."""

    def __init__(self, root: Path, index: IndexProjection) -> None:
        self.root = root
        self.index = index
        self.files_written = 0
        self.refreshed_on_open = False  # reported by the next consolidate(), then cleared

    @property
    def position(self) -> int:
        return self.index.position

    @classmethod
    def open(cls, root: Path, tier: str | None = None) -> Projector:
        """Open the active generation, creating (and activating) gen-1 on a new root.

        The caller holds the writer lock, so temp files left in our directories by a killed
        writer are removed first. A Lite or Journal ``tier`` refuses an index holding
        replay-owned lifecycle or edges, which only BuJo capture can own (D11, F10, N9).
        """
        projector = cls._open(root)
        try:  # a root made before consolidation, or a hand-edited index.md: refresh when due
            projector.refreshed_on_open = _write_if_changed(
                root, INDEX_FILE, render_index(projector.index.conn))  # Lite: one query
            projector.files_written += projector.refreshed_on_open
        except BaseException:
            projector.close()
            raise
        if tier in ("lite", "journal") and projector.index.holds_replay_state():
            projector.close()
            raise MemoryEsError(
                f"{root / INDEX_DIR}: a {tier} index holds replay-owned lifecycle or edges "
                "that only BuJo capture owns (D11); run memory-es rebuild",
                code="replay_state_rejected")
        return projector

    @classmethod
    def _open(cls, root: Path) -> Projector:
        ensure_lock(root)  # before any index exists: health beside us always finds it (N3)
        clean_stale_temps(root)
        generation = read_current(root)
        remove_inactive_generations(root, generation)
        if generation is None:
            make_private_dir(root / INDEX_DIR)
            generation = 1
            make_private_dir(generation_path(root, 1).parent)
            db = generation_path(root, 1)
            index = IndexProjection(db, create=True)
            _activate(root, 1)
            return cls(root, index)
        db = generation_path(root, generation)
        check_index_files(db, writer=True)
        try:
            return cls(root, IndexProjection(db))
        except (apsw.Error, OSError) as e:
            raise unreadable(db, e) from e

    def apply(self, position: int, event: object) -> None:
        self.index.apply(position, event)

    def flush(self) -> None:
        """Render touched days, write changed files, then commit the index position: under
        the projection lock, so health never reads the files of one position beside the rows
        of another (N3)."""
        if not self.index.dirty:
            self.index.flush()
            return
        with projection_lock(self.root, shared=False):
            self._flush()

    def _flush(self) -> None:
        try:
            for kind, day in sorted(self.index.touched):
                if kind == "graph":
                    self.files_written += self._flush_graph()
                elif kind == "sidecar":
                    self.files_written += self._flush_sidecar()
                else:
                    relpath, data = render_one(self.index, kind, day)
                    self.files_written += _write_if_changed(self.root, relpath, data)
            if self._index_due():
                # the scheduled consolidation refresh (L6, L9): after every pass that changed
                # the graph or the lines, bounded by the preview's ceilings (L7)
                self.files_written += _write_if_changed(self.root, INDEX_FILE,
                                                        render_index(self.index.conn))
            if self.index.touched:  # files rewritten, their index rows not yet committed
                crash_point("projection.before_index_commit")
            self.index.flush()
        except BaseException:
            self.index.rollback()
            raise

    def _index_due(self) -> bool:
        """Did this pass change what index.md shows? Graph and line changes do; audit rows
        only decide whether a BuJo root has the file at all (its first one creates it)."""
        kinds = {kind for kind, _ in self.index.touched}
        return bool(kinds & {"graph", "daily"}) or \
            ("audit" in kinds and not os.path.lexists(self.root / INDEX_FILE))

    def consolidate(self) -> ConsolidationSummary:
        """Refresh ``index.md`` now from the committed index (L6-L9, D13): a projection only,
        no model call, no journal or index write. Whether the file changed is in the result."""
        found = preview(self.index.conn)
        data = render_preview(found) if is_bujo(self.index.conn) else None
        with projection_lock(self.root, shared=False):  # health never reads it half-written
            written = _write_if_changed(self.root, INDEX_FILE, data)
        changed = written or self.refreshed_on_open
        self.refreshed_on_open = False
        return msgspec.structs.replace(found.summary, changed=changed)

    def _flush_graph(self) -> bool:
        """Append the new graph lines (the file only grows at its end); the byte length the
        index records, committed with the position, makes a crash between the append and the
        commit converge: a longer file is cut back to it, a shorter or unknown one rewritten."""
        known, size = self._lengths(GRAPH_BYTES, GRAPH_FILE)
        if known is None or size is None or size < known:
            return self._rewrite(GRAPH_FILE, render_graph(self.index.conn), GRAPH_BYTES)
        tail = render_graph(self.index.conn, after=self.index.committed_position()) or b""
        self._patch(GRAPH_FILE, known, tail, GRAPH_BYTES, "graph.before_fsync")
        return bool(tail)

    def _flush_sidecar(self) -> bool:
        """Add the new entries in place of the closing bytes, when the file is exactly what the
        index last committed; otherwise (absent, empty, or a crash mid-write) rewrite it whole
        and atomically. The length the index records (committed with the position) is also
        what capture checks before adding replay state (F8)."""
        known, size = self._lengths(SIDECAR_BYTES, SIDECAR_FILE)
        if known is not None and size == known > len(SIDECAR_TAIL):
            with open(self.root / SIDECAR_FILE, "rb") as f:
                f.seek(known - len(SIDECAR_TAIL))
                intact = f.read() == SIDECAR_TAIL
            if intact:
                tail = sidecar_append(self.index.conn, self.index.committed_position(), known)
                if tail is None:
                    return False
                self._patch(SIDECAR_FILE, known - len(SIDECAR_TAIL), tail, SIDECAR_BYTES,
                            "sidecar.before_fsync")
                return True
        return self._rewrite(SIDECAR_FILE, render_sidecar(self.index.conn), SIDECAR_BYTES)

    def _lengths(self, meta_key: str, relpath: str) -> tuple[int | None, int | None]:
        """(length the index committed, length on disk) of a file that grows in place."""
        known = self.index.meta(meta_key)
        try:
            size: int | None = os.lstat(self.root / relpath).st_size
        except FileNotFoundError:
            size = None
        return (None if known is None else int(known)), size

    def _rewrite(self, relpath: str, data: bytes | None, meta_key: str) -> bool:
        """The whole file, atomically, and its length in the index (with the position)."""
        written = _write_if_changed(self.root, relpath, data)
        self.index.set_meta(meta_key, str(len(data) if data else 0))
        return written

    def _patch(self, relpath: str, offset: int, data: bytes, meta_key: str,
               crash: str) -> None:
        """Cut the file at ``offset``, write ``data`` there, fsync, record the new length."""
        fd = os.open(self.root / relpath, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, offset)
            view = memoryview(data)
            while view:
                written = os.pwrite(fd, view, offset)
                view, offset = view[written:], offset + written
            crash_point(crash)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.index.set_meta(meta_key, str(offset))

    def catch_up(self, events: Iterable[tuple[int, object]]) -> int:
        """Apply every event after our position, then flush; returns the new position."""
        for position, event in events:
            self.apply(position, event)
        self.flush()
        return self.position

    def close(self) -> None:
        self.index.close()

    def scrub(self) -> bool:
        """Leave no trace of forgotten rows in the index file: see
        :func:`projections.forgetting.scrub`. Call after a flush."""
        return scrub(self.index.conn)


def generation_dirs(root: Path) -> dict[int, Path]:
    """Every ``index/gen-N`` directory present, by N."""
    found: dict[int, Path] = {}
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for name in os.listdir(root / INDEX_DIR):
            if name.startswith("gen-") and name[4:].isdigit():
                found[int(name[4:])] = root / INDEX_DIR / name
    return found


def remove_inactive_generations(root: Path, active: int | None) -> None:
    """Remove the generations a killed rebuild (or a killed first open) left beside the
    active one: built but never activated, or replaced but not yet removed. Only the
    writer-lock holder calls this; no writer can be using them."""
    for number, path in generation_dirs(root).items():
        if number != active:
            remove_generation(path)


def remove_generation(path: Path) -> None:
    """Remove one ``index/gen-N``. A symlink (or any other non-directory) in its place is
    unlinked, never followed: ``shutil.rmtree`` refuses a symlink, and ignoring that left a
    symlinked old generation beside the new one, a hygiene finding after every rebuild."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def clean_stale_temps(root: Path) -> None:
    for directory in (INDEX_DIR, *MARKDOWN_DIRS, RUNTIME_DIR):
        remove_stale_temps(root / directory)


def _activate(root: Path, generation: int) -> None:
    atomic_write(root / INDEX_DIR / CURRENT_FILE, f"gen-{generation}\n".encode("ascii"))


def render_all(index: IndexProjection) -> dict[str, bytes]:
    """Every managed file the index implies, by root-relative path."""
    out: dict[str, bytes] = {}
    for kind, day in [*index.days(), *((kind, "") for kind in _ROOT_RENDER)]:
        relpath, data = render_one(index, kind, day)
        if data is not None:
            out[relpath] = data
    return out


def managed_files(root: Path) -> list[str]:
    """Root-relative paths of the managed files present: Markdown, graph and sidecar."""
    found: list[str] = [name for name in ROOT_FILES if os.path.lexists(root / name)]
    for kind in MARKDOWN_DIRS:
        directory = root / kind
        if os.path.isdir(directory):
            found.extend(f"{kind}/{name}" for name in sorted(os.listdir(directory))
                         if name.endswith(".md") and not name.startswith("."))
    return found


class RebuildReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a rebuild changed: the generation it activated at a journal position, and the
    root-relative paths of the files it rewrote and removed; never content."""

    generation: int
    position: int
    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    vectors_pending: int | None = None  # None: nothing embedded (no provider for this root)

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation, "position": self.position,
                "written": list(self.written), "removed": list(self.removed),
                "vectors_pending": self.vectors_pending}


def build_generation(path: Path, events: Iterable[tuple[int, object]]) -> IndexProjection:
    """A fresh index at ``path`` with every event applied and committed."""
    make_private_dir(path.parent)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return fold_into(IndexProjection(path, create=True), events)


def fold_into(index: IndexProjection, events: Iterable[tuple[int, object]]) -> IndexProjection:
    """``index`` with every event applied and committed (closed again if that fails)."""
    try:
        for position, event in events:
            index.apply(position, event)
        index.flush()
    except BaseException:
        index.close()
        raise
    return index


def rebuild(root: Path, events: Iterable[tuple[int, object]],
            before_activate: Callable[[IndexProjection], None] | None = None) -> RebuildReport:
    """Replay ``events`` into a new generation, bring Markdown to match, then activate it.

    Only files whose bytes change are rewritten (K10); Markdown files no event implies are
    removed. The caller holds the writer lock (C15, C16).
    """
    make_private_dir(root / INDEX_DIR)
    clean_stale_temps(root)
    try:
        current = read_current(root) or 0
    except MemoryEsError:  # rebuild is the repair for a broken pointer
        current = 0
    existing = [int(p.name[4:]) for p in (root / INDEX_DIR).glob("gen-*") if p.name[4:].isdigit()]
    generation = max([current, *existing]) + 1
    try:
        index = build_generation(generation_path(root, generation), events)
    except BaseException:
        remove_generation(root / INDEX_DIR / f"gen-{generation}")
        raise
    try:
        if before_activate is not None:  # e.g. vectors for the new generation (D10, C8)
            before_activate(index)
        scrub(index.conn)  # the forgets it replayed leave no free page behind either
    except BaseException:
        index.close()
        remove_generation(root / INDEX_DIR / f"gen-{generation}")
        raise
    with projection_lock(root, shared=False):  # files and pointer change together (N3)
        report = _publish(root, index, generation)
        crash_point("rebuild.after_activate")
        for old in [*existing, current]:
            if old != generation:
                remove_generation(root / INDEX_DIR / f"gen-{old}")
    return report


def _publish(root: Path, index: IndexProjection, generation: int) -> RebuildReport:
    """Bring the Markdown to the new generation, then activate it (the caller holds the
    projection lock): only changed files are rewritten (K10), files no event implies go."""
    try:
        expected = render_all(index)
        index.set_meta(GRAPH_BYTES, str(len(expected.get(GRAPH_FILE, b""))))
        index.set_meta(SIDECAR_BYTES, str(len(expected.get(SIDECAR_FILE, b""))))
        index.flush()
        written: list[str] = []
        removed: list[str] = []
        for relpath, data in sorted(expected.items()):
            if _write_if_changed(root, relpath, data):
                written.append(relpath)
        for relpath in managed_files(root):
            if relpath not in expected:
                os.unlink(root / relpath)
                removed.append(relpath)
        report = RebuildReport(generation=generation, position=index.position,
                               written=tuple(written), removed=tuple(removed))
    except BaseException:  # never leave a half-built generation behind
        index.close()
        remove_generation(root / INDEX_DIR / f"gen-{generation}")
        raise
    index.close()
    crash_point("rebuild.before_activate")
    _activate(root, generation)
    return report
