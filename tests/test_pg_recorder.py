"""The journal's recorder on a real PostgreSQL server.

eventsourcing's own ApplicationRecorder test suite runs against it, as it runs against the
SQLite recorder (tests/test_recorder.py); so does the journal's own recorder contract
(tests/recorder_contract.py: gapless positions in commit order, the chain and its head in the
same transaction, payloads, the unique run id, read-only refusals, tampering found by
verification); then what only this backend does: a row appended past the head behind its
back, DSNs kept out of messages, the writer's own connection.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.tests.persistence import (
    ApplicationRecorderTestCase as _ApplicationRecorderSuite,
)

from ceilings import HANG_S
from memory_es.journal.chain import Chain
from memory_es.journal.pgconnect import datastore, redact
from memory_es.journal.pgrecorder import PostgresJournalRecorder
from memory_es.journal.protocol import Recorder
from recorder_contract import OpenRecorder, RecorderContract


def _recorder(dsn: str, **kwargs: Any) -> PostgresJournalRecorder:
    rec = PostgresJournalRecorder(datastore(dsn), location=redact(dsn), **kwargs)
    rec.create_table()
    return rec


def _event(originator_id: UUID | None = None, version: int = 1, topic: str = "t",
           state: bytes = b"s") -> StoredEvent:
    return StoredEvent(originator_id or uuid4(), version, topic, state)


@pytest.fixture(scope="class")
def suite_cluster(request: pytest.FixtureRequest, pg_cluster: Any) -> None:
    request.cls.cluster = pg_cluster


@pytest.mark.usefixtures("suite_cluster")
class TestPostgresJournalRecorderSuite(_ApplicationRecorderSuite[PostgresJournalRecorder]):
    """The PostgreSQL journal passes eventsourcing's ApplicationRecorder suite."""

    cluster: Any

    def setUp(self) -> None:
        super().setUp()
        self._recorders: list[PostgresJournalRecorder] = []
        self._threads_before = set(threading.enumerate())

    def tearDown(self) -> None:
        for rec in self._recorders:  # stops the pools' worker threads too
            rec.close()
        for thread in set(threading.enumerate()) - self._threads_before:
            thread.join(timeout=HANG_S)
        super().tearDown()

    def create_recorder(self) -> PostgresJournalRecorder:
        rec = _recorder(self.cluster.create_database(f"suite_{uuid.uuid4().hex[:12]}"))
        self._recorders.append(rec)
        return rec

    def test_insert_subscribe(self) -> None:
        """The suite's optional subscription test: LISTEN/NOTIFY, eventsourcing's own."""
        self.optional_test_insert_subscribe()


class TestPostgresJournalRecorderContract(RecorderContract):
    """The Recorder contract on PostgreSQL (B3, B5, B9, B12, B13, B23): each named journal is a
    database of its own on the test server; every recorder has its own pool, as another
    process's would; the head row is the durable head."""

    SHARED = True

    @pytest.fixture
    def journals(self, pg_cluster: Any) -> Iterator[OpenRecorder]:
        if not pg_cluster.running:  # a test stopped it on purpose
            pg_cluster.start()
        databases: dict[str, str] = {}
        made: list[PostgresJournalRecorder] = []
        self._dsn: dict[int, str] = {}

        def open_recorder(name: str = "a", *, readonly: bool = False,
                          chain: Chain | None = None) -> PostgresJournalRecorder:
            if name not in databases:
                databases[name] = pg_cluster.create_database(f"contract_{uuid4().hex[:12]}")
            rec = _recorder(databases[name], readonly=readonly, chain=chain)
            made.append(rec)
            self._dsn[id(rec)] = databases[name]
            return rec

        yield open_recorder
        for rec in made:
            rec.close()

    def durable_head(self, recorder: Recorder) -> tuple[int, bytes]:
        assert isinstance(recorder, PostgresJournalRecorder)
        return recorder.head()

    def tamper(self, recorder: Recorder, sql: str) -> None:
        with psycopg.connect(self._dsn[id(recorder)], autocommit=True) as conn:
            conn.execute(sql.format(events="memory_es_events", position="notification_id"))


def test_the_dsn_never_appears_in_a_location(pg_dsn: str) -> None:
    """The DSN (its user and password) is never put in a message."""
    where = redact(pg_dsn)
    assert where.startswith("postgresql://127.0.0.1:") and "@" not in where
    password = str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["password"])
    assert password and password not in where


def test_a_dsn_that_does_not_parse_is_refused_naming_no_part_of_it() -> None:
    """libpq's parse errors quote the DSN, password included; the refusal says what a DSN
    looks like instead."""
    from memory_es.errors import InvalidArgumentError

    for dsn in ("postgresql://bob:s3cr%zzet@db/mem", "host=db user=bob password=s3cret extra"):
        with pytest.raises(InvalidArgumentError) as e:
            datastore(dsn)
        assert "s3cr" not in str(e.value) and "memory.journal.dsn" in str(e.value)


def test_the_writer_connection_keeps_its_settings_and_survives_many_descriptors(
        pg_dsn: str) -> None:
    """The writer's own connection gives up connecting as the pool does (connect_timeout
    10 s when the DSN names none), finds a dead peer in seconds (keepalives,
    tcp_user_timeout), lets the server end a transaction a paused host left open (the head
    row's lock), and is kept between writes even when the process holds more than 1,024 file
    descriptors (select() cannot watch those: every write reconnected)."""
    import os
    import resource

    bare = pg_dsn.replace("?connect_timeout=5", "")
    rec = _recorder(bare)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    spare = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        conns = []
        for n in range(5):
            rec.insert_events([_event(state=f"{n}".encode())])
            conns.append(rec.writer._conn)
        conn = conns[0]
        assert conn is not None and conn.fileno() > 1024
        assert all(c is conn for c in conns), "a write opened a new connection"
        params = conn.info.get_parameters()
        assert params["connect_timeout"] == "10" and params["keepalives"] == "1"
        assert params["tcp_user_timeout"] == "10000"
        row = conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()
        assert row is not None and list(row.values()) == ["10s"]
    finally:
        for fd in spare:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        rec.close()
