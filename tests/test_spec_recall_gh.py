"""Explicit recall (G) and the automatic block (H) through real stores on real roots: the SPEC
IDs the older recall tests left unnamed.

Stores are Journal roots with a word-bag embedder (the same words give cosine 1, no shared word
cosine 0; :class:`Synonyms` also folds a few words together so a paraphrase with no shared word
is close in vector space while FTS cannot see it), and BuJo capture roots driven by the scripted
model for the graph cases.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memory_es.recall.retrieve.candidates as candidates_module
from helpers_capture import (
    entity,
    extraction,
    memory,
    open_capture,
    reconcile,
    review,
    script,
    turn,
)
from helpers_index import index_rows
from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.ids import run_hash
from memory_es.recall import AUTO_HEADING
from memory_es.root import MemoryRoot
from memory_es.testing import WordBagEmbedder
from projections.replay import managed_files

DIM = 4096  # wide enough that no two words of these tests share a bucket
JOURNAL: dict[str, Any] = {"mode": "journal", "embeddings": {"dim": DIM}}
CONCEPT = {"beverage": "tea", "drink": "tea"}  # paraphrase words that share tea's vector


class Synonyms(WordBagEmbedder):
    """A word bag where ``beverage`` and ``drink`` are ``tea``: a paraphrase the vectors see
    and full-text search cannot."""

    def vector(self, text: str) -> np.ndarray:
        words = [CONCEPT.get(w, w) for w in text.casefold().split()]
        return super().vector(" ".join(words))


class Clock:
    """One second per reading from 2026-12-02 09:00 UTC: admission order is date order."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def journal_store(root: Path, texts: Sequence[str], *, embedder: WordBagEmbedder | None = None,
                  sessions: Sequence[str | None] | None = None) -> MemoryStore:
    """A Journal store holding ``texts`` (one turn each, in order), every vector embedded."""
    store = MemoryStore.open(root, parse_config(JOURNAL), background=False,
                             embedder=embedder or Synonyms(DIM), clock=Clock())
    for i, text in enumerate(texts):
        session = sessions[i] if sessions is not None else "web:older"
        result = store.persist_completed_turn(CompletedTurn(
            run_id=f"r{i}", outcome="success", answer=text, session=session))
        assert result.status == "admitted", result
    store.drain()
    while store.background.embed_pending():
        pass
    assert store.vector_backlog() == 0
    return store


def block_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- – ")]


def texts_of(result: Any) -> list[str]:
    return [item["text"] for item in result.to_json()["results"]]


def memory_ids(root: Path) -> dict[str, str]:
    return {text: mid for mid, text in index_rows(root, "SELECT id, text FROM memories")}


FACTS = ["I like green tea", "The rocket launch moved to Friday", "Green paint for the fence",
         "My sister lives in Lisbon"]


@pytest.fixture
def facts(tmp_path: Path) -> Iterator[tuple[Path, MemoryStore, Synonyms]]:
    root = tmp_path / "facts"
    embedder = Synonyms(DIM)
    with journal_store(root, FACTS, embedder=embedder) as store:
        yield root, store, embedder


# -- G1: recall is read-only and asks no chat model ---------------------------------------------


def _snapshot(root: Path) -> dict[str, Any]:
    """Everything recall could change: managed files, journal head, index rows."""
    files = {rel: (root / rel).read_bytes() for rel in managed_files(root)}
    head = MemoryRoot.open(root).health().journal_position
    rows = index_rows(root, "SELECT rowid, id, text, status FROM memories ORDER BY rowid")
    vectors = index_rows(root, "SELECT rowid, identity, vector FROM vectors ORDER BY rowid")
    return {"files": files, "head": head, "rows": rows, "vectors": vectors}


