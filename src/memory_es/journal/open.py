"""Opening a root's journal: the eventsourcing application and the checks that guard it.

``open_journal`` fails closed on any hygiene or integrity problem: it loads the root's chain key
from the key store (once per open), verifies the whole hash chain against the integrity
catalog, recovers a catalog left behind by a crash (journal ahead, suffix verified with the
key), and for writers takes the writer lock, creates a fresh root if none exists and keys a
schema-1 (plain SHA-256) root from its next position on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import ApplicationRecorder, Mapper
from eventsourcing.utils import Environment

from memory_es.errors import IntegrityError, InvalidArgumentError, NotARootError
from memory_es.fsutil import check_private, make_private_dir, remove_stale_temps
from memory_es.journal.backend import PostgresJournal
from memory_es.journal.catalog import Catalog
from memory_es.journal.chain import Chain, row_digest
from memory_es.journal.checkpoint import PINNED, read_checkpoint, write_checkpoint
from memory_es.journal.codec import MsgspecMapper
from memory_es.journal.layout import (
    CATALOG_FILE,
    JOURNAL_FILE,
    LOCK_FILE,
    MARKER_FILE,
    POSTGRES,
    check_managed,
    exists,
    initialise,
    read_marker,
    write_keyed_marker,
)
from memory_es.journal.lock import WriterLock
from memory_es.journal.protocol import Recorder
from memory_es.journal.recorder import JournalRecorder
from memory_es.journal.records import RecordKeys
from memory_es.journal.sealing import Sealer, SealPolicy
from memory_es.keystore import KeyStore

DEFAULT_LOCK_TIMEOUT = 5.0


class Journal(Application[UUID]):
    """The event-sourced application over one root's journal.

    Never reads the process environment: configuration is explicit.
    """

    name = "memory_es"

    def __init__(self, recorder: Recorder) -> None:
        self._journal_recorder = recorder
        super().__init__(env={})

    def construct_env(self, name: str, env: Any = None) -> Environment:
        return Environment(name, dict(env or {}))

    def construct_mapper(self) -> Mapper[UUID]:
        return MsgspecMapper(self._journal_recorder.sealer)

    def construct_recorder(self) -> ApplicationRecorder:
        return cast(ApplicationRecorder, self._journal_recorder)

    @property
    def journal_recorder(self) -> Recorder:
        return self._journal_recorder

    def close(self) -> None:
        self._journal_recorder.close()
        super().close()


@dataclass
class OpenedJournal:
    """A verified journal plus, for writers, the lock that fences other writers off."""

    app: Journal
    lock: WriterLock | None
    recovered_from: int | None  # catalog position when the journal was ahead of it, else None
    root: Path
    keys: KeyStore | None = None  # where the root's keys are (and its ledger of backups)
    from_checkpoint: bool = False  # a reader that verified only the links after it
    verified: tuple[int, bytes] | None = None  # the (position, chain) verified up to (SQLite)

    def verify_whole(self) -> None:
        """Verify every link before decoding rows a checkpoint does not cover (a reader that
        started from it); a no-op once done, or for a reader that verified them all."""
        if self.from_checkpoint:
            self.verified = self.recorder.verify()
            self.from_checkpoint = False

    def aggregate_rows(self, originator_id: UUID) -> list[tuple[int, int, str, bytes]]:
        """(position, version, topic, state) of one aggregate's events, safe to decode: a
        reader that started from a checkpoint checks each row's own link (a few rows, not
        the whole chain); one that verified every link reads them as they are."""
        recorder = self.recorder
        if self.from_checkpoint and isinstance(recorder, JournalRecorder):
            return recorder.linked_aggregate_rows(originator_id)
        self.verify_whole()
        return recorder.aggregate_rows(originator_id)

    @property
    def recorder(self) -> Recorder:
        return self.app.journal_recorder

    @property
    def chain(self) -> Chain:
        """The root's link function (``chain.keyed``: False for a schema-1 root)."""
        return self.app.journal_recorder.chain

    def close(self) -> None:
        try:
            recorder = self.app.journal_recorder
            if self.lock is not None and isinstance(recorder, JournalRecorder) \
                    and recorder.writing and recorder.attested is not None \
                    and recorder.still_at_path():
                # what it verified at open and its own commits after: readers start there
                write_checkpoint(self.root, recorder.chain, recorder.attested)
            self.app.close()
        finally:
            if self.lock is not None:
                self.lock.release()


