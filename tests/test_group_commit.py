"""Group commit: concurrent admissions share one transaction, each returns once durable (B1)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ceilings import HANG_S
from memory_es import CompletedTurn, MemoryStore
from memory_es.root import MemoryRoot


def test_callers_queued_behind_a_commit_share_the_next_transaction(tmp_path: Path) -> None:
    """The first caller's commit is held open; seven callers queue meanwhile and are then
    written by one insert (one fsync), and none of them returns before that insert is done."""
    store = MemoryStore.open(tmp_path / "root", background=False)
    recorder = store._opened.recorder
    real_insert = recorder.insert_events
    first_inside, release_first = threading.Event(), threading.Event()
    batches: list[int] = []
    committed = threading.Event()

    def gated_insert(events: Sequence[Any], **kwargs: Any) -> Sequence[int] | None:
        if not batches:
            batches.append(len(events))
            first_inside.set()
            assert release_first.wait(5)
            return real_insert(events, **kwargs)
        batches.append(len(events))
        result = real_insert(events, **kwargs)
        committed.set()
        return result

    recorder.insert_events = gated_insert  # type: ignore[method-assign]
    results: dict[str, str] = {}
    returned_before_commit: list[str] = []

    def admit(run_id: str) -> None:
        r = store.persist_completed_turn(
            CompletedTurn(run_id=run_id, outcome="success", answer=f"answer {run_id}"))
        if run_id != "first" and not committed.is_set():
            returned_before_commit.append(run_id)
        results[run_id] = r.status

    first = threading.Thread(target=admit, args=("first",))
    first.start()
    assert first_inside.wait(5)
    others = [threading.Thread(target=admit, args=(f"r{i}",)) for i in range(7)]
    for t in others:
        t.start()
    deadline = time.monotonic() + HANG_S
    while len(store.journal_writer.queue) < 7 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert len(store.journal_writer.queue) == 7
    release_first.set()
    for t in [first, *others]:
        t.join(5)
    batch_sizes = store.batch_sizes
    store.close()

    assert batch_sizes == {1: 1, 7: 1}  # what bench/admission.py reports as the distribution
    assert batches == [2, 7]  # the first transaction also records the root's configuration
    assert returned_before_commit == []
    assert set(results.values()) == {"admitted"} and len(results) == 8
    assert MemoryRoot.open(tmp_path / "root").inspect().counts.pending == 8


def test_a_failed_shared_commit_rejects_every_caller_in_it_and_keeps_the_store_usable(
    tmp_path: Path,
) -> None:
    """B4: an I/O failure during the shared transaction is a rejection for each caller in it,
    never an exception into the host; nothing half-written remains and later turns admit."""
    store = MemoryStore.open(tmp_path / "root", background=False)
    recorder = store._opened.recorder
    real_insert = recorder.insert_events
    fail = threading.Event()
    fail.set()

    def failing_insert(events: Sequence[Any], **kwargs: Any) -> Sequence[int] | None:
        if fail.is_set():
            raise OSError("disk full")
        return real_insert(events, **kwargs)

    recorder.insert_events = failing_insert  # type: ignore[method-assign]
    r = store.persist_completed_turn(CompletedTurn(run_id="a", outcome="success", answer="x"))
    assert (r.status, r.code) == ("rejected", "journal_write_failed")
    fail.clear()
    again = store.persist_completed_turn(CompletedTurn(run_id="a", outcome="success", answer="x"))
    assert again.status == "admitted"
    store.close()
    assert MemoryRoot.open(tmp_path / "root").inspect().counts.total == 1
