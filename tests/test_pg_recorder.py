"""The journal's recorder on a real PostgreSQL server (issue 18).

eventsourcing's own ApplicationRecorder test suite runs against it, as it runs against the
SQLite recorder (tests/test_recorder.py); then the additions the journal needs: gapless
positions in commit order, the chain and its head in the same transaction, payloads, the
unique run id, and tampering in the database found by verification.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError as RecordConflict
from eventsourcing.persistence import StoredEvent
from eventsourcing.tests.persistence import (
    ApplicationRecorderTestCase as _ApplicationRecorderSuite,
)

from ceilings import HANG_S
from memory_es.errors import IntegrityError
from memory_es.journal import GENESIS, Payload, chain_link
from memory_es.journal.pgconnect import datastore, redact
from memory_es.journal.pgrecorder import PostgresJournalRecorder


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
    """Issue 18: the PostgreSQL journal passes eventsourcing's ApplicationRecorder suite."""

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


@pytest.fixture
def recorder(pg_dsn: str) -> Any:
    rec = _recorder(pg_dsn)
    try:
        yield rec
    finally:
        rec.close()


def test_positions_are_gapless_and_the_head_moves_with_each_commit(
        recorder: PostgresJournalRecorder) -> None:
    """B12 on PostgreSQL: a conflicting write consumes no position; the head row equals the
    last row's (position, chain) after every commit."""
    assert recorder.head() == (0, GENESIS)
    taken = _event()
    assert recorder.insert_events([taken, _event()]) == [1, 2]
    with pytest.raises(RecordConflict):
        recorder.insert_events([_event(), StoredEvent(taken.originator_id, 1, "t", b"x")])
    assert recorder.head() == (2, recorder.chain_at(2))
    assert recorder.insert_events([_event()]) == [3]
    chain = GENESIS
    for position, oid, version, topic, state, stored in recorder.rows():
        chain = chain_link(chain, position, oid, version, topic, state)
        assert stored == chain
    assert recorder.verify() == (3, chain) == recorder.head()


def test_payloads_commit_with_their_events_or_not_at_all(
        recorder: PostgresJournalRecorder) -> None:
    """B5: a payload is written in its Admitted event's transaction; a conflict drops both."""
    first = _event()
    recorder.insert_events([first], payloads=[Payload(str(first.originator_id), "h1", b"turn")])
    got = recorder.payload(str(first.originator_id))
    assert got is not None and (got.sha256, got.data) == ("h1", b"turn")
    clash = _event()
    with pytest.raises(RecordConflict):
        recorder.insert_events([clash, StoredEvent(first.originator_id, 1, "t", b"x")],
                               payloads=[Payload(str(clash.originator_id), "h2", b"lost")])
    assert recorder.payload(str(clash.originator_id)) is None
    assert not recorder.has_events(clash.originator_id)
    recorder.delete_payloads([str(first.originator_id)])
    assert recorder.payload(str(first.originator_id)) is None


def test_two_recorders_share_one_journal_in_commit_order(pg_dsn: str) -> None:
    """Issue 18 item 2: writers on separate connection pools (as separate processes are)
    append to one gapless chain; a run id taken by one is refused to the other."""
    a, b = _recorder(pg_dsn), _recorder(pg_dsn)
    try:
        ids = [uuid4() for _ in range(40)]

        def write(rec: PostgresJournalRecorder, part: list[UUID]) -> None:
            for oid in part:
                rec.insert_events([_event(oid)])

        threads = [threading.Thread(target=write, args=(r, ids[i::2]))
                   for i, r in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with pytest.raises(RecordConflict):
            b.insert_events([_event(ids[0])])
        position, _ = a.verify()
        assert position == 40 and b.head() == a.head()
        assert sorted(r[1] for r in a.rows()) == sorted(map(str, ids))
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("tamper, code", [
    ("UPDATE memory_es_events SET state = 'edited' WHERE notification_id = 2", "chain_broken"),
    ("DELETE FROM memory_es_events WHERE notification_id = 2", "chain_broken"),
    ("UPDATE memory_es_events SET chain = "
     "(SELECT chain FROM memory_es_events WHERE notification_id = 1) "
     "WHERE notification_id = 3", "chain_broken"),
])
def test_tampering_in_the_database_fails_verification(
        recorder: PostgresJournalRecorder, pg_dsn: str, tamper: str, code: str) -> None:
    """B12/B13 on PostgreSQL: an edited, deleted or relinked row is found, naming the row."""
    recorder.insert_events([_event(state=b"one"), _event(state=b"two"), _event(state=b"three")])
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(tamper)
    with pytest.raises(IntegrityError) as e:
        recorder.verify()
    assert e.value.code == code
    assert "position 2" in str(e.value) or "position 3" in str(e.value)


def test_the_dsn_never_appears_in_a_location(pg_dsn: str) -> None:
    """Issue 18 item 1: the DSN (its user and password) is never put in a message."""
    where = redact(pg_dsn)
    assert where.startswith("postgresql://127.0.0.1:") and "@" not in where
    password = psycopg.conninfo.conninfo_to_dict(pg_dsn)["password"]
    assert password and password not in where


def test_readonly_recorder_refuses_writes(pg_dsn: str) -> None:
    rec = _recorder(pg_dsn, readonly=True)
    try:
        with pytest.raises(IntegrityError) as e:
            rec.insert_events([_event()])
        assert e.value.code == "journal_read_only"
    finally:
        rec.close()


def test_a_dsn_that_does_not_parse_is_refused_naming_no_part_of_it() -> None:
    """Review of issue 18: libpq's parse errors quote the DSN, password included; the refusal
    says what a DSN looks like instead."""
    from memory_es.errors import InvalidArgumentError

    for dsn in ("postgresql://bob:s3cr%zzet@db/mem", "host=db user=bob password=s3cret extra"):
        with pytest.raises(InvalidArgumentError) as e:
            datastore(dsn)
        assert "s3cr" not in str(e.value) and "memory.journal.dsn" in str(e.value)


def test_the_writer_connection_keeps_its_settings_and_survives_many_descriptors(
        pg_dsn: str) -> None:
    """Review of issue 18: the writer's own connection gives up connecting as the pool does
    (connect_timeout 10 s when the DSN names none), finds a dead peer in seconds (keepalives,
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
