"""The live projections of one writable root (DESIGN 7, D10, F8, L6-L9, N3).

``Projector`` folds events in journal order into the active index generation; ``flush``
renders the days and root files those events touched from the index, rewrites a file only
when its bytes change (``graph.jsonl`` and the sidecar grow in place), then commits the index
position. Generations, rendering and rebuild are ``projections.replay``'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import apsw
import msgspec

from memory_es.errors import MemoryEsError
from memory_es.fsutil import crash_point, make_private_dir
from memory_es.vocabulary import GRAPH_BYTES, SIDECAR_BYTES
from projections.consistency import ensure_lock, projection_lock
from projections.consolidation import (
    INDEX_FILE,
    ConsolidationSummary,
    is_bujo,
    preview,
    render_index,
    render_preview,
)
from projections.derived import (
    INDEX_DIR,
    check_index_files,
    generation_path,
    read_current,
    unreadable,
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
from projections.replay import (
    activate,
    clean_stale_temps,
    grow_or_write,
    remove_inactive_generations,
    render_one,
    write_if_changed,
)
from projections.sqlite_index import IndexProjection


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
            projector.refreshed_on_open = write_if_changed(
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
            activate(root, 1)
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
                    self.files_written += grow_or_write(self.root, relpath, data)
            if self._index_due():
                # the scheduled consolidation refresh (L6, L9): after every pass that changed
                # the graph or the lines, bounded by the preview's ceilings (L7)
                self.files_written += write_if_changed(self.root, INDEX_FILE,
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
            written = write_if_changed(self.root, INDEX_FILE, data)
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
        written = write_if_changed(self.root, relpath, data)
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
