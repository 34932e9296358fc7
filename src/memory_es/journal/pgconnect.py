"""Connections to the PostgreSQL journal's server: eventsourcing's datastore (a
pool) for a DSN, the DSN redacted for messages, the schema check, and the writer's own
connection, which makes admission run at the server's speed, and the LISTEN/NOTIFY
subscription.

A write is one statement, ``SELECT * FROM memory_es_append_v1(...)``, run in autocommit: the
server's implicit transaction checks and moves the head, inserts and commits in one round
trip, where a pooled connection in a transaction block costs a pre-ping, ``BEGIN`` and
``COMMIT`` on top. So the writer keeps one connection of its own between writes; one the
server hung up on (a restarted server, a terminated backend) is replaced before the next
write, and one that broke during a write is closed and replaced by the next. Errors come out
as eventsourcing's persistence errors, exactly as from its pooled ``get_connection``, so the
callers' handling (conflicts, io errors) is the same on either connection.
"""

from __future__ import annotations

import contextlib
import select
from collections.abc import Iterator
from typing import Any, Final

import psycopg
from eventsourcing import persistence as es
from eventsourcing.postgres import PostgresDatastore, PostgresSubscription
from psycopg.conninfo import conninfo_to_dict
from psycopg.sql import SQL, Identifier, Literal

from memory_es.errors import InvalidArgumentError, MemoryEsError

# psycopg's error classes and eventsourcing's, most specific first (as its get_connection maps)
_MAPPED: tuple[tuple[type[psycopg.Error], type[es.PersistenceError]], ...] = (
    (psycopg.InterfaceError, es.InterfaceError),
    (psycopg.OperationalError, es.OperationalError),
    (psycopg.DataError, es.DataError),
    (psycopg.IntegrityError, es.IntegrityError),
    (psycopg.InternalError, es.InternalError),
    (psycopg.ProgrammingError, es.ProgrammingError),
    (psycopg.NotSupportedError, es.NotSupportedError),
    (psycopg.DatabaseError, es.DatabaseError),
)


def persistence_error(e: psycopg.Error) -> es.PersistenceError:
    """``e`` as the eventsourcing error its datastore would have raised."""
    for theirs, ours in _MAPPED:
        if isinstance(e, theirs):
            return ours(str(e))
    return es.PersistenceError(str(e))


_DATASTORE_KEYS = {"dbname", "host", "port", "user", "password"}


def redact(dsn: str) -> str:
    """``postgresql://HOST:PORT/DB``: where a journal is, never who or with what password."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "postgresql://(unparsable DSN)"
    return f"postgresql://{info.get('host', 'localhost')}:{info.get('port', 5432)}/" \
           f"{info.get('dbname', '')}"


class JournalAuthError(MemoryEsError, es.OperationalError):
    """The PostgreSQL server answered and refused the DSN's credentials (a wrong password, no
    password where one is needed). Still an ``OperationalError`` to the store's callers (the
    journal cannot be reached); the CLI names it ``journal_auth_failed``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="journal_auth_failed")


