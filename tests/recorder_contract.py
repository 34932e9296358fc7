"""The contract of a journal recorder (memory_es.journal.protocol.Recorder), not a test module.

:class:`RecorderContract` states what the protocol promises, as eventsourcing's own
``ApplicationRecorderTestCase`` does for its recorders: a backend's test module subclasses it
as a ``Test*`` class and gives it :meth:`RecorderContract.journals` (recorders on named
journals of that backend), :meth:`~RecorderContract.durable_head` and
:meth:`~RecorderContract.tamper`; every case then runs on that backend. tests/test_recorder.py
(SQLite) and tests/test_pg_recorder.py (PostgreSQL) do, so both run the same cases.

The cases: positions and the chain (B12), the durable head, reads by position, topic and
aggregate, payloads in their events' transaction (B5) sealed or open, conflicts and
read-only refusals, ``append_rows`` (migrate-journal), verification failing on a changed row
or another key, and appends from many threads and recorders at once.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, cast
from uuid import UUID, uuid4

import msgspec
import pytest
from eventsourcing.persistence import IntegrityError as RecordConflict
from eventsourcing.persistence import StoredEvent

from ceilings import HANG_S
from memory_es.errors import IntegrityError
from memory_es.journal import GENESIS, Payload, chain_link
from memory_es.journal.chain import Chain
from memory_es.journal.protocol import Recorder
from memory_es.journal.records import RecordKeys
from memory_es.journal.sealing import Sealer

KEY = bytes(range(32))
Row = tuple[int, str, int, str, bytes, bytes]


def event(originator_id: UUID | str | None = None, version: int = 1, topic: str = "t",
          state: bytes = b"s") -> StoredEvent:
    """A stored event of a fresh aggregate (or of ``originator_id``)."""
    return StoredEvent(originator_id or uuid4(), version, topic, state)


class StubKeys:
    """Record keys in memory: :meth:`take` hands out ids 1, 2, ...; :meth:`destroy` makes a
    key read as destroyed (None), as a forget does."""

    def __init__(self) -> None:
        self.held: dict[int, bytes] = {}
        self.destroyed: set[int] = set()
        self.closed = False

    def take(self) -> tuple[int, bytes]:
        key_id = len(self.held) + 1
        self.held[key_id] = hashlib.sha256(b"key %d" % key_id).digest()
        return key_id, self.held[key_id]

    def get(self, key_id: int) -> bytes | None:
        return None if key_id in self.destroyed else self.held.get(key_id)

    def destroy(self, key_id: int) -> None:
        self.destroyed.add(key_id)

    def close(self) -> None:
        self.closed = True


def sealing(keys: StubKeys) -> Sealer:
    """A writer's sealer over ``keys``: payloads sealed, states as given."""
    return Sealer(cast(RecordKeys, keys), {})


OpenRecorder = Callable[..., Recorder]


