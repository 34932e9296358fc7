"""Per-record keys in the PostgreSQL journal's database, so every host can open what any
host sealed.

A SQLite root keeps its record keys in the key store beside its chain key; a journal shared
by many hosts cannot: host B must open what host A sealed, and a forget on one host must
shred the key for all. So the keys live in the database, **wrapped** (AES-GCM) under a key
derived from the journal's chain key, which stays outside the database in each host's key
store: a dump of the database alone opens nothing. Ids come from a sequence, so hosts that
reserve chunks at the same time never share an id.

What PostgreSQL does not give: a deleted row's bytes stay in dead tuples and the WAL until
vacuum and recycling overwrite them. Destroying a key therefore removes it for every reader
at once but is not a secure erase of the server's disk; the wrapping is what keeps an old
copy of the database useless without a host's key store. Garbage (keys a crash reserved and
never used) is not collected: another live host may hold those ids in its pool, and an
unused key opens nothing.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from eventsourcing.postgres import PostgresDatastore
from psycopg.sql import SQL, Composed, Identifier

from memory_es.errors import IntegrityError
from memory_es.journal.chain import Chain
from memory_es.journal.records import CHUNK, KEY_BYTES, RecordKeys
from memory_es.keystore import KeyStore

_WRAP_LABEL = b"memory-es record-key wrap"
_NONCE = 12
_PREFETCH = CHUNK  # keys are reserved in chunks: a miss fetches its neighbours too


def table_statements(schema: str) -> list[Composed]:
    """The DDL of the key tables, run by the recorder's ``create_table``."""
    s = Identifier(schema)
    return [
        SQL("CREATE SEQUENCE IF NOT EXISTS {}.memory_es_record_key_ids").format(s),
        SQL("CREATE TABLE IF NOT EXISTS {}.memory_es_record_keys (id bigint PRIMARY KEY, "
            "wrapped bytea NOT NULL)").format(s),
        SQL("CREATE TABLE IF NOT EXISTS {}.memory_es_destroyed_keys (id bigint PRIMARY KEY)"
            ).format(s),
    ]