def test_g1_recall_is_read_only_and_runs_no_chat_model(tmp_path: Path) -> None:
    root = tmp_path / "bujo"
    plan = extraction([memory("Morgan works at Acme Robotics", entities=["m", "a"]),
                       memory("I prefer window seats", labels=["preference"])],
                      [entity("m", "Morgan"), entity("a", "Acme Robotics", "organization")],
                      [("m", "works_at", "a")])
    # One spare reply: a recall that asked the model anything would consume it.
    records = script(("extract", "r1", plan), ("review", "r1", review("keep")),
                     ("extract", "spare", plan))
    embedder = WordBagEmbedder()
    store, model = open_capture(root, records, embedder=embedder)
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
        while store.background.embed_pending():
            pass
        calls_before = list(model.calls)
        before = _snapshot(root)
        embeds_before = embedder.calls
        hit = store.recall("Where does Morgan work, at Acme Robotics?", limit=5)
        assert hit.recall.hits and hit.degraded is False
        store.recall("window seats", explain=True)
        store.auto_recall("Which seats do I prefer on the train, window or aisle?")
        store.lexical_search("Morgan")
        # embeddings only: one query vector per semantic lookup, never a memory's
        assert embedder.calls - embeds_before == 3
        assert model.calls == calls_before  # no chat LLM
        assert model.remaining() == {("extract", run_hash("spare")): 1}
        assert _snapshot(root) == before
    # the read-only CLI door (memory-es search) neither writes nor asks a model
    before = _snapshot(root)
    assert MemoryRoot.open(root).recall("Morgan Acme").recall.hits
    assert _snapshot(root) == before


# -- G2: hybrid retrieval, BM25 FTS plus vectors ------------------------------------------------


def test_g2_bm25_and_vector_retrievers_both_feed_the_result(
        facts: tuple[Path, MemoryStore, Synonyms]) -> None:
    root, store, embedder = facts
    ids = memory_ids(root)
    # The vector side: a paraphrase with no shared word; FTS finds nothing.
    assert store.lexical_search("beverage") == []
    result = store.recall("beverage", explain=True)
    body = result.to_json()["results"]
    assert body[0]["id"] == ids["I like green tea"]
    assert body[0]["explain"]["vectorRank"] == 1
    assert body[0]["explain"]["lexicalRank"] is None
    # The keyword side: FTS bm25 ranks are the lexical ranks recall fuses.
    bm25 = [hit.id for hit in store.lexical_search("green")]
    assert set(bm25) == {ids["I like green tea"], ids["Green paint for the fence"]}
    fused = store.recall("green", limit=10, explain=True).to_json()["results"]
    assert fused
    for item in fused:  # each hit's lexical rank is its place in the bm25 order
        assert bm25[item["explain"]["lexicalRank"] - 1] == item["id"]
    assert all(item["explain"]["vectorRank"] is not None for item in fused)
    # Without the vector side (provider down) only the keyword retriever is left.
    embedder.down = True
    lexical = store.recall("which beverage")
    assert lexical.degraded is True and lexical.recall.hits == ()
    assert texts_of(store.recall("rocket launch")) == ["The rocket launch moved to Friday"]


# -- G12 / G29 / H22: one hop of graph expansion, cut before and after ---------------------------

GRAPH_QUERY = "Morgan works at Acme Robotics welder guild"
SEED = "Morgan works at Acme Robotics"
CLOSE_NEIGHBOUR = "Morgan works at Acme Robotics now"  # shares Acme with the seed
FAR_NEIGHBOUR = "Sam is a violinist"  # Sam is related to Morgan
CUT_DIRECT = "Welder guild"  # a direct candidate the first cut drops
ITS_NEIGHBOUR = "Morgan works at Acme Robotics yearly"  # shares only the guild with it


