"""Progress on long work (issue: the operator's day): on stderr when it is a terminal, for
drain, rebuild, health, replay, export and import; nothing when it is not, nothing under
``--quiet``, and never a byte on stdout (``--json`` and pipes are untouched). Driven under a
real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from ceilings import HANG_S
from memory_es.intake import CompletedTurn
from memory_es.store import MemoryStore

CLI = [sys.executable, "-m", "memory_es.cli"]


def run(argv: list[str], *, terminal: bool) -> tuple[int, bytes, bytes]:
    """``memory-es argv``: exit code, stdout, and stderr (a pseudo-terminal when asked)."""
    if not terminal:
        done = subprocess.run([*CLI, *argv], capture_output=True, timeout=HANG_S)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen([*CLI, *argv], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    out, chunks = b"", []
    assert proc.stdout is not None
    out = proc.stdout.read()
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed and drained
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=HANG_S), out, b"".join(chunks)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("progress") / "root"
    with MemoryStore.open(path, background=False) as store:
        for i in range(300):
            store.persist_completed_turn(CompletedTurn(
                run_id=f"r{i}", outcome="success", answer=f"Fact number {i} about things."))
        store.drain()
    return path


@pytest.mark.parametrize(("argv", "task"), [
    (["rebuild"], "rebuild"),
    (["health"], "health"),
    (["export", "--journal", "-"], "export"),
])
def test_a_terminal_sees_progress_and_a_pipe_sees_none(argv: list[str], task: str,
                                                       root: Path) -> None:
    code, out, err = run(["--root", str(root), *argv], terminal=True)
    assert code == 0, err
    assert (task.encode() in err and b"it/s" in err) or b"%|" in err, err
    plain_code, plain_out, plain_err = run(["--root", str(root), *argv], terminal=False)
    assert plain_code == 0 and task.encode() + b":" not in plain_err
    assert b"\r" not in plain_err and b"%|" not in plain_err
    if argv[0] == "export":
        assert out == plain_out  # progress never touches stdout
    quiet_code, _, quiet_err = run(["--root", str(root), "--quiet", *argv], terminal=True)
    assert quiet_code == 0 and b"%|" not in quiet_err  # (a pty ends its lines with \r\n)
    assert task.encode() + b":" not in quiet_err


def test_json_output_is_untouched_on_a_terminal(root: Path) -> None:
    code, out, err = run(["--root", str(root), "--json", "health"], terminal=True)
    assert code == 0 and json.loads(out)["status"] == "clean"
    assert b"health" in err  # the bar went to stderr, the JSON alone to stdout


def test_replay_and_import_report_progress(root: Path, tmp_path: Path) -> None:
    export = tmp_path / "j.jsonl"
    assert run(["--root", str(root), "export", "--journal", str(export)],
               terminal=False)[0] == 0
    code, _, err = run(["replay", str(export), "--root", str(tmp_path / "copy")],
                       terminal=True)
    assert code == 0 and b"replay" in err and b"rebuild" in err
    rows = [{"id": f"m{i}", "memory": f"Memory {i}", "created_at": "2025-01-01T00:00:00Z"}
            for i in range(1500)]
    (tmp_path / "m.json").write_text(json.dumps(rows))
    code, out, err = run(["--root", str(tmp_path / "imported"), "import", "apply",
                          str(tmp_path / "m.json"), "--from", "mem0", "--yes"], terminal=True)
    assert code == 0 and b"import" in err and out.startswith(b"imported 1500 new items")
