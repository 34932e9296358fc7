"""The journal: an fsynced, hash-chained event log with an integrity catalog (DESIGN 3).

Files at the memory root (all owner-only, never followed through symlinks):

- ``journal.db``: SQLite (apsw, WAL, synchronous=FULL) with the ``events`` table (one row per
  event, ``position`` = INTEGER PRIMARY KEY, ``chain`` = running SHA-256) and ``payloads``.
- ``journal.catalog``: the last ``(position, chain)`` known to be committed, written after each
  commit. Catalog ahead of journal = truncation; chain mismatch = replacement; both fail closed.
- ``.memory-es-schema``: proves a journal existed, so deleting journal and catalog cannot pass as
  a fresh root (B15).
- ``.writer.lock``: ``flock`` held by the one writer process (B23, C16).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import struct
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints
from uuid import UUID

import apsw
import msgspec
from eventsourcing.application import Application
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import (
    ApplicationRecorder,
    Mapper,
    MapperDeserialisationError,
    Notification,
    StoredEvent,
    Subscription,
    Transcoder,
)
from eventsourcing.persistence import IntegrityError as RecordConflict
from eventsourcing.utils import Environment, resolve_topic

from memory_es.errors import IntegrityError, LockTimeoutError, NotARootError
from memory_es.fsutil import (
    check_private,
    crash_armed,
    crash_point,
    create_private_file,
    fsync_dir,
    make_private_dir,
    open_private_file,
    remove_stale_temps,
)

JOURNAL_FILE = "journal.db"
CATALOG_FILE = "journal.catalog"
MARKER_FILE = ".memory-es-schema"
LOCK_FILE = ".writer.lock"
SCHEMA_VERSION = 1
GENESIS = bytes(32)
DEFAULT_LOCK_TIMEOUT = 5.0
CATALOG_SYNC_INTERVAL = 1.0

_MARKER = {"format": "memory-es", "journal": JOURNAL_FILE, "schema": SCHEMA_VERSION}


def chain_link(
    prev: bytes, position: int, originator_id: UUID | str, version: int, topic: str, state: bytes
) -> bytes:
    """chain_n = sha256(chain_{n-1} || position || originator_id || version || topic || state).

    Fixed-width integers and length prefixes make the encoding unambiguous.
    """
    oid = str(originator_id).encode()
    t = topic.encode()
    h = hashlib.sha256(prev)
    h.update(struct.pack(">QqI", position, version, len(oid)))
    h.update(oid)
    h.update(struct.pack(">I", len(t)))
    h.update(t)
    h.update(struct.pack(">Q", len(state)))
    h.update(state)
    return h.digest()


# --------------------------------------------------------------------------------------------
# Mapper: msgspec, canonical (sorted keys) on the way out, typed on the way in.


class _AdmittedHash(msgspec.Struct):
    content_sha256: str


_ADMITTED_HASH = msgspec.json.Decoder(_AdmittedHash)


class MsgspecTranscoder(Transcoder):
    """Canonical JSON: sorted keys, no spaces, UTF-8. Decoding is untyped; see MsgspecMapper."""

    def encode(self, obj: Any) -> bytes:
        return msgspec.json.encode(obj, order="sorted")

    def decode(self, data: bytes) -> Any:
        return msgspec.json.decode(data)


_decode_types: dict[type, Any] = {}
_SKIP_FIELDS = {"originator_id", "originator_version", "originator_id_type"}


def _decode_type(cls: type) -> Any:
    """A strict msgspec Struct mirroring the event class's fields (cached per class)."""
    try:
        return _decode_types[cls]
    except KeyError:
        hints = get_type_hints(cls)
        fields: list[Any] = [(n, t) for n, t in hints.items() if n not in _SKIP_FIELDS]
        fields.append(("class_version", int, 1))
        struct_type = msgspec.defstruct(
            f"{cls.__name__}State", fields, forbid_unknown_fields=True, kw_only=True
        )
        _decode_types[cls] = struct_type
        return struct_type