class PostgresRecordKeys(RecordKeys):
    """:class:`RecordKeys` (the same pool, the same answers) kept in the journal's database."""

    def __init__(self, datastore: PostgresDatastore, location: str, chain: Chain, *,
                 writable: bool) -> None:
        """``datastore``: the journal recorder's pool; ``location``: the server, redacted."""
        assert chain.root_id is not None and chain.keyed
        super().__init__(KeyStore(Path("/nonexistent")), chain.root_id, writable=writable)
        self._datastore = datastore
        self._where = location
        self._wrap = AESGCM(chain.mac(_WRAP_LABEL, chain.root_id.encode()))
        s = Identifier(datastore.schema)
        self._keys = SQL("{}.memory_es_record_keys").format(s)
        self._destroyed = SQL("{}.memory_es_destroyed_keys").format(s)
        # the sequence as regclass text (quoted: a schema named MySchema or user works too)
        self._seq_ident = SQL("{}.memory_es_record_key_ids").format(s)
        self._seq = ".".join('"' + part.replace('"', '""') + '"'
                             for part in (datastore.schema, "memory_es_record_key_ids"))
        self._cache: dict[int, bytes] = {}

    @property
    def location(self) -> Path:
        return Path(self._where)

    def _aad(self, key_id: int) -> bytes:
        return b"record-key\x00" + str(key_id).encode()

    def _reserve(self) -> list[tuple[int, bytes]]:
        with self._datastore.transaction(commit=True) as curs:
            ids = [int(r["id"]) for r in curs.execute(
                "SELECT nextval(%s) AS id FROM generate_series(1, %s)",
                (self._seq, CHUNK)).fetchall()]
            chunk = [(i, secrets.token_bytes(KEY_BYTES)) for i in sorted(ids)]
            rows = []
            for key_id, key in chunk:
                nonce = os.urandom(_NONCE)
                rows.append((key_id, nonce + self._wrap.encrypt(nonce, key, self._aad(key_id))))
            curs.executemany(SQL("INSERT INTO {} VALUES (%s, %s)").format(self._keys), rows)
        with self._db_lock:
            self._cache.update(chunk)
        return chunk

    def get(self, key_id: int) -> bytes | None:
        with self._db_lock:
            if key_id in self._cache:
                return self._cache[key_id]
        with self._datastore.transaction() as curs:
            found = curs.execute(SQL("SELECT id, wrapped FROM {} WHERE id BETWEEN %s AND %s"
                                     ).format(self._keys),
                                 (key_id, key_id + _PREFETCH - 1)).fetchall()
            gone = curs.execute(SQL("SELECT 1 FROM {} WHERE id = %s").format(self._destroyed),
                                (key_id,)).fetchone()
        unwrapped = {int(r["id"]): self._unwrap(int(r["id"]), bytes(r["wrapped"]))
                     for r in found}
        with self._db_lock:
            self._cache.update(unwrapped)
        if key_id in unwrapped:
            return unwrapped[key_id]
        if gone is not None:
            return None
        raise IntegrityError(
            f"record_key_missing: {self._where}: no key {key_id} for a sealed record in the "
            "journal's database; it was deleted outside memory-es", code="record_key_missing")

    def _unwrap(self, key_id: int, blob: bytes) -> bytes:
        try:
            return self._wrap.decrypt(blob[:_NONCE], blob[_NONCE:], self._aad(key_id))
        except InvalidTag:
            raise IntegrityError(
                f"record_key_invalid: {self._where}: record key {key_id} does not open with "
                "this journal's chain key; the key table was edited or copied from another "
                "journal", code="record_key_invalid") from None

    def present(self, key_ids: Iterable[int]) -> list[int]:
        ids = sorted(set(key_ids))
        if not ids:
            return []
        with self._datastore.transaction() as curs:
            rows = curs.execute(SQL("SELECT id FROM {} WHERE id = ANY(%s) ORDER BY id").format(
                self._keys), (ids,)).fetchall()
        return [int(r["id"]) for r in rows]

    def destroy(self, key_ids: Iterable[int], *, destroyed: bool = True) -> None:
        ids = sorted(set(key_ids))
        with self._datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DELETE FROM {} WHERE id = ANY(%s)").format(self._keys), (ids,))
            if destroyed:
                curs.execute(SQL("INSERT INTO {} SELECT unnest(%s::bigint[]) "
                                 "ON CONFLICT DO NOTHING").format(self._destroyed), (ids,))
        with self._db_lock:
            for key_id in ids:
                self._cache.pop(key_id, None)

    def export_all(self) -> tuple[list[tuple[int, bytes]], list[int]]:
        with self._datastore.transaction() as curs:
            rows = curs.execute(SQL("SELECT id, wrapped FROM {}").format(self._keys)).fetchall()
            gone = curs.execute(SQL("SELECT id FROM {}").format(self._destroyed)).fetchall()
        return ([(int(r["id"]), self._unwrap(int(r["id"]), bytes(r["wrapped"]))) for r in rows],
                [int(r["id"]) for r in gone])

    def import_all(self, keys: list[tuple[int, bytes]], destroyed: list[int]) -> None:
        rows = []
        for key_id, key in keys:
            nonce = os.urandom(_NONCE)
            rows.append((key_id, nonce + self._wrap.encrypt(nonce, key, self._aad(key_id))))
        with self._datastore.transaction(commit=True) as curs:
            curs.executemany(SQL("INSERT INTO {} VALUES (%s, %s) ON CONFLICT DO NOTHING").format(
                self._keys), rows)
            curs.execute(SQL("INSERT INTO {} SELECT unnest(%s::bigint[]) ON CONFLICT DO NOTHING"
                             ).format(self._destroyed), (destroyed,))
            top = max([0, *(k for k, _ in keys), *destroyed])
            if top:  # the sequence hands out ids above every imported one
                curs.execute(SQL("SELECT setval(%s, greatest(%s, (SELECT last_value FROM {})))"
                                 ).format(self._seq_ident), (self._seq, top))

    def collect_garbage(self, highest_referenced: int) -> int:
        """Nothing: another host may hold reserved ids in its pool (module docstring)."""
        return 0

    def close(self) -> None:
        with self._db_lock:
            self._cache.clear()