class JournalUnreachableError(MemoryEsError, es.OperationalError):
    """No PostgreSQL server answered at the DSN's address (down, refused, timed out, no such
    host), or it refused the connection for a reason other than credentials; ``io_error``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="io_error")


# libpq's words for a server that refused the credentials (SQLSTATE is not set at connect)
_AUTH_WORDS = ("authentication failed", "no password supplied", "fe_sendauth",
               "password authentication")


def connection_failure(store: PostgresDatastore, location: str,
                       error: Exception) -> Exception:
    """Why the pool could not connect (it only says it timed out): one direct attempt with
    the same options, its libpq message reduced to the cause. Never the DSN or password:
    ``location`` is the redacted ``postgresql://HOST:PORT/DB``. ``error`` back when the
    attempt now succeeds (a passing outage)."""
    try:
        connect(store).close()
    except psycopg.OperationalError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        cause = first.rsplit("failed: ", 1)[-1].replace("FATAL:", "").strip()
        if any(word in first for word in _AUTH_WORDS):
            return JournalAuthError(
                f"journal_auth_failed: authentication failed at the PostgreSQL journal "
                f"{location} ({cause}); check the DSN's user and password or ~/.pgpass")
        if "FATAL:" in first:  # the server answered: e.g. no such database
            return JournalUnreachableError(
                f"io_error: the PostgreSQL server at {location} refused the connection: "
                f"{cause}")
        return JournalUnreachableError(
            f"io_error: server unreachable: no PostgreSQL journal answered at {location} "
            f"({cause})")
    except psycopg.Error:
        return error
    return error


def _dsn_number(info: dict[str, Any], name: str, low: int, high: int) -> None:
    """A numeric DSN parameter libpq would refuse (or eventsourcing's pool choke on) is a
    config error naming the parameter, never the DSN (its password)."""
    value = info.get(name)
    if value is None:
        return
    for part in str(value).split(","):  # libpq takes one per host for port
        part = part.strip()
        if not (part.isascii() and part.isdigit() and low <= int(part) <= high):
            raise InvalidArgumentError(
                f"journal_dsn_invalid: the PostgreSQL DSN's {name} parameter must be a whole "
                f"number from {low} to {high}", code="journal_dsn_invalid")


def datastore(dsn: str, *, schema: str = "public", pool_size: int = 2,
              lock_timeout: int = 30) -> PostgresDatastore:
    """eventsourcing's datastore (a psycopg pool) for ``dsn``. An empty password lets libpq
    read the password file (``PGPASSFILE`` or ``~/.pgpass``); other DSN options (``sslmode``,
    ``connect_timeout``...) are passed through; a ``connect_timeout`` or ``port`` that is not
    a whole number is ``journal_dsn_invalid``."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:  # libpq's message quotes the DSN: never shown
        raise InvalidArgumentError("memory.journal.dsn is not a PostgreSQL DSN (key=value "
                                   "pairs or a postgresql:// URI)") from None
    _dsn_number(info, "connect_timeout", 0, 86400)
    _dsn_number(info, "port", 1, 65535)
    store = PostgresDatastore(
        dbname=str(info.get("dbname", "")), host=str(info.get("host", "")),
        port=str(info.get("port", "5432")), user=str(info.get("user", "")),
        password=str(info.get("password", "")), schema=schema, pool_size=pool_size,
        max_overflow=8, lock_timeout=lock_timeout, originator_id_type="uuid",
        connect_timeout=float(str(info.get("connect_timeout", 10))), pre_ping=True)
    extra = {k: v for k, v in info.items() if k not in _DATASTORE_KEYS}
    # the connections made outside the pool (the writer's, the leases') give up as it does
    extra.setdefault("connect_timeout", "10")
    assert isinstance(store.pool.kwargs, dict)
    store.pool.kwargs.update(extra)
    return store


def check_schema(store: PostgresDatastore) -> None:
    """Refuse a schema named by a reserved word: eventsourcing's own statements name the schema
    unquoted (ours quote it, so capitals work), and its recorder fails on one as it is made.
    So asked on a connection of its own, before any recorder exists."""
    try:
        with connect(store) as conn:
            row = conn.execute("SELECT catcode FROM pg_get_keywords() WHERE word = lower(%s)",
                               (store.schema,)).fetchone()
    except psycopg.Error as e:
        raise persistence_error(e) from e
    if row is not None and row["catcode"] in ("R", "T"):
        raise InvalidArgumentError(
            f"memory.journal.schema {store.schema!r} is a reserved word in PostgreSQL; "
            "choose another schema name", code="journal_schema_invalid")


def _hung_up(conn: psycopg.Connection[Any]) -> bool:
    """Has the server written to this idle connection? Between two writes it only does so to
    say it is going away (a terminated backend, a server shutting down), so a readable socket
    means "do not send here". It costs no round trip, where the pool's pre-ping costs one.
    (``poll``, not ``select``: a long-running host's descriptors pass 1,024.)"""
    try:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


# The writer's connection tells a dead peer from a slow one in seconds, not the kernel's hours:
# TCP keepalives, and unacknowledged data abandoned after 10 s (a write cut off mid-flight
# holds the write lock, and so a closing store, no longer than B22 gives shutdown).
KEEPALIVES: Final = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5",
                     "keepalives_count": "3", "tcp_user_timeout": "10000"}
# A host stopped (paused, cut off) between the two round trips of a locked append must not keep
# the head row locked for every other host: the server ends such a transaction after this.
IDLE_IN_TRANSACTION: Final = "10s"


def connect(store: PostgresDatastore) -> psycopg.Connection[Any]:
    """An autocommit connection with the pool's options (host, DSN options, connect timeout,
    dict rows) and :data:`KEEPALIVES` unless the DSN sets them."""
    kwargs = store.pool.kwargs
    assert isinstance(kwargs, dict)
    conn: psycopg.Connection[Any] = psycopg.Connection.connect(
        autocommit=True, **{**KEEPALIVES, **kwargs})
    return conn


class WriterConnection:
    """One autocommit connection, opened on first use and after a failure broke it. Not
    thread-safe: the recorder uses it under its write lock."""

    def __init__(self, store: PostgresDatastore) -> None:
        self.store = store
        self._conn: psycopg.Connection[Any] | None = None

    @contextlib.contextmanager
    def use(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            if self._conn is not None and (self._conn.closed or _hung_up(self._conn)):
                self.close()
            if self._conn is None:
                self._conn = self._connect()
            yield self._conn
        except psycopg.Error as e:
            if isinstance(e, psycopg.OperationalError | psycopg.InterfaceError):
                self.close()
            raise persistence_error(e) from e

    def _connect(self) -> psycopg.Connection[Any]:
        conn = connect(self.store)
        try:
            conn.execute(SQL("SET lock_timeout = {}").format(
                Literal(f"{self.store.lock_timeout}s")))
            conn.execute(SQL("SET idle_in_transaction_session_timeout = {}").format(
                Literal(IDLE_IN_TRANSACTION)))
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class ListeningSubscription(PostgresSubscription):
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
