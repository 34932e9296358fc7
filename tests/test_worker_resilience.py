"""The background worker never dies and the embedder is created once (issue 12, item 3).

A host's thread and the worker both reach for the embedder and the vector cache on first use;
and an unexpected error in any stage of the worker loop (attempts, projection, embedding,
scheduling) must be logged content-free and retried, never end the thread, or every later turn
would stay pending with nobody to say so.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memory_es.store.vectors as store_vectors
from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.store.background import Background
from memory_es.testing import WordBagEmbedder

JOURNAL = parse_config({"mode": "journal", "embeddings": {"provider": "local"}})
SECRET = "the turn text that must never reach a log"
DEADLINE = 20.0


def turn(run_id: str, answer: str) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer,
                         speaker_kind="human-turn")


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_embedder_and_cache_are_created_once_under_concurrent_first_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[WordBagEmbedder] = []
    caches: list[Any] = []
    real_cache = store_vectors.VectorCache

    def slow_embedder(block: Any) -> WordBagEmbedder:
        time.sleep(0.05)  # wide enough for every thread to arrive while the first builds
        made.append(WordBagEmbedder())
        return made[-1]

    def counted_cache(root: Path) -> Any:
        caches.append(real_cache(root))
        return caches[-1]

    monkeypatch.setattr(store_vectors, "make_embedder", slow_embedder)
    monkeypatch.setattr(store_vectors, "VectorCache", counted_cache)
    with MemoryStore.open(tmp_path / "root", JOURNAL, background=False) as store:
        start = threading.Barrier(8)
        got: list[Any] = []
        errors: list[BaseException] = []

        def first_use() -> None:
            start.wait()
            try:
                got.append(store.vectors.embedder())
            except BaseException as e:  # recorded: the assertion below names it
                errors.append(e)

        threads = [threading.Thread(target=first_use) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLINE)
    assert errors == []
    assert len(made) == 1 and len(caches) == 1
    assert len(got) == 8 and all(e is made[0] for e in got)


class FlakyEmbedder(WordBagEmbedder):
    """Raises an unexpected (non-provider) error on its first call, then works."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not self.failed.is_set():
            self.failed.set()
            raise RuntimeError(SECRET)
        return super().embed(texts)


def test_worker_survives_an_unexpected_embedding_error(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    embedder = FlakyEmbedder()
    caplog.set_level(logging.WARNING, logger="memory_es")
    with MemoryStore.open(tmp_path / "root", JOURNAL, embedder=embedder) as store:
        assert store.persist_completed_turn(turn("r1", "Booked the dentist.")).ok
        wait_for(embedder.failed.is_set, "the failing embedding call")
        assert store.persist_completed_turn(turn("r2", "Renewed the passport.")).ok
        wait_for(lambda: store.inspect().counts.resolved == 2, "the second turn's attempt")
        wait_for(lambda: store.background.embed_pending() == 0 and embedder.calls > 0,
                 "the embedding retry")
        hits = store.recall("passport").recall.hits
    assert hits and hits[0].text == "Renewed the passport."
    failures = [r.getMessage() for r in caplog.records if "worker" in r.getMessage()]
    assert any(m.startswith("memory_es worker embedding failed: RuntimeError (code=internal")
               for m in failures), failures
    assert not any(SECRET in r.getMessage() for r in caplog.records)  # content-free


@pytest.mark.parametrize("stage", ["run_due", "project", "seconds_until_due"])
def test_worker_survives_an_unexpected_error_in_every_stage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    failed = threading.Event()
    real = getattr(Background, stage)  # the worker's WorkSource

    def once(self: Background, *args: Any) -> Any:
        if threading.current_thread().name == "memory-es-worker" and not failed.is_set():
            failed.set()
            raise RuntimeError(SECRET)
        return real(self, *args)

    monkeypatch.setattr(Background, stage, once)
    with MemoryStore.open(tmp_path / "root") as store:  # Lite: no embedder involved
        assert store.persist_completed_turn(turn("r1", "Booked the dentist.")).ok
        wait_for(failed.is_set, f"the failing {stage}")
        assert store.persist_completed_turn(turn("r2", "Renewed the passport.")).ok
        store.background.kick()
        wait_for(lambda: store.inspect().counts.resolved == 2, "both turns resolved")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_health_and_inspect_say_whether_a_worker_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12 item 3: the worker is never silently gone. A reader (another process's view:
    the writer lock and the snapshot's age) and the store itself both say so."""
    from memory_es import MemoryRoot
    from memory_es.worker import Worker

    root = tmp_path / "root"
    config = parse_config({"mode": "lite"})
    reader = MemoryRoot.open(root, config)
    with MemoryStore.open(root, config) as store:
        wait_for(lambda: reader.inspect().worker == "running", "the worker's heartbeat")
        assert store.inspect().worker == "running"
        assert reader.health().worker == "running"
    assert reader.inspect().worker == reader.health().worker == "not_running"

    with MemoryStore.open(root, config, background=False) as store:
        assert store.inspect().worker == "not_running"  # work runs only on drain()
        assert reader.inspect().worker == "stalled"  # held, but nobody works the queue

    def dies(self: Worker) -> None:
        raise RuntimeError("a bug outside every guarded stage")

    monkeypatch.setattr(Worker, "_run", dies)
    with MemoryStore.open(root, config) as store:
        wait_for(lambda: store.inspect().worker == "stalled", "the dead thread noticed")
        store.background.kick()  # republish: the snapshot says the thread is gone
        wait_for(lambda: reader.inspect().worker == "stalled", "the reader told")
