"""200 concurrent open/recall/close cycles across threads and processes (issue 12 item 3).

Writers take turns on the root's lock (each open waits for it), readers never wait; no cycle
may raise (the first-use races once raised ``FileExistsError`` or ``apsw.BusyError`` into the
host), every recall must find the stored line, no worker thread may outlive its store, and the
root must be healthy afterwards.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import traceback
from pathlib import Path

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.testing import WordBagEmbedder

JOURNAL = parse_config({"mode": "journal", "embeddings": {"provider": "local"}})
TEXT = "The spare key is under the blue flowerpot."
THREADS, THREAD_CYCLES = 4, 25  # 100 writer + reader cycles in this process
PROCESSES, PROCESS_CYCLES = 2, 50  # 100 more in two other processes

CHILD = """
import sys
from memory_es import MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.testing import WordBagEmbedder
config = parse_config({"mode": "journal", "embeddings": {"provider": "local"}})
for n in range(int(sys.argv[2])):
    if n % 2:
        with MemoryStore.open(sys.argv[1], config, lock_timeout=60,
                              embedder=WordBagEmbedder()) as store:
            hits = store.recall("spare key flowerpot").recall.hits
    else:
        hits = MemoryRoot.open(sys.argv[1]).recall("spare key flowerpot").recall.hits
    assert hits and hits[0].text.startswith("The spare key"), hits
print("ok")
"""


def test_200_open_recall_close_cycles(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, JOURNAL, background=False, embedder=WordBagEmbedder()) as s:
        s.persist_completed_turn(CompletedTurn(run_id="key", outcome="success", answer=TEXT))
        s.drain()
    baseline = {t.ident for t in threading.enumerate()}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(PROCESS_CYCLES)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(PROCESSES)]
    errors: list[str] = []
    found: list[bool] = []

    def cycles(worker: int) -> None:
        try:
            for n in range(THREAD_CYCLES):
                if (worker + n) % 2:
                    with MemoryStore.open(root, JOURNAL, lock_timeout=60,
                                          embedder=WordBagEmbedder()) as store:
                        hits = store.recall("spare key flowerpot").recall.hits
                else:
                    hits = MemoryRoot.open(root, JOURNAL.model_copy(
                        update={"embeddings": None})).recall("spare key").recall.hits
                found.append(bool(hits) and hits[0].text == TEXT)
        except BaseException:  # collected: a thread's exception must fail the test
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=cycles, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    outputs = [child.communicate(timeout=300) for child in children]
    assert errors == []
    assert len(found) == THREADS * THREAD_CYCLES and all(found)
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0 and out.strip() == "ok", err[-2000:]
    leftover = [t for t in threading.enumerate()
                if t.ident not in baseline and t.name.startswith("memory-es")]
    assert leftover == []
    health = MemoryRoot.open(root, JOURNAL).health()
    assert (health.status, health.findings, health.worker) == ("clean", (), "not_running")
