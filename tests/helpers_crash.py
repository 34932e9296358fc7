"""Subprocess driver for the durability tests (DESIGN 12); not a test module.

Usage: ``python helpers_crash.py ROOT MODE [RUN_ID ...]``

- ``single``: open a MemoryStore on ROOT and admit each RUN_ID in turn.
- ``threads``: admit every RUN_ID concurrently, one thread each (group commit).
- ``recorder``: append one Admitted event per RUN_ID in ONE recorder transaction.
- ``rebuild``: ``memory-es rebuild`` of ROOT (``rebuild.before_activate`` /
  ``rebuild.after_activate`` kill it around the generation switch).

The answer of a run id is always :func:`answer_for` so the test process can re-admit the very
same bytes. With ``MEMORY_ES_CRASH_AT`` set the process is expected to die by SIGKILL at that
boundary; if it gets to the end it prints ``survived`` and exits 0, which the tests treat as a
failure.
"""

from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime


def answer_for(run_id: str) -> str:
    return f"answer for {run_id}"


def main(argv: list[str]) -> int:
    from memory_es.intake import CompletedTurn
    from memory_es.store import MemoryStore

    root, mode, run_ids = argv[0], argv[1], argv[2:]
    if mode == "rebuild":
        from memory_es.transfer import rebuild_root

        rebuild_root(root)
        print("survived", flush=True)
        return 0
    store = MemoryStore.open(root, background=False)
    turns = [CompletedTurn(run_id=r, outcome="success", answer=answer_for(r)) for r in run_ids]
    if mode == "single":
        for turn in turns:
            print(store.persist_completed_turn(turn).status, flush=True)
    elif mode == "threads":
        barrier = threading.Barrier(len(turns))

        def admit(turn: CompletedTurn) -> None:
            barrier.wait()
            store.persist_completed_turn(turn)

        threads = [threading.Thread(target=admit, args=(t,)) for t in turns]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    elif mode == "recorder":
        from memory_es.intake import prepare_turn

        opened = store._opened
        stored = []
        for turn in turns:
            prepared = prepare_turn(turn, tier=store.config.mode,
                                    write_mode=store.config.write_mode,
                                    capture_cron=False, capture_webhook=False)
            event = prepared.admitted(datetime.now(UTC))  # type: ignore[union-attr]
            stored.append(opened.app.mapper.to_stored_event(event))
        opened.recorder.insert_events(stored)
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 3
    store.close()
    print("survived", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
