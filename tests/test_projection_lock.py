"""The live projections' own lock: the worker's catch-up and vector writes hold it without
the journal, so an admission never waits for a projection pass, and closing the store still
waits for a pass in flight and never lets a worker thread that outlived it reopen the index.

A step that ignores cancellation outlives ``close()``'s shutdown budget (``Worker.stop``
abandons it): when it goes on it must find the store closed, not reopen the projections of
a root whose writer lock is already free. A projection pass slowed to outlive that budget
must be finished before ``close()`` closes the projector under it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memory_es.config import parse_config
from memory_es.intake import CompletedTurn
from memory_es.observe import ObserveProcessor
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.testing import WordBagEmbedder
from projections.projector import Projector

CONFIG = {"mode": "journal", "embeddings": {"dim": 8}}


def turn(i: int) -> CompletedTurn:
    return CompletedTurn(run_id=f"r{i}", outcome="success",
                         answer=f"Fact {i}: the garden tomatoes need water on tuesday.")


def workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memory-es-worker"]


class SlowStep:
    """The model-free step, after a pause that ignores cancellation."""

    needs_model = False

    def __init__(self) -> None:
        self.inner = ObserveProcessor()
        self.entered = threading.Event()

    def process(self, admitted: Any, payload: Any, ctx: Any) -> Any:
        self.entered.set()
        time.sleep(1.0)
        return self.inner.process(admitted, payload, ctx)  # reads the index (same_text)


def test_a_worker_that_outlived_close_never_reopens_the_index(tmp_path: Path) -> None:
    root = tmp_path / "root"
    step = SlowStep()
    store = MemoryStore.open(root, parse_config(CONFIG), background=True, processor=step,
                             embedder=WordBagEmbedder(8))
    store.persist_completed_turn(turn(1))
    assert step.entered.wait(10)
    store.close(timeout=0.05)  # the step is abandoned mid-call
    for thread in workers():
        thread.join(15)
    assert store.projections._projector is None  # it found the store closed
    other = MemoryStore.open(root, parse_config(CONFIG), background=False,
                             embedder=WordBagEmbedder(8))
    with other:  # the next writer owns the root alone: its rebuild and recall are whole
        other.rebuild()
        other.drain()
        assert len(other.recall("garden tomatoes").recall.hits) == 1
    assert MemoryRoot.open(root).health().status == "clean"


def test_close_waits_for_the_projection_pass_in_flight(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    store = MemoryStore.open(root, parse_config(CONFIG), background=False,
                             embedder=WordBagEmbedder(8))
    for i in range(20):
        store.persist_completed_turn(turn(i))
    store.attempts.run_due(threading.Event())  # outcomes committed, the index behind
    folding = threading.Event()
    real = Projector.catch_up

    def slow(self: Projector, events: Any) -> int:
        def paced() -> Any:
            for event in events:
                if threading.current_thread().name == "memory-es-worker":
                    folding.set()
                    time.sleep(0.03)
                yield event
        return real(self, paced())

    monkeypatch.setattr(Projector, "catch_up", slow)
    store.background.start()
    assert folding.wait(10)
    store.close(timeout=0.01)  # shorter than the pass: close must still wait for it
    assert store.projections._projector is None
    for thread in workers():
        thread.join(15)
    assert store.projections._projector is None
    assert MemoryRoot.open(root).health().status == "clean"  # the pass finished whole


def test_a_forget_during_the_workers_embedding_leaves_no_cached_vector(tmp_path: Path) -> None:
    """The worker embeds with no hold kept across the provider call; a forget that lands then
    must not find the erased text's vector cached afterwards."""
    import apsw

    from memory_es.ids import sha256_hex

    secret = "My locker combination is kept under the blue mug zqx."
    embedding, forgotten = threading.Event(), threading.Event()

    class Gate(WordBagEmbedder):
        def embed(self, texts: Any) -> Any:
            if secret in texts and threading.current_thread().name == "memory-es-worker":
                embedding.set()
                forgotten.wait(10)
            return super().embed(texts)

    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(CONFIG), background=True,
                          embedder=Gate(8)) as store:
        line = store.remember(secret).memory_id
        assert embedding.wait(10)
        assert store.forget(line, reason="privacy").status == "forgotten"
        forgotten.set()
        store.drain()  # the worker's pass has stored (or dropped) what it embedded
    cache = apsw.Connection(str(root / "embeddings" / "cache.db"))
    rows = cache.execute("SELECT count(*) FROM vectors WHERE sha256 = ?",
                         (sha256_hex(secret),)).fetchone()
    assert rows == (0,)
