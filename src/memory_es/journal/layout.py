"""The journal's files at a memory root, and how a fresh root gets them (DESIGN 3).

All owner-only, never followed through symlinks:

- ``journal.db``: SQLite (apsw, WAL, synchronous=FULL) with the ``events`` table (one row per
  event, ``position`` = INTEGER PRIMARY KEY, ``chain`` = running SHA-256) and ``payloads``.
- ``journal.catalog``: the last ``(position, chain)`` known to be committed, written after each
  commit. Catalog ahead of journal = truncation; chain mismatch = replacement; both fail closed.
- ``.memory-es-schema``: proves a journal existed, so deleting journal and catalog cannot pass as
  a fresh root (B15).
- ``.writer.lock``: the pid of the one writer process, whose ``flock`` is on the root
  directory itself (B23, C16; :mod:`memory_es.journal.lock`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory_es.errors import IntegrityError
from memory_es.fsutil import check_private, create_private_file, open_private_file
from memory_es.journal.catalog import Catalog
from memory_es.journal.recorder import ensure_schema

JOURNAL_FILE = "journal.db"
CATALOG_FILE = "journal.catalog"
MARKER_FILE = ".memory-es-schema"
LOCK_FILE = ".writer.lock"
SCHEMA_VERSION = 1

_MARKER = {"format": "memory-es", "journal": JOURNAL_FILE, "schema": SCHEMA_VERSION}


def exists(path: Path) -> bool:
    """Is anything at ``path``, a dangling symlink included?"""
    return os.path.lexists(path)


def read_marker(path: Path) -> None:
    """Check the schema marker names a memory-es root of a supported schema, or fail closed."""
    fd = open_private_file(path, os.O_RDONLY)
    try:
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        marker = json.loads(raw)
    except ValueError:
        raise IntegrityError(
            f"{path}: schema marker is not valid JSON", code="marker_invalid"
        ) from None
    if not isinstance(marker, dict) or marker.get("format") != "memory-es":
        raise IntegrityError(f"{path}: not a memory-es schema marker", code="marker_invalid")
    if marker.get("schema") != SCHEMA_VERSION:
        raise IntegrityError(
            f"{path}: schema {marker.get('schema')!r} is not supported (expected {SCHEMA_VERSION})",
            code="marker_invalid",
        )


def _write_marker(root: Path) -> None:
    from memory_es.fsutil import atomic_write  # looked up per call: crash harnesses wrap it

    data = json.dumps(_MARKER, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    atomic_write(root / MARKER_FILE, data)


def check_managed(root: Path) -> None:
    """Refuse a root, or any journal file in it, that is not private to this user (B16, B17)."""
    check_private(root, is_dir=True)
    for name in (
        JOURNAL_FILE,
        JOURNAL_FILE + "-wal",
        JOURNAL_FILE + "-shm",
        CATALOG_FILE,
        MARKER_FILE,
        LOCK_FILE,
    ):
        path = root / name
        if exists(path):
            check_private(path, is_dir=False)


def initialise(root: Path) -> None:
    """Create journal, catalog, then marker; finish an initialisation a crash interrupted."""
    journal_path, catalog_path = root / JOURNAL_FILE, root / CATALOG_FILE
    if exists(journal_path):
        count = ensure_schema(journal_path)
        if count:
            raise IntegrityError(
                f"{root / MARKER_FILE}: schema marker is missing but the journal holds {count} "
                "events; refusing to treat this root as new",
                code="marker_missing",
            )
    else:
        os.close(create_private_file(journal_path))
        ensure_schema(journal_path)
    if exists(catalog_path):
        existing = Catalog.open(catalog_path, writable=False)
        try:
            position, _ = existing.read()
        finally:
            existing.close()
        if position != 0:
            raise IntegrityError(
                f"{catalog_path}: schema marker is missing but the catalog records position "
                f"{position}; refusing to treat this root as new",
                code="marker_missing",
            )
    else:
        Catalog.create(catalog_path).close()
    _write_marker(root)
