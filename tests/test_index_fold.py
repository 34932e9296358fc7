"""A rebuild's fold reads only what the index folds (rebuild time).

``iter_events(index_only=True)`` skips the events the index passes over (a Lite journal's
resolutions) undecoded and decodes an admission without its sealed summary unless BuJo
audits it. These tests hold it to the full fold: the same index, row for row, on every
golden fixture journal and on a root with forgets and BuJo audit lines; a topic this
version does not know still fails the rebuild instead of being passed over; and a rebuild
(which seals nothing) leaves the collection of unused record keys to the next sealing writer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from eventsourcing.persistence import Notification
from eventsourcing.utils import TopicError

from helpers_replay import FIXTURES, regen
from memory_es.config import parse_config
from memory_es.history import iter_events, open_reader
from memory_es.intake import CompletedTurn
from memory_es.journal.records import CHUNK
from memory_es.keystore import KeyStore
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.transfer import rebuild_root, replay_export
from projections.compare import compare_index
from projections.replay import build_generation
from projections.sqlite_index import INDEX_PASSES_OVER, INDEX_SCREENS


def _assert_same_fold(root: Path, scratch: Path) -> tuple[int, int]:
    """Fold ``root``'s journal into two fresh indexes, fully and as a rebuild does; they
    must hold the same rows. Returns (events, events the rebuild's fold did not decode)."""
    with open_reader(root) as opened:
        full = build_generation(scratch / "full.db", iter_events(opened))
        events = list(iter_events(opened, index_only=True))
        lean = build_generation(scratch / "lean.db", iter(events))
    try:
        assert full.position == lean.position == len(events)
        assert list(compare_index(full.conn, lean.conn, "lean.db")) == []
    finally:
        full.close()
        lean.close()
    return len(events), sum(1 for _, event in events if event is None)


@pytest.mark.parametrize("fixture", regen.fixture_dirs(FIXTURES), ids=lambda p: p.name)
def test_the_lean_fold_equals_the_full_fold_on_every_golden_journal(
        fixture: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    replay_export(fixture / "journal.jsonl", root)
    events, skipped = _assert_same_fold(root, tmp_path)
    assert events > 0
    if fixture.name == "lite":  # its resolutions and admissions are never folded
        assert skipped >= 2 * events // 3 - 1


def test_the_lean_fold_keeps_bujo_audit_lines_and_forgets(tmp_path: Path) -> None:
    root = tmp_path / "root"
    config = parse_config(regen.BUJO_AUDIT)
    with MemoryStore.open(root, config, background=False) as store:
        for n in range(6):
            store.persist_completed_turn(CompletedTurn(
                run_id=f"run-{n}", outcome="success", answer=f"Audit line number {n}."))
        store.drain()
        store.remember("The spare key is under the blue pot.")
        gone = store.remember("The old garage code was 4711.")
        store.drain()
        assert store.forget(gone.memory_id, reason="user-request").status == "forgotten"
        assert store.forget_turn("run-2", reason="user-request").status == "forgotten"
        store.drain()
    events, skipped = _assert_same_fold(root, tmp_path)
    assert 0 < skipped < events
    with apsw.Connection(str(tmp_path / "lean.db")) as conn:
        audited = conn.execute("SELECT count(*) FROM audit").fetchone()
    assert audited == (5,)  # six BuJo admissions audited, one forgotten since


def test_every_screened_topic_is_one_the_index_folds() -> None:
    assert INDEX_SCREENS and not set(INDEX_SCREENS) & INDEX_PASSES_OVER
    assert "memory_es/Intake.Resolved" in INDEX_PASSES_OVER
    assert "memory_es/Memory.Recorded" not in INDEX_PASSES_OVER


def test_a_topic_this_version_does_not_know_still_fails_the_fold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Passing over is for this version's own events: a newer version's event (a topic no
    class here knows) is decoded, and fails, instead of being skipped as 'not folded'."""
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer="A plain note."))
        store.drain()
    with open_reader(root) as opened:
        original = opened.recorder.select_notifications

        def from_the_future(*args: Any, **kwargs: Any) -> list[Notification]:
            return [Notification(id=n.id, originator_id=n.originator_id,
                                 originator_version=n.originator_version,
                                 topic=n.topic.replace("Resolved", "FromTheFuture"),
                                 state=n.state)
                    for n in original(*args, **kwargs)]

        monkeypatch.setattr(opened.recorder, "select_notifications", from_the_future)
        with pytest.raises(TopicError, match="FromTheFuture"):
            list(iter_events(opened, index_only=True))


def test_a_rebuild_leaves_unused_record_keys_to_the_next_sealing_writer(
        tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        store.remember("A sealed fact.")
    root_id = json.loads((root / ".memory-es-schema").read_text())["root_id"]
    db = KeyStore.resolve().path / root_id / "records.db"

    def key_count() -> int:
        with apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY) as conn:
            return int(conn.execute("SELECT count(*) FROM keys").fetchone()[0])

    reserved = key_count()
    assert reserved == CHUNK
    rebuild_root(root)  # seals nothing: no scan of every sealed row, no key touched
    assert key_count() == reserved
    with MemoryStore.open(root, background=False):
        assert 0 < key_count() < reserved  # the sealing writer collects the unused tail
    assert MemoryRoot.open(root).health().status == "clean"


def test_rebuild_of_a_lite_root_matches_what_the_writer_projected(tmp_path: Path) -> None:
    """End to end through the CLI's library call: health after a rebuild is clean and the
    rebuild rewrote no Markdown byte (K10)."""
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        for n in range(30):
            store.persist_completed_turn(CompletedTurn(
                run_id=f"lite-{n}", outcome="success", answer=f"Lite observation {n}."))
        store.drain()
    report = rebuild_root(root)
    assert report.written == () and report.removed == ()
    assert MemoryRoot.open(root).health().status == "clean"
