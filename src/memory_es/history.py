"""The journal read back: the verified read-only journal and active index, decoded events in
order, the intake view folded from them, and the canonical export lines. Shared by the writer,
the reader (MemoryRoot) and maintenance."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import apsw
import msgspec
from eventsourcing.persistence import Notification, StoredEvent

from memory_es.errors import IntegrityError, MemoryEsError, storage_guard, storage_kind
from memory_es.events import FORGOTTEN_TOPICS
from memory_es.journal import (
    GENESIS,
    JOURNAL_FILE,
    MsgspecMapper,
    OpenedJournal,
    chain_link,
    open_journal,
)
from memory_es.journal.backend import PostgresJournal
from memory_es.journal.recorder import JournalRecorder
from memory_es.journal.sealing import Sealer, state_key_ids
from memory_es.keystore import KeyStore
from projections.derived import INDEX_DIR, open_active_index, unreadable

if TYPE_CHECKING:  # the intake fold and the index's decoding load with the reads that use them
    from memory_es.intake import IntakeState, IntakeView

INTAKE_TOPIC_PREFIX = "memory_es/Intake."

log = logging.getLogger("memory_es")


def journal_guard(root: str | Path) -> contextlib.AbstractContextManager[None]:
    """SQLite and OS failures of the journal as one stable code each:
    ``journal_corrupt`` (a damaged or emptied file), ``io_error`` (read-only, full, EIO,
    EACCES), ``busy``; the message names journal.db, never content."""
    return storage_guard(Path(root) / JOURNAL_FILE, what="journal",
                         corrupt_code="journal_corrupt")


@contextlib.contextmanager
def open_reader(root: str | Path, key_store: KeyStore | None = None,
                journal: PostgresJournal | None = None, *,
                applied: int | None = 0, checkpoint: bool = False) -> Iterator[OpenedJournal]:
    """The verified, read-only journal of ``root`` for the span of one read (its chain key
    from ``key_store``, default: :meth:`KeyStore.resolve`; ``journal``: its PostgreSQL
    server when the config names one). A storage failure of the journal, opening it or
    reading it in the block, raises :class:`StorageError` (:func:`journal_guard`).

    ``applied``: the position up to which forgets are known to be finished (0: look at every
    ``Forgotten`` event; None: the caller does it, knowing where the index stands), see
    :func:`unfinished_forgets`. ``checkpoint``: verify the chain from the writer's attested
    checkpoint on (:mod:`memory_es.journal.checkpoint`), for a read of the index."""
    with journal_guard(root):
        opened = open_journal(Path(root), writable=False, key_store=key_store, journal=journal,
                              checkpoint=checkpoint)
    try:
        with journal_guard(root):
            if applied is not None:
                unfinished_forgets(opened, applied)
            yield opened
    finally:
        opened.close()


def unfinished_forgets(opened: OpenedJournal, after: int) -> int:
    """How many ``Forgotten`` events lie past position ``after`` (where the index stands): a
    forget a kill cut short before its projection. The record keys they name are withheld
    from this reader's opener at once, so nothing decodes what the journal has forgotten
    even while those keys still exist (the next writer open destroys them)."""
    found = opened.recorder.select_notifications(after, 1 << 62, topics=FORGOTTEN_TOPICS,
                                                 inclusive_of_start=False)
    if found:
        opened.verify_whole()  # these rows may lie before a reader's checkpoint
    keys: set[int] = set()
    for n in found:
        event = msgspec.json.decode(n.state)
        if event.get("keys_root") == opened.chain.root_id:  # a replay's ids mean nothing here
            keys.update(event.get("key_ids", ()))
    sealer = opened.recorder.sealer
    sealer.withheld = sealer.withheld | keys
    return len(found)


def index_position(conn: apsw.Connection | None) -> int:
    """The journal position an index generation has applied (0: no generation)."""
    if conn is None:
        return 0
    row: Any = conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()
    return int(row[0]) if row is not None else 0


@contextlib.contextmanager
def verified_index(root: Path,
                   key_store: KeyStore | None = None) -> Iterator[apsw.Connection | None]:
    """The active index generation, read-only, once the journal's chain is verified (a
    tampered root is never served); None when no generation was ever activated. A damaged
    generation, at open or at any query in the block, raises :class:`IndexUnavailableError`
    (``index_unreadable``: recall degrades on it); the disk failing raises ``io_error``."""
    with verified_journal_and_index(root, key_store) as (_opened, conn):
        yield conn


@contextlib.contextmanager
def verified_journal_and_index(
        root: Path, key_store: KeyStore | None = None, journal: PostgresJournal | None = None,
        *, checkpoint: bool = False,
) -> Iterator[tuple[OpenedJournal, apsw.Connection | None]]:
    """:func:`verified_index` with the verified read-only journal it checked, for a read that
    needs both (``memory-es show``: the index row and the journal events behind it)."""
    with open_reader(root, key_store, journal, applied=None, checkpoint=checkpoint) as opened:
        with storage_guard(Path(root) / INDEX_DIR, what="index",
                           corrupt_code="index_unreadable"):
            conn = open_active_index(root)
        try:
            position: int | None = index_position(conn)
        except apsw.Error:  # a damaged index: the read degrades or fails on it as before
            position = None
        if unfinished_forgets(opened, position or 0) and position is not None:
            # the index still holds what a committed forget erases: answer from the journal
            log.warning("memory_es: a forget is unfinished (the next writer open finishes "
                        "it); this read answers from the journal")
            if conn is not None:
                conn.close()
            from projections.asof import fold_in_memory

            conn = fold_in_memory(iter_events(opened, index_only=True)).conn
        try:
            try:
                yield opened, conn
            except (apsw.Error, OSError) as e:
                if conn is None or storage_kind(e) != "corrupt":
                    with storage_guard(conn.filename if conn is not None else root,
                                       what="index", corrupt_code="index_unreadable"):
                        raise
                raise unreadable(Path(conn.filename), e) from e
        finally:
            if conn is not None:
                conn.close()


def iter_events(opened: OpenedJournal, after: int = 0, upto: int | None = None,
                batch: int = 1000, *, index_only: bool = False) -> Iterator[tuple[int, Any]]:
    """``(position, event)`` of every event after position ``after`` (up to ``upto``), in
    journal order, read a page of ``batch`` notifications at a time: the one read loop of the
    journal, for a live catch-up (``index_only`` False: every event decoded in full) and for a
    fold into the index alone (``index_only`` True: a rebuild, health's replay, an in-memory
    fold).

    With ``index_only`` an event the index does not fold comes as ``(position, None)``,
    undecoded, so the fold still advances past it; a screened one (an admission: only
    BuJo's are audited) is first decoded without opening its sealed fields. A Lite journal's
    resolutions (a third of its events) are then never decoded, its admissions never
    decrypted (rebuild time). A topic this version does not know fails either way."""
    mapper = opened.app.mapper
    assert isinstance(mapper, MsgspecMapper)
    decode = _index_decoder(mapper) if index_only else mapper.to_domain_event
    recorder = opened.recorder
    while True:
        notifications = recorder.select_notifications(
            after, batch, stop=upto, inclusive_of_start=False)
        if not notifications:
            return
        for n in notifications:
            yield n.id, decode(n)
        after = notifications[-1].id


def _index_decoder(mapper: MsgspecMapper) -> Callable[[Notification], Any]:
    """How :func:`iter_events` decodes for the index: None for an event it passes over
    (``INDEX_PASSES_OVER``) or whose screen (``INDEX_SCREENS``) refuses it, else the event."""
    from projections.sqlite_index import INDEX_PASSES_OVER, INDEX_SCREENS

    def decode(n: Notification) -> Any:
        screen = INDEX_SCREENS.get(n.topic)
        folded = n.topic not in INDEX_PASSES_OVER and (
            screen is None or screen(mapper.to_domain_event(n, content=False)))
        return mapper.to_domain_event(n) if folded else None

    return decode


def checked_payload(opened: OpenedJournal,
                    record: IntakeState) -> tuple[bytes | None, str | None]:
    """An intake's capture text and what is wrong with it (``missing``, ``mismatch``; None
    when it is exactly what was admitted, B5). A sealed payload that does not open under its
    key (another intake's, or changed bytes) is a mismatch, never a traceback."""
    from memory_es.intake import SEALED_PAYLOAD, payload_problem

    if record.payload_sha256 is None:
        return None, None
    try:
        payload = opened.recorder.payload(record.id)
    except IntegrityError as e:
        if e.code != "record_seal_invalid":
            raise
        return None, "mismatch"
    if payload is None:
        return None, payload_problem(record, None)
    if record.payload_sha256 == SEALED_PAYLOAD and not payload.sealed:
        return None, "mismatch"  # admitted sealed, stored open: replaced
    return payload.data, payload_problem(record, payload.data)


def fold_intakes(opened: OpenedJournal, *, retain_resolved: bool = True,
                 view: IntakeView | None = None, upto: int | None = None) -> IntakeView:
    """Replay every Intake event of a journal into a fresh IntakeView (Intake topics only),
    or those past ``view.position`` into ``view`` (a fold carried forward: the caller knows
    the rows up to there are the ones it folded). The view keeps no content, so sealed fields
    are not opened (half the cost of a store open on a large journal). ``upto``: stop
    there (the last position a verification covered)."""
    if view is None:
        from memory_es.intake import IntakeView

        view = IntakeView(retain_resolved=retain_resolved)
        rows = opened.recorder.rows()
    else:
        recorder = opened.recorder
        assert isinstance(recorder, JournalRecorder)  # only SQLite reads on from a position
        rows = recorder.rows(view.position)
    mapper = opened.app.mapper
    assert isinstance(mapper, MsgspecMapper)
    for position, oid, version, topic, state, _chain in rows:
        if upto is not None and position > upto:
            break
        view.position = position
        if topic.startswith(INTAKE_TOPIC_PREFIX) or topic in FORGOTTEN_TOPICS:
            event = mapper.to_domain_event(StoredEvent(oid, version, topic, state),
                                           content=False)
            if topic.startswith(INTAKE_TOPIC_PREFIX):
                view.apply(position, event)
            if topic in FORGOTTEN_TOPICS:
                view.note_forget(position, event)
    return view


class KeptIntakes:
    """A long-lived read-only handle's intake fold, carried forward between its reads: the
    first read verifies every link and folds every intake; a later one checks that the
    journal still holds the chain value it folded up to, recomputes the links after it and
    folds only those rows. A journal that no longer extends it (replaced, truncated, edited
    there) is verified and folded afresh, which fails closed if it is broken. SQLite only (a
    PostgreSQL journal is folded afresh each time). Hold :attr:`lock` around a read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._view: IntakeView | None = None
        self._mark: tuple[int, bytes] | None = None

    def fold(self, opened: OpenedJournal) -> IntakeView:
        try:
            view, mark = self._carried(opened)
            if view is None:
                opened.verify_whole()
                mark = opened.verified
                view = fold_intakes(opened, upto=mark[0] if mark is not None else None)
        except BaseException:  # a row that failed to fold is not skipped next time
            self._view, self._mark = None, None
            raise
        kept = mark is not None and isinstance(opened.recorder, JournalRecorder)
        self._view, self._mark = (view, mark) if kept else (None, None)
        return view

    def _carried(self, opened: OpenedJournal
                 ) -> tuple[IntakeView | None, tuple[int, bytes] | None]:
        """The kept fold moved on to the verified tail, or (None, None) when the journal no
        longer extends it."""
        recorder = opened.recorder
        view, mark = self._view, self._mark
        if view is None or mark is None or not isinstance(recorder, JournalRecorder) \
                or recorder.chain_at(mark[0]) != mark[1]:
            return None, None
        try:
            tail = recorder.verify(mark)  # only the links after what was folded
        except IntegrityError:
            return None, None
        return fold_intakes(opened, view=view, upto=tail[0]), tail


def export_lines(opened: OpenedJournal) -> Iterator[bytes]:
    """Canonical JSONL of every event in journal order: the stored state bytes verbatim.

    ``chain`` is the plain SHA-256 chain (what a schema-1 root stores), recomputed here for a
    keyed root: an export is a portable document that any root can verify and replay without
    the origin's key (which never leaves its key store), and it is byte-identical whichever
    key the exporting root had. Its chain detects damage, not a forger.
    Sealed content is exported open (a portable document); a forgotten record keeps
    only its content-free tombstone (``{"$sealed": 1, "void": ...}``: no key, no ciphertext),
    so a root that never forgot exports the same bytes as before sealing existed. A
    ``Forgotten`` event is exported without the origin's key references (``key_ids`` empty,
    ``keys_root`` ""): they mean nothing in another root, and the export stays the same
    bytes whatever random root id wrote it (golden fixtures replay it byte for byte).
    """
    plain = GENESIS
    unseal = opened.recorder.sealer.unseal
    for position, oid, version, topic, state, _stored in opened.recorder.rows():
        state = unseal(topic, oid, version, bytes(state), export=True).state
        if topic in FORGOTTEN_TOPICS:
            state = _without_key_refs(state)
        plain = chain_link(plain, position, oid, version, topic, state)
        yield msgspec.json.encode(
            {
                "chain": plain.hex(),
                "originator_id": oid,
                "originator_version": version,
                "position": position,
                "state": msgspec.Raw(state),
                "topic": topic,
            },
            order="sorted",
        ) + b"\n"


def sealed_problems(opened: OpenedJournal) -> Iterator[tuple[int, str, IntegrityError]]:
    """(position, topic, error) of every stored event one of whose live sealed fields does
    not open: its record key missing from the key store (``record_key_missing``) or not the
    key that sealed it (``record_seal_invalid``). A destroyed key (a forget) is no problem.
    Every sealed field is decrypted: what ``export`` does, and what the replay does only for
    the topics the index folds."""
    keys = opened.recorder.sealer.keys
    sealer = Sealer(cast(Any, _KeysAtOnce(keys)), None) if keys is not None \
        else opened.recorder.sealer
    for position, oid, version, topic, state, _stored in opened.recorder.rows():
        try:
            sealer.unseal(topic, oid, version, bytes(state), export=True)
        except IntegrityError as e:
            yield position, topic, e


class _KeysAtOnce:
    """The record keys read in one query, not one per sealed field (a pass over every record
    costs about a third of a replay, not three times that)."""

    def __init__(self, keys: Any) -> None:
        held, destroyed = keys.export_all()
        self._keys = keys
        self._held: dict[int, bytes] = dict(held)
        self._destroyed = set(destroyed)

    def get(self, key_id: int) -> bytes | None:
        if key_id in self._held:
            return self._held[key_id]
        if key_id in self._destroyed:
            return None
        result: bytes | None = self._keys.get(key_id)  # record_key_missing, or one made since
        return result


def check_sealed(opened: OpenedJournal) -> None:
    """Raise the first :func:`sealed_problems` error: an export checks every record opens
    before it writes a byte (never a partial export)."""
    for _position, _topic, error in sealed_problems(opened):
        raise error


def missing_keys(opened: OpenedJournal) -> Iterator[tuple[int, str, IntegrityError]]:
    """:func:`sealed_problems` without decrypting: every record key a stored event references
    exists or was destroyed (catches a deleted key, not one whose bytes changed)."""
    keys = opened.recorder.sealer.keys
    if keys is None:
        return
    held, destroyed = keys.export_all()
    known = {k for k, _ in held} | set(destroyed)
    for position, _oid, _version, topic, state, _stored in opened.recorder.rows():
        missing = [k for k in state_key_ids(bytes(state)) if k not in known]
        if missing:
            yield position, topic, IntegrityError(
                f"record_key_missing: no key {missing[0]} for a sealed record",
                code="record_key_missing")


def sealed_findings(opened: OpenedJournal, *, deep: bool = False
                    ) -> Iterator[tuple[str, str, str]]:
    """Health's (code, path, detail) for records that do not open: one per code, with how
    many and the first position (content-free: positions, topics and codes only). Every
    referenced key must exist or be destroyed; ``deep`` decrypts every sealed field too."""
    found: dict[str, list[tuple[int, str]]] = {}
    for position, topic, error in (sealed_problems if deep else missing_keys)(opened):
        found.setdefault(error.code, []).append((position, topic))
    for code, where in sorted(found.items()):
        position, topic = where[0]
        yield (code, JOURNAL_FILE,
               f"{len(where)} sealed records do not open (first at position {position}, "
               f"{topic}): their record keys in the key store's records.db are missing or "
               "damaged; restore the key store from the backup that holds this root's keys "
               "(export refuses until then)")


def _without_key_refs(state: bytes) -> bytes:
    fields: dict[str, Any] = msgspec.json.decode(state)
    if "key_ids" in fields:
        fields["key_ids"] = []
    if "keys_root" in fields:
        fields["keys_root"] = ""
    return msgspec.json.encode(fields)


def forget_findings(opened: OpenedJournal, root: Path) -> Iterator[tuple[str, str, str]]:
    """Health's proof that every forget finished: (code, path, detail) triples.
    ``forgotten_key_present``: a Forgotten event's record keys still exist (a forget a kill
    interrupted; the next writer open destroys them); ``forgotten_row_present``: the active
    index still holds a row of a forgotten memory or turn. Content-free: ids only."""
    memories: set[str] = set()
    turns: set[str] = set()
    key_ids: set[int] = set()
    for _pos, _oid, _version, topic, state in opened.recorder.rows_of(FORGOTTEN_TOPICS):
        event = msgspec.json.decode(state)
        if event["keys_root"] == opened.chain.root_id:  # replayed: another root's key ids
            key_ids.update(event["key_ids"])
        (memories if topic == FORGOTTEN_TOPICS[0] else turns).add(
            event.get("memory_id") or event.get("run_hash"))
    keys = opened.recorder.sealer.keys
    present = keys.present(sorted(key_ids)) if keys is not None else []
    if present:
        yield ("forgotten_key_present", JOURNAL_FILE,
               f"{len(present)} record keys of forgotten records still exist; the next "
               "writer open destroys them")
    if not (memories or turns):
        return
    # The index is read here under the journal's guard: its damage must never read as the
    # journal's (an operator told journal_corrupt restores the journal from a backup and
    # brings forgotten text back). An index that cannot be read yields nothing here; the
    # audit's own read of it names the file and the fix (index_unreadable: run rebuild).
    from projections.forgetting import scrub_pending

    found: list[tuple[str, str, str]] = []
    try:
        conn = open_active_index(root)
        if conn is None:
            return
        try:
            why = scrub_pending(conn)
            if why is not None:
                found.append(("forget_unscrubbed", INDEX_DIR,
                              "the index or its -wal may still hold erased text: "
                              + ("a reader's snapshot held the WAL" if why == "reader" else
                                 "a kill came before the scrub")
                              + "; the next writer open or forget finishes it"))
            checks = [("memories", "id", memories), ("memory_meta", "id", memories),
                      ("memory_entities", "memory_id", memories),
                      ("relations", "memory", memories), ("audit", "run_hash", turns)]
            for table, column, ids in checks:
                for value in sorted(ids):
                    if conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ? LIMIT 1",
                                    (value,)).fetchone():
                        found.append(("forgotten_row_present", INDEX_DIR,
                                      f"{table} still holds a row of forgotten {value}"))
        finally:
            conn.close()
    except (apsw.Error, OSError, MemoryEsError):
        return
    yield from found
