"""Editing a root's journal behind memory-es's back, on either backend; not a test module.

The tamper suite (tests/test_tamper.py) is written once against :class:`Tamper` and runs on
the SQLite file and on the PostgreSQL database (issue 18 item 1): the same edits, the same
refusals. What the SQLite root calls its integrity catalog is the head row on PostgreSQL.
:func:`tamper_of` finds which one a root's journal is in (tests/journal_backends.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

import apsw
import psycopg
from psycopg.sql import SQL, Identifier

from memory_es.journal import CATALOG_FILE, GENESIS, JOURNAL_FILE, Catalog, chain_link
from memory_es.journal.pgconnect import redact

# position, originator id, version, topic, state, chain
Row = tuple[int, str, int, str, bytes, bytes]


class Tamper(Protocol):
    location: str  # what the journal's errors name it by

    def rows(self) -> list[Row]: ...
    def head(self) -> tuple[int, bytes]: ...
    def set_head(self, position: int, chain: bytes) -> None: ...
    def delete(self, where: str, *params: object) -> None: ...
    def update(self, position: int, *, state: bytes, chain: bytes | None = None) -> None: ...
    def insert(self, row: Row) -> None: ...
    def replace_rows(self, rows: list[Row]) -> None: ...
    def snapshot(self) -> Any: ...
    def restore(self, snap: Any) -> None: ...


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}


def _put_files(root: Path, snap: dict[str, bytes]) -> None:
    """Put back the snapshot's bytes in place (same inodes where the file still exists)."""
    for name, data in snap.items():
        fd = os.open(root / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


class SqliteTamper:
    """``journal.db`` edited with SQL, the catalog rewritten in both slots."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root / JOURNAL_FILE)

    def _sql(self, sql: str, params: tuple[object, ...] = ()) -> list[Any]:
        conn = apsw.Connection(self.location)
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()

    def rows(self) -> list[Row]:
        return [(r[0], r[1], r[2], r[3], bytes(r[4]), bytes(r[5])) for r in self._sql(
            "SELECT position, originator_id, originator_version, topic, state, chain "
            "FROM events ORDER BY position")]

    def head(self) -> tuple[int, bytes]:
        catalog = Catalog.open(self.root / CATALOG_FILE, writable=False)
        try:
            return catalog.read()
        finally:
            catalog.close()

    def set_head(self, position: int, chain: bytes) -> None:
        catalog = Catalog.open(self.root / CATALOG_FILE, writable=True)
        catalog.write(position, chain)
        catalog.write(position, chain)  # both slots: no older slot to fall back to
        catalog.sync()
        catalog.close()

    def delete(self, where: str, *params: object) -> None:
        self._sql(f"DELETE FROM events WHERE {where.replace('%s', '?')}", params)

    def update(self, position: int, *, state: bytes, chain: bytes | None = None) -> None:
        if chain is None:
            self._sql("UPDATE events SET state = ? WHERE position = ?", (state, position))
        else:
            self._sql("UPDATE events SET state = ?, chain = ? WHERE position = ?",
                      (state, chain, position))

    def insert(self, row: Row) -> None:
        self._sql("INSERT INTO events (position, originator_id, originator_version, topic, "
                  "state, chain) VALUES (?, ?, ?, ?, ?, ?)", row)

    def replace_rows(self, rows: list[Row]) -> None:
        self.delete("1")
        for row in rows:
            self.insert(row)

    def snapshot(self) -> dict[str, bytes]:
        conn = apsw.Connection(self.location)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file alone holds every commit
        conn.close()
        return _files(self.root)

    def restore(self, snap: dict[str, bytes]) -> None:
        for name in (JOURNAL_FILE + "-wal", JOURNAL_FILE + "-shm"):
            (self.root / name).unlink(missing_ok=True)
        _put_files(self.root, snap)


class PostgresTamper:
    """The journal's tables edited with SQL by someone holding the database's credentials."""

    def __init__(self, root: Path, dsn: str, schema: str = "public") -> None:
        self.root, self.dsn, self.schema = root, dsn, schema
        self.location = redact(dsn)

    def _t(self, name: str) -> Any:
        return SQL("{}.{}").format(Identifier(self.schema), Identifier(name))

    def _sql(self, sql: Any, params: tuple[object, ...] = ()) -> list[Any]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def rows(self) -> list[Row]:
        return [(r[0], str(r[1]), r[2], r[3], bytes(r[4]), bytes(r[5])) for r in self._sql(
            SQL("SELECT notification_id, originator_id, originator_version, topic, state, "
                "chain FROM {} ORDER BY notification_id").format(self._t("memory_es_events")))]

    def head(self) -> tuple[int, bytes]:
        (position, chain), = self._sql(SQL("SELECT position, chain FROM {}").format(
            self._t("memory_es_head")))
        return int(position), bytes(chain)

    def set_head(self, position: int, chain: bytes) -> None:
        self._sql(SQL("UPDATE {} SET position = %s, chain = %s").format(
            self._t("memory_es_head")), (position, chain))

    def delete(self, where: str, *params: object) -> None:
        where = where.replace("position", "notification_id")
        self._sql(SQL(f"DELETE FROM {{}} WHERE {where}").format(
            self._t("memory_es_events")), params)

    def update(self, position: int, *, state: bytes, chain: bytes | None = None) -> None:
        events = self._t("memory_es_events")
        if chain is None:
            self._sql(SQL("UPDATE {} SET state = %s WHERE notification_id = %s").format(events),
                      (state, position))
        else:
            self._sql(SQL("UPDATE {} SET state = %s, chain = %s WHERE notification_id = %s"
                          ).format(events), (state, chain, position))

    def insert(self, row: Row) -> None:
        self._sql(SQL("INSERT INTO {} (notification_id, originator_id, originator_version, "
                      "topic, state, chain) VALUES (%s, %s, %s, %s, %s, %s)").format(
            self._t("memory_es_events")), row)

    def replace_rows(self, rows: list[Row]) -> None:
        self.delete("true")
        for row in rows:
            self.insert(row)

    def _tables(self) -> list[str]:
        return [r[0] for r in self._sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name LIKE 'memory\\_es\\_%%' ORDER BY table_name", (self.schema,))]

    def snapshot(self) -> tuple[dict[str, bytes], dict[str, list[Any]]]:
        tables = {t: self._sql(SQL("SELECT * FROM {}").format(self._t(t)))
                  for t in self._tables()}
        return _files(self.root), tables

    def restore(self, snap: tuple[dict[str, bytes], dict[str, list[Any]]]) -> None:
        files, tables = snap
        _put_files(self.root, files)
        with psycopg.connect(self.dsn) as conn, conn.transaction():
            for table, rows in tables.items():
                conn.execute(SQL("DELETE FROM {}").format(self._t(table)))
                for row in rows:
                    marks = SQL(", ").join([SQL("%s")] * len(row))
                    conn.execute(SQL("INSERT INTO {} VALUES ({})").format(self._t(table), marks),
                                 row)


FORGED_ID = "00000000-0000-5000-8000-00000000f0f0"


def recompute_plain(tamper: Tamper, *, start: int = 1, head: bool = True) -> None:
    """Recompute the plain SHA-256 chain of every row from ``start`` on (and the catalog), as
    an editor without the root's chain key would."""
    prev, position = GENESIS, 0
    for position, oid, version, topic, state, stored in tamper.rows():
        if position < start:
            prev = stored
            continue
        prev = chain_link(prev, position, oid, version, topic, state)
        tamper.update(position, state=state, chain=prev)
    if head:
        tamper.set_head(position, prev)


def append_forged_row(tamper: Tamper, *, head: bool) -> int:
    """Append a copy of the last event under a new id, chained with plain SHA-256."""
    last = tamper.rows()[-1]
    position = last[0] + 1
    chain = chain_link(last[5], position, FORGED_ID, 1, last[3], last[4])
    tamper.insert((position, FORGED_ID, 1, last[3], last[4], chain))
    if head:
        tamper.set_head(position, chain)
    return position


def tamper_of(root: Path) -> Tamper:
    """The tamper tool for ``root``'s journal: its PostgreSQL database when
    tests/journal_backends.py put it there, else its ``journal.db``."""
    from journal_backends import database_of

    dsn = database_of(root)
    return SqliteTamper(root) if dsn is None else PostgresTamper(root, dsn)
