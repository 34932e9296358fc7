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
    OperationalError,
    ProgrammingError,
    StoredEvent,
    Subscription,
)
from eventsourcing.persistence import IntegrityError as RecordConflict
from eventsourcing.postgres import (
    PostgresApplicationRecorder,
    PostgresDatastore,
    PostgresSubscription,
)
from psycopg.sql import SQL, Composed, Identifier, Literal

from memory_es.errors import IntegrityError
from memory_es.fsutil import crash_point
from memory_es.journal.chain import GENESIS, Chain, verify_chain
from memory_es.journal.codec import admitted_content_sha256
from memory_es.journal.pgconnect import (
    WriterConnection,
    check_schema,
    connection_failure,
    datastore,
    redact,
)
from memory_es.journal.pgleases import Leases
from memory_es.journal.pgrecords import table_statements as record_key_tables
from memory_es.journal.recorder import Payload
from memory_es.journal.sealing import SEALED_KEY_ID, SEALED_MARK, Sealer, payload_key_id

EVENTS_TABLE = "memory_es_events"
# The write function, versioned by name: a change is a new function beside the old one (a
# CREATE OR REPLACE would need its owner's role on every host, and the last host to open would
# choose everyone's version). Hosts of one journal run one version: stop them all to upgrade.
APPEND_FUNCTION = "memory_es_append_v1"


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
        s = Identifier(store.schema)
        self._t_names = ("events", "payloads", "head", "meta")
        self._t = {name: SQL("{}.{}").format(s, Identifier(f"memory_es_{name}"))
                   for name in self._t_names}
        append = SQL("{}.{}").format(s, Identifier(APPEND_FUNCTION))
        # one write: the head checked and moved, rows and payloads inserted, listeners told;
        # when the head was not the one given, nothing is written and the current one returned
        self._append = SQL("SELECT * FROM {}(%s, %s, %s::bigint[], %s::uuid[], %s::bigint[], "
                           "%s::text[], %s::bytea[], %s::bytea[], %s::text[], %s::text[], "
                           "%s::bytea[])").format(append)
        self.writer = WriterConnection(store)
        # rows as columns (position, originator id, version, topic, state, chain): one statement
        self._insert_rows = SQL(
            "INSERT INTO {} (notification_id, originator_id, originator_version, topic, state, "
            "chain) SELECT * FROM unnest(%s::bigint[], %s::uuid[], %s::bigint[], %s::text[], "
            "%s::bytea[], %s::bytea[])").format(self._t["events"])
        events, payloads, head = self._t["events"], self._t["payloads"], self._t["head"]
        self._create_function = SQL(
            "CREATE FUNCTION {fn}(p bigint, c bytea, ids bigint[], oids uuid[], vs bigint[], "
            "ts text[], ss bytea[], cs bytea[], pids text[], pshas text[], pbytes bytea[]) "
            "RETURNS TABLE (head_position bigint, head_chain bytea) LANGUAGE plpgsql "
            "SET search_path = pg_catalog, pg_temp AS $$ "
            "DECLARE n int := array_length(ids, 1); BEGIN "
            "UPDATE {head} SET position = ids[n], chain = cs[n] "
            "WHERE position = p AND chain = c; "
            "IF NOT FOUND THEN RETURN QUERY SELECT h.position, h.chain FROM {head} h; "
            "RETURN; END IF; "
            "INSERT INTO {events} (notification_id, originator_id, originator_version, topic, "
            "state, chain) SELECT * FROM unnest(ids, oids, vs, ts, ss, cs); "
            "INSERT INTO {payloads} (intake_id, sha256, bytes) "
            "SELECT * FROM unnest(pids, pshas, pbytes); "
            "PERFORM pg_notify({channel}, ''); END $$").format(
            fn=append, events=events, head=head, payloads=payloads,
            channel=Literal(self.channel_name))
        self.sql_create_statements[self.create_table_statement_index] = SQL(
            "CREATE TABLE IF NOT EXISTS {} (notification_id bigint PRIMARY KEY, "
            "originator_id uuid NOT NULL, originator_version bigint NOT NULL, "
            "topic text NOT NULL, state bytea NOT NULL, chain bytea NOT NULL, "
            "UNIQUE (originator_id, originator_version))").format(events)
        # Our own insert (below) needs neither eventsourcing's function, nor its composite type,
        # nor a second index on notification_id (the primary key here).
        self.sql_create_statements[1:] = [
            SQL("CREATE TABLE IF NOT EXISTS {} (intake_id text PRIMARY KEY, "
                "sha256 text NOT NULL, bytes bytea NOT NULL)").format(payloads),
            SQL("CREATE TABLE IF NOT EXISTS {} (one boolean PRIMARY KEY DEFAULT true "
                "CHECK (one), position bigint NOT NULL, chain bytea NOT NULL)").format(head),
            SQL("INSERT INTO {} (position, chain) VALUES (0, %s) ON CONFLICT DO NOTHING"
                ).format(head),
            SQL("CREATE TABLE IF NOT EXISTS {} (one boolean PRIMARY KEY DEFAULT true "
                "CHECK (one), marker text NOT NULL)").format(self._t["meta"]),
            *record_key_tables(store.schema),
        ]

    def _create_table(self, curs: psycopg.Cursor[Any]) -> None:
        # CREATE ... IF NOT EXISTS races itself (a duplicate pg_type row) when hosts open an
        # empty database at once: one creator at a time, for this transaction.
        curs.execute("SELECT pg_advisory_xact_lock(hashtext('memory_es schema'))")
        for statement in self.sql_create_statements:
            params = (GENESIS,) if statement.as_string().startswith("INSERT INTO") else None
            curs.execute(statement, params, prepare=False)
        if not curs.execute("SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = "
                            "p.pronamespace WHERE n.nspname = %s AND p.proname = %s",
                            (self.datastore.schema, APPEND_FUNCTION)).fetchone():
            curs.execute(self._create_function, prepare=False)

    # -- writing ------------------------------------------------------------------------------

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None:
        """Append events (and ``payloads=[Payload...]``) in one transaction. Not retried
        after a lost connection: the commit may have happened, and only the caller can tell.

        First optimistically, from the head this process last wrote or read: one statement
        on the writer's own connection (:mod:`~memory_es.journal.pgconnect`) that moves the
        head only if it is still what we think; when another writer moved it, that statement
        changes nothing, and this append and the next few wait in line for the head row's
        lock (:data:`_CONTENDED_WRITES`)."""
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
                written, head = None, self._known_head
                if head is not None and not self._contended:
                    written = self._rows(stored_events, head)
                    crash_point("journal.before_commit")  # nothing sent yet
                    if conn.execute(self._append, (*head, *written[0], *extra),
                                    prepare=True).fetchone() is not None:  # the head moved on
                        written, self._contended = None, _CONTENDED_WRITES + 1
                if written is None:
                    written = self._locked_append(conn, stored_events, extra)
                self._contended = max(0, self._contended - 1)
                columns, self._known_head = written
        except RecordConflict as e:
            if _position_taken(e):  # not another run id: a row no writer of ours appended
                raise IntegrityError(
                    f"{self.location}: a row past the journal's head was written outside "
                    "memory-es; audit it with memory-es health", code="chain_broken") from e
            raise
        crash_point("journal.after_commit")
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
            appended = conn.execute(self._append, (*head, *written[0], *extra), prepare=True)
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
                curs.execute(self._insert_rows, [list(c) for c in zip(*rows, strict=True)])
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
        return self._head(self._fetch(SQL("SELECT position, chain FROM {}").format(
            self._t["head"])))

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
                head.append(self._head(conn.execute(SQL("SELECT position, chain FROM {}").format(
                    self._t["head"])).fetchall()))
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
        return _ListeningSubscription(recorder=self, gt=gt, topics=list(topics))

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
        s = Identifier(self.datastore.schema)
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DROP FUNCTION IF EXISTS {}.{}").format(
                s, Identifier(APPEND_FUNCTION)))
            for name in (*self._t_names, "record_keys", "destroyed_keys"):
                curs.execute(SQL("DROP TABLE IF EXISTS {}.{}").format(
                    s, Identifier(f"memory_es_{name}")))
            curs.execute(SQL("DROP SEQUENCE IF EXISTS {}.memory_es_record_key_ids").format(s))

    def close(self) -> None:
        with self._write_lock:
            self.writer.close()
            self.leases.close()  # its advisory locks go with its connection
            self.datastore.close()
            if self.sealer.keys is not None:
                self.sealer.keys.close()


class _ListeningSubscription(PostgresSubscription):
    """eventsourcing's LISTEN/NOTIFY subscription, without its lost wake-up: its first pull
    runs before its LISTEN does, so a row committed in between notified nobody and the
    subscriber waited forever (seen under load). Once listening, it pulls once more."""

    def _listen(self) -> None:
        try:
            with self._recorder.datastore.get_connection() as conn:
                conn.execute(SQL("LISTEN {0}").format(Identifier(self._recorder.channel_name)))
                self._has_been_notified.set()  # anything committed before LISTEN took hold
                while not self._has_been_stopped and not self._thread_error:
                    for _ in conn.notifies(timeout=0.1, stop_after=1):
                        self._has_been_notified.set()
        except BaseException as e:
            if self._thread_error is None:
                self._thread_error = e
            self.stop()