class MsgspecMapper(Mapper[UUID]):
    """Typed decode: a stored event whose fields don't match its class is an error, not a guess."""

    def __init__(self) -> None:
        super().__init__(transcoder=MsgspecTranscoder())

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[UUID]:
        cls = resolve_topic(stored_event.topic)
        class_version = getattr(cls, "class_version", 1)
        data = stored_event.state
        try:
            if class_version > 1:  # upcast old states, then decode the result strictly
                state = msgspec.json.decode(data)
                from_version = state.pop("class_version", 1)
                while from_version < class_version:
                    getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(state)
                    from_version += 1
                data = msgspec.json.encode(state)
            typed = msgspec.json.decode(data, type=_decode_type(cls))
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            msg = (
                f"event {stored_event.originator_id} v{stored_event.originator_version} "
                f"({stored_event.topic}) does not decode: {e}"
            )
            raise MapperDeserialisationError(msg) from e
        event_state = msgspec.structs.asdict(typed)
        event_state.pop("class_version", None)
        oid = stored_event.originator_id
        event_state["originator_id"] = oid if isinstance(oid, UUID) else UUID(oid)
        event_state["originator_version"] = stored_event.originator_version
        domain_event = object.__new__(cls)
        object.__setattr__(domain_event, "__dict__", event_state)
        return domain_event  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------
# Integrity catalog: two checksummed slots, written alternately, so a torn write of one slot
# always leaves the other (older) slot valid. Older is safe: journal-ahead is the recoverable
# direction (DESIGN 3).

_SLOT = struct.Struct("<4sQ32sI")
_SLOT_MAGIC = b"MESC"
_SLOT_SIZE = 64


def _pack_slot(position: int, chain: bytes) -> bytes:
    body = _SLOT_MAGIC + struct.pack("<Q", position) + chain
    return (body + struct.pack("<I", zlib.crc32(body))).ljust(_SLOT_SIZE, b"\0")


def _unpack_slot(raw: bytes) -> tuple[int, bytes] | None:
    if len(raw) < _SLOT.size:
        return None
    magic, position, chain, crc = _SLOT.unpack_from(raw)
    if magic != _SLOT_MAGIC or zlib.crc32(raw[: _SLOT.size - 4]) != crc:
        return None
    return position, chain


class Catalog:
    """The owner-only ``(position, chain)`` record of the last committed journal transaction.

    Each commit rewrites one slot in place; the file is fsynced at most once per
    CATALOG_SYNC_INTERVAL and on close. A crash (even power loss) can therefore only leave the
    catalog *behind* the journal, which open() recovers after verifying the suffix chain.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._next_slot = 0
        self._last_sync = time.monotonic()
        self._dirty = False

    @classmethod
    def create(cls, path: Path) -> Catalog:
        fd = create_private_file(path)
        os.pwrite(fd, _pack_slot(0, GENESIS) + bytes(_SLOT_SIZE), 0)
        os.fsync(fd)
        fsync_dir(path.parent)
        return cls(path, fd)

    @classmethod
    def open(cls, path: Path, *, writable: bool) -> Catalog:
        fd = open_private_file(path, os.O_RDWR if writable else os.O_RDONLY)
        catalog = cls(path, fd)
        catalog.read()  # validates, and points the next write at the older slot
        return catalog

    def read(self) -> tuple[int, bytes]:
        raw = os.pread(self._fd, 2 * _SLOT_SIZE, 0)
        slots = [_unpack_slot(raw[i * _SLOT_SIZE : (i + 1) * _SLOT_SIZE]) for i in (0, 1)]
        valid = [(s, i) for i, s in enumerate(slots) if s is not None]
        if not valid:
            raise IntegrityError(
                f"{self.path}: integrity catalog is corrupt (no valid slot)", code="catalog_corrupt"
            )
        (position, chain), index = max(valid, key=lambda v: v[0][0])
        self._next_slot = 1 - index
        return position, chain

    def write(self, position: int, chain: bytes) -> None:
        data = _pack_slot(position, chain)
        offset = self._next_slot * _SLOT_SIZE
        if crash_armed("catalog.torn_write"):
            os.pwrite(self._fd, data[:20], offset)
            crash_point("catalog.torn_write")
        os.pwrite(self._fd, data, offset)
        self._next_slot = 1 - self._next_slot
        self._dirty = True
        crash_point("catalog.after_write")
        if time.monotonic() - self._last_sync >= CATALOG_SYNC_INTERVAL:
            self.sync()

    def sync(self) -> None:
        if self._dirty:
            os.fdatasync(self._fd)
            self._dirty = False
        self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                self.sync()
            os.close(self._fd)
            self._fd = -1


# --------------------------------------------------------------------------------------------
# Writer lock.


class WriterLock:
    """Exclusive ``flock`` on the root's lock file; the file holds the holder's pid for errors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1

    def acquire(self, timeout: float) -> None:
        try:
            fd = create_private_file(self.path)
        except FileExistsError:
            fd = open_private_file(self.path)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                    os.close(fd)
                    raise LockTimeoutError(
                        f"{self.path.parent}: writer lock held by pid {holder} "
                        f"(waited {timeout:g} s); stop that process first"
                    ) from None
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


