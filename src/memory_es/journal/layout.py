"""The journal's files at a memory root, and how a fresh root gets them (DESIGN 3).

All owner-only, never followed through symlinks:

- ``journal.db``: SQLite (apsw, WAL, synchronous=FULL) with the ``events`` table (one row per
  event, ``position`` = INTEGER PRIMARY KEY, ``chain`` = running SHA-256) and ``payloads``.
- ``journal.catalog``: the last ``(position, chain)`` known to be committed, written after each
  commit. Catalog ahead of journal = truncation; chain mismatch = replacement; both fail closed.
- ``.memory-es-schema``: proves a journal existed, so deleting journal and catalog cannot pass as
  a fresh root (B15). It says which chain the journal uses: schema 1 = plain SHA-256 (roots
  made before the keyed chain, readable and verifiable as they are), schema 2 = HMAC-SHA256
  keyed by the root's chain key, found in the key store under the marker's random ``root_id``;
  ``keyed_from`` is the first keyed position (1, or the position after the head when a writer
  upgraded a schema-1 root); ``mac`` authenticates the marker under the same key, so neither
  the root id nor ``keyed_from`` can be changed without it.
- ``.writer.lock``: the pid of the one writer process, whose ``flock`` is on the root
  directory itself (B23, C16; :mod:`memory_es.journal.lock`).
"""

from __future__ import annotations

import hmac
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memory_es.errors import IntegrityError
from memory_es.fsutil import check_private, create_private_file, open_private_file
from memory_es.journal.catalog import Catalog
from memory_es.journal.chain import NEVER, Chain
from memory_es.journal.recorder import ensure_schema
from memory_es.keystore import KeyStore, new_root_id, valid_root_id

JOURNAL_FILE = "journal.db"
CATALOG_FILE = "journal.catalog"
MARKER_FILE = ".memory-es-schema"
LOCK_FILE = ".writer.lock"
POSTGRES = "postgres"  # the marker's "journal" when the events live on a PostgreSQL server
PLAIN_SCHEMA = 1  # plain SHA-256 chain, no key
SCHEMA_VERSION = 2  # HMAC-SHA256 chain keyed per root
CHAIN_ALGORITHM = "hmac-sha256"
_MARKER_LABEL = b"memory-es marker"


@dataclass(frozen=True)
class Marker:
    """What the schema marker says: the schema, and for schema 2 the root id and the first
    keyed position."""

    schema: int
    root_id: str | None = None
    keyed_from: int = NEVER
    mac: str = ""
    journal: str = JOURNAL_FILE  # or POSTGRES
    location: str = ""  # POSTGRES: the server, without credentials ("" in the server's copy)
    pg_schema: str = ""  # POSTGRES: the database schema holding the tables

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"format": "memory-es", "journal": self.journal,
                                "schema": self.schema}
        if self.schema >= SCHEMA_VERSION:
            body |= {"chain": CHAIN_ALGORITHM, "keyed_from": self.keyed_from,
                     "root_id": self.root_id}
        if self.journal == POSTGRES:
            body |= {"location": self.location, "pg_schema": self.pg_schema}
        return body

    def signed(self, chain: Chain) -> Marker:
        """This marker with its MAC under ``chain``'s key."""
        return replace(self, mac=chain.mac(_MARKER_LABEL, self.signed_bytes()).hex())

    def file_bytes(self) -> bytes:
        return _canonical(self.body() | {"mac": self.mac}) + b"\n"

    def signed_bytes(self) -> bytes:
        return _canonical(self.body())

    def chain(self, keys: KeyStore) -> Chain:
        """The root's link function: plain for schema 1; for schema 2 the key from ``keys``
        (``chain_key_missing`` when absent), after checking the marker's MAC with it."""
        if self.schema == PLAIN_SCHEMA:
            return Chain.plain()
        assert self.root_id is not None
        chain = Chain(keys.load_chain_key(self.root_id), self.keyed_from, self.root_id)
        if not hmac.compare_digest(chain.mac(_MARKER_LABEL, self.signed_bytes()).hex(),
                                   self.mac):
            raise IntegrityError(
                f"{MARKER_FILE}: schema marker does not verify with the chain key of root "
                f"{self.root_id}; it was edited, or the key belongs to another root",
                code="marker_invalid")
        return chain


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def exists(path: Path) -> bool:
    """Is anything at ``path``, a dangling symlink included?"""
    return os.path.lexists(path)


