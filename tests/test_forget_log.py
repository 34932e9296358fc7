"""The operator's view of forgets and of the worker (C1, C2, B19-B21): content-free forget
receipts read from the journal's ``Forgotten`` events (``MemoryRoot.forgets``, ``memory-es
inspect --forgets``, the web health page) and the worker's published snapshot
(``MemoryRoot.worker_snapshot``, ``inspect``'s text, the health page)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ceilings import HANG_S
from helpers_web import serve
from memory_es import MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.intake import CompletedTurn
from memory_es.intake.state import FORGET_LOG
from memory_es.store.forgetting import ForgetReceipt

SECRET = "The vault code is 4417"


@pytest.fixture(scope="module")
def forgotten(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ForgetReceipt]:
    """A Journal root with three turns; the second is forgotten with its memory."""
    root = tmp_path_factory.mktemp("forgets") / "root"
    with MemoryStore.open(root, background=False) as store:
        for i, text in enumerate(["Lunch is at noon", SECRET, "The boat is moored at pier 7"]):
            assert store.persist_completed_turn(CompletedTurn(
                run_id=f"run-{i}", outcome="success", answer=text)).status == "admitted"
        store.drain()
        hit = store.lexical_search("vault code")[0]
        receipt = store.forget(hit.id, reason="user-request")
    assert receipt.status == "forgotten", receipt
    return root, receipt


def test_the_log_lists_each_forgotten_event_content_free(
        forgotten: tuple[Path, ForgetReceipt]) -> None:
    root, receipt = forgotten
    log = MemoryRoot.open(root).forgets().to_json()
    assert log["total"] == len(receipt.events) >= 2  # the memory and its turn
    kinds = {r["kind"]: r for r in log["recent"]}
    assert kinds["memory"]["subject"] == receipt.memory_ids[0]
    assert kinds["turn"]["subject"] in receipt.turns
    assert all(r["reason"] == "user-request" for r in log["recent"])
    assert sum(r["keys_destroyed"] for r in log["recent"]) == receipt.keys_destroyed > 0
    positions = [r["position"] for r in log["recent"]]
    assert positions == sorted(positions, reverse=True)  # newest first
    assert "vault" not in json.dumps(log) and "4417" not in json.dumps(log)


def test_a_root_that_never_forgot_has_an_empty_log(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "root", background=False) as store:
        store.remember("Nothing to forget here")
    assert MemoryRoot.open(tmp_path / "root").forgets().to_json() == {"total": 0, "recent": []}


def test_the_log_keeps_the_latest_fifty_and_counts_all(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        ids = [store.remember(f"Line number {i} to be erased").memory_id
               for i in range(FORGET_LOG + 2)]
        for memory_id in ids:
            assert memory_id is not None
            assert store.forget(memory_id, reason="cleanup").status == "forgotten"
    handle = MemoryRoot.open(root)
    log = handle.forgets()
    assert log.total == FORGET_LOG + 2 and len(log.recent) == FORGET_LOG
    assert log.recent[0].subject == ids[-1] and log.recent[-1].subject == ids[2]
    with MemoryStore.open(root, background=False) as store:  # the kept fold moves on
        extra = store.remember("One more to erase").memory_id
        assert extra is not None and store.forget(extra, reason="late").status == "forgotten"
    again = handle.forgets()
    assert again.total == FORGET_LOG + 3 and again.recent[0].subject == extra


def test_the_cli_prints_the_same_log(forgotten: tuple[Path, ForgetReceipt],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    root, receipt = forgotten
    assert main(["--root", str(root), "inspect", "--forgets", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == MemoryRoot.open(root).forgets().to_json()
    assert main(["--root", str(root), "inspect", "--forgets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"forgets={len(receipt.events)}"
    assert any(receipt.memory_ids[0] in line and "reason=user-request" in line
               for line in lines[1:])
    assert main(["--root", str(root), "inspect", "0" * 64, "--forgets"]) == 2
    assert "--forgets lists every forget" in capsys.readouterr().err


def test_the_worker_snapshot_while_running_and_after(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    assert MemoryRoot.open(root).worker_snapshot().to_json() == {
        "status": "not_running", "snapshot": "absent", "heartbeat": None, "shutdown": None,
        "queue": {}}
    store = MemoryStore.open(root)  # the background worker publishes its snapshot
    try:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success", answer="hi"))
        deadline = time.monotonic() + HANG_S
        while MemoryRoot.open(root).worker_snapshot().status != "running":
            assert time.monotonic() < deadline, "the worker never published a snapshot"
            time.sleep(0.05)
        live = MemoryRoot.open(root).worker_snapshot()
        assert live.snapshot == "current" and live.shutdown == "running"
        assert [name for name, _ in live.queue] == ["due", "dead", "capture_retained",
                                                    "embedding"]
    finally:
        store.close()
    after = MemoryRoot.open(root).worker_snapshot()
    assert (after.status, after.shutdown) == ("not_running", "stopped")
    assert main(["--root", str(root), "inspect"]) == 0
    assert "snapshot=current shutdown=stopped heartbeat=" in capsys.readouterr().out


def test_the_health_page_shows_both(forgotten: tuple[Path, ForgetReceipt]) -> None:
    root, receipt = forgotten
    served = serve(root)
    try:
        status, _, body = served.get("/health")
    finally:
        assert "Traceback" not in served.stop()
    assert status == 200
    assert body.count('<tr class="forget">') == len(receipt.events)
    assert receipt.memory_ids[0][:16] in body and "user-request" in body
    assert "vault" not in body
    # serve-web holds no writer: no worker looks after the root while it is served
    assert '<p class="meta" id="worker">not running; snapshot' in body
