"""Health beside a live writer (issue 15 item 6; N3, B24): work in flight is ``in_progress``
(or clean), never drift, however the audit interleaves with the worker's projection passes,
Remember's projection under the journal hold, and a rebuild."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ceilings import HANG_S
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.testing import WordBagEmbedder
from memory_es.worker import read_snapshot

RUNS = 50
JOURNAL = {"mode": "journal", "embeddings": {"dim": 64}}


def turn(n: int) -> CompletedTurn:
    return CompletedTurn(run_id=f"live-{n}", outcome="success", session=f"web:{n % 7}",
                         answer=f"Note number {n}: the courier came at {n % 24:02d}:15.",
                         speaker_kind="human-turn")


def test_n3_fifty_health_runs_beside_a_live_worker_find_no_drift(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = MemoryStore.open(root, parse_config(JOURNAL), embedder=WordBagEmbedder(64))
    stop = threading.Event()
    written = [0]

    def write() -> None:
        n = 0
        while not stop.is_set():
            store.persist_completed_turn(turn(n))
            if n % 5 == 0:
                store.remember(f"Remembered fact {n}: the gate code is {1000 + n}.")
            n += 1
        written[0] = n

    writer = threading.Thread(target=write)
    writer.start()
    statuses: list[str] = []
    try:
        for _ in range(RUNS):
            report = MemoryRoot.open(root).health()
            statuses.append(report.status)
            assert report.status in ("clean", "in_progress"), report.to_json()
    finally:
        stop.set()
        writer.join()
        store.close()
    assert written[0] > RUNS  # the writer really ran beside every audit
    assert "in_progress" in statuses or "clean" in statuses
    assert MemoryRoot.open(root).health().status == "clean"


def test_n3_health_beside_rebuilds_finds_no_drift(tmp_path: Path) -> None:
    """A rebuild rewrites files and switches the generation under the projection lock, so a
    health run never sees the new files beside the old index (or the reverse)."""
    root = tmp_path / "root"
    store = MemoryStore.open(root, parse_config(JOURNAL), embedder=WordBagEmbedder(64),
                             background=False)
    for n in range(40):
        store.persist_completed_turn(turn(n))
    store.drain()
    stop = threading.Event()

    def rebuild() -> None:
        n = 40
        while not stop.is_set():
            store.persist_completed_turn(turn(n))
            store.drain()
            store.rebuild()
            n += 1

    writer = threading.Thread(target=rebuild)
    writer.start()
    try:
        for _ in range(20):
            report = MemoryRoot.open(root).health()
            assert report.status in ("clean", "in_progress"), report.to_json()
    finally:
        stop.set()
        writer.join()
        store.close()


def test_b19_n13_the_snapshot_carries_the_downstream_queues(tmp_path: Path) -> None:
    """The runtime snapshot a live worker publishes says how many intakes are due and dead,
    how many capture plans are held, and how many lines wait for a vector (B19, B24, N13),
    read beside the writer without holding the journal."""
    root = tmp_path / "root"
    embedder = WordBagEmbedder(64)
    embedder.down = True  # an outage: every projected line waits for its vector
    store = MemoryStore.open(root, parse_config(JOURNAL), embedder=embedder)
    try:
        for n in range(6):
            store.persist_completed_turn(turn(n))
        deadline = time.monotonic() + HANG_S
        queue: dict[str, object] = {}
        while time.monotonic() < deadline:
            queue = (read_snapshot(root) or {}).get("queue", {})
            if queue.get("embedding") == 6 and queue.get("due") == 0:
                break
            store.background.kick()
            time.sleep(0.1)
        assert queue == {"due": 0, "dead": 0, "capture_retained": 0, "embedding": 6}
    finally:
        store.close()