def _graph_store(root: Path) -> MemoryStore:
    plan = extraction(
        [memory(SEED, entities=["m", "a"]), memory(CLOSE_NEIGHBOUR, entities=["a"]),
         memory(FAR_NEIGHBOUR, entities=["s"]), memory(CUT_DIRECT, entities=["w"]),
         memory(ITS_NEIGHBOUR, entities=["w"])],
        [entity("m", "Morgan"), entity("a", "Acme Robotics", "organization"),
         entity("s", "Sam"), entity("w", "Welder guild", "organization")],
        [("s", "sibling_of", "m")])
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review(*["keep"] * 5))))
    store.persist_completed_turn(turn("r1", "x"))
    store.drain()
    while store.background.embed_pending():
        pass
    return store


@pytest.fixture
def graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[MemoryStore, list]]:
    """A BuJo root whose direct pool is one deep per retriever (the fifty-deep pool is G31's
    test), so a five-line store has lines outside it that only the graph reaches; every
    pool and hop is logged."""
    monkeypatch.setattr(candidates_module, "RETRIEVER_DEPTH", 1)
    monkeypatch.setattr(candidates_module, "VECTOR_DEPTH", 1)
    log: list[tuple[str, list[str], list[str]]] = []
    real_pool, real_hop = candidates_module.candidate_pool, candidates_module.expand_one_hop

    def pool(*args: Any, **kwargs: Any) -> Any:
        out = real_pool(*args, **kwargs)
        log.append(("pool", [c.text for c in out], []))
        return out

    def hop(conn: Any, seeds: Any, **kwargs: Any) -> Any:
        out = real_hop(conn, seeds, **kwargs)
        log.append(("hop", [c.text for c in seeds], [c.text for c in out]))
        return out

    monkeypatch.setattr(candidates_module, "candidate_pool", pool)
    monkeypatch.setattr(candidates_module, "expand_one_hop", hop)
    with _graph_store(tmp_path / "graph") as store:
        log.clear()
        yield store, log


def test_g12_direct_hits_are_cut_before_the_hop_and_the_final_list_once_more(
        graph: tuple[MemoryStore, list]) -> None:
    store, log = graph
    result = store.recall(GRAPH_QUERY, limit=10, explain=True)
    [(_, pool, _), (_, seeds, neighbours)] = log
    assert pool == [SEED, CUT_DIRECT]
    # First cut: the weak direct candidate never seeds the hop, so its neighbour stays out
    # although it would score close to the seed.
    assert seeds == [SEED]
    assert ITS_NEIGHBOUR not in neighbours
    assert neighbours == [CLOSE_NEIGHBOUR, FAR_NEIGHBOUR]
    # Second cut over direct hits plus neighbours: the far neighbour is dropped.
    body = result.to_json()["results"]
    assert [(item["text"], item["explain"]["graphHop"]) for item in body] == [
        (SEED, False), (CLOSE_NEIGHBOUR, True)]
    best = body[0]["score"]
    assert all(best - item["score"] <= 0.15 for item in body)


def test_g29_expansion_is_explicit_bujo_only_and_within_the_limit(
        graph: tuple[MemoryStore, list], tmp_path: Path) -> None:
    store, log = graph
    assert texts_of(store.recall(GRAPH_QUERY, limit=2)) == [SEED, CLOSE_NEIGHBOUR]
    assert texts_of(store.recall(GRAPH_QUERY, limit=1)) == [SEED]  # the limit holds
    assert [kind for kind, _, _ in log].count("hop") == 2
    # The automatic block never expands (L5, H22).
    log.clear()
    block = store.auto_recall("Morgan works at Acme Robotics these days, right?")
    assert [kind for kind, _, _ in log] == ["pool"]
    assert CLOSE_NEIGHBOUR not in block
    # A Journal root with the same lines (each its own conversation, so no line is read with
    # the turn before it) has no graph to expand.
    texts = [SEED, CLOSE_NEIGHBOUR, FAR_NEIGHBOUR, CUT_DIRECT, ITS_NEIGHBOUR]
    with journal_store(tmp_path / "journal", texts, embedder=WordBagEmbedder(),
                       sessions=[f"web:{n}" for n in range(len(texts))]) as journal:
        log.clear()
        assert texts_of(journal.recall(GRAPH_QUERY, limit=10)) == [SEED]
        assert "hop" not in [kind for kind, _, _ in log]


