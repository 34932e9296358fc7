"""Index generations, the managed files and rebuild (DESIGN 7, D10, C8, C15, K10).

A root's projections are the active index generation (``index/gen-N/memory.db``, named by
``index/CURRENT``) and the files rendered from it: the Markdown tree (``daily/``, ``audit/``),
``graph.jsonl``, the sidecar and ``index.md``. This module finds, opens, activates and removes
generations, renders and writes the files (a file only when its bytes change), and
``rebuild`` replays a whole journal into a new generation, then activates it. The live fold
of a writer, event by event, is ``projections.projector.Projector``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from memory_es.errors import MemoryEsError, UnsafePathError
from memory_es.fsutil import (
    atomic_write,
    check_private,
    check_private_stat,
    crash_point,
    make_private_dir,
    remove_stale_temps,
    write_all,
)
from memory_es.vocabulary import GRAPH_BYTES, SIDECAR_BYTES
from projections.consistency import RUNTIME_DIR, projection_lock
from projections.consolidation import INDEX_FILE, render_index
from projections.derived import CURRENT_FILE, INDEX_DIR, generation_path, read_current
from projections.forgetting import scrub
from projections.graph import GRAPH_FILE, SIDECAR_FILE, render_graph, render_sidecar
from projections.markdown import render_audit, render_daily
from projections.sqlite_index import IndexProjection

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


def write_if_changed(root: Path, relpath: str, data: bytes | None) -> bool:
    """Bring one managed file to ``data`` (None: remove it), writing only when its bytes or
    its safety differ (K10); True when the file changed."""
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


def grow_or_write(root: Path, relpath: str, data: bytes | None) -> bool:
    """:func:`write_if_changed` for a day's file, which mostly only gains lines at its end
    (its rows are in recording order): when the file is our private regular file holding a
    proper prefix of ``data``, the rest is appended in place and fsynced, instead of the whole
    day written again and renamed, so a pass costs what it added, not the day's size. Any
    other difference (an earlier line changed, an unsafe or longer file) is an atomic rewrite.
    A kill after the append leaves a later rendering of the day, which the next pass finds
    whole (crash residue, N3)."""
    path = root / relpath
    if data is None:
        return write_if_changed(root, relpath, None)
    make_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # absent, a symlink, unreadable: written whole
        atomic_write(path, data)
        return True
    try:
        check_private_stat(path, os.fstat(fd), is_dir=False)
        old = os.pread(fd, len(data) + 1, 0)
        if old == data:
            return False
        if len(old) < len(data) and data.startswith(old):
            os.lseek(fd, len(old), os.SEEK_SET)
            write_all(fd, data[len(old):])
            crash_point("markdown.before_fsync")
            os.fsync(fd)
            return True
    except UnsafePathError:
        pass  # replaced by our own file below
    finally:
        os.close(fd)
    atomic_write(path, data)  # also replaces a hard link or unsafe file
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


def activate(root: Path, generation: int) -> None:
    """Point ``index/CURRENT`` at ``generation``, atomically: the switch a rebuild ends with."""
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
            if write_if_changed(root, relpath, data):
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
    activate(root, generation)
    return report
