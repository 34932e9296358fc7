"""The journal on PostgreSQL: eventsourcing's PostgreSQL ApplicationRecorder with our chain.

Subclasses :class:`eventsourcing.postgres.PostgresApplicationRecorder` (psycopg 3, its pool,
its error mapping, LISTEN/NOTIFY subscriptions) and changes what a write is, so that the
journal means the same on both backends:

- ``notification_id`` is the journal position, assigned by us as head + 1 while holding the
  head row's lock (every append updates that one row, and holds it until its commit), so
  positions are gapless and in commit order across every process, as eventsourcing's table
  lock makes them, without serialising the writers that only find the head moved
  (a ``bigserial`` burns numbers on rollback, and the chain links each row to its position);
- each row carries its keyed ``chain`` link; the head ``(position, chain)`` (the SQLite
  root's integrity catalog) is a one-row table updated in the same transaction, so it is
  never behind the events: any difference found on open is tampering, not a crash;
- turn payloads live in their own table, written in the same transaction (B5);
- ``UNIQUE (originator_id, originator_version)`` makes a second admission of a run id fail in
  the database itself, whichever process tries (no read-then-write).

Its tables and write function are :mod:`~memory_es.journal.pgschema`'s.

The DSN is never logged or put in an error message: :func:`~.pgconnect.redact` names a server
without it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import (
    ApplicationRecorder,
    Notification,
    StoredEvent,
    Subscription,
)
from eventsourcing.persistence import IntegrityError as RecordConflict
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg.sql import SQL, Composed, Literal

from memory_es.errors import IntegrityError
from memory_es.fsutil import crash_point
from memory_es.journal.chain import Chain, verify_chain
from memory_es.journal.codec import admitted_content_sha256
from memory_es.journal.pgconnect import ListeningSubscription, WriterConnection
from memory_es.journal.pgleases import Leases
from memory_es.journal.pgschema import (
    EVENTS_TABLE,
    create_schema,
    drop_schema,
    journal_statements,
)
from memory_es.journal.recorder import Payload
from memory_es.journal.sealing import SEALED_KEY_ID, SEALED_MARK, Sealer, payload_key_id


def _position_taken(error: Exception) -> bool:
    """Was ``error`` the events' primary key (a position) refusing a row, not a run id?"""
    cause = error.__cause__
    return isinstance(cause, psycopg.errors.UniqueViolation) and \
        cause.diag.constraint_name == f"{EVENTS_TABLE}_pkey"


# After an append found the head moved, this many appends wait in line for the head row's
# lock instead of guessing: under contention a guess is mostly wrong, and retrying guesses
# (each failed one hands back the new head) measured worse, 8 processes 341/s against 561/s
# (bench/admission.py --backend postgres, 2 cores); one writer keeps its one round trip.
_CONTENDED_WRITES = 16


