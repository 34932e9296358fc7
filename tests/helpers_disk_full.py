"""A store on a nearly full filesystem; run as a script inside a private mount namespace whose
tmpfs is DIR (see tests/test_disk_full.py), not a test module.

    python helpers_disk_full.py DIR [lagging SPARE]

DIR is a small tmpfs. Without ``lagging`` it holds ``filler`` (a file the script deletes to
free space) and room for little else. The script fills the rest with admissions, watches what
the store does while the disk is full, frees the space, admits again, and prints one JSON
object of what it saw. With ``lagging`` it instead leaves the index behind the journal, fills
the disk but for SPARE bytes, and reopens the root.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from ceilings import HANG_S
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.ids import run_hash


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def main(directory: Path) -> None:
    logs = Collect()
    logging.getLogger("memory_es").addHandler(logs)
    logging.getLogger("memory_es").setLevel(logging.WARNING)
    root = directory / "root"
    fds_before = len(os.listdir("/proc/self/fd"))
    store = MemoryStore.open(root, parse_config({"mode": "lite"}), background=True)
    admitted: list[str] = []
    rejected: dict[str, int] = {}
    for i in range(600):
        result = store.persist_completed_turn(CompletedTurn(
            run_id=f"r{i}", outcome="success", answer=f"turn {i} " + "x" * 4000))
        if result.status == "admitted":
            admitted.append(f"r{i}")
        else:
            key = f"{result.code}:{result.detail}"
            rejected[key] = rejected.get(key, 0) + 1
    full_since = len(logs.messages)
    time.sleep(3.0)  # the worker fails while the disk stays full: it must back off
    worker_logs = [m for m in logs.messages[full_since:] if "worker" in m]
    cli = subprocess.run([str(Path(sys.executable).parent / "memory-es"), "--root", str(root),
                          "admit", "--run-id", "cli-full", "--answer", "y" * 4000],
                         capture_output=True, text=True, timeout=HANG_S)
    (directory / "filler").unlink()  # space again
    after = store.persist_completed_turn(CompletedTurn(run_id="after", outcome="success",
                                                       answer="after the disk was freed"))
    close_error = None
    try:
        store.close()
    except Exception as e:  # must not happen
        close_error = type(e).__name__
    fds_after = len(os.listdir("/proc/self/fd"))
    with MemoryStore.open(root, background=False) as reopened:
        reopened.drain()
        resolved = reopened.inspect().counts.resolved
    ids = {r.id for r in MemoryRoot.open(root).inspect().records}  # resolved ones too
    print(json.dumps({
        "admitted": len(admitted), "rejected": rejected,
        "worker_logs": len(worker_logs), "cli": [cli.returncode, cli.stdout, cli.stderr],
        "after": after.status, "close_error": close_error,
        "fd_growth": fds_after - fds_before,
        "all_admitted_kept": all(run_hash(r) in ids for r in [*admitted, "after"]),
        "resolved": resolved,
    }))


def fill(path: Path, spare: int) -> None:
    """Grow ``path`` until the filesystem has no byte left, then give back ``spare``."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    os.truncate(path, max(0, path.stat().st_size - spare))


def lagging(directory: Path, spare: int) -> None:
    """Reopen a root whose index is behind while the disk is full: the open must succeed with
    the projections degraded (B4), and catch up once space is back."""
    logs = Collect()
    logging.getLogger("memory_es").addHandler(logs)
    logging.getLogger("memory_es").setLevel(logging.WARNING)
    root = directory / "root"
    with MemoryStore.open(root, parse_config({"mode": "lite"}), background=False) as store:
        for i in range(40):  # no worker: the index stays behind the journal
            store.persist_completed_turn(CompletedTurn(run_id=f"r{i}", outcome="success",
                                                       answer=f"turn {i} " + "x" * 4000))
    fill(directory / "filler", spare)
    opened_full: str | None = None
    try:
        with MemoryStore.open(root, background=False) as full:
            counts = full.inspect().counts
            refused = full.persist_completed_turn(CompletedTurn(
                run_id="full", outcome="success", answer="y" * 4000))
    except Exception as e:  # must not happen
        opened_full = f"{type(e).__name__}: {e}"
    degraded = [m for m in logs.messages if m.startswith("memory_degraded")]
    (directory / "filler").unlink()
    with MemoryStore.open(root, background=False) as reopened:
        reopened.drain()
        hits = reopened.recall("turn 7", limit=30).recall.hits
    print(json.dumps({
        "open_error": opened_full, "degraded": degraded,
        "pending_while_full": None if opened_full else counts.pending,
        "refused": None if opened_full else [refused.status, refused.code, refused.detail],
        "recalled": sorted({h.text.split(" x")[0] for h in hits if h.text.startswith("turn")}),
    }))


if __name__ == "__main__":
    if sys.argv[2:3] == ["lagging"]:
        lagging(Path(sys.argv[1]), int(sys.argv[3]))
    else:
        main(Path(sys.argv[1]))