def test_h22_the_automatic_block_is_direct_only_with_no_graph_answer(
        graph: tuple[MemoryStore, list]) -> None:
    store, log = graph
    explicit = texts_of(store.recall("Morgan works at Acme Robotics", limit=10))
    assert CLOSE_NEIGHBOUR in explicit  # explicit recall reached it through the graph
    log.clear()
    block = store.auto_recall("Morgan works at Acme Robotics, is that still right?")
    assert block.startswith(AUTO_HEADING)
    assert block_lines(block) == [f"- – {SEED} (recorded 2026-05-04; current; you said)"]
    assert "hop" not in [kind for kind, _, _ in log]
    # no synthesized graph answer: no relation, no entity listing, no neighbour
    for word in ("sibling_of", "Sam", "Welder", CLOSE_NEIGHBOUR):
        assert word not in block


# -- G18: currentness and evidence are additive ---------------------------------------------------


def test_g18_currentness_and_evidence_are_additive_fields(tmp_path: Path) -> None:
    root = tmp_path / "bujo"
    morgan = [entity("m", "Morgan")]
    store, _ = open_capture(root, script(
        ("extract", "r1", extraction([memory("Morgan lives in Berlin", entities=["m"])],
                                     morgan)),
        ("review", "r1", review("keep")),
        ("extract", "r2", extraction([memory("Morgan moved to Madrid", entities=["m"])],
                                     morgan)),
        ("review", "r2", review("keep")),
        ("reconcile", "r2", reconcile({"action": "SUPERSEDE", "target": "m1",
                                       "text": "Morgan lives in Madrid"}))))
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.persist_completed_turn(turn("r2", "y"))
        store.drain()
        while store.background.embed_pending():
            pass
        result = store.recall("Morgan lives in Berlin or Madrid", limit=10)
    body = result.to_json()
    items = {item["text"]: item for item in body["results"]}
    assert set(items) == {"Morgan lives in Berlin", "Morgan lives in Madrid"}
    base_keys = {"id", "score", "text", "type", "status", "createdAt"}
    for text, item in items.items():
        # the existing fields keep their meaning: the stored id and text, a float score
        assert base_keys <= set(item) <= base_keys | {"currentness", "source"}
        assert item["id"] == memory_ids(root)[text]
        assert isinstance(item["score"], float)
    assert items["Morgan lives in Madrid"]["currentness"] == "current"
    assert items["Morgan lives in Berlin"]["currentness"] == "superseded"
    assert "evidence" not in items["Morgan lives in Madrid"]
    assert body["evidence"] is None and body["notes"] == []
    # the text form: a current hit is the old line; only the superseded one gains a marker
    lines = result.text.splitlines()
    current = next(line for line in lines if line.endswith("Morgan lives in Madrid"))
    assert "[superseded]" not in current and "current" not in current
    old_line = next(line for line in lines if line.endswith("Morgan lives in Berlin"))
    assert "[superseded]" in old_line


# -- G21: a backend failure is an explicit degraded result ----------------------------------------


def test_g21_a_provider_failure_degrades_explicitly_and_never_fabricates(
        facts: tuple[Path, MemoryStore, Synonyms]) -> None:
    root, store, embedder = facts
    ids = set(memory_ids(root).values())
    embedder.down = True
    for query in ("green tea", "which beverage", "rocket", "nothing matches this"):
        result = store.recall(query, limit=10)
        assert (result.degraded, result.reason) == (True, "provider_unavailable")
        body = result.to_json()
        assert body["degraded"] is True and body["reason"] == "provider_unavailable"
        for item in body["results"]:
            assert item["id"] in ids  # a stored memory, never an invented one
            assert set(query.split()) & set(item["text"].casefold().split())
    assert texts_of(store.recall("which beverage")) == []  # the vectors it lacks stay lacking
    context = store.auto_context("Which beverage do I like to drink in the morning?")
    assert (context.text, context.degraded, context.reason) == ("", True, "provider_unavailable")
    embedder.down = False
    assert store.recall("which beverage").degraded is False


