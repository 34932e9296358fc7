"""A conversation turn supported by its neighbours (hybrid scoring, ``dialogue_support``): the
pool names each turn's neighbours, a turn gains the calibration's share of its best neighbour's
fused score, only from neighbours in the same pool, never support upon support, and never
under the reference's scoring.

Real Journal stores on real roots with a word-bag embedder (see test_recall_conversation).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.errors import ConfigError
from memory_es.recall.rank.score import Calibration, Candidate, score_all
from memory_es.testing import WordBagEmbedder
from test_recall_conversation import NOW, journal, pool_of

SESSION = [("Maya: how was your weekend", "chat:1"),
           ("Jonas: we did Ben Nevis on Saturday", "chat:1"),
           ("Jonas: the climb took nine hours in the rain", "chat:1"),
           ("Maya: wow", "chat:1"),
           ("Sam: the quiz took nine hours", "chat:2")]
CAL = Calibration(no_evidence_cosine=0.0, recall_floor=0.0, recall_tail=1.0,
                  lexical_weight=0.5, dialogue_weight=1.0, dialogue_boost=1.0)


def turn(id_: str, cosine: float, evidence: float, neighbours: tuple[str, ...] = ()
         ) -> Candidate:
    return Candidate(id=id_, text=id_, status="open", created_at=NOW, cosine=cosine,
                     evidence=evidence, dialogue=True, neighbours=neighbours)


def test_the_pool_names_each_turns_neighbours(tmp_path: Path) -> None:
    with journal(tmp_path / "chat", SESSION) as store:
        pool = pool_of(store, "Ben Nevis climb hours")
        ids = {text: c.id for text, c in pool.items()}
        saturday, climb = pool[SESSION[1][0]], pool[SESSION[2][0]]
        # the weekend question and the climb are both in the pool: both are neighbours
        assert set(saturday.neighbours) == {ids[SESSION[0][0]], ids[SESSION[2][0]]}
        # the live turns just before and after, in conversation order
        assert climb.neighbours == (ids[SESSION[1][0]], ids[SESSION[3][0]])
        # a turn of another conversation is nobody's neighbour here
        assert pool[SESSION[4][0]].neighbours == ()


def test_a_turn_gains_its_best_neighbours_fused_score() -> None:
    pool = [turn("a", 0.2, 0.0, ("b",)), turn("b", 0.6, 0.5, ("a", "c")),
            turn("c", 0.1, 0.0, ("b", "gone")), turn("d", 0.3, 0.0)]
    plain = {s.candidate.id: s for s in score_all("q", pool, CAL, "hybrid")}
    held = {s.candidate.id: s for s in score_all(
        "q", pool, replace(CAL, dialogue_support=0.5), "hybrid")}
    # b's fused score: 1 - (1 - 0.6) * (1 - 0.5) = 0.8; a and c each gain half of it
    assert plain["b"].fused == pytest.approx(0.8)
    assert held["a"].support == pytest.approx(0.4)
    assert held["a"].score == pytest.approx(plain["a"].score + 0.4)
    # b takes half of its best neighbour's *fused* score (a: 0.2), not a's supported one
    assert held["b"].support == pytest.approx(0.5 * 0.2)
    # a neighbour outside the pool ("gone") adds nothing; a turn without neighbours gains nothing
    assert held["c"].support == pytest.approx(0.4)
    assert held["d"].support == 0.0 and held["d"].score == plain["d"].score
    # without support, or under the reference's scoring, nothing moves
    assert all(s.support == 0.0 for s in plain.values())
    reference = score_all("q", pool, replace(CAL, dialogue_support=0.5), "reference")
    assert all(s.support == 0.0 for s in reference)


def open_with(root: Path, support: float | None) -> MemoryStore:
    block: dict[str, Any] = {"noEvidenceCosine": 0.0, "recallFloor": 0.0, "recallTail": 1.0,
                             "autoFloor": 0.5, "autoWindow": 0.04, "lexicalWeight": 0.5,
                             "dialogueWeight": 1.0, "dialogueBoost": 1.0}
    if support is not None:
        block["dialogueSupport"] = support
    config = parse_config({"mode": "journal",
                           "embeddings": {"dim": 4096, "calibration": block}})
    return MemoryStore.open(root, config, background=False, embedder=WordBagEmbedder(4096))


def test_configured_support_reaches_recall_and_explain(tmp_path: Path) -> None:
    with journal(tmp_path / "chat", SESSION):
        pass
    query = "when did Jonas climb Ben Nevis"
    with open_with(tmp_path / "chat", None) as store:
        before = {h["text"]: h for h in store.recall(query, limit=10, explain=True)
                  .to_json()["results"]}
    with open_with(tmp_path / "chat", 0.5) as store:
        result = store.recall(query, limit=10, explain=True).to_json()
        after = {h["text"]: h for h in result["results"]}
    assert "neighbourSupport" in result["explain"]["formula"]
    assert result["explain"]["calibration"]["dialogue_support"] == 0.5
    saturday = SESSION[1][0]
    assert before[saturday]["explain"]["neighbourSupport"] == 0.0
    gained = after[saturday]["explain"]["neighbourSupport"]
    assert gained > 0
    assert after[saturday]["score"] == pytest.approx(before[saturday]["score"] + gained, abs=1e-3)
    # only turns of the conversation gain: the other conversation's line has no neighbour
    supported = {text for text, hit in after.items() if hit["explain"]["neighbourSupport"]}
    assert supported and supported <= {text for text, session in SESSION if session == "chat:1"}


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_dialogue_support_in_the_config_is_checked(value: float) -> None:
    block = {"noEvidenceCosine": 0.1, "recallFloor": 0.3, "recallTail": 0.2,
             "autoFloor": 0.5, "autoWindow": 0.04, "dialogueSupport": value}
    with pytest.raises(ConfigError) as excinfo:
        parse_config({"mode": "journal", "embeddings": {"dim": 4096, "calibration": block}})
    assert "dialogueSupport" in str(excinfo.value) or "dialogue_support" in str(excinfo.value)
    assert f"must be a number from 0 to 1 (got {value}" in str(excinfo.value)


def test_admitted_turns_keep_their_order_as_neighbours(tmp_path: Path) -> None:
    """The neighbours follow admission order within a conversation, whatever the clock says."""
    clock = [NOW]

    def backwards() -> datetime:  # each admission is recorded earlier than the one before
        return clock[0]

    with MemoryStore.open(tmp_path / "r", parse_config({"mode": "journal",
                                                        "embeddings": {"dim": 4096}}),
                          background=False, embedder=WordBagEmbedder(4096),
                          clock=backwards) as store:
        for n, text in enumerate(("Maya: first alpha", "Jonas: second beta",
                                  "Maya: third alpha")):
            clock[0] = NOW - timedelta(hours=n)
            store.persist_completed_turn(CompletedTurn(run_id=f"t{n}", outcome="success",
                                                       answer=text, session="s:1"))
        clock[0] = NOW + timedelta(hours=1)  # then every attempt is due
        store.drain()
        while store.background.embed_pending():
            pass
        pool = pool_of(store, "alpha beta")
        ids = {text: c.id for text, c in pool.items()}
        assert pool["Jonas: second beta"].neighbours == (ids["Maya: first alpha"],
                                                         ids["Maya: third alpha"])
