"""A conversation turn scored by the turn model (hybrid scoring, ``Calibration.turn_model``):
its parts add up to the turn's fused score, its neighbours' features come from the same pool,
other lines keep the hybrid formula, the fit learns from labelled pools and is deterministic,
and the model reaches recall, explain, the config and ``memory-es calibrate``'s snippet
(SPEC G3-G10: the score and its parts; G11: an unrelated question stays below the floor).

Real Journal stores on real roots with a word-bag embedder (see test_recall_conversation).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memory_es import MemoryStore
from memory_es.calibration.report import config_snippet
from memory_es.calibration.turns import fit_turns
from memory_es.config import parse_config
from memory_es.config.model import MAX_TURN_WEIGHT
from memory_es.embeddings import EmbeddingIdentity
from memory_es.errors import ConfigError
from memory_es.recall.rank.calibrations import LOCAL_USE, calibration_for, configured_calibration
from memory_es.recall.rank.score import Calibration, Candidate, score_all
from memory_es.recall.rank.turns import MAX_WEIGHT, TurnModel
from memory_es.testing import WordBagEmbedder
from test_recall_conversation import NOW, journal

MODEL = TurnModel(evidence=0.5, neighbour_cosine=0.25, neighbour_evidence=0.125, length=0.2,
                  asking=-0.4, offset=-0.3)
CAL = Calibration(no_evidence_cosine=0.0, recall_floor=0.0, recall_tail=1.0,
                  lexical_weight=0.5, dialogue_weight=1.0, dialogue_boost=2.0,
                  turn_model=MODEL)


def turn(id_: str, text: str, cosine: float, evidence: float,
         neighbours: tuple[str, ...] = (), asking: float = 0.0, dialogue: bool = True
         ) -> Candidate:
    return Candidate(id=id_, text=text, status="open", created_at=NOW, cosine=cosine,
                     evidence=evidence, dialogue=dialogue, neighbours=neighbours,
                     axis=(0.3, asking))


def test_a_turns_parts_add_up_to_its_fused_score() -> None:
    pool = [turn("a", "Maya: what did you name the dog?", 0.35, 0.3, ("b",), asking=0.6),
            turn("b", "Jonas: we called him Biscuit after the colour of his fur", 0.35, 0.3,
                 ("a", "gone"))]
    scored = {s.candidate.id: s for s in score_all("dog name", pool, CAL, "hybrid")}
    b = dict(scored["b"].turn)
    # b's own semantic, its boosted evidence 1 - (1 - 0.3) ** 2, its neighbour a's features
    # (the neighbour outside the pool adds nothing), its words times its relevance (the larger
    # of its semantic and boosted evidence), its question-axis projection times the same
    relevance = max(0.35, 1 - 0.7 ** 2)
    assert b["semantic"] == pytest.approx(0.35)
    assert b["evidence"] == pytest.approx(0.5 * (1 - 0.7 ** 2))
    assert b["neighbourCosine"] == pytest.approx(0.25 * 0.35)
    assert b["neighbourEvidence"] == pytest.approx(0.125 * 0.3)
    assert b["length"] == pytest.approx(0.2 * math.log1p(11) * relevance)  # eleven words
    assert b["asking"] == 0.0 and b["offset"] == -0.3
    assert scored["b"].fused == pytest.approx(sum(b.values()))
    assert scored["b"].score == pytest.approx(scored["b"].fused + scored["b"].anchor
                                              + scored["b"].rrf + scored["b"].salience)
    # the question that matches as well loses to the turn that answers it: it says less and
    # leans toward asking (by the model, not by a word list)
    assert dict(scored["a"].turn)["asking"] == pytest.approx(-0.4 * 0.6 * relevance)
    assert scored["b"].score > scored["a"].score
    assert scored["b"].support == 0.0  # a turn model replaces the neighbour support


def test_an_unrelated_long_turn_gains_nothing_from_its_length() -> None:
    """Length and asking count as far as the turn matches: an unrelated question's best turn
    stays at the offset, below any floor, however long the turn."""
    words = "we spent the whole weekend in the garden planting tomatoes and beans " * 5
    [s] = score_all("quantum chromodynamics", [turn("g", f"Maya: {words}", 0.0, 0.0,
                                                    asking=-0.3)], CAL, "hybrid")
    parts = dict(s.turn)
    assert parts["length"] == 0.0 and parts["asking"] == 0.0
    assert s.fused == pytest.approx(MODEL.offset) and s.fused < 0


def test_other_lines_and_the_reference_scoring_keep_their_formula() -> None:
    note = turn("n", "the dog is called Biscuit", 0.5, 0.5, dialogue=False)
    with_model = score_all("dog", [note, turn("t", "Jonas: Biscuit", 0.5, 0.5)], CAL, "hybrid")
    without = score_all("dog", [note, turn("t", "Jonas: Biscuit", 0.5, 0.5)],
                        replace(CAL, turn_model=None), "hybrid")
    assert with_model[0] == without[0] and with_model[0].turn == ()
    assert with_model[1].score != without[1].score
    reference = score_all("dog", [note, turn("t", "Jonas: Biscuit", 0.5, 0.5)], CAL,
                          "reference")
    assert all(s.turn == () for s in reference)


def test_a_turn_waiting_for_its_vector_scores_by_its_evidence() -> None:
    pending = replace(turn("p", "Jonas: Biscuit", 0.0, 0.75), cosine=None)
    [s] = score_all("Biscuit", [pending], CAL, "hybrid")
    assert dict(s.turn)["semantic"] == pytest.approx(0.75)  # G10: evidence in the cosine's place


def pools_where_the_long_turn_answers(n: int) -> tuple[list[list[Any]], list[frozenset[str]]]:
    pools, golds = [], []
    for i in range(n):
        short = turn(f"s{i}", "Maya: really?", 0.5 + 0.01 * (i % 5), 0.4, asking=0.4)
        long = turn(f"l{i}", "Jonas: yes we moved to Leeds in March with both cats",
                    0.4 + 0.01 * (i % 3), 0.3)
        other = turn(f"o{i}", "Jonas: the weather in Leeds was grey all through the March",
                     0.3, 0.3)
        pools.append(score_all("q", [short, long, other], replace(CAL, turn_model=None),
                               "hybrid"))
        golds.append(frozenset({f"l{i}"}))
    return pools, golds


def test_the_fit_learns_which_turns_answer_and_is_deterministic() -> None:
    pools, golds = pools_where_the_long_turn_answers(12)
    model = fit_turns(pools, golds, boost=2.0)
    assert model is not None
    assert model == fit_turns(pools, golds, boost=2.0)  # the same pools, the same numbers
    assert model.length > 0  # the answering turn is the long one
    ranked = score_all("q", [s.candidate for s in pools[0]], replace(CAL, turn_model=model),
                       "hybrid")
    assert max(ranked, key=lambda s: s.score).candidate.id == "l0"
    # the offset keeps the turns' mean fused score where the formula had it
    old = [s.fused for p in pools for s in p]
    new = [s.fused for p in pools for s in score_all(
        "q", [s.candidate for s in p], replace(CAL, turn_model=model), "hybrid")]
    assert sum(new) / len(new) == pytest.approx(sum(old) / len(old), abs=0.01)


def test_the_fit_gives_up_where_the_cosine_hardly_counts() -> None:
    """In units of a cosine weight near 0 every other weight blows up past what the config
    accepts: no model then (the turn formula stays)."""
    pools, golds = [], []
    for i in range(12):
        # the cosine hardly tells the answer (a hair above the others in 7 pools of 12, a
        # hair below in 5); its length always does
        base = 0.2 + 0.03 * i
        gold = base + (0.001 if i < 7 else -0.001)
        pool = [turn(f"g{i}", "Jonas: " + "word " * (20 + i), gold, 0.3),
                turn(f"s{i}", "Maya: ok", base, 0.3), turn(f"t{i}", "Maya: sure", base, 0.3)]
        pools.append(score_all("q", pool, replace(CAL, turn_model=None), "hybrid"))
        golds.append(frozenset({f"g{i}"}))
    assert fit_turns(pools, golds, boost=2.0) is None
    assert MAX_TURN_WEIGHT == MAX_WEIGHT  # the fit keeps to the bound the config checks


def test_the_fit_needs_an_evidence_turn() -> None:
    pools, golds = pools_where_the_long_turn_answers(3)
    assert fit_turns(pools, [frozenset()] * 3, boost=2.0) is None
    notes = [[replace(s, candidate=replace(s.candidate, dialogue=False)) for s in p]
             for p in pools]
    assert fit_turns(notes, golds, boost=2.0) is None


BLOCK: dict[str, Any] = {"noEvidenceCosine": 0.0, "recallFloor": 0.0, "recallTail": 1.0,
                         "autoFloor": 0.5, "autoWindow": 0.04, "lexicalWeight": 0.5,
                         "dialogueBoost": 2.0}
TURN_MODEL = {"evidence": 0.5, "neighbourCosine": 0.25, "neighbourEvidence": 0.125,
              "length": 0.2, "asking": -0.4, "offset": -0.3}


def config_with(**extra: Any) -> Any:
    return parse_config({"mode": "journal",
                         "embeddings": {"dim": 4096, "calibration": {**BLOCK, **extra}}})


def test_a_configured_turn_model_reaches_the_calibration() -> None:
    cal = calibration_for(None, configured_calibration(config_with(turnModel=TURN_MODEL)))
    assert cal.turn_model == MODEL
    # an override that names no turn model gets none (its floors were fitted without)
    assert calibration_for(None, configured_calibration(config_with())).turn_model is None
    assert LOCAL_USE.turn_model is not None  # the default model ships one


@pytest.mark.parametrize(("extra", "message"), [
    ({"turnModel": {**TURN_MODEL, "length": 11.0}}, "must be a number from -10 to 10 (got 11.0)"),
    ({"turnModel": {**TURN_MODEL, "asking": math.nan}}, "must be a number from -10 to 10"),
    ({"turnModel": {k: v for k, v in TURN_MODEL.items() if k != "offset"}}, "offset"),
    ({"turnModel": {**TURN_MODEL, "bias": 1.0}}, "bias"),
    ({"turnModel": TURN_MODEL, "dialogueWeight": 0.5},
     "turnModel replaces dialogueWeight: give one or the other"),
    ({"turnModel": TURN_MODEL, "dialogueWeight": 0.5, "dialogueSupport": 0.25},
     "turnModel replaces dialogueWeight and dialogueSupport"),
])
def test_a_turn_model_in_the_config_is_checked(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        config_with(**extra)
    assert message in str(excinfo.value)
    assert "\n" not in str(excinfo.value).strip() or "turnModel" in str(excinfo.value)


def test_the_calibrate_snippet_carries_the_turn_model_and_validates() -> None:
    snippet = config_snippet(LOCAL_USE)["memory"]["embeddings"]["calibration"]
    assert "dialogueWeight" not in snippet and "dialogueSupport" not in snippet
    assert snippet["turnModel"]["neighbourCosine"] == LOCAL_USE.turn_model.neighbour_cosine
    config = parse_config({"mode": "journal", "embeddings": {"calibration": snippet}})
    use = EmbeddingIdentity("local", "use-multilingual-v3", 512)
    assert calibration_for(use) == LOCAL_USE
    got = calibration_for(use, configured_calibration(config))
    # the same numbers, but the neighbour support an override leaves out is none: with a turn
    # model it is unused either way
    assert got.dialogue_support == 0.0
    assert replace(got, dialogue_support=LOCAL_USE.dialogue_support) == LOCAL_USE
    plain = config_snippet(replace(LOCAL_USE, turn_model=None))
    assert "turnModel" not in plain["memory"]["embeddings"]["calibration"]
    assert "dialogueWeight" in plain["memory"]["embeddings"]["calibration"]


SESSION = [("Maya: what did you call the new dog", "chat:1"),
           ("Jonas: Biscuit, after the colour of his fur, he sleeps on my feet all day", "chat:1"),
           ("Maya: the dog!", "chat:1")]


def test_recall_and_explain_use_the_configured_turn_model(tmp_path: Path) -> None:
    with journal(tmp_path / "chat", SESSION):
        pass
    config = config_with(turnModel=TURN_MODEL)
    with MemoryStore.open(tmp_path / "chat", config, background=False,
                          embedder=WordBagEmbedder(4096)) as store:
        result = store.recall("the dog", limit=10, explain=True).to_json()
    assert "turnModel" in result["explain"]["formula"]
    assert result["explain"]["calibration"]["turn_model"]["length"] == 0.2
    hits = {h["text"]: h for h in result["results"]}
    answer = hits[SESSION[1][0]]
    parts = answer["explain"]["turnModel"]
    assert set(parts) == {"semantic", "evidence", "neighbourCosine", "neighbourEvidence",
                          "length", "asking", "offset"}
    relevance = max(parts["semantic"], parts["evidence"] / 0.5)
    assert parts["length"] == pytest.approx(
        0.2 * math.log1p(len(SESSION[1][0].split())) * relevance)
    assert answer["score"] == pytest.approx(
        sum(parts.values()) + answer["explain"]["anchorBonus"] + answer["explain"]["rrfHint"]
        + answer["explain"]["salience"], abs=1e-3)


def test_the_web_inspector_draws_a_turns_parts_as_bars() -> None:
    from memory_es.web.pages import _bars

    bars = _bars({"semantic": 0.3, "lexicalEvidence": 0.2, "rrfHint": 0.0003,
                  "turnModel": {"semantic": 0.3, "evidence": 0.1, "asking": -0.2,
                                "offset": -0.55}})
    assert [name for name, _, _ in bars] == ["semantic", "lexicalEvidence", "rrfHint",
                                             "turn-evidence", "turn-asking", "turn-offset"]
    # a negative part is drawn by its size and keeps its sign in the label's value
    assert bars[4] == ("turn-asking", -0.2, 40) and bars[5] == ("turn-offset", -0.55, 110)