# -- G24: explicit hits keep the backend's ranking -------------------------------------------------


def test_g24_explicit_hits_keep_the_backend_ranking(tmp_path: Path) -> None:
    # The weaker match is recorded first: ranking must follow the score, never the date
    # (the automatic block lists oldest first, H8; explicit recall does not).
    texts = ["I really like green tea", "Green tea with lemon", "I like green tea",
             "The rocket launch moved to Friday"]
    root = tmp_path / "rank"
    with journal_store(root, texts) as store:
        result = store.recall("I like green tea", limit=10)
        body = result.to_json()["results"]
        scores = [item["score"] for item in body]
        assert [item["text"] for item in body][:2] == ["I like green tea",
                                                       "I really like green tea"]
        assert scores == sorted(scores, reverse=True)
        assert body[0]["createdAt"] > body[1]["createdAt"]  # newer first: not date order
        # the text form lists the same hits in the same order
        lines = [line for line in result.text.splitlines() if line[:1].isdigit()]
        assert [line.rsplit("] ", 1)[-1] for line in lines] == [i["text"] for i in body]
        # a smaller limit is a prefix of the ranking, never a re-ranking
        for limit in range(1, len(body) + 1):
            assert texts_of(store.recall("I like green tea", limit=limit)) == \
                [i["text"] for i in body][:limit]


# -- G32 / H2: language-neutral, scores only ------------------------------------------------

PARALLEL = {
    "en": (["Morgan likes tea but not coffee", "Morgan likes coffee but not tea"],
           "Does Morgan like tea or coffee?", "coffee or tea Morgan like Does?", "but not"),
    "pl": (["Marta lubi herbatę ale nie kawę", "Marta lubi kawę ale nie herbatę"],
           "Czy Marta lubi herbatę czy kawę?", "kawę czy herbatę Marta lubi Czy?", "ale nie"),
    "es": (["A Diego le gusta el té pero no el café", "A Diego le gusta el café pero no el té"],
           "¿A Diego le gusta el té o el café?", "el café o el té gusta le Diego A?", "pero no"),
}
OTHER = ["The rocket launch moved to Friday", "Start rakiety przesunięto na piątek",
         "El lanzamiento del cohete pasó al viernes"]


@pytest.fixture
def parallel(tmp_path: Path) -> Iterator[MemoryStore]:
    texts = [t for lines, _, _, _ in PARALLEL.values() for t in lines] + OTHER
    with journal_store(tmp_path / "parallel", texts, embedder=WordBagEmbedder(DIM)) as store:
        yield store


def test_g32_explicit_recall_is_language_neutral(parallel: MemoryStore, tmp_path: Path) -> None:
    for lang, (lines, question, shuffled, _) in PARALLEL.items():
        result = parallel.recall(question, limit=10)
        assert result.degraded is False, lang
        assert sorted(texts_of(result)) == sorted(lines), lang  # its own language's pair
        # no question grammar: the same words in another order score the same
        again = parallel.recall(shuffled, limit=10)
        assert [(h.id, h.score) for h in again.recall.hits] == \
            [(h.id, h.score) for h in result.recall.hits], lang
    # no stop-word list in any language: words like "but not" count like any other
    with MemoryStore.open(tmp_path / "lite", background=False) as lite:
        texts = [t for lines, _, _, _ in PARALLEL.values() for t in lines]
        for i, text in enumerate(texts):
            lite.persist_completed_turn(CompletedTurn(run_id=f"l{i}", outcome="success",
                                                      answer=text))
        lite.drain()
        for lang, (lines, _, _, function_words) in PARALLEL.items():
            assert sorted(texts_of(lite.recall(function_words, limit=10))) == sorted(lines), lang


