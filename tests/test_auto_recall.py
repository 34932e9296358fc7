"""The automatic "possibly relevant" block through the store (H1-H16, H21-H23)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.embeddings import Embedder, EmbeddingError, EmbeddingIdentity, UseEmbedder
from memory_es.recall import AUTO_HEADING

JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}
QUESTION = "What kind of tea do I like to drink in the morning?"
FACTS = [
    ("tea", "I like green tea in the morning.", "web:a"),
    ("rocket", "The rocket launch was delayed to 2026-12-09.", "web:b"),
    ("mine", "Morning green tea is what I like to drink.", "web:current#2026-12-01"),
]


@pytest.fixture(scope="module")
def local() -> Embedder:
    return UseEmbedder()  # the local provider's default model


class Flaky:
    """The local model, switchable into an outage."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.identity: EmbeddingIdentity = inner.identity
        self.down = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.down:
            raise EmbeddingError("provider down", code="embedding_unavailable")
        return self.inner.embed(texts)


@pytest.fixture
def store(tmp_path: Path, local: Embedder) -> Iterator[tuple[MemoryStore, Flaky]]:
    flaky = Flaky(local)
    store = MemoryStore.open(tmp_path / "root", parse_config(JOURNAL), background=False,
                             embedder=flaky,
                             clock=lambda: datetime(2026, 12, 2, 9, tzinfo=UTC))
    for run_id, text, session in FACTS:
        store.persist_completed_turn(CompletedTurn(run_id=run_id, outcome="success",
                                                   answer=text, session=session))
    store.drain()
    while store.background.embed_pending():
        pass
    yield store, flaky
    store.close()


def lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- – ")]


def test_h1_h10_block_for_a_paraphrase(store: tuple[MemoryStore, Flaky]) -> None:
    s, _ = store
    block = s.auto_recall(QUESTION)
    assert block.startswith(AUTO_HEADING + "\n\n")
    shown = lines(block)
    assert 1 <= len(shown) <= 3  # H5
    # a line that answers in other words (both tea lines do), never the unrelated one
    assert any(line.startswith(("- – I like green tea in the morning. (recorded 2026-12-02; "
                                "current", "- – Morning green tea is what I like to drink. "
                                "(recorded 2026-12-02; current")) for line in shown)
    assert all("rocket" not in line for line in shown)


def test_h14_h16_gates(store: tuple[MemoryStore, Flaky]) -> None:
    s, _ = store
    assert s.auto_recall(QUESTION, owner=False) == ""  # H16: not a verified owner turn
    assert s.auto_recall("green tea?") == ""  # H14: at most 16 code points
    assert s.auto_recall("  green tea mornin  ") == ""  # 20 chars, 16 after trimming
    assert lines(s.auto_recall("green tea morning drink", gate_owner_text=True))
    assert lines(s.auto_recall("green tea?", gate_owner_text=False))  # the gate is a policy


def test_h21_same_conversation_excluded_before_selection(store: tuple[MemoryStore, Flaky]) -> None:
    s, _ = store
    everyone = s.auto_recall(QUESTION)
    assert "Morning green tea is what I like to drink." in everyone or lines(everyone)
    mine = s.auto_recall(QUESTION, session="web:current#2026-12-02")  # another daily bucket
    assert "Morning green tea is what I like to drink." not in mine
    assert "I like green tea in the morning." in mine
    assert "web:" not in mine  # H23: a conversation id is never shown


def test_h15_lite_and_degraded_give_no_block(
    store: tuple[MemoryStore, Flaky], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s, flaky = store
    flaky.down = True
    with caplog.at_level(logging.WARNING, logger="memory_es"):
        assert s.auto_recall(QUESTION) == ""
    assert any("memory_recall_unavailable" in r.getMessage() for r in caplog.records)
    # The host learns why, so it can warn instead (H15, issue 12 item 1).
    assert s.auto_context(QUESTION).to_json() == {
        "text": "", "degraded": True, "reason": "provider_unavailable", "vectors_pending": 0,
        "profile": ""}
    flaky.down = False
    assert s.auto_context(QUESTION).degraded is False
    with MemoryStore.open(tmp_path / "lite", background=False) as lite:
        lite.persist_completed_turn(CompletedTurn(run_id="x", outcome="success",
                                                  answer="I like green tea in the morning."))
        lite.drain()
        assert lite.auto_recall(QUESTION) == ""
        assert (lite.auto_context(QUESTION).degraded,
                lite.auto_context(QUESTION).reason) == (True, "lexical_only")


def test_block_says_when_vectors_are_pending(store: tuple[MemoryStore, Flaky]) -> None:
    """A memory still waiting for its vector: the block is made from the others and says how
    many wait."""
    s, _ = store
    s.persist_completed_turn(CompletedTurn(run_id="late", outcome="success",
                                           answer="I switched to oolong tea last week."))
    s.drain(embed=False)
    got = s.auto_context(QUESTION)
    assert (got.degraded, got.reason, got.vectors_pending) == (True, "vectors_pending", 1)
    assert "green tea" in got.text and "oolong" not in got.text
    s.drain()
    assert s.auto_context(QUESTION).vectors_pending == 0
