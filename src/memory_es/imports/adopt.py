"""``memory-es adopt-replay SRC`` (C7, C8, F11-F14): a legacy folder's replay state, adopted.

A reference folder whose SQLite (an unmanaged ``memory.db``, or the current managed generation
``index/gen-N/memory.db``) holds replay state (supersessions and threads with their terminal
timestamps) but which has no sidecar is never read from SQLite by an import (F11: the import
refuses it, ``replay_adoption_required``). Adoption is the explicit, trust-on-first-use step:
it reads that state, metadata only (ids, statuses, timestamps, weights, authority digests,
F3), writes it as the folder's ``.replay-projection-v1.json`` (strict canonical JSON, owner
only), and says what it attested; the import then completes it (``import apply --from
reference``) without any model call. It attests the folder's capture work as it finds it
(F12, F13): pending intents and completed receipts (``.capture-intake/pending``,
``.capture-intake/resolved``) and at most one migration marker (``.capture-intake/
migration*``), refusing pending capture work beside a pending migration; that work itself is
not imported. A memory_es root needs none of this: its journal holds its replay state and
``memory-es rebuild`` writes its sidecar, so adoption refuses one. Nothing of memory_es can
serve the folder between adoption and import (it refuses to start a journal beside
projections); whether the reference host itself still runs on it is beyond what memory_es can
see (its lock is its own): stop it first, as the command's help says (C16).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from memory_es.errors import MemoryEsError
from memory_es.fsutil import atomic_write
from memory_es.journal import JOURNAL_FILE, MARKER_FILE
from projections.graph import SIDECAR_FILE, render_sidecar

LEGACY_DB = "memory.db"
INTAKE_DIR = ".capture-intake"


@dataclass(frozen=True)
class AdoptReport:
    """What an adoption attested (content-free)."""

    folder: str
    source: str  # the SQLite file the state was read from, relative to the folder
    lifecycle: int
    threads: int
    sidecar_sha256: str
    pending_intents: int
    receipts: int
    migration_marker: bool

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "source": self.source, "lifecycle": self.lifecycle,
                "threads": self.threads, "sidecar_sha256": self.sidecar_sha256,
                "pending_intents": self.pending_intents, "receipts": self.receipts,
                "migration_marker": self.migration_marker}


def replay_database(folder: Path) -> Path | None:
    """The folder's SQLite that may hold replay state: ``memory.db``, else the generation
    ``index/CURRENT`` names."""
    if (folder / LEGACY_DB).is_file():
        return folder / LEGACY_DB
    current = folder / "index" / "CURRENT"
    try:
        generation = current.read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    path = folder / "index" / f"gen-{generation}" / LEGACY_DB
    return path if generation.isdigit() and path.is_file() else None


def _read_only(path: Path) -> apsw.Connection:
    return apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY
                           | apsw.SQLITE_OPEN_URI)


def replay_rows(path: Path) -> tuple[int, int]:
    """How many lifecycle and thread rows the SQLite at ``path`` holds ((0, 0) without
    those tables)."""
    conn = _read_only(path)
    try:
        tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
        if not {"lifecycle", "threads"} <= tables:
            return 0, 0
        counts = [int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])  # type: ignore[index]
                  for t in ("lifecycle", "threads")]
        return counts[0], counts[1]
    except apsw.Error as e:
        raise MemoryEsError(f"{path}: not a readable SQLite index ({e})",
                            code="import_malformed") from None
    finally:
        conn.close()


def needs_adoption(folder: Path) -> Path | None:
    """The SQLite whose replay state a sidecar-less folder would need adopted, or None."""
    if (folder / SIDECAR_FILE).exists():
        return None
    database = replay_database(folder)
    return database if database is not None and any(replay_rows(database)) else None


def _count(folder: Path, pattern: str) -> int:
    return sum(1 for p in folder.glob(pattern) if p.is_file())


def adopt_replay(folder: str | Path) -> AdoptReport:
    """Write ``folder``'s sidecar from its SQLite's replay state (see the module docstring);
    refused for a memory_es root, a folder that has a sidecar or no replay state, and
    pending capture work beside a migration."""
    path = Path(folder)
    if not (path / "daily").is_dir():
        raise MemoryEsError(f"{path}: not a reference memory folder (no daily/)",
                            code="not_found")
    if (path / JOURNAL_FILE).exists() or (path / MARKER_FILE).exists():
        raise MemoryEsError(f"adopt_not_legacy: {path} is a memory_es root: its journal holds "
                            "its replay state; memory-es rebuild writes its sidecar",
                            code="adopt_not_legacy")
    if (path / SIDECAR_FILE).exists():
        raise MemoryEsError(f"adopt_not_needed: {path} already has {SIDECAR_FILE}",
                            code="adopt_not_needed")
    database = replay_database(path)
    lifecycle, threads = replay_rows(database) if database is not None else (0, 0)
    if database is None or not lifecycle + threads:
        raise MemoryEsError(f"adopt_nothing: {path} holds no replay state to adopt (no "
                            f"{LEGACY_DB} with lifecycle or thread rows)", code="adopt_nothing")
    intake = path / INTAKE_DIR
    pending, receipts = _count(intake, "pending/*"), _count(intake, "resolved/*")
    markers = _count(intake, "migration*")
    if markers > 1:
        raise MemoryEsError(f"adopt_refused: {markers} migration markers; adoption attests at "
                            "most one (F12)", code="adopt_refused")
    if markers and pending:
        raise MemoryEsError("adopt_refused: pending capture work beside a pending migration "
                            "(F13): finish or resolve one with the reference host first",
                            code="adopt_refused")
    conn = _read_only(database)
    try:
        data = render_sidecar(conn)
    finally:
        conn.close()
    assert data is not None  # lifecycle + threads > 0
    atomic_write(path / SIDECAR_FILE, data)
    return AdoptReport(str(path), database.relative_to(path).as_posix(), lifecycle, threads,
                       hashlib.sha256(data).hexdigest(), pending, receipts, bool(markers))