class PostgresJournalRecorder(PostgresApplicationRecorder):
    """The journal's recorder on PostgreSQL: the same methods as the SQLite
    :class:`~memory_es.journal.recorder.JournalRecorder`, so everything above the journal is
    backend-blind."""

    def __init__(self, store: PostgresDatastore, *, location: str, readonly: bool = False,
                 chain: Chain | None = None) -> None:
        super().__init__(store, events_table_name=EVENTS_TABLE)
        self.location = location
        self.shared = True  # may other processes append to this journal?
        self.chain = chain if chain is not None else Chain.plain()
        self.readonly = readonly
        self.sealer = Sealer(None, None)
        self._known_head: tuple[int, bytes] | None = None  # the head as last written or read
        self._contended = 0
        self.leases = Leases(store)
        self._write_lock = threading.Lock()  # one writer per process; others wait on the lock
        self.writer = WriterConnection(store)
        self._sql = journal_statements(store.schema, self.channel_name)
        self._t = self._sql.tables
        self.sql_create_statements[:] = self._sql.create

    def _create_table(self, curs: psycopg.Cursor[Any]) -> None:
        create_schema(curs, self._sql)

    # -- writing ------------------------------------------------------------------------------

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None:
        """Append events (and ``payloads=[Payload...]``, sealed here) in one transaction
        (B5): this takes the write lock and the writer's own connection
        (:mod:`~memory_es.journal.pgconnect`), :meth:`_append_events` writes on it. Not
        retried after a lost connection: the commit may have happened, and only the caller
        can tell. A run id already taken is eventsourcing's ``IntegrityError``; a position
        already taken (a row no writer of ours appended) is ``chain_broken``."""
        payloads: Sequence[Payload] = kwargs.get("payloads", ())
        if self.readonly:
            raise IntegrityError(f"{self.location}: journal opened read-only",
                                 code="journal_read_only")
        if not stored_events:
            return []
        sealed = [(p.intake_id, p.sha256, self.sealer.seal_payload(p.intake_id, p.data))
                  for p in payloads]
        extra = [list(c) for c in zip(*sealed, strict=True)] if sealed else [None] * 3
        try:
            with self._write_lock, self.writer.use() as conn:
                positions = self._append_events(conn, stored_events, extra)
        except RecordConflict as e:
            if _position_taken(e):  # not another run id: a row no writer of ours appended
                raise IntegrityError(
                    f"{self.location}: a row past the journal's head was written outside "
                    "memory-es; audit it with memory-es health", code="chain_broken") from e
            raise
        crash_point("journal.after_commit")
        return positions

    def _append_events(self, conn: psycopg.Connection[Any],
                       stored_events: Sequence[StoredEvent], extra: list[Any]) -> list[int]:
        """On ``conn``, under the write lock: append the events after the head and return
        their positions (B12: gapless, in commit order). Not named ``_insert_events``: that
        is eventsourcing's hook for extra writes before its own insert, with another
        signature. First optimistically, from the head this process last wrote or read: one
        statement that moves the head only if it is still what we think; when another writer
        moved it, that statement changes nothing, and this append and the next few wait in
        line for the head row's lock (:data:`_CONTENDED_WRITES`, :meth:`_locked_append`)."""
        written, head = None, self._known_head
        if head is not None and not self._contended:
            written = self._rows(stored_events, head)
            crash_point("journal.before_commit")  # nothing sent yet
            if conn.execute(self._sql.append, (*head, *written[0], *extra),
                            prepare=True).fetchone() is not None:  # the head moved on
                written, self._contended = None, _CONTENDED_WRITES + 1
        if written is None:
            written = self._locked_append(conn, stored_events, extra)
        self._contended = max(0, self._contended - 1)
        columns, self._known_head = written
        return list(columns[0])

    def _rows(self, stored_events: Sequence[StoredEvent], head: tuple[int, bytes]
              ) -> tuple[tuple[list[Any], ...], tuple[int, bytes]]:
        """The events as columns of rows after ``head``, and the head they end at."""
        position, chain = head
        columns: tuple[list[Any], ...] = ([], [], [], [], [], [])
        for ev in stored_events:
            position += 1
            chain = self.chain.link(chain, position, ev.originator_id, ev.originator_version,
                                    ev.topic, ev.state)
            for column, value in zip(columns, (position, ev.originator_id,
                                               ev.originator_version, ev.topic, ev.state,
                                               chain), strict=True):
                column.append(value)
        return columns, (position, chain)

    def _locked_append(self, conn: psycopg.Connection[Any], stored_events: Sequence[StoredEvent],
                       extra: list[Any]) -> tuple[tuple[list[Any], ...], tuple[int, bytes]]:
        """Append after the head read under its row lock: two round trips while holding it
        (BEGIN and the head; then the append and COMMIT)."""
        with conn.pipeline(), conn.transaction():
            row = conn.execute(SQL("SELECT position, chain FROM {} FOR UPDATE").format(
                self._t["head"])).fetchone()
            assert row is not None, "journal head row missing"
            head = (int(row["position"]), bytes(row["chain"]))
            written = self._rows(stored_events, head)
            appended = conn.execute(self._sql.append, (*head, *written[0], *extra),
                                    prepare=True)
            crash_point("journal.before_commit")
        # read after the pipeline's last round trip (the append and the COMMIT)
        if appended.fetchone() is not None:  # nothing was written (cannot be while the row is ours)
            raise IntegrityError(f"{self.location}: the journal head moved under its lock",
                                 code="journal_write_failed")
        return written

    def append_rows(self, rows: Sequence[tuple[int, str, int, str, bytes, bytes]],
                    payloads: Sequence[tuple[str, str, bytes]] = ()) -> None:
        """Append rows exactly as another journal of the same root holds them, and payloads as
        stored, with the head, in one transaction (``migrate-journal``; resumable batch by
        batch). The rows must follow the head; the chain is verified by the caller."""
        with self._write_lock, self.datastore.get_connection() as conn, conn.transaction(), \
                conn.cursor() as curs:
            curs.execute(SQL("SET LOCAL lock_timeout = {}").format(
                Literal(f"{self.datastore.lock_timeout}s")))
            head = curs.execute(SQL("SELECT position FROM {} FOR UPDATE").format(
                self._t["head"])).fetchone()
            assert head is not None
            if rows and rows[0][0] != int(head["position"]) + 1:
                raise IntegrityError(f"{self.location}: rows from position {rows[0][0]} do not "
                                     f"follow the head at {head['position']}",
                                     code="chain_broken")
            if rows:
                curs.execute(self._sql.insert_rows, [list(c) for c in zip(*rows, strict=True)])
                curs.execute(SQL("UPDATE {} SET position = %s, chain = %s").format(
                    self._t["head"]), (rows[-1][0], rows[-1][5]))
                self._notify_channel(curs)  # subscribers of the target see the rows
            if payloads:
                curs.executemany(SQL("INSERT INTO {} VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
                                     ).format(self._t["payloads"]), list(payloads))

    def lease(self, intake_ids: Sequence[str]) -> list[str]:
        """The intakes no other process is attempting (:class:`~.pgleases.Leases`)."""
        return self.leases.take(intake_ids)

    def release(self, intake_ids: Sequence[str]) -> None:
        self.leases.give_back(intake_ids)

    def payload_rows(self) -> list[tuple[str, str, bytes]]:
        """Every payload as stored (intake id, sha256, sealed bytes)."""
        return [(r["intake_id"], r["sha256"], bytes(r["bytes"])) for r in self._fetch(
            SQL("SELECT intake_id, sha256, bytes FROM {}").format(self._t["payloads"]))]

    def delete_payloads(self, intake_ids: Sequence[str]) -> None:
        """Drop the payloads of resolved intakes beyond the retained set (B9)."""
        if self.readonly:
            raise IntegrityError(f"{self.location}: journal opened read-only",
                                 code="journal_read_only")
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DELETE FROM {} WHERE intake_id = ANY(%s)").format(
                self._t["payloads"]), (list(intake_ids),))

    # -- reading ------------------------------------------------------------------------------

    def _fetch(self, query: Composed | SQL, params: Sequence[Any] = ()) -> list[Any]:
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            return curs.execute(query, params).fetchall()

    def _events_where(self, where: str, params: Sequence[Any], columns: str,
                      order: str = "notification_id") -> list[Any]:
        return self._fetch(SQL(f"SELECT {columns} FROM {{}} WHERE {where} ORDER BY {order}"
                               ).format(self._t["events"]), params)

    def aggregate_rows(self, originator_id: UUID) -> list[tuple[int, int, str, bytes]]:
        rows = self._events_where("originator_id = %s", (originator_id,),
                                  "notification_id, originator_version, topic, state",
                                  "originator_version")
        return [(r["notification_id"], r["originator_version"], r["topic"], bytes(r["state"]))
                for r in rows]

    def has_events(self, originator_id: UUID) -> bool:
        return bool(self._events_where("originator_id = %s", (originator_id,), "1 AS one",
                                       "1 LIMIT 1"))

    def admitted_content_hash(self, intake_id: UUID) -> str | None:
        rows = self._events_where("originator_id = %s AND originator_version = 1", (intake_id,),
                                  "topic, state")
        if not rows:
            return None
        opened = self.sealer.unseal(rows[0]["topic"], intake_id, 1, bytes(rows[0]["state"]))
        return admitted_content_sha256(opened.state)

    def payload(self, intake_id: str) -> Payload | None:
        rows = self._fetch(SQL("SELECT sha256, bytes FROM {} WHERE intake_id = %s").format(
            self._t["payloads"]), (intake_id,))
        if not rows:
            return None
        blob = bytes(rows[0]["bytes"])
        data = self.sealer.unseal_payload(intake_id, blob)
        sealed = payload_key_id(blob) is not None
        return None if data is None else Payload(intake_id, rows[0]["sha256"], data, sealed)

    def payload_key(self, intake_id: str) -> int | None:
        rows = self._fetch(SQL("SELECT bytes FROM {} WHERE intake_id = %s").format(
            self._t["payloads"]), (intake_id,))
        return payload_key_id(bytes(rows[0]["bytes"])) if rows else None

    def rows_of(self, topics: Sequence[str], needle: str | None = None
                ) -> list[tuple[int, str, int, str, bytes]]:
        where, params = "topic = ANY(%s)", list[Any]([list(topics)])
        if needle is not None:
            where += " AND position(%s IN state) > 0"
            params.append(needle.encode())
        rows = self._events_where(
            where, params, "notification_id, originator_id, originator_version, topic, state")
        return [(r["notification_id"], str(r["originator_id"]), r["originator_version"],
                 r["topic"], bytes(r["state"])) for r in rows]

    def highest_key_id(self) -> int:
        highest = 0
        for r in self._events_where("position(%s IN state) > 0", (SEALED_MARK,), "state"):
            highest = max([highest, *map(int, SEALED_KEY_ID.findall(bytes(r["state"])))])
        for r in self._fetch(SQL("SELECT bytes FROM {}").format(self._t["payloads"])):
            highest = max(highest, payload_key_id(bytes(r["bytes"])) or 0)
        return highest

    def chain_at(self, position: int) -> bytes | None:
        rows = self._events_where("notification_id = %s", (position,), "chain")
        return bytes(rows[0]["chain"]) if rows else None

    def head(self) -> tuple[int, bytes]:
        """The head row: the last committed ``(position, chain)``, as the catalog is."""
        return self._head(self._fetch(self._sql.head))

    def _head(self, rows: list[Any]) -> tuple[int, bytes]:
        if len(rows) != 1:
            raise IntegrityError(f"{self.location}: the journal's head row is missing",
                                 code="catalog_corrupt")
        return int(rows[0]["position"]), bytes(rows[0]["chain"])

    def exists(self) -> bool:
        """Has a memory-es journal been created in this database (and schema)?"""
        rows = self._fetch(SQL("SELECT to_regclass(format('%%I.%%I', %s::text, "
                               "'memory_es_meta')) AS t"), (self.datastore.schema,))
        return rows[0]["t"] is not None

    def read_meta(self) -> str | None:
        """The journal's own schema marker (its root id, MAC'd), or None before the first
        writer set it."""
        if not self.exists():
            return None
        rows = self._fetch(SQL("SELECT marker FROM {}").format(self._t["meta"]))
        return str(rows[0]["marker"]) if rows else None

    def claim_meta(self, marker: str) -> str:
        """Set the marker unless another writer already did; returns the one that holds."""
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("INSERT INTO {} (marker) VALUES (%s) ON CONFLICT DO NOTHING"
                             ).format(self._t["meta"]), (marker,))
        held = self.read_meta()
        assert held is not None
        return held

    def rows(self) -> Generator[tuple[int, str, int, str, bytes, bytes], None, None]:
        """Every event row in position order, from one snapshot (a server-side cursor in a
        repeatable-read transaction), a batch at a time."""
        yield from self._snapshot_rows(None)

    def _snapshot_rows(self, head: list[tuple[int, bytes]] | None
                       ) -> Generator[tuple[int, str, int, str, bytes, bytes], None, None]:
        with self.datastore.get_connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if head is not None:  # the head as of the same snapshot as the rows
                head.append(self._head(conn.execute(self._sql.head).fetchall()))
            with conn.cursor(name="memory_es_rows") as curs:
                curs.itersize = 2000
                curs.execute(SQL(
                    "SELECT notification_id, originator_id, originator_version, topic, state, "
                    "chain FROM {} ORDER BY notification_id").format(self._t["events"]))
                for r in curs:
                    yield (r["notification_id"], str(r["originator_id"]),
                           r["originator_version"], r["topic"], bytes(r["state"]),
                           bytes(r["chain"]))

    def select_notifications(self, start: int | None, limit: int, stop: int | None = None,
                             topics: Sequence[str] = (), *, inclusive_of_start: bool = True
                             ) -> Sequence[Notification]:
        found: Sequence[Notification] = super().select_notifications(
            start, limit, stop, list(topics), inclusive_of_start=inclusive_of_start)
        return found

    def subscribe(self, gt: int | None = None, topics: Sequence[str] = ()
                  ) -> Subscription[ApplicationRecorder]:
        return ListeningSubscription(recorder=self, gt=gt, topics=list(topics))

    # -- integrity ----------------------------------------------------------------------------

    def verify(self) -> tuple[int, bytes]:
        """Recompute the whole chain and compare it with the head row of the same snapshot,
        as the SQLite root compares it with its integrity catalog. The head commits with the
        rows, so any difference is tampering: rows cut off the end (``journal_truncated``),
        rows whose chain at the head's position is not the head's (``journal_replaced``), or
        rows added past the head behind memory-es's back (``chain_broken``)."""
        head: list[tuple[int, bytes]] = []
        at_head: list[bytes] = []

        def watched(rows: Iterable[tuple[int, str, int, str, bytes, bytes]]
                    ) -> Iterator[tuple[int, str, int, str, bytes, bytes]]:
            for row in rows:
                if row[0] == head[0][0]:
                    at_head.append(row[5])
                yield row

        with contextlib.closing(self._snapshot_rows(head)) as rows:
            position, chain = verify_chain(self.location, watched(rows), self.chain)
        (head_position, head_chain), = head
        self._known_head = (head_position, head_chain)
        if head_position > position:
            raise IntegrityError(
                f"{self.location}: journal ends at position {position} but its head row "
                f"records {head_position}; the journal was truncated", code="journal_truncated")
        if head_position and at_head != [head_chain]:
            raise IntegrityError(
                f"{self.location}: chain at position {head_position} does not match the head "
                "row; the journal was replaced", code="journal_replaced")
        if head_position < position:
            raise IntegrityError(
                f"{self.location}: rows past the head row (position {head_position}) were "
                "written outside memory-es", code="chain_broken")
        return position, chain

    def fsync_files(self) -> None:
        """Nothing to do: the server made the commit durable before it answered."""

    def drop_journal(self) -> None:
        """Drop this journal from the server: its tables, its write function and its record
        keys (``migrate-journal --to sqlite`` once the root's own copy verifies)."""
        with self.datastore.transaction(commit=True) as curs:
            drop_schema(curs, self.datastore.schema)

    def close(self) -> None:
        with self._write_lock:
            self.writer.close()
            self.leases.close()  # its advisory locks go with its connection
            self.datastore.close()
            if self.sealer.keys is not None:
                self.sealer.keys.close()