def read_marker(path: Path) -> Marker:
    """The schema marker of a memory-es root of a supported schema, or fail closed."""
    fd = open_private_file(path, os.O_RDONLY)
    try:
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    return parse_marker(path, raw)


def parse_marker(path: Path | str, raw: bytes | str) -> Marker:
    """A marker's text (a root's file, or the copy a PostgreSQL journal keeps) checked."""
    try:
        marker = json.loads(raw)
    except ValueError:
        raise IntegrityError(
            f"{path}: schema marker is not valid JSON", code="marker_invalid"
        ) from None
    if not isinstance(marker, dict) or marker.get("format") != "memory-es":
        raise IntegrityError(f"{path}: not a memory-es schema marker", code="marker_invalid")
    schema = marker.get("schema")
    if schema == PLAIN_SCHEMA:
        return Marker(PLAIN_SCHEMA)
    if schema != SCHEMA_VERSION:
        raise IntegrityError(
            f"{path}: schema {schema!r} is not supported (expected {PLAIN_SCHEMA} or "
            f"{SCHEMA_VERSION})",
            code="marker_invalid",
        )
    root_id, keyed_from, mac = marker.get("root_id"), marker.get("keyed_from"), marker.get("mac")
    if marker.get("chain") != CHAIN_ALGORITHM or not valid_root_id(root_id) \
            or type(keyed_from) is not int or not 1 <= keyed_from < NEVER \
            or not isinstance(mac, str):
        raise IntegrityError(f"{path}: schema marker fields are malformed", code="marker_invalid")
    assert isinstance(root_id, str)
    journal = marker.get("journal", JOURNAL_FILE)
    if journal == JOURNAL_FILE:
        return Marker(SCHEMA_VERSION, root_id, keyed_from, mac)
    location, pg_schema = marker.get("location"), marker.get("pg_schema")
    if journal != POSTGRES or not isinstance(location, str) or not isinstance(pg_schema, str):
        raise IntegrityError(f"{path}: schema marker names no journal memory-es knows",
                             code="marker_invalid")
    return Marker(SCHEMA_VERSION, root_id, keyed_from, mac, POSTGRES, location, pg_schema)


def write_keyed_marker(root: Path, keys: KeyStore, keyed_from: int) -> Chain:
    """Mint a root id and its chain key, then write a schema-2 marker keyed from
    ``keyed_from``: a new root (1) or the upgrade of a schema-1 root (head + 1). The key is
    durable before the marker names it; a crash in between leaves an unused key behind."""
    from memory_es.fsutil import atomic_write  # looked up per call: crash harnesses wrap it

    chain, marker = mint_marker(keys, keyed_from)
    atomic_write(root / MARKER_FILE, marker.file_bytes())
    return chain


def mint_marker(keys: KeyStore, keyed_from: int, **fields: str) -> tuple[Chain, Marker]:
    """A new root id, its chain key (durable first) and a signed schema-2 marker naming it."""
    root_id = new_root_id()
    chain = Chain(keys.create_chain_key(root_id), keyed_from, root_id)
    return chain, Marker(SCHEMA_VERSION, root_id, keyed_from, **fields).signed(chain)


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


def initialise(root: Path, keys: KeyStore) -> Chain:
    """Create journal, catalog, chain key, then marker; finish an initialisation a crash
    interrupted. Returns the new root's keyed chain."""
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
    return write_keyed_marker(root, keys, 1)