def test_h2_the_automatic_block_selects_by_score_in_any_language(parallel: MemoryStore) -> None:
    shapes = {}
    for lang, (lines, question, shuffled, _) in PARALLEL.items():
        block = parallel.auto_recall(question)
        shown = block_lines(block)
        assert sorted(shown) == sorted(f"- – {t} (recorded 2026-12-02; current)"
                                       for t in lines), lang
        # word order and question marks mean nothing: the block is the same
        assert parallel.auto_recall(shuffled) == block, lang
        shapes[lang] = len(shown)
    assert set(shapes.values()) == {2}  # the same behaviour in every language


# -- G33: weak evidence is said, and only structured facts conflict ------------------------------


def test_g33_weak_evidence_is_flagged_and_only_structured_facts_conflict(
        parallel: MemoryStore, tmp_path: Path) -> None:
    # Two opposite statements with no structured fact: evidence, not a conflict note.
    strong = parallel.recall("Does Morgan like tea or coffee?")
    assert len(strong.recall.hits) == 2
    assert strong.recall.evidence is None and strong.recall.notes == ()
    # A merely related best hit is flagged as weak, never presented as an answer.
    weak = parallel.recall("Morgan rocket")
    assert weak.recall.hits  # still shown, as evidence
    assert weak.recall.evidence == "insufficient"
    assert weak.text.startswith("Insufficient evidence:")
    assert weak.to_json()["evidence"] == "insufficient"
    # Structured, conflicting current facts do produce the conflict note.
    root = tmp_path / "facts"
    plan = extraction([
        memory("Morgan works at Acme", entities=["m"], fact=("m", "employer", "Acme")),
        memory("The contract lists Morgan at Globex", source="document", entities=["m"],
               fact=("m", "employer", "Globex"))], [entity("m", "Morgan")])
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review("keep"))))
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
        conflicting = store.recall("Where does Morgan work, Acme or Globex?")
    assert conflicting.recall.evidence == "conflicting"
    assert conflicting.text.startswith("Conflicting values:")


# -- H12 / H13 / H18 / H23: the automatic context ------------------------------------------------


def test_h13_opposite_statements_appear_together(parallel: MemoryStore) -> None:
    block = parallel.auto_recall("Does Morgan like tea or coffee?")
    shown = block_lines(block)
    assert any("likes tea but not coffee" in line for line in shown)
    assert any("likes coffee but not tea" in line for line in shown)
    assert "Conflicting" not in block  # nothing is resolved for the main model


def test_h12_the_whole_automatic_context_stays_under_2_5_kb(tmp_path: Path) -> None:
    root = tmp_path / "big"
    long_tail = " ".join(f"detail{i}" for i in range(30))
    lines = [memory(f"Morgan window seat note {i} {long_tail}"[:340], entities=["m"])
             for i in range(5)]
    prefs = [memory(f"I prefer Morgan window seats option {i} {long_tail}"[:340],
                    labels=["preference"], entities=["m"]) for i in range(5)]
    facts = [memory(f"Morgan fact {i}", entities=["m"],
                    fact=("m", f"key_{i:02d}", f"value {i} " + "x" * 200)) for i in range(20)]
    # At most 8 memories per extraction: five turns. Preferences are not reviewed (E20);
    # every later line names Morgan, so the classifier sees it and adds it (E4).
    batches = [("lines", lines, 5), ("prefs", prefs, 0), ("f1", facts[:7], 7),
               ("f2", facts[7:14], 7), ("f3", facts[14:], 6)]
    records = []
    for run_id, batch, reviewed in batches:
        records += script(("extract", run_id, extraction(batch, [entity("m", "Morgan")])))
        if reviewed:
            records += script(("review", run_id, review(*["keep"] * reviewed)))
        if run_id != "lines":
            records += script(("reconcile", run_id,
                               reconcile(*[{"action": "ADD"}] * len(batch))))
    store, _ = open_capture(root, records)
    with store:
        for run_id, _, _ in batches:
            store.persist_completed_turn(turn(run_id, "x"))
        store.drain()
        while store.background.embed_pending():
            pass
        question = "Morgan window seat note option prefer " + long_tail
        context = store.auto_recall(question)
        card_only = store.auto_recall("Tell me about Morgan " + long_tail[:10],
                                      gate_owner_text=False)
    assert "## Person: Morgan" in context
    size = len(context.encode("utf-8"))
    assert size <= 2_500, size
    assert block_lines(context)  # the block and the card are both there
    # The parts together would not fit: the card gives way, whole lines left out.
    shown = [line for line in context.splitlines() if line.startswith("- key ")]
    alone = [line for line in card_only.splitlines() if line.startswith("- key ")]
    assert not block_lines(card_only) and alone
    assert 0 < len(shown) < len(alone), (len(shown), len(alone))
    assert set(shown) <= set(alone)  # left out, never cut
    assert len(card_only.encode("utf-8")) <= 2_500