def open_journal(
    root: Path, *, writable: bool, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    create: bool = True, derived: Sequence[str] = (),
    key_store: str | Path | KeyStore | None = None, seal: SealPolicy | None = None,
    journal: PostgresJournal | None = None, checkpoint: bool = False,
) -> OpenedJournal:
    """Open ``root``'s journal, failing closed on any integrity or hygiene problem.

    Writers create a fresh root if nothing is there (unless ``create`` is false: operator
    commands never turn a mistyped path into a new empty root), take the writer lock (waiting
    up to ``lock_timeout``) and recover a journal-ahead catalog. Readers take no lock and
    change nothing. A writer never initialises where any of the root-relative ``derived``
    entries exist: projections without a journal mean the journal was lost, and a fresh one
    beside them would admit old run ids again.

    ``key_store`` is where the root's chain key lives (default: ``$MEMORY_ES_KEY_STORE``,
    read now, else ``~/.local/state/memory-es/keys``); it must lie outside the root.
    ``seal`` is the domain's policy of content fields a writer seals under per-record keys;
    every opener can open sealed fields whose keys exist.
    ``journal`` puts a new root's journal on PostgreSQL; a root whose marker says
    its journal is there finds the server from it, or from ``$MEMORY_ES_PG_DSN``.
    ``checkpoint``: a reader starts from the chain position the writer attested
    (:mod:`~memory_es.journal.checkpoint`) instead of recomputing every link; writers always
    verify it all, and attest it at open and close.
    """
    root = Path(root)
    try:
        str(root).encode("utf-8")  # SQLite takes UTF-8 names; refuse before creating anything
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"root {str(root)!r} is not a UTF-8 path; SQLite cannot "
                                   "open a journal there") from None
    keys = KeyStore.resolve(key_store)
    keys.check_outside(root)
    if writable and not create and not exists(root / MARKER_FILE) \
            and not exists(root / JOURNAL_FILE):
        raise NotARootError(f"{root}: no memory root here (no {MARKER_FILE}); check --root")
    if writable:
        if not exists(root):
            make_private_dir(root)
        check_private(root, is_dir=True)
        lock: WriterLock | None = WriterLock(root / LOCK_FILE)
        assert lock is not None
        lock.acquire(lock_timeout)
    else:
        if not exists(root):
            raise NotARootError(f"{root}: no memory root here")
        check_private(root, is_dir=True)
        lock = None
    try:
        if writable:
            remove_stale_temps(root)  # e.g. a schema marker write a kill interrupted
        return _open_locked(root, writable=writable, lock=lock, derived=derived, keys=keys,
                            seal=seal, journal=journal, checkpoint=checkpoint and not writable)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def _open_locked(root: Path, *, writable: bool, lock: WriterLock | None,
                 keys: KeyStore, derived: Sequence[str] = (),
                 seal: SealPolicy | None = None,
                 journal: PostgresJournal | None = None,
                 checkpoint: bool = False) -> OpenedJournal:
    check_managed(root)
    journal_path, catalog_path, marker_path = (
        root / JOURNAL_FILE,
        root / CATALOG_FILE,
        root / MARKER_FILE,
    )
    marker = read_marker(marker_path) if exists(marker_path) else None
    # The marker decides; without one, a journal file (an initialisation a crash cut short)
    # keeps the root on SQLite. A root the marker puts on PostgreSQL ignores a journal file
    # a migration left behind.
    on_postgres = marker.journal == POSTGRES if marker is not None else (
        journal is not None and not exists(journal_path))
    if journal is not None and not on_postgres:
        raise IntegrityError(
            f"{root}: this root's journal is {JOURNAL_FILE} (SQLite), not on PostgreSQL; "
            "copy it there with memory-es migrate-journal", code="journal_backend_mismatch")
    if on_postgres:
        from memory_es.journal.pgopen import open_on_postgres  # psycopg: an optional extra

        pg = open_on_postgres(root, marker, journal, writable=writable, keys=keys,
                              derived=derived, seal=seal)
        return OpenedJournal(Journal(pg), lock, None, root, keys)
    if marker is not None:
        for path, what, code in (
            (journal_path, "journal", "journal_missing"),
            (catalog_path, "integrity catalog", "catalog_missing"),
        ):
            if not exists(path):
                raise IntegrityError(
                    f"{path}: {what} is missing but the schema marker says this root has one",
                    code=code,
                )
        chain = marker.chain(keys)  # chain_key_missing, key_store_unsafe, marker_invalid
    elif not writable:
        if exists(journal_path):
            raise IntegrityError(
                f"{marker_path}: schema marker is missing but a journal exists; "
                "open the root as a writer to finish or refuse initialisation",
                code="marker_missing",
            )
        raise NotARootError(f"{root}: no memory root here (no {MARKER_FILE})")
    else:
        left = [name for name in derived if exists(root / name)]
        if left and not exists(journal_path):
            raise IntegrityError(
                f"{root}: the journal and its schema marker are gone but projections remain "
                f"({', '.join(left)}); refusing to start a new journal beside them: restore "
                f"{JOURNAL_FILE}, {CATALOG_FILE} and {MARKER_FILE}, or move the projections away",
                code="journal_missing")
        chain = initialise(root, keys)

    catalog = Catalog.open(catalog_path, writable=writable)
    recorder = JournalRecorder(journal_path, catalog if writable else None,
                               readonly=not writable, chain=chain)
    try:
        cat_position, cat_chain = catalog.read()
        if not writable:
            catalog.close()
        start = _attested(root, recorder) if checkpoint else None
        position, tail = _verify_against_catalog(recorder, cat_position, cat_chain, start,
                                                 attest=writable)
        recovered_from = cat_position if position > cat_position else None
        if recovered_from is not None and writable:
            # DESIGN 3 / B14: the suffix chain verified; fsync the journal again, then advance.
            recorder.fsync_files()
            catalog.write(position, tail)
            catalog.sync()
        if writable and not recorder.chain.keyed:
            # A schema-1 root: key it from the next position on. The
            # verified plain prefix stays as it is; the first keyed link covers its tail.
            recorder.chain = write_keyed_marker(root, keys, position + 1)
        if writable and recorder.attested is not None:
            write_checkpoint(root, recorder.chain, recorder.attested)
        if recorder.chain.root_id is not None:
            records = RecordKeys(keys, recorder.chain.root_id, writable=writable)
            recorder.sealer = Sealer(records, seal if writable else None)
            if writable and seal is not None:
                # keys a crash left reserved but unused, collected before this
                # writer hands out any; an opener that seals nothing (rebuild, migrate) never
                # does, and skips the scan of every sealed row (0.4 s at 100k)
                records.collect_garbage(recorder.highest_key_id())
    except BaseException:
        recorder.close()
        if not writable:
            catalog.close()
        raise
    for name in (JOURNAL_FILE + "-wal", JOURNAL_FILE + "-shm"):
        if exists(root / name):
            check_private(root / name, is_dir=False)
    return OpenedJournal(Journal(recorder), lock, recovered_from, root, keys,
                         from_checkpoint=start is not None, verified=(position, tail))


