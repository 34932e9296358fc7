"""The journal's storage: an eventsourcing ApplicationRecorder on apsw (DESIGN 3).

SQLite in WAL mode with ``synchronous=FULL``; each ``insert_events`` is one ``BEGIN IMMEDIATE``
transaction that appends hash-chained rows to ``events`` (``position`` is the notification id)
and, in the same transaction, any turn payloads to ``payloads``. After the commit the integrity
catalog records the new tail.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import apsw
from eventsourcing.persistence import (
    ApplicationRecorder,
    Notification,
    StoredEvent,
    Subscription,
)
from eventsourcing.persistence import IntegrityError as RecordConflict

from memory_es.errors import IntegrityError
from memory_es.fsutil import crash_point
from memory_es.journal.catalog import Catalog
from memory_es.journal.chain import GENESIS, Chain, row_digest, verify_chain
from memory_es.journal.checkpoint import PINNED, Checkpoint
from memory_es.journal.codec import admitted_content_sha256
from memory_es.journal.sealing import SEALED_KEY_ID, SEALED_MARK, Sealer, payload_key_id

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
    sealed: bool = False  # read back: it was stored sealed and opened under its key


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


def ensure_schema(path: Path) -> int:
    """Create the journal's tables if they are missing; return how many events it holds."""
    conn = _connect(path, readonly=False)
    try:
        for ddl in _SCHEMA:
            conn.execute(ddl)
        row: Any = conn.execute("SELECT COUNT(*) FROM events").fetchone()
        return int(row[0])
    finally:
        conn.close()