# --------------------------------------------------------------------------------------------
# Recorder.

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS events (
        position INTEGER PRIMARY KEY,
        originator_id TEXT NOT NULL,
        originator_version INTEGER NOT NULL,
        topic TEXT NOT NULL,
        state BLOB NOT NULL,
        chain BLOB NOT NULL,
        UNIQUE (originator_id, originator_version))""",
    """CREATE TABLE IF NOT EXISTS payloads (
        intake_id TEXT PRIMARY KEY,
        sha256 TEXT NOT NULL,
        bytes BLOB NOT NULL) WITHOUT ROWID""",
)


@dataclass(frozen=True)
class Payload:
    """Turn content kept beside its Admitted event, written in the same transaction (B5)."""

    intake_id: str
    sha256: str
    data: bytes


def _connect(path: Path, *, readonly: bool) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    conn = apsw.Connection(str(path), flags=flags | apsw.SQLITE_OPEN_NOFOLLOW)
    conn.setbusytimeout(5000)
    if not readonly:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchall()[0][0]
        if mode != "wal":
            raise IntegrityError(
                f"{path}: cannot switch journal to WAL (got {mode})", code="journal_unusable"
            )
    conn.execute("PRAGMA synchronous=FULL")
    return conn


class JournalRecorder(ApplicationRecorder):
    """eventsourcing ApplicationRecorder on apsw with a hash chain and an integrity catalog.

    One write connection (serialised by a mutex) and one read connection, so readers in other
    threads never see a transaction in flight.
    """

    def __init__(self, path: Path, catalog: Catalog | None, *, readonly: bool = False) -> None:
        self.path = path
        self.catalog = catalog
        self.readonly = readonly
        self._write_lock = threading.Lock()
        self._read_lock = threading.RLock()
        self._writer: apsw.Connection | None = None
        if not readonly:
            self._writer = _connect(path, readonly=False)
            for ddl in _SCHEMA:
                self._writer.execute(ddl)
        self._reader = _connect(path, readonly=True)

    # -- writing ------------------------------------------------------------------------------

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Append events (and ``payloads=[Payload...]``) in one durable transaction."""
        payloads: Sequence[Payload] = kwargs.get("payloads", ())
        if self._writer is None:
            raise IntegrityError(f"{self.path}: journal opened read-only", code="journal_read_only")
        conn = self._writer
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                position, chain = self._tail(conn)
                rows = []
                for ev in stored_events:
                    position += 1
                    chain = chain_link(
                        chain, position, ev.originator_id, ev.originator_version, ev.topic, ev.state
                    )
                    rows.append(
                        (
                            position,
                            str(ev.originator_id),
                            ev.originator_version,
                            ev.topic,
                            ev.state,
                            chain,
                        )
                    )
                # One call per table: every apsw call re-takes the GIL, which is contended when
                # many threads admit at once.
                conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
                if payloads:
                    conn.executemany(
                        "INSERT INTO payloads VALUES (?, ?, ?)",
                        [(p.intake_id, p.sha256, p.data) for p in payloads],
                    )
                positions = [row[0] for row in rows]
                crash_point("journal.before_commit")
                conn.execute("COMMIT")
            except apsw.ConstraintError as e:
                conn.execute("ROLLBACK")
                raise RecordConflict(str(e)) from e
            except BaseException:
                if not conn.getautocommit():
                    conn.execute("ROLLBACK")
                raise
            crash_point("journal.after_commit")
            if self.catalog is not None and positions:
                self.catalog.write(position, chain)
            return positions

    @staticmethod
    def _tail(conn: apsw.Connection) -> tuple[int, bytes]:
        row = conn.execute(
            "SELECT position, chain FROM events ORDER BY position DESC LIMIT 1"
        ).fetchone()
        return (0, GENESIS) if row is None else (row[0], row[1])

    # -- reading ------------------------------------------------------------------------------

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        sql = "SELECT originator_id, originator_version, topic, state FROM events "
        sql += "WHERE originator_id = ?"
        params: list[Any] = [str(originator_id)]
        if gt is not None:
            sql += " AND originator_version > ?"
            params.append(gt)
        if lte is not None:
            sql += " AND originator_version <= ?"
            params.append(lte)
        sql += " ORDER BY originator_version" + (" DESC" if desc else "")
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._read_lock:
            rows: list[Any] = self._reader.execute(sql, params).fetchall()
        return [StoredEvent(UUID(r[0]), r[1], r[2], r[3]) for r in rows]

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        clauses: list[str] = []
        params: list[Any] = []
        if start is not None:
            clauses.append("position >= ?" if inclusive_of_start else "position > ?")
            params.append(start)
        if stop is not None:
            clauses.append("position <= ?")
            params.append(stop)
        if topics:
            clauses.append(f"topic IN ({','.join('?' * len(topics))})")
            params.extend(topics)
        sql = "SELECT position, originator_id, originator_version, topic, state FROM events"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += " ORDER BY position LIMIT ?"
        params.append(limit)
        with self._read_lock:
            rows: list[Any] = self._reader.execute(sql, params).fetchall()
        return [
            Notification(
                id=r[0], originator_id=UUID(r[1]), originator_version=r[2], topic=r[3], state=r[4]
            )
            for r in rows
        ]

    def max_notification_id(self) -> int | None:
        with self._read_lock:
            row: Any = self._reader.execute("SELECT MAX(position) FROM events").fetchone()
        return None if row is None else int(row[0]) if row[0] is not None else None

    def subscribe(
        self, gt: int | None = None, topics: Sequence[str] = ()
    ) -> Subscription[ApplicationRecorder]:
        return PollingSubscription(self, gt=gt, topics=topics)

    def has_events(self, originator_id: UUID) -> bool:
        """Does any event of this aggregate exist? (one index lookup)"""
        with self._read_lock:
            row = self._reader.execute(
                "SELECT 1 FROM events WHERE originator_id = ? LIMIT 1", (str(originator_id),)
            ).fetchone()
        return row is not None

    def admitted_content_hash(self, intake_id: UUID) -> str | None:
        """The content hash an intake was admitted with, or None: duplicate detection for runs
        the live view no longer holds (B3, B10), straight from the journal."""
        with self._read_lock:
            row: Any = self._reader.execute(
                "SELECT state FROM events WHERE originator_id = ? AND originator_version = 1",
                (str(intake_id),),
            ).fetchone()
        if row is None:
            return None
        return _ADMITTED_HASH.decode(row[0]).content_sha256

    def delete_payloads(self, intake_ids: Sequence[str]) -> None:
        """Drop the payloads of resolved intakes beyond the retained set (B9)."""
        if self._writer is None:
            raise IntegrityError(f"{self.path}: journal opened read-only", code="journal_read_only")
        with self._write_lock, self._writer:
            self._writer.executemany("DELETE FROM payloads WHERE intake_id = ?",
                                     [(i,) for i in intake_ids])

    def payload(self, intake_id: str) -> Payload | None:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT sha256, bytes FROM payloads WHERE intake_id = ?", (intake_id,)
            ).fetchone()
        return None if row is None else Payload(intake_id, row[0], bytes(row[1]))

    def chain_at(self, position: int) -> bytes | None:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT chain FROM events WHERE position = ?", (position,)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def rows(self) -> Iterator[tuple[int, str, int, str, bytes, bytes]]:
        """Every event row in position order, from one consistent read snapshot."""
        with self._read_lock:
            self._reader.execute("BEGIN")
            try:
                yield from self._reader.execute(
                    "SELECT position, originator_id, originator_version, topic, state, chain "
                    "FROM events ORDER BY position"
                )
            finally:
                self._reader.execute("COMMIT")

    # -- integrity ----------------------------------------------------------------------------

    def verify(self) -> tuple[int, bytes]:
        """Recompute the whole chain; return the verified tail or fail closed naming the row."""
        expected_position, chain = 0, GENESIS
        for position, oid, version, topic, state, stored_chain in self.rows():
            expected_position += 1
            if position != expected_position:
                raise IntegrityError(
                    f"{self.path}: journal position {expected_position} is missing "
                    f"(found {position}); events were deleted",
                    code="chain_broken",
                )
            chain = chain_link(chain, position, oid, version, topic, state)
            if chain != stored_chain:
                raise IntegrityError(
                    f"{self.path}: hash chain does not verify at position {position}; "
                    "the journal was edited or replaced",
                    code="chain_broken",
                )
        return expected_position, chain

    def fsync_files(self) -> None:
        """fsync the journal database and its WAL again (recovery of a journal-ahead crash)."""
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def close(self) -> None:
        """Close after any in-flight write or read in another thread has finished."""
        with self._write_lock, self._read_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._reader.close()
            if self.catalog is not None:
                self.catalog.close()