def _attested(root: Path, recorder: JournalRecorder) -> tuple[int, bytes] | None:
    """The writer's verified checkpoint when the journal still holds it; None (verify it
    all) when there is none, the stored chain there differs (replaced, truncated) or the
    recorded configuration at or before it is not the row the checkpoint pins."""
    found = read_checkpoint(root, recorder.chain)
    if found is None or recorder.chain_at(found.position) != found.value:
        return None
    row = recorder.last_row_of(PINNED)
    if row is not None and row[0] <= found.position \
            and found.pinned != (row[0], row_digest(*row)):
        return None
    if row is None and found.pinned is not None:
        return None
    return found.position, found.value


def _verify_against_catalog(
    recorder: JournalRecorder, cat_position: int, cat_chain: bytes,
    start: tuple[int, bytes] | None = None, *, attest: bool = False,
) -> tuple[int, bytes]:
    """Verify the chain (all of it, or the links after ``start``), then check the catalog is
    not ahead of it nor off it. ``attest``: a writer vouches for what it verified.

    Returns the verified tail ``(position, chain)``; the caller recovers a lagging catalog.
    """
    position, chain = recorder.verify(start, attest=attest)
    if cat_position > position:
        raise IntegrityError(
            f"{recorder.path}: journal ends at position {position} but the integrity catalog "
            f"records {cat_position}; the journal was truncated",
            code="journal_truncated",
        )
    if cat_position > 0 and recorder.chain_at(cat_position) != cat_chain:
        raise IntegrityError(
            f"{recorder.path}: chain at position {cat_position} does not match the integrity "
            "catalog; the journal was replaced",
            code="journal_replaced",
        )
    return position, chain