class RecorderContract:
    """Every case of the contract; a subclass names the backend (see the module docstring).

    ``journals`` opens a recorder: ``journals()`` the test's journal, ``journals("b")``
    another, empty one; ``readonly=True`` a read-only one; ``chain=`` with that link function.
    Each call is a new recorder (as another process's would be) on the same journal; all are
    closed after the test."""

    SHARED: ClassVar[bool]  # may other processes append to this backend's journal?

    @pytest.fixture
    def journals(self) -> Iterator[OpenRecorder]:
        raise NotImplementedError

    def durable_head(self, recorder: Recorder) -> tuple[int, bytes]:
        """The ``(position, chain)`` the backend keeps beside the rows (B12)."""
        raise NotImplementedError

    def tamper(self, recorder: Recorder, sql: str) -> None:
        """Run ``sql`` on ``recorder``'s journal behind its back; ``{events}`` and
        ``{position}`` name the events table and its position column."""
        raise NotImplementedError

    @pytest.fixture
    def recorder(self, journals: OpenRecorder) -> Recorder:
        return journals()

    # -- positions and the chain (B12) --------------------------------------------------------

    def test_positions_start_at_one_and_are_gapless_across_batches(
            self, recorder: Recorder) -> None:
        assert recorder.max_notification_id() is None
        assert list(recorder.insert_events([event(), event()]) or ()) == [1, 2]
        assert list(recorder.insert_events([event()]) or ()) == [3]
        assert list(recorder.insert_events([event(), event(), event()]) or ()) == [4, 5, 6]
        assert recorder.max_notification_id() == 6

    def test_an_empty_batch_writes_nothing(self, recorder: Recorder) -> None:
        assert not recorder.insert_events([])
        assert recorder.max_notification_id() is None
        assert self.durable_head(recorder) == (0, GENESIS)
        assert recorder.insert_events([event()]) == [1]

    def test_each_row_links_the_chain_and_the_durable_head_follows_every_commit(
            self, recorder: Recorder) -> None:
        """B12: a row's chain is the link of the previous chain and its own fields; the
        durable head is the last row's (position, chain) after every commit."""
        assert self.durable_head(recorder) == (0, GENESIS)
        for batch in ([event(state=b"one"), event(state=b"two")], [event(topic="u")],
                      [event(state=b"four"), event(state=b"five")]):
            recorder.insert_events(batch)
            last = recorder.max_notification_id()
            assert last is not None
            assert self.durable_head(recorder) == (last, recorder.chain_at(last))
        chain = GENESIS
        rows = list(recorder.rows())
        assert [r[0] for r in rows] == [1, 2, 3, 4, 5]
        for position, oid, version, topic, state, stored in rows:
            chain = chain_link(chain, position, oid, version, topic, state)
            assert stored == chain == recorder.chain_at(position)
        assert recorder.chain_at(6) is None
        assert recorder.verify() == (5, chain) == self.durable_head(recorder)

    def test_a_keyed_chain_links_from_its_first_keyed_position(
            self, journals: OpenRecorder) -> None:
        """Below ``keyed_from`` the plain link, from there HMAC under the chain key."""
        keyed = Chain(KEY, keyed_from=3)
        recorder = journals(chain=keyed)
        recorder.insert_events([event() for _ in range(4)])
        chain = GENESIS
        for position, oid, version, topic, state, stored in recorder.rows():
            plain = chain_link(chain, position, oid, version, topic, state)
            chain = keyed.link(chain, position, oid, version, topic, state)
            assert stored == chain
            assert (plain == chain) is (position < 3)
        assert recorder.verify() == (4, chain)

    @pytest.mark.parametrize("other", [Chain(bytes(32), keyed_from=1), Chain.plain()],
                             ids=["another key", "no key"])
    def test_rows_linked_under_another_key_fail_verification(
            self, journals: OpenRecorder, other: Chain) -> None:
        journals(chain=Chain(KEY, keyed_from=1)).insert_events([event(), event()])
        with pytest.raises(IntegrityError) as e:
            journals(chain=other).verify()
        assert e.value.code == "chain_broken" and "position 1" in str(e.value)

    @pytest.mark.parametrize("sql", [
        "UPDATE {events} SET state = chain WHERE {position} = 2",
        "DELETE FROM {events} WHERE {position} = 2",
        "UPDATE {events} SET chain = (SELECT chain FROM {events} WHERE {position} = 1) "
        "WHERE {position} = 3",
    ], ids=["edited", "deleted", "relinked"])
    def test_a_changed_row_fails_verification_naming_it(
            self, recorder: Recorder, sql: str) -> None:
        """B13: an edited, deleted or relinked row is found, fail closed, naming the row."""
        recorder.insert_events([event(state=b"one"), event(state=b"two"),
                                event(state=b"three")])
        self.tamper(recorder, sql)
        with pytest.raises(IntegrityError) as e:
            recorder.verify()
        assert e.value.code == "chain_broken"
        assert "position 2" in str(e.value) or "position 3" in str(e.value)

    # -- reads ----------------------------------------------------------------------------------

    def test_notifications_by_position(self, recorder: Recorder) -> None:
        written = [event(state=b"%d" % n) for n in range(1, 6)]
        recorder.insert_events(written)

        def ids(*args: Any, **kwargs: Any) -> list[int]:
            return [n.id for n in recorder.select_notifications(*args, **kwargs)]

        assert ids(None, 10) == [1, 2, 3, 4, 5]
        assert ids(2, 2) == [2, 3]
        assert ids(2, 10, inclusive_of_start=False) == [3, 4, 5]
        assert ids(2, 10, stop=4) == [2, 3, 4]
        assert ids(5, 10, inclusive_of_start=False) == []
        n = recorder.select_notifications(4, 1)[0]
        assert (n.originator_id, n.originator_version, n.topic, n.state) == (
            written[3].originator_id, 1, "t", b"4")

    def test_notifications_by_topic(self, recorder: Recorder) -> None:
        recorder.insert_events([event(topic="a"), event(topic="b"), event(topic="c"),
                                event(topic="a")])
        found = recorder.select_notifications(None, 10, topics=["a", "c"])
        assert [(n.id, n.topic) for n in found] == [(1, "a"), (3, "c"), (4, "a")]
        assert [n.id for n in recorder.select_notifications(2, 10, topics=["a"])] == [4]

    def test_events_of_one_aggregate_by_version(self, recorder: Recorder) -> None:
        oid = uuid4()
        recorder.insert_events([event(oid, 1), event(), event(oid, 2, state=b"2")])
        recorder.insert_events([event(oid, 3, topic="u", state=b"3")])
        versions = [e.originator_version for e in recorder.select_events(oid)]
        assert versions == [1, 2, 3]
        assert [e.originator_version for e in recorder.select_events(oid, gt=1, lte=2)] == [2]
        assert [e.originator_version
                for e in recorder.select_events(oid, desc=True, limit=2)] == [3, 2]
        assert recorder.select_events(str(oid))[0].originator_id == oid
        assert recorder.aggregate_rows(oid) == [(1, 1, "t", b"s"), (3, 2, "t", b"2"),
                                                (4, 3, "u", b"3")]
        assert recorder.has_events(oid) and not recorder.has_events(uuid4())
        assert recorder.aggregate_rows(uuid4()) == []

    def test_rows_of_topics_and_a_needle(self, recorder: Recorder) -> None:
        a, b = uuid4(), uuid4()
        recorder.insert_events([event(a, topic="x", state=b'{"id":"m1"}'),
                                event(topic="y", state=b'{"id":"m1"}'),
                                event(b, topic="z", state=b'{"id":"m2"}')])
        assert recorder.rows_of(["x", "z"]) == [(1, str(a), 1, "x", b'{"id":"m1"}'),
                                                (3, str(b), 1, "z", b'{"id":"m2"}')]
        assert [r[0] for r in recorder.rows_of(["x", "y", "z"], needle="m1")] == [1, 2]
        assert recorder.rows_of(["w"]) == []

    def test_rows_are_one_snapshot(self, recorder: Recorder) -> None:
        """What commits while rows() is iterated is not in it."""
        recorder.insert_events([event(), event()])
        rows = recorder.rows()
        try:
            first = next(rows)
            recorder.insert_events([event()])
            rest = list(rows)
        finally:
            rows.close()
        assert [first[0], *(r[0] for r in rest)] == [1, 2]
        assert [r[0] for r in recorder.rows()] == [1, 2, 3]

    def test_admitted_content_hash_is_the_first_events(self, recorder: Recorder) -> None:
        """B3, B10: the admission's content hash, straight from the journal."""
        intake, other = uuid4(), uuid4()
        recorder.insert_events([
            event(intake, 1, state=msgspec.json.encode({"content_sha256": "c1", "x": 1})),
            event(intake, 2, state=msgspec.json.encode({"content_sha256": "c2"})),
            event(other, 2, state=msgspec.json.encode({"content_sha256": "c3"}))])
        assert recorder.admitted_content_hash(intake) == "c1"
        assert recorder.admitted_content_hash(other) is None
        assert recorder.admitted_content_hash(uuid4()) is None

    # -- payloads (B5) --------------------------------------------------------------------------

    def test_payloads_commit_with_their_events(self, recorder: Recorder) -> None:
        data = "capture text ☕\n".encode() * 10
        payload = Payload("a" * 64, hashlib.sha256(data).hexdigest(), data)
        assert recorder.payload("a" * 64) is None
        assert recorder.insert_events([event()], payloads=[payload]) == [1]
        assert recorder.payload("a" * 64) == payload
        assert recorder.payload("b" * 64) is None
        assert recorder.payload_key("a" * 64) is None  # stored open
        assert recorder.payload_rows() == [("a" * 64, payload.sha256, data)]
        assert recorder.highest_key_id() == 0

    def test_a_conflicting_event_writes_nothing_of_its_batch(self, recorder: Recorder) -> None:
        """B5, B12: a batch whose later event takes a run id's version already taken is
        absent as a whole, payloads included; it takes no position, the head stays."""
        taken = event(state=b"existing")
        recorder.insert_events([taken], payloads=[Payload("e" * 64, "0" * 64, b"kept")])
        head = self.durable_head(recorder)
        fresh, lost = event(state=b"fresh"), Payload("f" * 64, "1" * 64, b"must not survive")
        with pytest.raises(RecordConflict):
            recorder.insert_events([fresh, event(taken.originator_id, 1, state=b"other")],
                                   payloads=[lost])
        assert recorder.select_events(fresh.originator_id) == []
        assert recorder.payload("f" * 64) is None
        assert recorder.max_notification_id() == 1
        assert [e.state for e in recorder.select_events(taken.originator_id)] == [b"existing"]
        assert recorder.payload("e" * 64) == Payload("e" * 64, "0" * 64, b"kept")
        assert self.durable_head(recorder) == head
        assert recorder.insert_events([fresh], payloads=[lost]) == [2]
        assert recorder.payload("f" * 64) == lost
        assert recorder.verify() == self.durable_head(recorder)

    def test_a_conflicting_payload_writes_nothing_of_its_batch(self, recorder: Recorder) -> None:
        """B5: a payload whose intake already has one rolls back the batch's events too."""
        recorder.insert_events([event()], payloads=[Payload("c" * 64, "0" * 64, b"first")])
        fresh = uuid4()
        with pytest.raises(RecordConflict):
            recorder.insert_events([event(fresh)],
                                   payloads=[Payload("c" * 64, "1" * 64, b"second")])
        assert not recorder.has_events(fresh)
        assert recorder.max_notification_id() == 1
        assert recorder.payload("c" * 64) == Payload("c" * 64, "0" * 64, b"first")

    def test_delete_payloads_drops_only_those_named(self, recorder: Recorder) -> None:
        """B9: the payloads of resolved intakes go; their events and the others stay."""
        recorder.insert_events([event()], payloads=[Payload(n * 64, "0" * 64, n.encode())
                                                   for n in "abc"])
        recorder.delete_payloads(["a" * 64, "c" * 64])
        assert [recorder.payload(n * 64) for n in "abc"] == [
            None, Payload("b" * 64, "0" * 64, b"b"), None]
        assert recorder.max_notification_id() == 1

    def test_sealed_payloads_open_under_their_record_key(self, journals: OpenRecorder) -> None:
        """A payload is stored sealed under its own key, opens under it, and reads as absent
        once that key is destroyed (a forget); ``highest_key_id`` counts payload keys and
        the key ids of sealed states."""
        keys = StubKeys()
        recorder = journals()
        recorder.sealer = sealing(keys)
        recorder.insert_events([event()], payloads=[Payload("a" * 64, "h", b"turn text"),
                                                    Payload("b" * 64, "h", b"other turn")])
        stored = {intake: blob for intake, _sha, blob in recorder.payload_rows()}
        assert b"turn text" not in stored["a" * 64]
        assert recorder.payload("a" * 64) == Payload("a" * 64, "h", b"turn text", sealed=True)
        assert {recorder.payload_key("a" * 64), recorder.payload_key("b" * 64)} == {1, 2}
        assert recorder.highest_key_id() == 2
        sealed_state = Sealer(cast(RecordKeys, keys), {"t": {"text": ""}}).seal_state(
            "t", uuid4(), 1, b'{"text":"secret"}')
        recorder.insert_events([event(state=sealed_state)])
        assert recorder.highest_key_id() == 3
        keys.destroy(recorder.payload_key("a" * 64) or 0)
        assert recorder.payload("a" * 64) is None
        assert recorder.payload("b" * 64) is not None

    # -- refusals -------------------------------------------------------------------------------

    def test_a_read_only_recorder_reads_and_refuses_every_write(
            self, journals: OpenRecorder) -> None:
        writer = journals()
        writer.insert_events([event()], payloads=[Payload("a" * 64, "0" * 64, b"p")])
        reader = journals(readonly=True)
        assert reader.readonly and not writer.readonly
        assert reader.max_notification_id() == 1 and reader.payload("a" * 64) is not None
        with pytest.raises(IntegrityError) as e:
            reader.insert_events([event()])
        assert e.value.code == "journal_read_only"
        with pytest.raises(IntegrityError) as e:
            reader.delete_payloads(["a" * 64])
        assert e.value.code == "journal_read_only"
        assert writer.max_notification_id() == 1 and writer.payload("a" * 64) is not None

    # -- append_rows (migrate-journal) ----------------------------------------------------------

    def test_append_rows_copies_another_journal_exactly(self, journals: OpenRecorder) -> None:
        keys = StubKeys()
        source, target = journals(chain=Chain(KEY, keyed_from=1)), \
            journals("b", chain=Chain(KEY, keyed_from=1))
        source.sealer = target.sealer = sealing(keys)
        source.insert_events([event(), event()], payloads=[Payload("a" * 64, "h", b"turn")])
        source.insert_events([event(topic="u")])
        rows: list[Row] = list(source.rows())
        target.append_rows(rows[:2], source.payload_rows())
        target.append_rows(rows[2:], source.payload_rows())  # a payload held is kept
        assert list(target.rows()) == rows
        assert target.payload_rows() == source.payload_rows()
        assert target.payload("a" * 64) == source.payload("a" * 64)
        assert target.verify() == source.verify() == self.durable_head(target)

    def test_append_rows_not_following_the_head_are_refused(
            self, journals: OpenRecorder) -> None:
        source, target = journals(), journals("b")
        source.insert_events([event(), event(), event()])
        rows = list(source.rows())
        target.append_rows(rows[:1])
        with pytest.raises(IntegrityError) as e:
            target.append_rows(rows[2:])
        assert e.value.code == "chain_broken"
        assert target.max_notification_id() == 1
        assert self.durable_head(target) == (1, rows[0][5])

    # -- many writers ---------------------------------------------------------------------------

    def test_threads_sharing_a_recorder_append_one_gapless_chain(
            self, recorder: Recorder) -> None:
        """B23: the recorder is shared by threads; their appends interleave into one chain."""
        positions: list[int] = []

        def write() -> None:
            for _ in range(10):
                positions.extend(recorder.insert_events([event(), event()]) or ())

        _run_all([write] * 4)
        assert sorted(positions) == list(range(1, 81))
        assert recorder.verify()[0] == 80 == self.durable_head(recorder)[0]

    def test_recorders_on_one_journal_append_in_commit_order(
            self, journals: OpenRecorder) -> None:
        """Writers on separate recorders (as separate processes have) append to one gapless
        chain; a run id one took is refused to the other."""
        a, b = journals(), journals()
        ids = [uuid4() for _ in range(40)]

        def writer(rec: Recorder, part: list[UUID]) -> Callable[[], None]:
            def write() -> None:
                for oid in part:
                    rec.insert_events([event(oid)])
            return write

        _run_all([writer(a, ids[0::2]), writer(b, ids[1::2])])
        with pytest.raises(RecordConflict):
            b.insert_events([event(ids[0])])
        assert a.verify()[0] == 40 and b.verify() == a.verify()
        assert sorted(r[1] for r in a.rows()) == sorted(map(str, ids))

    def test_one_run_id_admitted_at_once_is_written_once(self, journals: OpenRecorder) -> None:
        """B3: of concurrent first events of one run id, exactly one is written; the others
        are conflicts and take no position."""
        oid, recorders = uuid4(), [journals(), journals()]
        outcomes: list[str] = []

        def admit(rec: Recorder) -> None:
            try:
                rec.insert_events([event(oid, state=b"admitted")])
                outcomes.append("written")
            except RecordConflict:
                outcomes.append("conflict")

        _run_all([functools.partial(admit, r) for r in recorders for _ in range(3)])
        assert sorted(outcomes) == ["conflict"] * 5 + ["written"]
        assert recorders[0].max_notification_id() == 1
        recorders[1].insert_events([event()])
        assert recorders[0].verify()[0] == 2

    # -- leases and the rest --------------------------------------------------------------------

    def test_a_lone_recorder_leases_every_intake(self, recorder: Recorder) -> None:
        ids = ["a" * 64, "b" * 64]
        assert recorder.lease(ids) == ids
        recorder.release(ids)
        assert recorder.lease(ids[1:]) == ids[1:]
        recorder.release(ids[1:])

    def test_it_says_where_its_journal_is_and_whether_others_append(
            self, recorder: Recorder) -> None:
        assert isinstance(recorder.location, str) and recorder.location
        assert recorder.shared is self.SHARED

    def test_close_closes_the_record_keys(self, journals: OpenRecorder) -> None:
        keys = StubKeys()
        recorder = journals()
        recorder.sealer = sealing(keys)
        recorder.insert_events([event()])
        recorder.close()
        assert keys.closed


def _run_all(work: list[Callable[[], object]]) -> None:
    """Run each callable in its own thread at once; re-raise the first failure."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(work))

    def run(job: Callable[[], object]) -> None:
        try:
            start.wait(HANG_S)
            job()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(job,)) for job in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_S)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    if errors:
        raise errors[0]
