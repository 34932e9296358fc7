"""``memory-es migrate-journal``: move a root's journal between SQLite and PostgreSQL.

A copy, not a conversion: every row moves with its position and keyed chain value (the same
root id, the same chain key, so the same links), every payload and record key as stored, so
the journal on the other side verifies exactly as the one it came from. The copy goes in
batches, each one transaction that also advances the target's head, so a run that stops
anywhere resumes from the target's head on the next run; a target whose rows are not a prefix
of the source's is refused. The root's schema marker is the switch: written (atomically) only
once the whole target verifies against the source's tail.

Then the source goes, with every copy of its record keys: a journal left behind would keep
every text a later forget erases openable (a forget destroys the keys of the journal the
marker names, and no other). To PostgreSQL: ``journal.db`` and its catalog are deleted and
the key store's ``records.db`` for the root with them (the keys live on the server now). To
SQLite: the server's journal (its tables, function, record keys) is dropped, so other hosts
of a shared journal must be stopped first. A crash between the switch and the removal leaves
leftovers that ``health`` reports (``journal_leftover``) and that running the command again
removes; running it again once switched copies nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memory_es.errors import IntegrityError
from memory_es.fsutil import atomic_write, crash_point, fsync_dir
from memory_es.journal.backend import PostgresJournal
from memory_es.journal.catalog import Catalog
from memory_es.journal.chain import Chain
from memory_es.journal.layout import (
    CATALOG_FILE,
    JOURNAL_FILE,
    MARKER_FILE,
    POSTGRES,
    SCHEMA_VERSION,
    Marker,
    exists,
    parse_marker,
    read_marker,
)
from memory_es.journal.open import DEFAULT_LOCK_TIMEOUT, open_journal
from memory_es.journal.protocol import Recorder
from memory_es.journal.recorder import JournalRecorder, ensure_schema
from memory_es.journal.records import RecordKeys
from memory_es.journal.sealing import Sealer
from memory_es.keystore import RECORDS_FILE, KeyStore
from memory_es.progress import step

BATCH = 2000
# Suffix of the files a migration to PostgreSQL once renamed and kept: each still opens
# with the key store's record keys, so health reports them and a run removes them.
MIGRATED = ".migrated"
SQLITE_FILES = (JOURNAL_FILE, CATALOG_FILE, JOURNAL_FILE + "-wal", JOURNAL_FILE + "-shm")


@dataclass(frozen=True)
class MigrationReport:
    """What a run did: ``copied`` rows this run (``resumed_from``: the target's head before
    it), ``position`` the journal's head, ``payloads`` and ``record_keys`` carried over."""

    to: str
    position: int
    copied: int
    resumed_from: int
    payloads: int
    record_keys: int
    location: str
    already: bool = False


def migrate_journal(root: Path, to: str, target: PostgresJournal | None, *,
                    key_store: str | Path | KeyStore | None = None,
                    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
                    batch: int = BATCH) -> MigrationReport:
    """Copy ``root``'s journal ``to`` "postgres" (the server ``target`` names) or "sqlite"
    (from the server its marker names, ``target`` or ``$MEMORY_ES_PG_DSN``)."""
    keys = KeyStore.resolve(key_store)
    marker = read_marker(root / MARKER_FILE) if exists(root / MARKER_FILE) else None
    if marker is None:
        from memory_es.errors import NotARootError

        raise NotARootError(f"{root}: no memory root here (no {MARKER_FILE}); check --root")
    on_postgres = marker.journal == POSTGRES
    if (to == "postgres") == on_postgres:
        remove_leftovers(root, keys, marker.root_id, on_postgres=on_postgres)
        return MigrationReport(to=to, position=0, copied=0, resumed_from=0, payloads=0,
                               record_keys=0, location=marker.location or JOURNAL_FILE,
                               already=True)
    source = open_journal(root, writable=True, lock_timeout=lock_timeout, create=False,
                          key_store=keys, journal=target if on_postgres else None)
    closed = False
    try:
        chain = source.chain
        if not chain.keyed or chain.root_id is None:
            raise IntegrityError(f"{root}: a plain-chain root cannot be migrated; open it once "
                                 "as a writer to key it", code="chain_unkeyed")
        if to == "postgres":
            assert target is not None
            sink = postgres_sink(target, chain)
            location = sink.location
        else:
            sink, location = sqlite_sink(root, chain, keys), JOURNAL_FILE
        try:
            report = _copy(source.recorder, sink, to, location, batch)
        finally:
            sink.close()
        source.app.close()  # closed before its files are renamed; the lock stays held
        closed = True
        write_marker(root, to, chain, location, target)
        crash_point("migrate.after_switch")
        if to == "postgres":
            remove_leftovers(root, keys, chain.root_id, on_postgres=True)
        else:
            assert target is not None
            _drop_server_journal(target, chain)
    finally:
        if not closed:
            source.app.close()
        if source.lock is not None:
            source.lock.release()
    return report


