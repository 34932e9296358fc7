"""Crash residue: what a writer killed at a known boundary leaves, which the
next writer open repairs; a hand edit of the same shape stays drift."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import apsw

from memory_es.journal.lock import writer_alive
from projections.compare import compare_index
from projections.derived import CURRENT_FILE, INDEX_DB, INDEX_DIR, generation_path
from projections.findings import (
    GEN_FILES,
    HYGIENE_CODES,
    RESIDUE_DETAIL,
    TEMP_NAME,
    Finding,
    read_regular,
)
from projections.graph import SIDECAR_FILE
from projections.replay import (
    INDEX_INPUTS,
    MARKDOWN_DIRS,
    ROOT_FILES,
    build_generation,
    generation_dirs,
    render_one,
)
from projections.sqlite_index import IndexProjection


class Residue:
    """What a writer killed at a known boundary can leave, judged against replay.
    ``expected`` is the scratch replay at the live index position; ``future`` then
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
                kinds = sorted(index.touched)
                if any(kind in INDEX_INPUTS for kind, _ in kinds):
                    kinds.append(("index", ""))  # the flush's consolidation refresh (L6)
                for kind, day in kinds:
                    path, data = render_one(index, kind, day)
                    self._future.setdefault(path, set()).add(data)
            index.touched = set()
        return {self.want.get(rel), *self._future.get(rel, ())}

    def holds_a_state(self, rel: str, *, ahead: bool = False) -> bool:
        """Is the live ``rel`` (or its absence) a state replay passes through? ``ahead``:
        one past the index position, never the state at it (a sidecar that equals replay
        but not the live index means the index was edited, not that a write ran ahead)."""
        try:
            data: bytes | None = read_regular(self.root / rel)
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
        match = TEMP_NAME.match(name)
        if match is None:
            return False
        target = f"{parent}/{match['target']}" if parent else match["target"]
        try:
            data = read_regular(self.root / rel)
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

    def being_built(self, rel: str) -> bool:
        """Is ``rel`` a file of a generation newer than the active one while a writer holds
        the root (a rebuild in flight, which takes the projection lock only to publish)?"""
        top, _, rest = rel.partition("/")
        directory, _, name = rest.partition("/")
        if top != INDEX_DIR or name not in GEN_FILES or not directory.startswith("gen-") \
                or not directory[4:].isdigit():
            return False
        return int(directory[4:]) > (self.active or 0) and writer_alive(self.root)

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
            if INDEX_DB not in names or not names <= GEN_FILES:
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
                    return not any(compare_index(conn, replay.conn, str(db)))
                finally:
                    replay.close()
        except (apsw.Error, TypeError, ValueError):
            return False
        finally:
            conn.close()


def classify_residue(root: Path, findings: list[Finding], residue: Residue) -> list[Finding]:
    """Findings on files a killed writer left (and the next writer open repairs) become
    ``crash_residue``; everything else, hand edits that look alike included, stays drift.
    Only a private file (no hygiene finding) can be residue."""
    unsafe = {f.path for f in findings if f.code in HYGIENE_CODES}
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
                if residue.being_built(rel):
                    out.append(Finding("rebuild_in_progress", rel,
                                       "a newer generation a live writer is building"))
                    continue
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