class PollingSubscription(Subscription[ApplicationRecorder]):
    """SQLite cannot push notifications; poll the recorder instead."""

    POLL_INTERVAL = 0.05

    def __next__(self) -> Notification:
        while not self._has_been_stopped:
            found = self._recorder.select_notifications(
                start=self._last_notification_id,
                limit=1,
                topics=self._topics,
                inclusive_of_start=self._last_notification_id is None,
            )
            if found:
                self._last_notification_id = found[0].id
                return found[0]
            time.sleep(self.POLL_INTERVAL)
        raise StopIteration


# --------------------------------------------------------------------------------------------
# Opening a root.


class Journal(Application[UUID]):
    """The event-sourced application over one root's journal.

    Never reads the process environment: configuration is explicit.
    """

    name = "memory_es"

    def __init__(self, recorder: JournalRecorder) -> None:
        self._journal_recorder = recorder
        super().__init__(env={})

    def construct_env(self, name: str, env: Any = None) -> Environment:
        return Environment(name, dict(env or {}))

    def construct_mapper(self) -> Mapper[UUID]:
        return MsgspecMapper()

    def construct_recorder(self) -> ApplicationRecorder:
        return self._journal_recorder

    @property
    def journal_recorder(self) -> JournalRecorder:
        return self._journal_recorder

    def close(self) -> None:
        self._journal_recorder.close()
        super().close()


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def _read_marker(path: Path) -> None:
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
    from memory_es.fsutil import atomic_write

    data = json.dumps(_MARKER, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    atomic_write(root / MARKER_FILE, data)


def _check_managed(root: Path) -> None:
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
        if _exists(path):
            check_private(path, is_dir=False)


@dataclass
class OpenedJournal:
    """A verified journal plus, for writers, the lock that fences other writers off."""

    app: Journal
    lock: WriterLock | None
    recovered_from: int | None  # catalog position before a journal-ahead recovery, else None

    @property
    def recorder(self) -> JournalRecorder:
        return self.app.journal_recorder

    def close(self) -> None:
        try:
            self.app.close()
        finally:
            if self.lock is not None:
                self.lock.release()


def open_journal(
    root: Path, *, writable: bool, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> OpenedJournal:
    """Open ``root``'s journal, failing closed on any integrity or hygiene problem.

    Writers create a fresh root if nothing is there, take the writer lock (waiting up to
    ``lock_timeout``) and recover a journal-ahead catalog. Readers take no lock and change
    nothing.
    """
    root = Path(root)
    if writable:
        if not _exists(root):
            make_private_dir(root)
        check_private(root, is_dir=True)
        lock: WriterLock | None = WriterLock(root / LOCK_FILE)
        assert lock is not None
        lock.acquire(lock_timeout)
    else:
        if not _exists(root):
            raise NotARootError(f"{root}: no memory root here")
        check_private(root, is_dir=True)
        lock = None
    try:
        if writable:
            remove_stale_temps(root)  # e.g. a schema marker write a kill interrupted
        return _open_locked(root, writable=writable, lock=lock)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def _open_locked(root: Path, *, writable: bool, lock: WriterLock | None) -> OpenedJournal:
    _check_managed(root)
    journal_path, catalog_path, marker_path = (
        root / JOURNAL_FILE,
        root / CATALOG_FILE,
        root / MARKER_FILE,
    )
    if _exists(marker_path):
        _read_marker(marker_path)
        for path, what, code in (
            (journal_path, "journal", "journal_missing"),
            (catalog_path, "integrity catalog", "catalog_missing"),
        ):
            if not _exists(path):
                raise IntegrityError(
                    f"{path}: {what} is missing but the schema marker says this root has one",
                    code=code,
                )
    elif not writable:
        if _exists(journal_path):
            raise IntegrityError(
                f"{marker_path}: schema marker is missing but a journal exists; "
                "open the root as a writer to finish or refuse initialisation",
                code="marker_missing",
            )
        raise NotARootError(f"{root}: no memory root here (no {MARKER_FILE})")
    else:
        _initialise(root)

    catalog = Catalog.open(catalog_path, writable=writable)
    recorder = JournalRecorder(journal_path, catalog if writable else None, readonly=not writable)
    try:
        cat_position, cat_chain = catalog.read()
        if not writable:
            catalog.close()
        position, chain = _verify_against_catalog(recorder, cat_position, cat_chain)
        recovered_from = cat_position if position > cat_position else None
        if recovered_from is not None and writable:
            # DESIGN 3 / B14: the suffix chain verified; fsync the journal again, then advance.
            recorder.fsync_files()
            catalog.write(position, chain)
            catalog.sync()
    except BaseException:
        recorder.close()
        if not writable:
            catalog.close()
        raise
    for name in (JOURNAL_FILE + "-wal", JOURNAL_FILE + "-shm"):
        if _exists(root / name):
            check_private(root / name, is_dir=False)
    return OpenedJournal(Journal(recorder), lock, recovered_from)


def _verify_against_catalog(
    recorder: JournalRecorder, cat_position: int, cat_chain: bytes
) -> tuple[int, bytes]:
    """Verify the whole chain, then check the catalog is not ahead of it nor off it.

    Returns the verified tail ``(position, chain)``; the caller recovers a lagging catalog.
    """
    position, chain = recorder.verify()
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


def _initialise(root: Path) -> None:
    """Create journal, catalog, then marker; finish an initialisation a crash interrupted."""
    journal_path, catalog_path = root / JOURNAL_FILE, root / CATALOG_FILE
    if _exists(journal_path):
        conn = _connect(journal_path, readonly=False)
        try:
            for ddl in _SCHEMA:
                conn.execute(ddl)
            row: Any = conn.execute("SELECT COUNT(*) FROM events").fetchone()
            count = row[0]
        finally:
            conn.close()
        if count:
            raise IntegrityError(
                f"{root / MARKER_FILE}: schema marker is missing but the journal holds {count} "
                "events; refusing to treat this root as new",
                code="marker_missing",
            )
    else:
        os.close(create_private_file(journal_path))
        conn = _connect(journal_path, readonly=False)
        try:
            for ddl in _SCHEMA:
                conn.execute(ddl)
        finally:
            conn.close()
    if _exists(catalog_path):
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
