"""Answers, not echoes: the model's question axis taken out of a question and the turns of a
conversation it meets (``Calibration.echo_removal``, hybrid scoring only). The formula equals
the cosine of the projected vectors; the pool carries each line's dots with the shipped axis;
a turn shaped like the question loses its lead; a curated note and the reference's scoring
never move; the fit takes a share only when it ranks better.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.calibration.fit import ECHO_SHARES, fit_echo, mean_quality
from memory_es.calibration.labelled import LabelledQuestion
from memory_es.calibration.pools import PoolScorer
from memory_es.config import parse_config
from memory_es.errors import ConfigError
from memory_es.recall.engine import Recaller
from memory_es.recall.rank.anchors import extract_anchors
from memory_es.recall.rank.calibrations import calibration_for, configured_calibration
from memory_es.recall.rank.echo import AXIS_FILES, axis_dots, question_axis
from memory_es.recall.rank.score import (
    Calibration,
    Candidate,
    Scoring,
    score,
    without_echo,
)
from memory_es.recall.retrieve.candidates import candidate_pool
from memory_es.recall.setup import ReadSetup
from memory_es.testing import WordBagEmbedder

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
USE_KEY = '["local","use-multilingual-v3",512]'


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("share", [0.25, 0.5, 1.0])
def test_the_formula_is_the_cosine_of_the_projected_vectors(share: float) -> None:
    rng = np.random.default_rng(7)
    a, q, v = (unit(rng.normal(size=16)) for _ in range(3))
    projected_q, projected_v = q - share * (q @ a) * a, v - share * (v @ a) * a
    expected = projected_q @ projected_v / np.linalg.norm(projected_q) / np.linalg.norm(
        projected_v)
    assert without_echo(float(q @ v), (float(q @ a), float(v @ a)), share) == \
        pytest.approx(expected)
    assert without_echo(0.3, (0.5, 0.5), 0.0) == 0.3 and without_echo(0.3, None, 1.0) == 0.3


def test_every_local_model_ships_a_unit_axis_of_its_size() -> None:
    sizes = {USE_KEY: 512, '["local","all-MiniLM-L6-v2-onnx-int8",384]': 384,
             '["local","multilingual-e5-small-q4",384]': 384}
    assert set(AXIS_FILES) == set(sizes)
    for key, dim in sizes.items():
        axis = question_axis(key)
        assert axis is not None and axis.shape == (dim,)
        assert float(np.linalg.norm(axis)) == pytest.approx(1.0, abs=1e-5)
    assert question_axis('["fake","bag",64]') is None


def test_the_pool_measures_each_line_against_the_shipped_axis(tmp_path: Path) -> None:
    """A real Journal root whose (word-bag) vectors carry USE's identity: each candidate of
    the pool holds (query . axis, line . axis) of the shipped axis."""
    axis = question_axis(USE_KEY)
    assert axis is not None
    embedder = WordBagEmbedder(512, provider="local", model="use-multilingual-v3")
    texts = ["Maya: where do you live now?", "Jonas: Bristol, near the harbour"]
    with MemoryStore.open(tmp_path / "r", parse_config({"mode": "journal",
                                                        "embeddings": {"dim": 512}}),
                          background=False, embedder=embedder) as store:
        for n, text in enumerate(texts):
            store.persist_completed_turn(CompletedTurn(run_id=f"t{n}", outcome="success",
                                                       answer=text, session="chat:1"))
        store.drain()
        while store.background.embed_pending():
            pass
        conn = store.projections.get().index.conn
        query = embedder.embed(["where does Jonas live"])[0]
        pool = {c.text: c for c in candidate_pool(
            conn, "where does Jonas live", query_vector=query,
            matrix=store.vectors.matrix(embedder, conn))}
    for text in texts:
        line = embedder.embed([text])[0]
        assert pool[text].axis == pytest.approx((float(query @ axis), float(line @ axis)),
                                                abs=1e-5)
    assert axis_dots(None, query, [1]) == {}  # no vectors: nothing to measure


def candidate(id_: str, cosine: float, axis: tuple[float, float]) -> Candidate:
    """A conversation turn: curated notes are never questions, so only turns lose the axis."""
    return Candidate(id=id_, text=id_, status="open", created_at=NOW, cosine=cosine,
                     evidence=0.0, axis=axis, dialogue=True)


def test_a_line_shaped_like_the_question_loses_its_lead() -> None:
    # the echo owes its cosine to the question axis; the answer does not
    echo, answer = candidate("echo", 0.60, (0.7, 0.8)), candidate("answer", 0.45, (0.7, -0.1))
    anchors = extract_anchors("q", ())
    cases: list[tuple[Scoring, float, str]] = [("hybrid", 0.0, "echo"),
                                               ("hybrid", 1.0, "answer"),
                                               ("reference", 1.0, "echo")]
    for scoring, share, winner in cases:
        cal = Calibration(no_evidence_cosine=0.0, echo_removal=share)
        scores = {c.id: score(c, anchors, cal, scoring).score for c in (echo, answer)}
        assert max(scores, key=lambda k: scores[k]) == winner, (scoring, share, scores)
    # a curated note keeps its cosine whatever the share
    note = replace(echo, dialogue=False)
    cal = Calibration(no_evidence_cosine=0.0, echo_removal=1.0)
    assert score(note, anchors, cal, "hybrid").semantic == pytest.approx(0.60)


def test_fit_echo_takes_a_share_only_when_it_ranks_better() -> None:
    questions = [LabelledQuestion(text="q", gold=frozenset({"answer"}))]
    pool = [candidate("answer", 0.45, (0.7, -0.1)),
            *(candidate(f"echo{n}", 0.60 - n / 100, (0.7, 0.8)) for n in range(5))]
    quality = mean_quality([q.gold for q in questions], [0], None)
    share, grid = fit_echo(PoolScorer(questions, [pool], NOW), quality)
    assert share > 0 and set(grid) == set(ECHO_SHARES) and grid[share] == (1.0, 1.0)
    flat = [replace(c, axis=None) for c in pool]  # no axis: every share ties, none is taken
    assert fit_echo(PoolScorer(questions, [flat], NOW), quality)[0] == 0.0


def test_echo_removal_in_the_config_is_checked_and_reaches_recall() -> None:
    block: dict[str, Any] = {"noEvidenceCosine": 0.1, "recallFloor": 0.3, "recallTail": 0.2,
                             "autoFloor": 0.5, "autoWindow": 0.04, "echoRemoval": 1.5}
    with pytest.raises(ConfigError) as excinfo:
        parse_config({"mode": "journal", "embeddings": {"dim": 64, "calibration": block}})
    assert "must be a number from 0 to 1 (got 1.5)" in str(excinfo.value)
    block["echoRemoval"] = 0.5
    config = parse_config({"mode": "journal", "embeddings": {"dim": 64, "calibration": block}})
    assert calibration_for(None, configured_calibration(config)).echo_removal == 0.5


def test_every_recall_path_carries_the_axis(tmp_path: Path) -> None:
    """The store's recall, the read-only door (``memory-es search``) and recall as of an
    instant all measure their candidates against the model's axis: the shipped calibration
    was fitted with it."""
    embedder = WordBagEmbedder(512, provider="local", model="use-multilingual-v3")
    config = parse_config({"mode": "journal", "embeddings": {"dim": 512}})
    with MemoryStore.open(tmp_path / "r", config, background=False, embedder=embedder) as store:
        for n, text in enumerate(["Maya: where do you live now?", "Jonas: Bristol, by the sea"]):
            store.persist_completed_turn(CompletedTurn(run_id=f"t{n}", outcome="success",
                                                       answer=text, session="chat:1"))
        store.drain()
        while store.background.embed_pending():
            pass
        live = store.recall("where does Jonas live", limit=5, explain=True).to_json()
        then = store.recall("where does Jonas live", limit=5, explain=True,
                            as_of=datetime.now(UTC)).to_json()
    root = MemoryRoot.open(tmp_path / "r", config)
    # the door's recaller, with the word-bag model
    root._bound = Recaller(ReadSetup.of(config), embedder)
    door = root.recall("where does Jonas live", limit=5, explain=True).to_json()
    for name, result in (("store", live), ("as of", then), ("read-only door", door)):
        axes = [hit["explain"]["questionAxis"] for hit in result["results"]]
        assert axes and all(a is not None for a in axes), (name, axes)
