"""Sealed content under per-record keys (issue 14 item 3, the crypto-shredding foundation):
the journal holds ciphertext only, the chain still verifies once a key is destroyed, a
destroyed key decodes as a content-free tombstone, exports hold content open (or the
tombstone), and reserved-but-unused keys are collected."""

from __future__ import annotations

import io
import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from helpers_index import journal_bytes
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.errors import MemoryEsError
from memory_es.history import iter_events, open_reader
from memory_es.journal.codec import is_forgotten
from memory_es.journal.records import CHUNK, RecordKeys
from memory_es.keystore import KeyStore

MARKER = "zq-sealing-marker-7f3a"


def root_id(root: Path) -> str:
    return str(json.loads((root / ".memory-es-schema").read_text())["root_id"])


def records(root: Path) -> RecordKeys:
    return RecordKeys(KeyStore.resolve(), root_id(root), writable=True)


def export(root: Path) -> list[str]:
    out = io.BytesIO()
    MemoryRoot.open(root).export(out)
    return out.getvalue().decode().splitlines()


def make_root(root: Path) -> None:
    with MemoryStore.open(root, background=False) as store:
        store.remember(f"The {MARKER} lives in the blue drawer.")
        store.persist_completed_turn(CompletedTurn(
            run_id="run-1", outcome="success", answer=f"answer with {MARKER}",
            session="web:a", speaker_kind="human-turn"))
        store.drain()


def test_journal_holds_ciphertext_and_export_holds_it_open(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_root(root)
    assert MARKER.encode() not in journal_bytes(root)
    lines = export(root)
    assert MARKER in "".join(lines)
    assert "$sealed" not in "".join(lines)  # a root that never forgot exports plain events
    texts = [e["state"].get("text") for e in map(json.loads, lines)]
    assert f"The {MARKER} lives in the blue drawer." in texts
    store_dir = KeyStore.resolve().path / root_id(root)
    db = store_dir / "records.db"
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store_dir).st_mode) == 0o700


def test_destroyed_key_is_a_tombstone_and_the_chain_still_verifies(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_root(root)
    conn = apsw.Connection(str(root / "journal.db"))
    rows = conn.execute("SELECT state FROM events WHERE topic = 'memory_es/Memory.Recorded' "
                        "AND instr(state, '\"source\":\"remember\"')").fetchall()
    conn.close()
    key_id = json.loads(bytes(rows[0][0]))["text"]["key"]
    keys = records(root)
    keys.destroy([key_id])
    keys.close()
    assert MemoryRoot.open(root).inspect().counts.total == 1  # the chain verifies
    with open_reader(root) as opened:  # the decoded event is a marked, content-free tombstone
        decoded = [e for _p, e in iter_events(opened) if getattr(e, "source", "") == "remember"]
    assert decoded[0].text == "" and is_forgotten(decoded[0])
    assert not any(is_forgotten(e) for e in decoded[1:])
    lines = export(root)
    states = [json.loads(line)["state"] for line in lines]
    recorded = [s for s in states if s.get("source") == "remember"]
    assert recorded[0]["text"] == {"$sealed": 1, "void": ""}  # no key, no ciphertext
    assert all(MARKER not in json.dumps(s) for s in recorded)
    # the turn's own record still opens: only the destroyed key's record is gone
    assert any(MARKER in json.dumps(s) for s in states)


def test_a_lost_record_key_fails_closed_never_reads_as_forgotten(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_root(root)
    db = KeyStore.resolve().path / root_id(root) / "records.db"
    conn = apsw.Connection(str(db))
    conn.execute("DELETE FROM keys")
    conn.close()
    with pytest.raises(MemoryEsError) as err:
        export(root)
    assert err.value.code == "record_key_missing"


def test_keys_reserved_but_unused_are_collected_on_the_next_writer_open(tmp_path: Path) -> None:
    """Keys come in durable chunks; a chunk's unused tail (what a crash leaves) is garbage."""
    root = tmp_path / "root"
    make_root(root)
    db = KeyStore.resolve().path / root_id(root) / "records.db"

    def ids() -> list[int]:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return [r[0] for r in conn.execute("SELECT id FROM keys ORDER BY id")]
        finally:
            conn.close()

    assert len(ids()) == CHUNK  # one chunk reserved, a few used
    with MemoryStore.open(root, background=False) as store:
        used = ids()  # the open collected the unused tail
        assert 0 < len(used) < 8
        store.remember("Another plain fact.")
        assert len(ids()) == len(used) + CHUNK  # one fresh chunk reserved, one fsync
    with MemoryStore.open(root, background=False):
        after = ids()
    assert len(after) == len(used) + 1
    assert MemoryRoot.open(root).health().status == "clean"


def test_a_destroyed_key_leaves_no_byte_in_the_key_database(tmp_path: Path) -> None:
    """secure_delete zeroes the deleted row, the checkpoint truncates the WAL that held it."""
    root = tmp_path / "root"
    make_root(root)
    db = KeyStore.resolve().path / root_id(root) / "records.db"
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    key_id, key = conn.execute("SELECT id, key FROM keys ORDER BY id LIMIT 1").fetchone()
    conn.close()

    def stored() -> bytes:
        return b"".join(p.read_bytes() for p in db.parent.glob("records.db*"))

    assert bytes(key) in stored()
    keys = records(root)
    keys.destroy([key_id])
    keys.close()
    assert bytes(key) not in stored()


def test_keys_taken_by_many_threads_are_distinct_and_durable(tmp_path: Path) -> None:
    """The pool refills below a quarter chunk while other threads go on taking."""
    import threading

    root = tmp_path / "root"
    make_root(root)
    keys = records(root)
    taken: list[tuple[int, bytes]] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [keys.take() for _ in range(300)]
        with lock:
            taken.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({key_id for key_id, _ in taken}) == len(taken) == 2400
    assert all(keys.get(key_id) == key for key_id, key in taken)
    keys.close()


def test_the_intake_fold_opens_no_sealed_field(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16: the intake view keeps no content, so folding it (every store open, every
    inspect) looks up no record key and decrypts nothing, and gives the same view as a fold
    of the fully opened events."""
    from eventsourcing.persistence import StoredEvent

    from memory_es.history import INTAKE_TOPIC_PREFIX, fold_intakes
    from memory_es.intake.state import IntakeView
    from memory_es.journal.sealing import Sealer

    root = tmp_path / "root"
    make_root(root)
    at = datetime(2026, 12, 4, tzinfo=UTC)
    with open_reader(root) as opened:
        whole = IntakeView()
        for position, oid, version, topic, state, _ in opened.recorder.rows():
            if topic.startswith(INTAKE_TOPIC_PREFIX):
                whole.apply(position, opened.app.mapper.to_domain_event(
                    StoredEvent(oid, version, topic, state)))
        assert whole.total == 1

        def no_key(self: Sealer, key_id: int) -> bytes | None:
            raise AssertionError("a record key was looked up")

        monkeypatch.setattr(Sealer, "_key", no_key)
        assert fold_intakes(opened).report(at, None) == whole.report(at, None)
        with pytest.raises(AssertionError, match="record key"):
            list(iter_events(opened))  # a read of content still opens it
