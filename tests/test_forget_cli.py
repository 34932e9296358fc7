"""``memory-es forget`` (issue 14 items 3 and 4): a real subprocess, the exit-code contract
(0 ok, 1 refused / not found, 2 usage) and the ``--json`` receipt."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ceilings import HANG_S
from memory_es import CompletedTurn, MemoryStore

CLI = Path(sys.executable).with_name("memory-es")
MARKER = "xqzvkptwq"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), "--root", str(root), *args], capture_output=True,
                          text=True, timeout=HANG_S, check=False)


def make(root: Path) -> None:
    with MemoryStore.open(root, background=False) as store:
        for run_id, answer in (("r1", f"The {MARKER} parcel goes to Ada."),
                               ("r2", "The dentist moved to Tuesday."),
                               ("r3", f"Second {MARKER} note, about the shed.")):
            store.persist_completed_turn(CompletedTurn(run_id=run_id, outcome="success",
                                                       answer=answer))
        store.drain()


def test_forget_id_json_receipt_and_exit_codes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make(root)
    memory_id = json.loads(cli(root, "search", "dentist", "--json").stdout)["results"][0]["id"]
    bad = cli(root, "forget", memory_id, "--reason", "Not A Slug", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "invalid_slug"
    missing = cli(root, "forget", "0" * 64, "--reason", "user-request", "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["code"] == "memory_not_found"
    done = cli(root, "forget", memory_id, "--reason", "user-request", "--json")
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    assert receipt["status"] == "forgotten" and receipt["memory_ids"] == [memory_id]
    assert receipt["byte_scan"]["clean"] is True
    assert set(receipt) >= {"events", "erased", "files_rewritten", "keys_destroyed", "turns"}
    again = cli(root, "forget", memory_id, "--reason", "user-request")
    assert again.returncode == 0 and "already forgotten" in again.stdout


def test_forget_query_lists_first_then_erases_with_yes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make(root)
    refused = cli(root, "forget", "--query", MARKER, "--reason", "user-request")
    assert refused.returncode == 2
    dry = cli(root, "forget", "--query", MARKER, "--reason", "user-request", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.count(MARKER) == 2  # texts: the owner's search
    assert "would forget 2 memories" in dry.stdout
    yes = cli(root, "forget", "--query", MARKER, "--reason", "user-request", "--yes", "--json")
    assert yes.returncode == 0, yes.stderr
    assert len(json.loads(yes.stdout)["memory_ids"]) == 2
    assert MARKER not in yes.stdout
    assert not [p for p in root.rglob("*") if p.is_file() and MARKER.encode() in p.read_bytes()]


def test_forget_run_id_dry_run_then_erase(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make(root)
    dry = cli(root, "forget", "--run-id", "r1", "--reason", "user-request", "--dry-run")
    assert dry.returncode == 0 and MARKER not in dry.stdout  # ids and kinds only
    assert "would forget 1 memory, 1 turn (kept: 0)" in dry.stdout  # counts in number
    assert cli(root, "forget", "--run-id", "nope", "--reason", "user-request").returncode == 1
    done = cli(root, "forget", "--run-id", "r1", "--reason", "user-request")
    assert done.returncode == 0 and "byte scan of" in done.stdout and "clean" in done.stdout
    assert "forgot 1 memory and 1 turn (user-request)" in done.stdout
    left = cli(root, "search", MARKER, "--json").stdout
    assert "shed" in left and "parcel" not in left
