"""Leases on intakes across the hosts of a shared PostgreSQL journal.

One advisory lock per intake, taken without waiting (``pg_try_advisory_lock``) on a connection
of this process's own: session locks die with their session, so a crashed host's intakes are
free again at once. A lease avoids duplicate work; it is not what keeps the journal right: a
host that pauses past its lease and wakes with a stale attempt has its outcome refused by the
unique intake version.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg
from eventsourcing.postgres import PostgresDatastore

from memory_es.journal.pgconnect import connect, persistence_error


def lease_key(intake_id: str) -> int:
    """An intake's advisory lock key: 63 bits of its (hex SHA-256) run hash."""
    return int(intake_id[:16], 16) >> 1


class Leases:
    """This process's leases, on the journal's database (``datastore``'s connection options)."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self._datastore = datastore
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()

    def take(self, intake_ids: Sequence[str]) -> list[str]:
        """Those of ``intake_ids`` whose lease this process now holds."""
        if not intake_ids:
            return []
        keys = {lease_key(i): i for i in intake_ids}
        rows = self._execute("SELECT k FROM unnest(%s::bigint[]) AS k "
                             "WHERE pg_try_advisory_lock(k)", (list(keys),))
        return [keys[int(r["k"])] for r in rows]

    def give_back(self, intake_ids: Sequence[str]) -> None:
        if intake_ids:
            self._execute("SELECT pg_advisory_unlock(k) FROM unnest(%s::bigint[]) AS k",
                          ([lease_key(i) for i in intake_ids],))

    def _execute(self, query: str, params: Sequence[Any]) -> list[Any]:
        """On the lease connection, made on first use and once more if the server cut it
        (its locks died with it)."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = connect(self._datastore)
                    return self._conn.execute(query, params).fetchall()
                except psycopg.OperationalError as e:
                    self.close_connection()  # a live session's locks go with it, now
                    if attempt == 2:
                        raise persistence_error(e) from e
                except psycopg.Error as e:  # as eventsourcing's errors: io_error when down
                    raise persistence_error(e) from e
            raise AssertionError("unreachable")

    def close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self.close_connection()