class JournalRecorder(ApplicationRecorder):
    """eventsourcing ApplicationRecorder on apsw with a hash chain and an integrity catalog.

    One write connection (serialised by a mutex) and one read connection, so readers in other
    threads never see a transaction in flight.
    """

    def __init__(self, path: Path, catalog: Catalog | None, *, readonly: bool = False,
                 chain: Chain | None = None) -> None:
        self.path = path
        self.location = str(path)  # where the journal is, for messages (a DSN on PostgreSQL)
        self.shared = False  # may other processes append to this journal?
        self.catalog = catalog
        self.chain = chain if chain is not None else Chain.plain()  # the root's link function
        self.readonly = readonly
        self.sealer = Sealer(None, None)  # set by open_journal once the root id is known
        self._write_lock = threading.Lock()
        self._read_lock = threading.RLock()
        self._writer: apsw.Connection | None = None
        # what this writer vouches for (journal.checkpoint): set by a whole verification at
        # open, moved on only by its own commits that follow it
        self.attested: Checkpoint | None = None
        if not readonly:
            self._writer = _connect(path, readonly=False)
            for ddl in _SCHEMA:
                self._writer.execute(ddl)
        self._reader = _connect(path, readonly=True)
        self._opened_file = _identity(path)

    # -- writing ------------------------------------------------------------------------------

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Append events (and ``payloads=[Payload...]``) in one durable transaction (B5):
        this opens it (``BEGIN IMMEDIATE`` under the write lock), commits it or rolls it back
        whole, and records the new tail in the integrity catalog after the commit (B12).
        A run id or payload already taken is eventsourcing's ``IntegrityError``."""
        payloads: Sequence[Payload] = kwargs.get("payloads", ())
        conn = self._writable()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                start = self._tail(conn)
                positions, tail = self._insert_events(conn, stored_events, payloads)
                crash_point("journal.before_commit")
                conn.execute("COMMIT")
            except apsw.ConstraintError as e:
                self._rollback(conn)
                raise RecordConflict(str(e)) from e
            except BaseException:
                self._rollback(conn)
                raise
            crash_point("journal.after_commit")
            if self.catalog is not None and positions:
                self.catalog.write(*tail)
            if positions:
                self._attest(start, tail, [(p, str(e.originator_id), e.topic, e.state)
                                           for p, e in zip(positions, stored_events,
                                                           strict=True)])
            return positions

    def _insert_events(self, conn: apsw.Connection, stored_events: Sequence[StoredEvent],
                       payloads: Sequence[Payload]) -> tuple[list[int], tuple[int, bytes]]:
        """Inside the caller's transaction on ``conn``: chain the events on from the tail
        (B12), insert them and the payloads (sealed); return their positions and the new
        tail ``(position, chain)``."""
        position, chain = self._tail(conn)
        rows = []
        link = self.chain.link
        for ev in stored_events:
            position += 1
            chain = link(chain, position, ev.originator_id, ev.originator_version, ev.topic,
                         ev.state)
            rows.append((position, str(ev.originator_id), ev.originator_version, ev.topic,
                         ev.state, chain))
        # One call per table: every apsw call re-takes the GIL, which is contended when many
        # threads admit at once.
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
        if payloads:
            conn.executemany(
                "INSERT INTO payloads VALUES (?, ?, ?)",
                [(p.intake_id, p.sha256, self.sealer.seal_payload(p.intake_id, p.data))
                 for p in payloads],
            )
        return [row[0] for row in rows], (position, chain)

    @staticmethod
    def _rollback(conn: apsw.Connection) -> None:
        """End the failed write's transaction, if SQLite has not already ended it."""
        if not conn.getautocommit():
            conn.execute("ROLLBACK")

    def _writable(self) -> apsw.Connection:
        """The write connection; ``journal_read_only`` when this recorder has none."""
        if self._writer is None:
            raise IntegrityError(f"{self.path}: journal opened read-only", code="journal_read_only")
        return self._writer

    def append_rows(self, rows: Sequence[tuple[int, str, int, str, bytes, bytes]],
                    payloads: Sequence[tuple[str, str, bytes]] = ()) -> None:
        """Append rows exactly as another journal of the same root holds them (position and
        chain included) and payloads as stored (sealed): ``migrate-journal``. The rows must
        follow the tail; the chain is verified by the caller."""
        conn = self._writable()
        with self._write_lock, conn:
            start = self._tail(conn)
            position = start[0]
            if rows and rows[0][0] != position + 1:
                raise IntegrityError(f"{self.path}: rows from position {rows[0][0]} do not follow "
                                     f"the tail at {position}", code="chain_broken")
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
            conn.executemany("INSERT OR IGNORE INTO payloads VALUES (?, ?, ?)", payloads)
        if self.catalog is not None and rows:
            self.catalog.write(rows[-1][0], rows[-1][5])
        if rows:
            self._attest(start, (rows[-1][0], rows[-1][5]),
                         [(r[0], r[1], r[3], r[4]) for r in rows])

    def _attest(self, start: tuple[int, bytes], tail: tuple[int, bytes],
                rows: Sequence[tuple[int, str, str, bytes]]) -> None:
        """Move what this writer vouches for on to ``tail``, only when its commit followed
        what it vouched for (nothing another process put in between)."""
        known = self.attested
        if known is None or (known.position, known.value) != (start[0], bytes(start[1])):
            return
        pinned = known.pinned
        for position, originator, topic, state in rows:
            if originator == PINNED:
                pinned = (position, row_digest(position, topic, state))
        self.attested = Checkpoint(tail[0], bytes(tail[1]), pinned)

    def still_at_path(self) -> bool:
        """Whether the root's journal file is still the one this recorder opened (a
        ``rewrite-journal`` swaps another in)."""
        return _identity(self.path) == self._opened_file

    def last_row_of(self, originator_id: str) -> tuple[int, str, bytes] | None:
        """``(position, topic, state)`` of the originator's last row, or None."""
        with self._read_lock:
            row = self._reader.execute(
                "SELECT position, topic, state FROM events WHERE originator_id = ? "
                "ORDER BY position DESC LIMIT 1", (originator_id,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), bytes(row[2]))

    def lease(self, intake_ids: Sequence[str]) -> list[str]:
        """The intakes this process may attempt now: all of them (one writer per root)."""
        return list(intake_ids)

    def release(self, intake_ids: Sequence[str]) -> None:
        """Nothing to give back on a root's own journal."""

    def payload_rows(self) -> list[tuple[str, str, bytes]]:
        """Every payload as stored (intake id, sha256, sealed bytes)."""
        with self._read_lock:
            return [(r[0], r[1], bytes(r[2])) for r in
                    self._reader.execute("SELECT intake_id, sha256, bytes FROM payloads")]

    @property
    def writing(self) -> bool:
        """True while this recorder holds its write connection (a writer, not yet closed)."""
        return self._writer is not None

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

    def aggregate_rows(self, originator_id: UUID) -> list[tuple[int, int, str, bytes]]:
        """(position, version, topic, state) of every event of one aggregate, in journal
        order (one index range: ``UNIQUE (originator_id, originator_version)``)."""
        with self._read_lock:
            rows: list[Any] = self._reader.execute(
                "SELECT position, originator_version, topic, state FROM events "
                "WHERE originator_id = ? ORDER BY originator_version", (str(originator_id),)
            ).fetchall()
        return [(r[0], r[1], r[2], bytes(r[3])) for r in rows]

    def linked_aggregate_rows(self, originator_id: UUID) -> list[tuple[int, int, str, bytes]]:
        """:meth:`aggregate_rows`, each row's own link recomputed from the stored chain of
        the row before it: a reader that verified only the links after a checkpoint decodes
        these rows, and a row edited in place (its stored chain kept) fails closed here."""
        with self._read_lock:
            rows: list[Any] = self._reader.execute(
                "SELECT e.position, e.originator_id, e.originator_version, e.topic, e.state, "
                "e.chain, p.chain FROM events e LEFT JOIN events p "
                "ON p.position = e.position - 1 WHERE e.originator_id = ? "
                "ORDER BY e.originator_version", (str(originator_id),)).fetchall()
        if any(r[0] < self.chain.keyed_from for r in rows):
            self.verify()  # a plain link is no proof: anyone can recompute it
            return [(r[0], r[2], r[3], bytes(r[4])) for r in rows]
        out = []
        for n, (position, oid, version, topic, state, stored, before) in enumerate(rows, 1):
            prev = GENESIS if position == 1 else before
            if version != n or position < 1 or prev is None or not hmac.compare_digest(
                    self.chain.link(bytes(prev), position, oid, version, topic, bytes(state)),
                    bytes(stored)):
                raise IntegrityError(
                    f"{self.path}: hash chain does not verify at position {position}; the "
                    "journal was edited or replaced", code="chain_broken")
            out.append((position, version, topic, bytes(state)))
        return out

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
                "SELECT topic, state FROM events WHERE originator_id = ? "
                "AND originator_version = 1", (str(intake_id),),
            ).fetchone()
        if row is None:
            return None
        return admitted_content_sha256(self.sealer.unseal(row[0], intake_id, 1, row[1]).state)

    def delete_payloads(self, intake_ids: Sequence[str]) -> None:
        """Drop the payloads of resolved intakes beyond the retained set (B9)."""
        conn = self._writable()
        with self._write_lock, conn:
            conn.executemany("DELETE FROM payloads WHERE intake_id = ?",
                             [(i,) for i in intake_ids])

    def payload(self, intake_id: str) -> Payload | None:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT sha256, bytes FROM payloads WHERE intake_id = ?", (intake_id,)
            ).fetchone()
        if row is None:
            return None
        blob = bytes(row[1])
        data = self.sealer.unseal_payload(intake_id, blob)
        sealed = payload_key_id(blob) is not None
        return None if data is None else Payload(intake_id, row[0], data, sealed)

    def payload_key(self, intake_id: str) -> int | None:
        """The record key of an intake's sealed payload, if it has one."""
        with self._read_lock:
            row = self._reader.execute("SELECT bytes FROM payloads WHERE intake_id = ?",
                                       (intake_id,)).fetchone()
        return None if row is None else payload_key_id(bytes(row[0]))

    def rows_of(self, topics: Sequence[str], needle: str | None = None
                ) -> list[tuple[int, str, int, str, bytes]]:
        """(position, originator id, version, topic, state) of the events under ``topics``
        (whose state holds ``needle``, when given: a plain field's value), in journal order."""
        sql = ("SELECT position, originator_id, originator_version, topic, state FROM events "
               f"WHERE topic IN ({','.join('?' * len(topics))})")
        params: list[Any] = list(topics)
        if needle is not None:
            sql += " AND instr(state, ?) > 0"
            params.append(needle.encode())
        with self._read_lock:
            rows: list[Any] = self._reader.execute(sql + " ORDER BY position", params).fetchall()
        return [(r[0], r[1], r[2], r[3], bytes(r[4])) for r in rows]

    def highest_key_id(self) -> int:
        """The highest record key id any committed row or payload references: keys above it
        were reserved but never used (collected on a writer's open)."""
        highest = 0
        with self._read_lock:
            for (state,) in self._reader.execute(
                    "SELECT state FROM events WHERE instr(state, ?) > 0", (SEALED_MARK,)):
                highest = max([highest, *map(int, SEALED_KEY_ID.findall(bytes(state)))])
            for (blob,) in self._reader.execute("SELECT bytes FROM payloads"):
                highest = max(highest, payload_key_id(bytes(blob)) or 0)
        return highest

    def chain_at(self, position: int) -> bytes | None:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT chain FROM events WHERE position = ?", (position,)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def rows(self, after: int = 0
             ) -> Generator[tuple[int, str, int, str, bytes, bytes], None, None]:
        """Every event row past ``after`` in position order, from one consistent read
        snapshot."""
        with self._read_lock:
            self._reader.execute("BEGIN")
            try:
                yield from self._reader.execute(
                    "SELECT position, originator_id, originator_version, topic, state, chain "
                    "FROM events WHERE position > ? ORDER BY position", (after,)
                )
            finally:
                self._reader.execute("COMMIT")

    # -- integrity ----------------------------------------------------------------------------

    def verify(self, start: tuple[int, bytes] | None = None, *,
               attest: bool = False) -> tuple[int, bytes]:
        """Recompute the chain (from ``start``, a verified ``(position, chain)``: the links
        after it; else all of it); return the verified tail or fail closed naming the row.
        ``attest``: a writer's whole verification, which it then vouches for (``attested``).

        The read snapshot ends here, on failure too, not whenever the traceback is released.
        """
        watch: list[tuple[int, bytes]] = []
        with self._read_lock:
            below: Any = self._reader.execute(
                "SELECT position FROM events WHERE position < 1 LIMIT 1").fetchone()
        if below is not None:  # no link covers it: the chain starts at 1
            raise IntegrityError(
                f"{self.path}: journal position {below[0]} is below the first; events were "
                "inserted", code="chain_broken")
        with contextlib.closing(self.rows(start[0] if start else 0)) as rows:
            tail = verify_chain(self.path, rows, self.chain, start,
                                watch if attest else None, PINNED)
        if attest and start is None:
            self.attested = Checkpoint(tail[0], bytes(tail[1]), watch[-1] if watch else None)
        return tail

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
            if self.sealer.keys is not None:
                self.sealer.keys.close()
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


def _identity(path: Path) -> tuple[int, int] | None:
    """The file ``path`` names (device, inode), None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
