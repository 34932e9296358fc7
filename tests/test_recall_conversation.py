"""Recall over conversation turns: a turn is read with the turn before it, a question's reply
joins the pool, an unrelated question gets no padding, and a superseded line follows the line
that replaced it.

Real Journal and BuJo stores on real roots with word-bag embedders (the same words give cosine
1, no shared word cosine 0), so every figure below is the product's own arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

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
from memory_es import CompletedTurn, MemoryStore
from memory_es.calibration.fit import fit_dialogue, mean_quality, rankings_of
from memory_es.calibration.labelled import LabelledQuestion
from memory_es.calibration.pools import PoolScorer
from memory_es.config import parse_config
from memory_es.errors import ConfigError
from memory_es.recall.rank.anchors import extract_anchors
from memory_es.recall.rank.calibrations import calibration_for, configured_calibration
from memory_es.recall.rank.score import NOMIC_V15, Calibration, Candidate, Scored, score
from memory_es.recall.rank.select import INSUFFICIENT_MAX_HITS, select, successors_first
from memory_es.recall.retrieve.candidates import candidate_pool
from memory_es.recall.retrieve.dialogue import (
    SESSIONLESS_TURN_GAP_MINUTES,
    TurnNeighbours,
    replies,
    replies_sql,
    turn_context,
    turn_context_sql,
    vector_ranks_in_context,
)
from memory_es.testing import WordBagEmbedder

JOURNAL: dict[str, Any] = {"mode": "journal", "embeddings": {"dim": 4096}}
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

QUESTION = "Maya: what is her research about"
REPLY = "Jonas: Coastal flooding models, I nod a lot"
OTHER = "Jonas: The flat has a little garden"


def journal(root: Path, turns: Sequence[tuple[str, str | None]]) -> MemoryStore:
    """A Journal store holding ``turns`` (text, session), one admission each, in order."""
    clock = [NOW - timedelta(days=30)]

    def tick() -> datetime:
        clock[0] += timedelta(minutes=1)
        return clock[0]

    store = MemoryStore.open(root, parse_config(JOURNAL), background=False,
                             embedder=WordBagEmbedder(4096), clock=tick)
    for n, (text, session) in enumerate(turns):
        result = store.persist_completed_turn(CompletedTurn(
            run_id=f"t{n}", outcome="success", answer=text, session=session))
        assert result.status == "admitted", result
    store.drain()
    while store.background.embed_pending():
        pass
    return store


def rowid_of(store: MemoryStore, text: str) -> int:
    conn = store.projections.get().index.conn
    return int(conn.execute("SELECT rowid FROM memories WHERE text = ?", (text,)).fetchone()[0])


def explained(store: MemoryStore, query: str) -> dict[str, dict[str, Any]]:
    return {item["text"]: item["explain"]
            for item in store.recall(query, limit=10, explain=True).to_json()["results"]}


def pool_of(store: MemoryStore, query: str) -> dict[str, Candidate]:
    """The candidate pool recall scores for ``query``, by text."""
    conn = store.projections.get().index.conn
    embedder = WordBagEmbedder(4096)
    return {c.text: c for c in candidate_pool(
        conn, query, query_vector=np.asarray(embedder.embed([query]))[0],
        matrix=store.vectors.matrix(embedder, conn))}


def test_a_reply_is_read_with_the_turn_before_it(tmp_path: Path) -> None:
    sams = REPLY.replace("Jonas", "Sam")
    with journal(tmp_path / "chat", [(QUESTION, "chat:1"), (REPLY, "chat:1"),
                                     (OTHER, "chat:1"), (sams, "chat:2")]) as store:
        pool = pool_of(store, "what research")
        # The reply shares no word with the question it answers, yet holds its evidence
        assert pool[REPLY].evidence == pool[QUESTION].evidence > 0
        # ... and only in its own conversation: the same words after nothing hold none
        assert pool[sams].evidence == 0
        # the turn after the reply is read with the reply, not with the question
        assert pool[OTHER].evidence == 0


def test_the_turn_before_must_be_live_and_a_host_turn(tmp_path: Path) -> None:
    with journal(tmp_path / "chat", [(QUESTION, "chat:1"), (REPLY, "chat:1"),
                                     ("Jonas: unrelated words", "chat:1")]) as store:
        first = rowid_of(store, QUESTION)
        reply, third = rowid_of(store, REPLY), rowid_of(store, "Jonas: unrelated words")
        conn = store.projections.get().index.conn
        # a conversation's first turn is a turn with nothing before it
        assert turn_context(conn, [first]) == {first: TurnNeighbours(None, None, reply)}
        assert turn_context(conn, [reply, third]) == {
            reply: TurnNeighbours(QUESTION, first, third),
            third: TurnNeighbours(REPLY, reply, None)}
        store.set_status(store.lexical_search("coastal")[0].id, "dropped")
        # a dropped turn is nobody's context or neighbour: the third turn follows the question
        conn = store.projections.get().index.conn
        assert turn_context(conn, [first, third]) == {
            first: TurnNeighbours(None, None, third),
            third: TurnNeighbours(QUESTION, first, None)}


def timed_journal(root: Path, turns: Sequence[tuple[str, str | None, float]]) -> MemoryStore:
    """A Journal store holding ``turns`` (text, session, minutes after the first), in order."""
    start = NOW - timedelta(days=30)
    clock = [start]
    store = MemoryStore.open(root, parse_config(JOURNAL), background=False,
                             embedder=WordBagEmbedder(4096), clock=lambda: clock[0])
    for n, (text, session, minutes) in enumerate(turns):
        clock[0] = start + timedelta(minutes=minutes)
        result = store.persist_completed_turn(CompletedTurn(
            run_id=f"t{n}", outcome="success", answer=text, session=session))
        assert result.status == "admitted", result
    store.drain()
    return store


def test_turns_without_a_conversation_id_are_one_while_they_follow_within_minutes(
        tmp_path: Path) -> None:
    """A host that passes no conversation id still holds conversations: turns recorded within
    SESSIONLESS_TURN_GAP_MINUTES of each other are read together, and a turn recorded on its
    own (a note) stays one, scored as notes are."""
    gap = SESSIONLESS_TURN_GAP_MINUTES
    note, later = "Jonas: the boiler was serviced", "Maya: a week later, nothing to do with it"
    with timed_journal(tmp_path / "chat", [
            (QUESTION, None, 0), (REPLY, None, 1), (OTHER, None, 1 + gap),  # at the gap: in
            ("Sam: another conversation, with an id", "web:1", 2 + gap),  # not a neighbour
            (note, None, 60), (later, None, 60 * 24 * 7)]) as store:
        conn = store.projections.get().index.conn
        question, reply, other = (rowid_of(store, t) for t in (QUESTION, REPLY, OTHER))
        lone = [rowid_of(store, note), rowid_of(store, later)]
        assert turn_context(conn, [question, reply, other, *lone]) == {
            question: TurnNeighbours(None, None, reply),
            reply: TurnNeighbours(QUESTION, question, other),
            other: TurnNeighbours(REPLY, reply, None)}
        # a question's reply joins the pool only when it is a turn of the same exchange
        assert replies(conn, {question: 1, other: 2, lone[0]: 3}) == {reply: 1}
        pool = pool_of(store, "what research")
        assert pool[REPLY].dialogue and pool[REPLY].evidence == pool[QUESTION].evidence > 0
        assert not pool_of(store, "boiler serviced")[note].dialogue


def test_replies_of_lexical_hits_ride_their_rank(tmp_path: Path) -> None:
    with journal(tmp_path / "chat", [(QUESTION, "chat:1"), (REPLY, "chat:1"),
                                     ("Maya: where do you live", "chat:2"),
                                     ("Jonas: Bristol", "chat:2")]) as store:
        conn = store.projections.get().index.conn
        first, second = rowid_of(store, QUESTION), rowid_of(store, "Maya: where do you live")
        found = replies(conn, {first: 2, second: 1})
        assert found == {rowid_of(store, REPLY): 2, rowid_of(store, "Jonas: Bristol"): 1}


def test_neighbours_are_found_through_the_session_index(tmp_path: Path) -> None:
    """Each neighbour lookup is one step down memories_by_session, never a walk over every
    Journal row before it (the planner once chose memories_by_tier: 17 ms a recall at
    100,000 memories)."""
    with journal(tmp_path / "chat", [(QUESTION, "chat:1"), (REPLY, "chat:1")]) as store:
        conn = store.projections.get().index.conn
        # each neighbour subquery (before and after, or the reply) goes down the index
        for sql, subqueries in ((turn_context_sql(2), 2), (replies_sql(2), 1)):
            plan = " | ".join(str(row[3]) for row in conn.execute(
                f"EXPLAIN QUERY PLAN {sql}", [1, 2]))
            assert plan.count("USING INDEX memories_by_session (source_session=? AND rowid") \
                == subqueries, plan
            assert "memories_by_tier" not in plan and "SCAN" not in plan, plan


def test_curated_lines_of_one_capture_are_not_a_dialogue(tmp_path: Path) -> None:
    plan = extraction([memory("Morgan works at Acme Robotics", entities=["m"]),
                       memory("Morgan plays the cello", entities=["m"])],
                      [entity("m", "Morgan")])
    store, _ = open_capture(tmp_path / "bujo", script(("extract", "r1", plan),
                                                      ("review", "r1",
                                                       review("keep", "keep"))))
    with store:
        store.persist_completed_turn(turn("r1", "x", session="web:a"))
        store.drain()
        conn = store.projections.get().index.conn
        rows = [int(r[0]) for r in conn.execute("SELECT rowid FROM memories ORDER BY rowid")]
        assert len(rows) == 2
        assert turn_context(conn, rows) == {}
        assert replies(conn, {rows[0]: 1}) == {}


def test_an_unrelated_question_gets_no_padding(tmp_path: Path) -> None:
    texts = [f"Note {n}: the garden shed needs paint" for n in range(12)]
    with journal(tmp_path / "notes", [(t, f"web:{n}") for n, t in enumerate(texts)]) as store:
        result = store.recall("quantum zebra orchestra", limit=10)
        assert result.recall.hits == ()  # nothing scored 0.000 fills the list
        assert result.recall.evidence == "insufficient"
        # a weak question (one shared word, below the floor) gets a few flagged lines
        weak = store.recall("paint colours for a bicycle frame and a rocket", limit=10)
        assert weak.recall.evidence == "insufficient"
        assert 1 <= len(weak.recall.hits) <= INSUFFICIENT_MAX_HITS
        assert all(hit.score > 0 for hit in weak.recall.hits)


def scored(id_: str, score: float, *, superseded_by: str | None = None,
           semantic: float = 0.5, evidence: float = 0.0) -> Scored:
    status = "superseded" if superseded_by else "open"
    return Scored(candidate=Candidate(id=id_, text=id_, status=status, created_at=NOW,
                                      superseded_by=superseded_by),
                  score=score, semantic=semantic, anchor=0.0, rrf=0.0, salience=0.0,
                  lexical=False, evidence=evidence)


def test_successors_first_moves_an_old_line_after_its_replacement() -> None:
    ranked = [scored("old", 0.9, superseded_by="mid"), scored("other", 0.85),
              scored("mid", 0.8, superseded_by="new"), scored("new", 0.7)]
    assert [s.candidate.id for s in successors_first(ranked)] == ["other", "new", "mid", "old"]
    # through select: hybrid scoring reads the current line first; the reference's keeps the
    # backend's order (G24)
    pair = [scored("old", 0.9, superseded_by="new"), scored("new", 0.85)]
    assert [h.id for h in select(pair, now=NOW, scoring="hybrid").hits] == ["new", "old"]
    assert [h.id for h in select(pair, now=NOW).hits] == ["old", "new"]
    # a replacement that is not returned leaves the old line where it ranked
    alone = [scored("old", 0.9, superseded_by="gone"), scored("other", 0.8)]
    assert [s.candidate.id for s in successors_first(alone)] == ["old", "other"]
    # a cycle has no head: its lines keep their places, none is lost
    cycle = [scored("a", 0.9, superseded_by="b"), scored("b", 0.8, superseded_by="a")]
    assert sorted(s.candidate.id for s in successors_first(cycle)) == ["a", "b"]


def test_below_the_floor_only_lines_with_evidence_are_kept() -> None:
    pool = [scored("near", 0.4), scored("worded", 0.3, evidence=0.2),
            *(scored(f"zero{n}", 0.0001, semantic=0.0) for n in range(8)),
            *(scored(f"faint{n}", 0.3) for n in range(5)),
            *(scored(f"held{n}", 0.26, evidence=0.1) for n in range(3))]
    # the reference's floor 0.65: nothing clears it. Kept within the tail (0.15): a score of at
    # least half the floor (0.325), or a query term; never a faint cosine alone (0.3), never a
    # line scored 0
    result = select(pool, now=NOW, scoring="hybrid")
    assert result.evidence == "insufficient"
    assert [h.id for h in result.hits] == ["near", "worded", "held0"]
    # a pool of lines without any evidence returns nothing, flagged
    empty = select([scored("zero", 0.0001, semantic=0.0)], now=NOW, scoring="hybrid")
    assert (empty.hits, empty.evidence) == ((), "insufficient")
    # the reference's scoring keeps G11 exactly: the best hit always, the tail within 0.15
    reference = select(pool, now=NOW)
    assert [h.id for h in reference.hits][:2] == ["near", "faint0"]
    assert len(reference.hits) == 10 and reference.evidence == "insufficient"
    lone = select([scored("zero", 0.0001, semantic=0.0)], now=NOW)
    assert [h.id for h in lone.hits] == ["zero"]


def test_bujo_current_line_comes_before_the_line_it_replaced(tmp_path: Path) -> None:
    morgan = [entity("m", "Morgan")]
    records = script(
        ("extract", "seed", extraction([memory("Morgan lives in Berlin", entities=["m"])],
                                       morgan)),
        ("review", "seed", review("keep")),
        ("extract", "fix", extraction([memory("Morgan moved to Madrid", entities=["m"])],
                                      morgan)),
        ("review", "fix", review("keep")),
        ("reconcile", "fix", reconcile({"action": "SUPERSEDE", "target": "m1",
                                        "text": "Morgan lives in Madrid"})))
    store, _ = open_capture(tmp_path / "bujo", records)
    with store:
        store.persist_completed_turn(turn("seed", "Morgan lives in Berlin", session="web:a"))
        store.drain()
        store.persist_completed_turn(turn("fix", "Morgan moved to Madrid", session="web:b"))
        store.drain()
        while store.background.embed_pending():
            pass
        # the two lines tie (a tie goes to the older line); the current one comes first and
        # the old one stays, labelled
        hits = store.recall("Morgan lives in", limit=5).recall.hits
        assert [(h.text, h.currentness) for h in hits] == [
            ("Morgan lives in Madrid", "current"), ("Morgan lives in Berlin", "superseded")]


# -- a conversation turn's evidence: its own weight and boost, fitted on dev -------------------


def turn_candidate(id_: str, *, dialogue: bool, evidence: float, cosine: float) -> Candidate:
    return Candidate(id=id_, text=id_, status="open", created_at=NOW, cosine=cosine,
                     evidence=evidence, dialogue=dialogue)


def test_a_turn_weighs_its_evidence_with_the_dialogue_numbers() -> None:
    cal = Calibration(no_evidence_cosine=0.0, lexical_weight=0.25, dialogue_weight=1.0,
                      dialogue_boost=2.0)
    anchors = extract_anchors("alpha beta", ())
    turn_ = score(turn_candidate("t", dialogue=True, evidence=0.5, cosine=0.0), anchors, cal,
                  "hybrid")
    note = score(turn_candidate("n", dialogue=False, evidence=0.5, cosine=0.0), anchors, cal,
                 "hybrid")
    assert turn_.score - turn_.rrf == pytest.approx(1.0 * (1 - (1 - 0.5) ** 2))  # 0.75
    assert note.score - note.rrf == pytest.approx(0.25 * 0.5)
    assert turn_.evidence == note.evidence == 0.5  # explain shows the evidence as measured
    # the reference's scoring never reads evidence: a turn scores like any line
    ref = score(turn_candidate("t", dialogue=True, evidence=0.5, cosine=0.7), anchors, cal,
                "reference")
    assert ref.score - ref.rrf == pytest.approx(0.7)


def test_fit_dialogue_keeps_the_default_unless_turns_rank_better() -> None:
    questions = [LabelledQuestion(text="alpha beta", gold=frozenset({"answer"}))]
    pool = [turn_candidate("answer", dialogue=True, evidence=0.5, cosine=0.3),
            turn_candidate("echo", dialogue=False, evidence=0.0, cosine=0.6),
            *(turn_candidate(f"other{n}", dialogue=False, evidence=0.0, cosine=0.55 - n / 100)
              for n in range(5))]
    scorer = PoolScorer(questions, [pool], NOW, lexical_weight=0.25)
    quality = mean_quality([q.gold for q in questions], [0], None)
    assert quality(rankings_of(scorer, 0.0)) < (1.0, 1.0)  # weighed like a note: out of the top 5
    turns, grid = fit_dialogue(scorer, 0.0, quality, default=(0.25, 1.0, 0.0))
    assert turns != (0.25, 1.0, 0.0) and grid[turns] == (1.0, 1.0)
    # the same pool without a conversation turn: every triple ties, the default stays
    plain = [replace(c, dialogue=False) for c in pool]
    flat = PoolScorer(questions, [plain], NOW, lexical_weight=0.25)
    assert fit_dialogue(flat, 0.0, quality, default=(0.25, 1.0, 0.0),
                        supports=(0.0, 0.5))[0] == (0.25, 1.0, 0.0)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("dialogueBoost", 0.5, "must be a number from 1 to 8 (got 0.5)"),
    ("dialogueBoost", 9, "must be a number from 1 to 8 (got 9"),
    ("dialogueWeight", 1.5, "must be a number from 0 to 1 (got 1.5)"),
])
def test_dialogue_numbers_in_the_config_are_checked(field: str, value: float,
                                                    message: str) -> None:
    block = {"noEvidenceCosine": 0.1, "recallFloor": 0.3, "recallTail": 0.2,
             "autoFloor": 0.5, "autoWindow": 0.04, field: value}
    with pytest.raises(ConfigError) as excinfo:
        parse_config({**JOURNAL, "embeddings": {"dim": 4096, "calibration": block}})
    assert "dialogue" in str(excinfo.value) and message in str(excinfo.value)


def test_configured_dialogue_numbers_reach_recall() -> None:
    block = {"noEvidenceCosine": 0.1, "recallFloor": 0.3, "recallTail": 0.2,
             "autoFloor": 0.5, "autoWindow": 0.04, "dialogueWeight": 0.9, "dialogueBoost": 3}
    config = parse_config({**JOURNAL, "embeddings": {"dim": 4096, "calibration": block}})
    cal = calibration_for(None, configured_calibration(config))
    assert (cal.dialogue_weight, cal.dialogue_boost) == (0.9, 3.0)
    # left out, they are the identity's shipped ones
    del block["dialogueWeight"], block["dialogueBoost"]
    config = parse_config({**JOURNAL, "embeddings": {"dim": 4096, "calibration": block}})
    cal = calibration_for(None, configured_calibration(config))
    assert (cal.dialogue_weight, cal.dialogue_boost) == (
        NOMIC_V15.dialogue_weight, NOMIC_V15.dialogue_boost)


def test_vector_retrieval_reads_a_turn_with_the_turn_before_it(tmp_path: Path) -> None:
    """A reply's own vector misses a question its turn before carries: the vector retriever
    ranks each turn by the larger of its own cosine and that of the pair's summed vectors, so
    the reply enters a small pool that plain nearest rows fill with notes sharing one word;
    it keeps its own cosine for scoring, and a turn after nothing, or after a turn of another
    conversation, gains nothing."""
    lunch, rain = "Priya: what about lunch", "Ola: is it about the rain"
    sams = REPLY.replace("Jonas", "Sam")
    query = "what is her research about"
    with journal(tmp_path / "chat", [(QUESTION, "chat:1"), (REPLY, "chat:1"),
                                     (lunch, "chat:3"), (rain, None),
                                     (sams, "chat:2")]) as store:
        conn = store.projections.get().index.conn
        embedder = WordBagEmbedder(4096)
        vector = np.asarray(embedder.embed([query]))[0]
        matrix = store.vectors.matrix(embedder, conn)
        text = dict(conn.execute("SELECT rowid, text FROM memories"))
        plain = [text[r] for r, _ in matrix.top(vector, 3)]
        assert plain == [QUESTION, lunch, rain]  # the reply shares no word with the question
        ranked = vector_ranks_in_context(conn, matrix, vector, 3)
        assert [text[r] for r, _ in ranked] == [QUESTION, REPLY, lunch]
        own = dict(ranked)
        assert own[rowid_of(store, REPLY)] == pytest.approx(0.0, abs=1e-6)  # its own cosine
        # the same words in another conversation, after no question, are not lifted
        assert rowid_of(store, sams) not in dict(
            vector_ranks_in_context(conn, matrix, vector, 4))
        # recall's pool ranks it so, and carries its own cosine for scoring as before
        reply = pool_of(store, query)[REPLY]
        assert (reply.vector_rank, reply.cosine) == (2, pytest.approx(0.0, abs=1e-6))
        # a dropped question is nobody's pair: the reply falls back to its own cosine
        store.set_status(store.lexical_search("research")[0].id, "dropped")
        conn = store.projections.get().index.conn
        matrix = store.vectors.matrix(embedder, conn)
        text = dict(conn.execute("SELECT rowid, text FROM memories"))
        assert [text[r] for r, _ in vector_ranks_in_context(conn, matrix, vector, 2)] \
            == [lunch, rain]
