"""Forget that really erases (issue 14 item 3): on every tier the text leaves recall, the
index, Markdown, graph, sidecar, vectors and the journal itself (crypto-shredded), proven by a
byte scan of every file under the root; after a rebuild and after a replay of the export too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from helpers_attack import open_store
from helpers_capture import entity, extraction, memory, open_capture, review, script, turn
from helpers_index import index_rows
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.errors import MemoryEsError
from memory_es.transfer import replay_export

MARKER = "xqzvkptwq"  # no vowel: the Porter stemmer keeps it whole, so an FTS token would match


def scan(root: Path, needle: str = MARKER) -> list[str]:
    """Every file under the root that holds ``needle``, byte for byte (SQLite files whole:
    free pages and WAL included)."""
    data = needle.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and data in p.read_bytes())


def lite_turn(run_id: str, answer: str) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer, session="web:f",
                         speaker_kind="human-turn")


def fill(store: MemoryStore) -> None:
    store.persist_completed_turn(lite_turn("r1", "The boiler was serviced in April."))
    store.persist_completed_turn(lite_turn("r2", f"My locker code word is {MARKER} today."))
    store.persist_completed_turn(lite_turn("r3", "The cat prefers the blue bowl."))
    store.drain()


def marker_id(store: MemoryStore) -> str:
    hits = store.lexical_search(MARKER)
    assert len(hits) == 1
    return hits[0].id


def assert_gone(root: Path, store: MemoryStore | None = None) -> None:
    assert scan(root) == []
    assert MARKER not in json.dumps(MemoryRoot.open(root).recall(MARKER).to_json())
    if store is not None:
        assert store.lexical_search(MARKER) == []


@pytest.mark.parametrize("tier", ["lite", "journal"])
def test_forget_erases_every_byte_on_a_model_free_tier(tmp_path: Path, tier: str) -> None:
    root = tmp_path / "root"
    with open_store(root, tier, background=False) as store:
        fill(store)
        assert scan(root) != []  # the marker is stored (index, Markdown) before the forget
        memory_id = marker_id(store)
        receipt = store.forget(memory_id, reason="user-request")
        assert receipt.status == "forgotten"
        assert receipt.memory_ids == [memory_id]
        assert receipt.byte_scan is not None and receipt.byte_scan.clean
        assert receipt.keys_destroyed >= 2  # its line and its turn's content
        assert MARKER not in json.dumps(receipt.to_json())  # the receipt is content-free
        assert_gone(root, store)
        assert len(store.lexical_search("boiler")) == 1  # other memories stay
    assert MemoryRoot.open(root).health().status == "clean"
    with open_store(root, tier, background=False) as store:
        store.rebuild()
        assert_gone(root, store)
        assert len(store.lexical_search("bowl")) == 1
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    assert MARKER.encode() not in export.read_bytes()  # no key, no ciphertext, no text
    replayed = tmp_path / "replayed"
    replay_export(export, replayed)
    assert scan(replayed) == []
    health = MemoryRoot.open(replayed).health()
    assert health.status == "clean", health.to_json()
    with open_store(replayed, tier, background=False) as store:  # a writer open: the
        assert len(store.lexical_search("bowl")) == 1  # inherited forget destroys no key here
    again = tmp_path / "again.jsonl"
    MemoryRoot.open(replayed).export_to(again)
    assert again.read_bytes() == export.read_bytes()  # the tombstones replay byte-exact


def capture_root(root: Path) -> tuple[MemoryStore, Any]:
    plan = extraction(
        [memory(f"Morgan keeps the spare key under the {MARKER} stone", entities=["m", "a"]),
         memory("Acme Robotics builds warehouse arms", entities=["a"])],
        [entity("m", "Morgan"), entity("a", "Acme Robotics", "organization")],
        [("m", "works_at", "a")])
    return open_capture(root, script(("extract", "c1", plan),
                                     ("review", "c1", review("keep", "keep"))))


def test_forget_after_a_capture_that_named_entities_prunes_the_graph(tmp_path: Path) -> None:
    """BuJo capture: the line, its relation and the entity only it named go; the entity
    another line names stays; the turn's own text (payload, summary, plan) goes too."""
    root = tmp_path / "root"
    store, _model = capture_root(root)
    with store:
        store.persist_completed_turn(turn("c1", f"Morgan hides a key under the {MARKER} "
                                                "stone. Acme builds arms.",
                                          answer=f"Noted the {MARKER} stone."))
        assert store.drain() == 1
        assert MARKER in (root / "graph.jsonl").read_text() or scan(root)
        memory_id = marker_id(store)
        dry = store.forget(memory_id, reason="user-request", dry_run=True)
        assert dry.status == "dry_run" and dry.listing is not None
        assert MARKER not in json.dumps(dry.to_json())  # ids and kinds only
        shown = store.forget(memory_id, reason="user-request", dry_run=True, show_text=True)
        assert MARKER in json.dumps(shown.to_json())  # the owner asked to see it
        assert scan(root) != []  # a dry run changes nothing
        receipt = store.forget(memory_id, reason="user-request")
        assert receipt.byte_scan is not None and receipt.byte_scan.clean, receipt.to_json()
        assert {e["kind"] for e in receipt.erased} >= {"memory", "turn", "entity", "relation"}
        assert "graph.jsonl" in receipt.files_rewritten
        assert_gone(root, store)
        graph = (root / "graph.jsonl").read_text()
        assert "Morgan" not in graph and "works_at" not in graph
        assert "Acme Robotics" in graph  # another line names it
        assert index_rows(root, "SELECT name FROM entities") == [("Acme Robotics",)]
        assert [h.text for h in store.lexical_search("warehouse")] == [
            "Acme Robotics builds warehouse arms"]
    assert scan(root, "Morgan") == []
    health = MemoryRoot.open(root).health()
    assert health.status == "clean", health.to_json()
    store, _model = capture_root(root)
    with store:
        store.rebuild()
        assert_gone(root, store)
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    replayed = tmp_path / "replayed"
    replay_export(export, replayed)
    assert scan(replayed) == [] and scan(replayed, "Morgan") == []


