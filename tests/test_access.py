"""Issue 15 item 5: access telemetry (G30, G9): the writable store counts only delivered memory
ids, once per logical turn, in every mode and tier; telemetry never changes ranking and never
enters the journal, a projection, health or MemoryJournal; forgetting a memory deletes it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from helpers_capture import (
    Clock,
    entity,
    extraction,
    memory,
    open_capture,
    review,
    script,
    turn,
)
from memory_es import MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.store.access import access_path
from memory_es.testing import WordBagEmbedder


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[MemoryStore, Clock]]:
    plan = extraction([
        memory("I prefer window seats on long flights", labels=["preference"]),
        memory("Book window seats early for long flights", labels=["lesson"]),
        memory("Morgan lives in Berlin", entities=["m"], fact=("m", "home_town", "Berlin")),
        memory("The dentist is on Elm Street")], [entity("m", "Morgan")])
    other = extraction([memory(text, source="tool") for text in (
        "Build 4411 passed", "The cat eats at six", "Rent is due monthly")])
    clock = Clock()
    store, _ = open_capture(tmp_path / "r", script(
        ("extract", "r1", plan), ("review", "r1", review("keep", "keep", "keep")),
        ("extract", "t1", other)), clock=clock)
    store.persist_completed_turn(turn("r1", "x"))
    store.persist_completed_turn(turn("t1", "x"))
    store.drain()
    yield store, clock
    store.close()


def all_ids(store: MemoryStore) -> list[str]:
    return [m.id for m in store.list_memories(limit=100).memories]


def counts(store: MemoryStore) -> dict[str, int]:
    return {k: v.access_count for k, v in store.access_stats(all_ids(store)).items()}


# --------------------------------------------------------------------------------------------
# G30: delivered ids only, once per logical turn, every mode


def test_g30_counts_delivered_ids_once_per_turn(seeded: tuple[MemoryStore, Clock]) -> None:
    store, clock = seeded
    result = store.recall("window seats on long flights", limit=1, turn="a")
    delivered = set(result.delivered())
    # the one hit and the guidance lines shown: nothing merely retrieved
    assert delivered == {result.recall.hits[0].id, *(g.id for g in result.guidance)}
    assert len(delivered) == 2
    assert counts(store) == dict.fromkeys(delivered, 1)
    store.recall("window seats on long flights", limit=1, turn="a")
    assert counts(store) == dict.fromkeys(delivered, 1)  # once per logical turn
    clock.advance(minutes=5)
    store.recall("window seats on long flights", limit=1, turn="b")
    assert counts(store) == dict.fromkeys(delivered, 2)
    stat = store.access_stats(list(delivered))[result.recall.hits[0].id]
    assert stat.last_accessed_at == "2026-05-04T09:05:00.000Z"
    assert stat.to_json() == {"lastAccessedAt": "2026-05-04T09:05:00.000Z", "accessCount": 2}
    store.recall("window seats on long flights", limit=1)
    store.recall("window seats on long flights", limit=1)  # no turn: each call is its own
    assert counts(store) == dict.fromkeys(delivered, 4)
    # original-query mode counts its deliveries too, once in its turn
    store.auto_context("Where does Morgan live now?", session="web:now", turn="c")
    original = store.recall(use_original_query=True, turn="c", limit=2)
    store.recall(use_original_query=True, turn="c", limit=2)
    sheet_rows = {r.memory_id for s in original.fact_sheets for r in s.rows}
    assert sheet_rows and all(counts(store)[i] >= 1 for i in original.delivered())
    berlin = next(h.id for h in original.recall.hits if h.text == "Morgan lives in Berlin")
    assert counts(store)[berlin] == 1 and berlin in sheet_rows
    # the same telemetry, read-only, through MemoryRoot
    root = store.root
    expected = store.access_stats(all_ids(store))
    store.close()
    with MemoryRoot.open(root) as reader:
        assert reader.access_stats(list(expected)) == expected


@pytest.mark.parametrize("mode", ["lite", "journal"])
def test_g30_lite_and_journal_count_too(tmp_path: Path, mode: str) -> None:
    config = parse_config({"mode": mode, **({"embeddings": {"dim": 256}}
                                            if mode == "journal" else {})})
    with MemoryStore.open(tmp_path / mode, config, background=False,
                          embedder=WordBagEmbedder() if mode == "journal" else None) as store:
        kept = store.remember("The boiler service is booked for Friday").memory_id
        other = store.remember("My library card number ends in 42").memory_id
        store.drain()
        hits = store.recall("boiler service", turn="x").recall.hits
        store.recall("boiler service", turn="x")
        assert [h.id for h in hits] == [kept]
        assert {k: v.access_count for k, v in store.access_stats([kept, other]).items()} == {
            kept: 1}


# --------------------------------------------------------------------------------------------
# G9: telemetry never changes ranking; it stays out of every durable or rebuilt artefact


def test_g9_heavy_access_never_changes_ranking(seeded: tuple[MemoryStore, Clock]) -> None:
    store, _ = seeded
    query = "window seats for long flights and the dentist"
    before = store.recall(query, limit=50, explain=True).to_json()
    for _ in range(40):  # hammer the weakest lines, never the strongest
        store.recall("The cat eats at six; rent is due monthly", limit=50)
    assert max(counts(store).values()) >= 40
    assert store.recall(query, limit=50, explain=True).to_json() == before


def test_g30_telemetry_stays_out_of_journal_projections_and_health(
        seeded: tuple[MemoryStore, Clock]) -> None:
    store, _ = seeded
    rows = list(store.events())
    exported = io.BytesIO()
    root = store.root
    store.recall("window seats on long flights", turn="t")
    store.recall("Where does Morgan live?")
    assert access_path(root).is_file()
    assert list(store.events()) == rows  # no journal event
    page = store.journal("2026-05-01", "2026-05-31", "UTC", limit=25).to_json()
    assert "access" not in json.dumps(page).lower()  # MemoryJournal excludes telemetry
    with MemoryRoot.open(root) as live:  # beside the open writer, its WAL files present
        assert not [f for f in live.health().findings if "access" in f.path]
    store.rebuild()
    store.close()
    with MemoryRoot.open(root) as reader:
        assert reader.health().status == "clean"
        reader.export(exported)
    assert b"access" not in exported.getvalue().lower()


def test_g30_forgetting_a_memory_deletes_its_telemetry(
        seeded: tuple[MemoryStore, Clock]) -> None:
    store, _ = seeded
    hit = store.recall("The dentist is on Elm Street", limit=1).recall.hits[0]
    assert hit.text == "The dentist is on Elm Street"
    assert store.access_stats([hit.id])[hit.id].access_count == 1
    assert store.forget(hit.id, reason="user-request").status == "forgotten"
    assert store.access_stats([hit.id]) == {}
    conn = apsw.Connection(str(access_path(store.root)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT count(*) FROM access WHERE memory_id = ?",
                            (hit.id,)).fetchone()[0] == 0
    finally:
        conn.close()