def test_h18_the_programmatic_block_has_the_same_selector_and_three_line_bound(
        tmp_path: Path) -> None:
    # Five lines with the same words: equal scores, all within the window; only three show.
    texts = ["Morgan likes tea but not coffee", "Morgan likes coffee but not tea",
             "but not tea Morgan likes coffee", "coffee not tea but Morgan likes",
             "tea Morgan likes but not coffee", "The rocket launch moved to Friday"]
    embedder = WordBagEmbedder(DIM)
    with journal_store(tmp_path / "five", texts, embedder=embedder) as store:
        context = store.auto_context("Does Morgan like tea or coffee?")
        shown = block_lines(context.text)
        assert len(shown) == 3
        assert all("rocket" not in line for line in shown)
        # no verified-owner gate inside the engine: the caller gates by audience
        assert store.auto_recall("Does Morgan like tea or coffee?") == context.text
        assert store.auto_recall("Does Morgan like tea or coffee?", owner=False) == ""
        # degraded (the provider down): no block
        embedder.down = True
        down = store.auto_context("Does Morgan like tea or coffee?")
        assert (down.text, down.degraded) == ("", True)
    with MemoryStore.open(tmp_path / "lite", background=False) as lite:
        for i, text in enumerate(texts):
            lite.persist_completed_turn(CompletedTurn(run_id=f"l{i}", outcome="success",
                                                      answer=text))
        lite.drain()
        assert lite.recall("Morgan tea coffee").recall.hits  # deliberate retrieval works
        got = lite.auto_context("Does Morgan like tea or coffee?")
        assert (got.text, got.degraded, got.reason) == ("", True, "lexical_only")


def test_h23_a_known_conversation_id_is_never_shown(tmp_path: Path) -> None:
    secret = "web:secret-thread-4242"
    texts = ["I like green tea in the morning", "In the morning I like green tea",
             "The rocket launch moved to Friday"]
    with journal_store(tmp_path / "h23", texts, embedder=WordBagEmbedder(DIM),
                       sessions=[secret, None, "web:other-7"]) as store:
        block = store.auto_recall("Do I like green tea in the morning?")
        explicit = store.recall("green tea in the morning", limit=10)
    shown = block_lines(block)
    assert len(shown) == 2
    assert "secret-thread" not in block and "web:" not in block
    # another conversation's line renders as before; unknown provenance is labelled
    known = next(line for line in shown if "I like green tea" in line)
    unknown = next(line for line in shown if line.startswith("- – In the morning"))
    assert known == "- – I like green tea in the morning (recorded 2026-12-02; current)"
    assert unknown.endswith("; source conversation unknown)")
    # the model-facing explicit result carries no session either
    assert "secret-thread" not in explicit.text
    assert "secret-thread" not in str(explicit.to_json(sources=False))
    assert explicit.to_json()["results"][0]["source"]["session"] in (secret, None)