def test_forget_twice_unknown_ids_and_bad_reasons(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_store(root, "lite", background=False) as store:
        fill(store)
        memory_id = marker_id(store)
        with pytest.raises(MemoryEsError) as err:
            store.forget(memory_id, reason="Not A Slug")
        assert err.value.code == "invalid_slug"
        with pytest.raises(MemoryEsError) as err:
            store.forget("0" * 64, reason="user-request")
        assert err.value.code == "memory_not_found"
        first = store.forget(memory_id, reason="user-request")
        events = len(list(store.events()))
        second = store.forget(memory_id, reason="user-request")
        assert (first.status, second.status) == ("forgotten", "already_forgotten")
        assert second.events == [] and len(list(store.events())) == events


# --------------------------------------------------------------------------------------------
# Forget by source (issue 14 item 4): a turn and what it alone supports


def test_forget_turn_keeps_a_memory_another_turn_supports(tmp_path: Path) -> None:
    """Journal tier: two turns state the same line (one content-derived memory). Forgetting
    the first turn erases its content and keeps the memory; forgetting the second then
    forgets the memory, because no live turn supports it any more."""
    root = tmp_path / "root"
    said = f"The spare fuse is in the {MARKER} tin."
    with open_store(root, "journal", background=False) as store:
        store.persist_completed_turn(lite_turn("t1", said))
        store.persist_completed_turn(lite_turn("t2", said))
        store.persist_completed_turn(lite_turn("t3", "The cat prefers the blue bowl."))
        store.drain()
        memory_id = marker_id(store)
        with pytest.raises(MemoryEsError) as err:
            store.forget_turn("nope", reason="user-request")
        assert err.value.code == "turn_not_found"
        dry = store.forget_turn("t1", reason="user-request", dry_run=True)
        assert dry.kept == [memory_id] and dry.memory_ids == []
        first = store.forget_turn("t1", reason="user-request")
        assert first.status == "forgotten" and first.kept == [memory_id]
        assert [e["topic"] for e in first.events] == ["memory_es/Intake.Forgotten"]
        assert len(store.lexical_search(MARKER)) == 1  # still supported by t2
        second = store.forget_turn("t2", reason="user-request")
        assert second.memory_ids == [memory_id] and second.kept == []
        assert second.byte_scan is not None and second.byte_scan.clean
        assert_gone(root, store)
        assert len(store.lexical_search("bowl")) == 1
        third = store.forget_turn("t2", reason="user-request")
        assert third.status == "already_forgotten"
    assert MemoryRoot.open(root).health().status == "clean"


def test_forget_turn_erases_its_capture_and_audit_line(tmp_path: Path) -> None:
    """BuJo capture: every line the turn produced, its audit line, its payload and plans."""
    root = tmp_path / "root"
    store, _model = capture_root(root)
    with store:
        store.persist_completed_turn(turn("c1", f"Morgan hides a key under the {MARKER} "
                                                "stone. Acme builds arms.",
                                          answer=f"Noted the {MARKER} stone."))
        store.drain()
        assert (root / "audit").exists()
        receipt = store.forget_turn("c1", reason="user-request")
        assert len(receipt.memory_ids) == 2 and len(receipt.turns) == 1
        assert receipt.byte_scan is not None and receipt.byte_scan.clean
        assert store.lexical_search("warehouse") == []
        assert index_rows(root, "SELECT COUNT(*) FROM audit") == [(0,)]
    assert scan(root) == [] and scan(root, "Acme") == [] and scan(root, "Morgan") == []
    assert not list((root / "audit").glob("*.md"))
    assert MemoryRoot.open(root).health().status == "clean"


def test_health_names_a_projection_row_a_forget_left_behind(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_store(root, "lite", background=False) as store:
        fill(store)
        memory_id = marker_id(store)
        store.forget(memory_id, reason="user-request")
    db = next((root / "index").glob("*/memory.db"))
    conn = apsw.Connection(str(db))
    conn.execute("INSERT INTO memory_meta (id, labels, scope, salience, from_task, text_key) "
                 "VALUES (?, '', 'agent', 0.5, 0, 'k')", (memory_id,))
    conn.close()
    findings = MemoryRoot.open(root).health().findings
    assert ("forgotten_row_present", "index") in {(f.code, f.path) for f in findings}


def test_an_entity_a_forget_pruned_can_be_named_again(tmp_path: Path) -> None:
    """A later capture naming the pruned entity names it anew (Entity.NamedAgain): no
    conflict with its first, forgotten naming; the graph shows it again; health clean."""
    root = tmp_path / "root"
    again = extraction([memory("Morgan now runs the bakery", entities=["m"])],
                       [entity("m", "Morgan")])
    plan = extraction(
        [memory(f"Morgan keeps the spare key under the {MARKER} stone", entities=["m"])],
        [entity("m", "Morgan")])
    store, _model = open_capture(root, script(
        ("extract", "c1", plan), ("review", "c1", review("keep")),
        ("extract", "c2", again), ("review", "c2", review("keep"))))
    with store:
        store.persist_completed_turn(turn("c1", f"Morgan: key under the {MARKER} stone."))
        store.drain()
        store.forget(marker_id(store), reason="user-request")
        assert not (root / "graph.jsonl").exists()  # nothing left to draw
        store.persist_completed_turn(turn("c2", "Morgan runs the bakery now."))
        store.drain()
        assert store.inspect().counts.resolved == 2
        assert "Morgan" in (root / "graph.jsonl").read_text()
        assert index_rows(root, "SELECT name FROM entities") == [("Morgan",)]
    assert scan(root) == []
    health = MemoryRoot.open(root).health()
    assert health.status == "clean", health.to_json()


def test_a_line_stored_before_sealing_is_reported_not_hidden(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A root written before sealing existed holds plain text in its journal: a forget
    still erases every projection, and its byte scan says honestly where the text is left."""
    import memory_es.store.facade as facade

    root = tmp_path / "root"
    with monkeypatch.context() as patch:
        patch.setattr(facade, "SEALED_FIELDS", None)  # what an older engine wrote
        with open_store(root, "lite", background=False) as store:
            fill(store)
    with open_store(root, "lite", background=False) as store:
        receipt = store.forget(marker_id(store), reason="user-request")
        assert receipt.status == "forgotten" and receipt.keys_destroyed == 0
        assert receipt.byte_scan is not None and not receipt.byte_scan.clean
        assert [p.startswith("journal.db") for p in receipt.byte_scan.found_in] == [True]
        assert store.lexical_search(MARKER) == []
    assert [p for p in scan(root) if not p.startswith("journal.db")] == []


def test_a_turn_still_waiting_for_work_is_refused(tmp_path: Path) -> None:
    """Its capture needs the payload and plans a forget destroys: resolve it first."""
    root = tmp_path / "root"
    with open_store(root, "lite", background=False) as store:
        store.persist_completed_turn(lite_turn("w1", f"Pending {MARKER} line."))
        with pytest.raises(MemoryEsError) as err:
            store.forget_turn("w1", reason="user-request")
        assert err.value.code == "turn_unresolved"
        store.drain()
        assert store.forget_turn("w1", reason="user-request").status == "forgotten"
    assert scan(root) == []
