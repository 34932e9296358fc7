"""Issue 15 item 5: the turn-scoped lookup cache (G19, G34, G35, J13): original-query mode
reuses the turn's automatic lookup uncut, never embedding or retrieving again; identical
normalized queries in a turn share one lookup; an in-turn write, an empty question, turn
cleanup and the read-only door make the mode unavailable with one typed error."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers_capture import (
    BagEmbedder,
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
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.host.turns import MAX_OPEN_TURNS, TurnLookups
from memory_es.recall.explicit import Lookup

QUESTION = "Which window seats on long flights do I like?"


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[MemoryStore, BagEmbedder]:
    plan = extraction([
        memory("I prefer window seats on long flights", labels=["preference"]),
        memory("Book window seats early for long flights", labels=["lesson"]),
        memory("Morgan lives in Berlin", entities=["m"]),
        memory("Morgan works at Acme", entities=["m"]),
        memory("The dentist is on Elm Street")], [entity("m", "Morgan")])
    other = extraction([memory(text, source="tool") for text in (
        "Build 4411 passed", "The cat eats at six", "Rent is due monthly")])
    embedder = BagEmbedder()
    store, _ = open_capture(tmp_path / "r", script(
        ("extract", "r1", plan), ("review", "r1", review("keep", "keep", "keep", "keep")),
        ("extract", "t1", other)), embedder=embedder)
    store.persist_completed_turn(turn("r1", "x"))
    store.persist_completed_turn(turn("t1", "x"))
    store.drain()
    yield store, embedder
    store.close()


def unavailable(store: MemoryStore | MemoryRoot, turn_id: str) -> str:
    with pytest.raises(MemoryEsError) as e:
        store.recall(use_original_query=True, turn=turn_id)
    assert e.value.code == "recall_original_unavailable" and "\n" not in str(e.value)
    return str(e.value)


# --------------------------------------------------------------------------------------------
# G19, G34: the turn's lookup, uncut, with the notes, without a second embedding


def test_g34_original_query_reuses_the_turns_lookup_uncut(
        seeded: tuple[MemoryStore, BagEmbedder]) -> None:
    store, embedder = seeded
    bound = store.auto_context(QUESTION, session="web:now", turn="turn-1")
    assert bound == store.auto_context(QUESTION, session="web:now")  # binding changes nothing
    calls = embedder.calls
    original = store.recall(use_original_query=True, turn="turn-1", limit=50)
    again = store.recall(use_original_query=True, turn="turn-1", limit=50)
    assert embedder.calls == calls  # never embedded again: the same lookup
    cut = store.recall(QUESTION, limit=50)
    hits = [h.id for h in original.recall.hits]
    assert hits == [h.id for h in again.recall.hits]
    # uncut (G19): every live line of the lookup, weak ones too, still in ranking order
    assert len(hits) == 8 and len(cut.recall.hits) < len(hits)
    assert hits[:len(cut.recall.hits)] == [h.id for h in cut.recall.hits]
    scores = [h.score for h in original.recall.hits]
    assert scores == sorted(scores, reverse=True) and min(scores) < 0.3
    explained = store.recall(use_original_query=True, turn="turn-1", limit=50, explain=True)
    assert {h.explanation["cut"] for h in explained.recall.hits if h.explanation} == {
        "uncut: original-query mode keeps the turn's lookup whole (G19)"}
    # the same notes and guidance as a deliberate recall of that question
    assert original.recall.notes == cut.recall.notes
    assert [g.id for g in original.guidance] == [g.id for g in cut.guidance] != []


def test_g34_original_query_still_expands_one_graph_hop(
        seeded: tuple[MemoryStore, BagEmbedder]) -> None:
    store, _ = seeded
    store.auto_context("Where does Morgan live these days?", session="web:now", turn="t")
    lookup = store.reads._turns.original("t")
    berlin = [s for s in lookup.scored if s.candidate.text == "Morgan lives in Berlin"]
    # a turn whose bounded lookup held only the Berlin line: Acme comes in by the graph
    store.reads._turns.keep("narrow", Lookup(lookup.query, lookup.query_vector,
                                             tuple(berlin)), original=True)
    result = store.recall(use_original_query=True, turn="narrow", limit=50)
    assert [h.text for h in result.recall.hits] == ["Morgan lives in Berlin",
                                                     "Morgan works at Acme"]


def test_g34_query_and_use_original_query_are_mutually_exclusive(
        seeded: tuple[MemoryStore, BagEmbedder]) -> None:
    store, _ = seeded
    store.auto_context(QUESTION, turn="t")
    with pytest.raises(InvalidArgumentError) as both:
        store.recall("window seats", use_original_query=True, turn="t")
    assert both.value.code == "recall_query_conflict"
    with pytest.raises(InvalidArgumentError) as neither:
        store.recall()
    assert neither.value.code == "recall_invalid_query"
    assert "needs turn=" in unavailable(store, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError) as bad_turn:
        store.recall("x", turn="")
    assert bad_turn.value.code == "recall_invalid_turn"
    with pytest.raises(InvalidArgumentError):
        store.recall(use_original_query=True, turn="t", as_of="2026-05-04T10:00:00Z")


def test_g34_unavailable_after_write_empty_question_cleanup_and_read_only(
        seeded: tuple[MemoryStore, BagEmbedder], tmp_path: Path) -> None:
    store, _ = seeded
    assert "not open" in unavailable(store, "never-bound")
    store.auto_context(QUESTION, turn="remember")
    store.remember("I also like aisle seats on short hops")  # a non-duplicate in-turn write
    assert "written" in unavailable(store, "remember")
    store.auto_context(QUESTION, turn="duplicate")
    assert store.remember("I also like aisle seats on short hops").status == "duplicate"
    store.recall(use_original_query=True, turn="duplicate")  # a duplicate writes nothing
    store.auto_context(QUESTION, turn="admitted")
    assert store.persist_completed_turn(turn("r9", "a new turn")).status == "admitted"
    assert "written" in unavailable(store, "admitted")
    store.auto_context(" ¿? ", turn="empty")
    assert "empty" in unavailable(store, "empty")
    store.auto_context(QUESTION, turn="ended")
    store.recall(use_original_query=True, turn="ended")
    assert store.end_turn("ended") is True and store.end_turn("ended") is False
    with pytest.raises(InvalidArgumentError):
        store.end_turn(None)  # type: ignore[arg-type]
    assert "not open" in unavailable(store, "ended")
    store.auto_context(QUESTION, turn="stranger", owner=False)  # no lookup for a non-owner
    assert "no automatic lookup" in unavailable(store, "stranger")
    root = store.root
    store.close()
    with MemoryRoot.open(root) as reader:
        assert "read-only" in unavailable(reader, "remember")
    with MemoryStore.open(tmp_path / "lite", parse_config({"mode": "lite"}),
                          background=False) as lite:  # capability-free: no vectors
        lite.auto_context(QUESTION, turn="lite")
        assert "no automatic lookup" in unavailable(lite, "lite")


# --------------------------------------------------------------------------------------------
# G35, J13: one lookup per normalized query and turn; a write invalidates them


def test_g35_identical_normalized_queries_share_one_lookup(
        seeded: tuple[MemoryStore, BagEmbedder]) -> None:
    store, embedder = seeded
    store.auto_context(QUESTION, session="web:now", turn="t")
    calls = embedder.calls
    shared = store.recall("  which WINDOW seats on long   flights do i like? ", turn="t")
    assert embedder.calls == calls  # the automatic lookup, shared (no embedding request)
    assert [h.id for h in shared.recall.hits] == [h.id for h in store.recall(QUESTION).recall.hits]
    calls = embedder.calls
    store.recall("the dentist", turn="t")
    store.recall("The  Dentist", turn="t")
    assert embedder.calls == calls + 1  # a different tool query searches once, then shares
    store.recall("the dentist")
    assert embedder.calls == calls + 2  # no turn: its own lookup
    store.remember("The dentist moved to Oak Street")
    store.recall("the dentist", turn="t")
    assert embedder.calls == calls + 3  # J13: the write invalidated the turn's searches


def test_g35_turn_cache_is_bounded() -> None:
    turns = TurnLookups()
    for n in range(MAX_OPEN_TURNS + 1):
        turns.keep(f"t{n}", Lookup("q", None, ()), original=True)
    assert not turns.is_open("t0") and turns.is_open(f"t{MAX_OPEN_TURNS}")


def test_g34_kept_lookup_never_serves_a_line_forgotten_or_dropped_since(
        seeded: tuple[MemoryStore, BagEmbedder]) -> None:
    store, _ = seeded
    store.auto_context(QUESTION, session="web:now", turn="t")
    before = store.recall(use_original_query=True, turn="t", limit=50).recall.hits
    by_text = {h.text: h.id for h in before}
    store.forget(by_text["The dentist is on Elm Street"], reason="user-request")
    store.set_status(by_text["Rent is due monthly"], "dropped")
    after = store.recall(use_original_query=True, turn="t", limit=50).recall.hits
    assert {h.text for h in after} == set(by_text) - {"The dentist is on Elm Street",
                                                      "Rent is due monthly"}
    assert [h.score for h in after] == [h.score for h in before
                                        if h.text in {a.text for a in after}]


def test_g34_a_bound_turn_leaves_the_automatic_context_as_it_was(tmp_path: Path) -> None:
    plan = extraction([memory("I prefer window seats on long flights", labels=["preference"]),
                       memory("The dentist is on Elm Street")])
    store, _ = open_capture(tmp_path / "p", script(("extract", "r1", plan),
                                                   ("review", "r1", review("keep"))),
                            profile={"enabled": True})
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
        plain = store.auto_context(QUESTION, session="web:now")
        bound = store.auto_context(QUESTION, session="web:now", turn="t")
        original = store.recall(use_original_query=True, turn="t", limit=50)
    assert plain.profile and bound == plain  # the profile's line is not repeated either way
    # the turn's lookup is the raw pool: the deliberate mode still finds the profile's line
    assert "I prefer window seats on long flights" in [h.text for h in original.recall.hits]