def postgres_sink(target: PostgresJournal, chain: Chain) -> Recorder:
    """The target database's journal, its marker claimed for this root (or already this
    root's: a resumed run)."""
    from memory_es.journal.pgopen import make_recorder
    from memory_es.journal.pgrecords import PostgresRecordKeys

    sink = make_recorder(target.dsn, target.schema, chain=chain)
    location = sink.location
    try:
        sink.create_table()
        ours = Marker(SCHEMA_VERSION, chain.root_id, chain.keyed_from, journal=POSTGRES,
                      pg_schema=target.schema).signed(chain)
        held = parse_marker(location, sink.claim_meta(ours.file_bytes().decode()))
        if held.root_id != chain.root_id:
            raise IntegrityError(f"{location}: that database holds another journal (root id "
                                 f"{held.root_id}); choose an empty database or schema",
                                 code="migrate_target_foreign")
        sink.sealer = Sealer(PostgresRecordKeys(sink.datastore, location, chain,
                                                writable=True), None)
    except BaseException:
        sink.close()
        raise
    return sink


def sqlite_sink(root: Path, chain: Chain, keys: KeyStore) -> Recorder:
    journal_path, catalog_path = root / JOURNAL_FILE, root / CATALOG_FILE
    if not exists(journal_path):
        from memory_es.fsutil import create_private_file

        os.close(create_private_file(journal_path))
    ensure_schema(journal_path)
    catalog = (Catalog.open(catalog_path, writable=True) if exists(catalog_path)
               else Catalog.create(catalog_path))
    sink = JournalRecorder(journal_path, catalog, chain=chain)
    assert chain.root_id is not None
    sink.sealer = Sealer(RecordKeys(keys, chain.root_id, writable=True), None)
    return sink


def _copy(source: Recorder, sink: Recorder, to: str, location: str,
          batch: int) -> MigrationReport:
    """Rows after the sink's verified head, in batches; then payloads and record keys; then
    the whole sink verified against the source's tail."""
    head, head_chain = sink.verify()
    if head and source.chain_at(head) != head_chain:
        raise IntegrityError(f"{location}: the target's journal is not a prefix of this root's "
                             f"(position {head} differs); refusing to copy into it",
                             code="migrate_target_diverged")
    copied, rows = 0, []
    total = source.max_notification_id() or 0
    for row in source.rows():
        if row[0] <= head:
            continue
        rows.append(row)
        if len(rows) >= batch:
            sink.append_rows(rows)
            copied, rows = copied + len(rows), []
            step("migrate-journal", row[0], total)
            crash_point("migrate.after_batch")
    if rows:
        sink.append_rows(rows)
        copied += len(rows)
    payloads = source.payload_rows()
    sink.append_rows([], payloads)
    source_keys, sink_keys = source.sealer.keys, sink.sealer.keys
    moved = 0
    if source_keys is not None and sink_keys is not None:
        keys, destroyed = source_keys.export_all()
        sink_keys.import_all(keys, destroyed)
        moved = len(keys)
    position, tail = sink.verify()
    if (position, tail) != source.verify():
        raise IntegrityError(f"{location}: the copy does not end where this root's journal "
                             "does; nothing was switched", code="migrate_incomplete")
    return MigrationReport(to=to, position=position, copied=copied, resumed_from=head,
                           payloads=len(payloads), record_keys=moved, location=location)


def write_marker(root: Path, to: str, chain: Chain, location: str,
            target: PostgresJournal | None) -> None:
    """Write the marker that points the root at its new journal (the caller removes the old
    one next: a crash between the two leaves files the open ignores and health reports)."""
    if to == "postgres":
        assert target is not None
        marker = Marker(SCHEMA_VERSION, chain.root_id, chain.keyed_from, journal=POSTGRES,
                        location=location, pg_schema=target.schema)
    else:
        marker = Marker(SCHEMA_VERSION, chain.root_id, chain.keyed_from)
    atomic_write(root / MARKER_FILE, marker.signed(chain).file_bytes())
    fsync_dir(root)


def leftovers(root: Path, keys: KeyStore, root_id: str | None, *, on_postgres: bool
              ) -> list[Path]:
    """What a migration left that still opens with a key: the SQLite journal files (current
    names, and ``*.migrated`` copies an earlier version kept) of a root whose journal is on
    PostgreSQL, and the key store's copy of its record keys."""
    names = [name + MIGRATED for name in SQLITE_FILES]
    if on_postgres:
        names += SQLITE_FILES
    found = [root / name for name in names if exists(root / name)]
    if on_postgres and root_id is not None:
        found += [p for p in _local_key_files(keys, root_id) if p.exists()]
    return found


def remove_leftovers(root: Path, keys: KeyStore, root_id: str | None, *,
                     on_postgres: bool) -> list[Path]:
    """Delete what :func:`leftovers` finds: the SQLite journal of a root now on PostgreSQL
    and the key store's copy of its record keys (the server holds them), and the
    ``*.migrated`` copies an earlier version kept."""
    gone = leftovers(root, keys, root_id, on_postgres=on_postgres)
    for path in gone:
        path.unlink(missing_ok=True)
    if gone:
        fsync_dir(root)
    return gone


def _local_key_files(keys: KeyStore, root_id: str) -> list[Path]:
    base = keys.path / root_id / RECORDS_FILE
    return [base, *(base.with_name(base.name + s) for s in ("-wal", "-shm", "-journal"))]


def _drop_server_journal(target: PostgresJournal, chain: Chain) -> None:
    """Drop the server's copy of a journal that moved back into its root."""
    from memory_es.journal.pgopen import make_recorder

    server = make_recorder(target.dsn, target.schema, chain=chain)
    try:
        server.drop_journal()
    finally:
        server.close()
