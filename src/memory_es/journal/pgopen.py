"""Opening a root whose journal is on PostgreSQL.

The server keeps the journal's own schema marker (root id, first keyed position, MAC) beside
the events; the root's directory keeps a copy that also names the server (without
credentials), so a root cannot be pointed at another journal unnoticed and a journal cannot be
swapped under a root. The first writer to open an empty database creates the tables and mints
the journal's root id and chain key; every later opener, on any host, needs that chain key
in its key store (``chain_key_missing`` otherwise). Every open verifies the whole chain
against the head row, in one snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from eventsourcing.persistence import OperationalError, ProgrammingError

from memory_es.errors import IntegrityError, InvalidArgumentError, NotARootError
from memory_es.journal.backend import DSN_ENV, PostgresJournal
from memory_es.journal.chain import Chain
from memory_es.journal.layout import (
    MARKER_FILE,
    POSTGRES,
    Marker,
    exists,
    mint_marker,
    parse_marker,
)
from memory_es.journal.pgconnect import check_schema, connection_failure, datastore, redact
from memory_es.journal.pgrecorder import PostgresJournalRecorder
from memory_es.journal.pgrecords import PostgresRecordKeys
from memory_es.journal.sealing import Sealer, SealPolicy
from memory_es.keystore import KeyStore


def make_recorder(dsn: str, schema: str, **kwargs: Any) -> PostgresJournalRecorder:
    """The recorder of the journal in ``schema`` of ``dsn``'s database. eventsourcing's own
    statements name the schema unquoted, so making one fails on a reserved word: that failure
    (and only it: no extra connection on every open) is explained by :func:`check_schema`."""
    store = datastore(dsn, schema=schema)
    try:
        return PostgresJournalRecorder(store, location=redact(dsn), **kwargs)
    except ProgrammingError:
        try:
            check_schema(store)
        finally:
            store.close()
        raise
    except OperationalError as e:  # the pool says only "couldn't get a connection"
        try:
            failure = connection_failure(store, redact(dsn), e)
        finally:
            store.close()
        if failure is e:
            raise
        raise failure from e



def open_on_postgres(root: Path, marker: Marker | None, journal: PostgresJournal | None, *,
                     writable: bool, keys: KeyStore, derived: Sequence[str] = (),
                     seal: SealPolicy | None = None) -> PostgresJournalRecorder:
    """The verified recorder of ``root``'s PostgreSQL journal (created by a first writer)."""
    if journal is None:
        assert marker is not None
        journal = PostgresJournal.from_env(marker.pg_schema)
        if journal is None:
            raise InvalidArgumentError(
                f"{root}: this root's journal is on PostgreSQL ({marker.location}); give its "
                f"DSN with memory.journal.dsn or ${DSN_ENV}", code="journal_dsn_missing")
    recorder = make_recorder(journal.dsn, journal.schema, readonly=not writable)
    location = recorder.location
    try:
        server = _server_marker(recorder, journal, keys, writable=writable,
                                has_local=marker is not None)
        chain = server.chain(keys)  # its MAC; chain_key_missing on a host without the key
        if marker is None:
            _join(root, server, location, writable=writable, derived=derived, chain=chain)
        elif marker.root_id != server.root_id:
            raise IntegrityError(
                f"{root}: this root belongs to journal {marker.root_id} but {location} holds "
                f"journal {server.root_id}; check memory.journal", code="journal_replaced")
        recorder.chain = chain
        recorder.verify()
        assert server.root_id is not None
        # in the database, wrapped under the chain key: every host opens what any sealed
        records = PostgresRecordKeys(recorder.datastore, location, chain, writable=writable)
        recorder.sealer = Sealer(records, seal if writable else None)
    except BaseException:
        recorder.close()
        raise
    return recorder


def _server_marker(recorder: PostgresJournalRecorder, journal: PostgresJournal,
                   keys: KeyStore, *, writable: bool, has_local: bool) -> Marker:
    """The server's marker; a first writer creates the tables and mints it."""
    held = recorder.read_meta()
    if held is None:
        if has_local:
            raise IntegrityError(
                f"{recorder.location}: this root's journal is not in that database (schema "
                f"{journal.schema}); it was dropped, or memory.journal names another server",
                code="journal_missing")
        if not writable:
            raise NotARootError(f"{recorder.location}: no memory-es journal in that database")
        recorder.create_table()
        _, minted = mint_marker(keys, 1, journal=POSTGRES, pg_schema=journal.schema)
        held = recorder.claim_meta(minted.file_bytes().decode())  # another writer may win
    elif writable:
        recorder.create_table()  # tables a newer version adds
    return parse_marker(recorder.location, held)


def _join(root: Path, server: Marker, location: str, *, writable: bool,
          derived: Sequence[str], chain: Chain) -> None:
    """Give a root without a marker the server's journal: write the local copy naming it."""
    from memory_es.fsutil import atomic_write  # looked up per call: crash harnesses wrap it

    if not writable:
        raise NotARootError(f"{root}: no memory root here (no {MARKER_FILE})")
    left = [name for name in derived if exists(root / name)]
    if left:
        raise IntegrityError(
            f"{root}: projections remain ({', '.join(left)}) but the schema marker is gone; "
            "refusing to join them to a journal they may not be of: move them away",
            code="journal_missing")
    local = replace(server, location=location).signed(chain)
    atomic_write(root / MARKER_FILE, local.file_bytes())
