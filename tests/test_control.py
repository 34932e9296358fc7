"""Writing beside a running agent (the operator's day, item 4): the control socket.

While a long-lived writer holds a root (a host's store with its worker, a real
``memory-es serve-mcp``), the CLI's ``admit``, ``remember``, ``set-status`` and ``mark`` hand
their request to it and print what they print today; maintenance keeps refusing (C16) and
names the holder. Four shells writing at once through a running ``serve-mcp``: every
acknowledged write is stored exactly once, each shell's writes in the order it got them
acknowledged. A socket or secret another user owns or others can reach, a wrong secret, and a
peer of another uid are refused; a socket left by a writer that died is passed over.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ceilings import HANG_S
from memory_es import MemoryRoot, control
from memory_es.config import parse_config
from memory_es.errors import UnsafePathError
from memory_es.events import Intake, Memory
from memory_es.store import MemoryStore

CLI = [sys.executable, "-m", "memory_es.cli"]
JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}


def cli(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--root", str(root), *argv], capture_output=True, text=True,
                          timeout=HANG_S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def serving(tmp_path: Path) -> tuple[Path, subprocess.Popen[str]]:
    """A Journal root held by a real ``memory-es serve-mcp``."""
    root = tmp_path / "root"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"memory": JOURNAL}))
    assert cli(root, "--config", str(config), "admit", "--run-id", "first",
               "--answer", "The root exists.").returncode == 0
    server = subprocess.Popen(
        [*CLI, "serve-mcp", "--root", str(root), "--config", str(config), "--transport",
         "http", "--port", str(free_port())], stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    assert "MCP server on" in server.stderr.readline()
    deadline = time.monotonic() + HANG_S
    while not control.live(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield root, server
    server.terminate()
    server.wait(timeout=HANG_S)


def test_four_shells_write_through_a_running_server_exactly_once(
        serving: tuple[Path, subprocess.Popen[str]]) -> None:
    root, server = serving

    def shell(n: int) -> list[str]:
        acknowledged = []
        for i in range(6):
            if i % 2:
                done = cli(root, "remember", f"Shell {n} remembers fact {i}")
                acknowledged.append(json.loads(done.stdout)["id"])
            else:
                done = cli(root, "admit", "--run-id", f"s{n}-{i}", "--answer", f"Shell {n} "
                           f"turn {i}")
                acknowledged.append(json.loads(done.stdout)["intake_id"])
            assert done.returncode == 0, done.stderr
        return acknowledged

    with ThreadPoolExecutor(4) as pool:
        acks = list(pool.map(shell, range(4)))
    held = cli(root, "drain")  # maintenance still needs the agent stopped, and says who
    assert held.returncode == 3 and f"held by pid {server.pid}" in held.stderr
    server.terminate()
    server.wait(timeout=HANG_S)
    written = [e.run_hash if isinstance(e, Intake.Admitted) else e.memory_id
               for _, e in MemoryRoot.open(root).events()
               if isinstance(e, Intake.Admitted | Memory.Recorded) and
               (not isinstance(e, Memory.Recorded) or e.source == "remember")]
    counts = Counter(written)
    for shell_acks in acks:
        assert all(counts[a] == 1 for a in shell_acks)  # stored, exactly once
        assert [written.index(a) for a in shell_acks] == \
            sorted(written.index(a) for a in shell_acks)  # in the order acknowledged
    assert len(written) == 1 + 24


def test_set_status_and_mark_go_through_and_print_the_same(tmp_path: Path) -> None:
    root = tmp_path / "root"
    bujo = parse_config({"mode": "bujo", "embeddings": {"dim": 8},
                         "llm": {"provider": "ollama", "model": "m"}})
    with MemoryStore.open(root, bujo, background=False, control=True) as store:
        line = store.remember("Renew the passport", due_at="2026-07-15").memory_id
        status = cli(root, "set-status", line, "scheduled")
        marked = cli(root, "mark", line, "--insight")
        assert store.show(line).memory.status == "scheduled"
    assert status.returncode == 0 and json.loads(status.stdout)["status"] == "scheduled"
    assert marked.returncode == 0 and json.loads(marked.stdout)["insight"] is True
    done = cli(root, "set-status", line, "done")  # no writer now: the CLI opens the root
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "done"
    refused = cli(root, "set-status", line, "scheduled")  # done -> scheduled: refused, as ever
    assert refused.returncode == 1 and "status_transition_refused" in refused.stderr


def test_the_socket_and_secret_go_with_the_writer(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL)):
        sock, secret = control.socket_path(root), control.secret_path(root)
        assert sock.stat().st_mode & 0o777 == 0o600 == secret.stat().st_mode & 0o777
        assert (root / ".runtime").stat().st_mode & 0o777 == 0o700
    assert not sock.exists() and not secret.exists()
    with MemoryStore.open(root, background=False):  # a CLI-style writer serves nothing
        assert not control.live(root)


def test_unsafe_sockets_and_wrong_secrets_are_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL)):
        path = control.socket_path(root)
        os.chmod(path, 0o666)
        wide = cli(root, "remember", "Reached through a wide socket")
        assert wide.returncode == 3 and "lets others in" in wide.stderr
        os.chmod(path, 0o600)
        with socket.socket(socket.AF_UNIX) as conn:  # the right socket, the wrong secret
            conn.connect(str(path))
            conn.sendall(json.dumps({"secret": "00" * 32, "op": "remember",
                                     "args": {"text": "x"}}).encode() + b"\n")
            answer = json.loads(control.read_line(conn))
        assert answer == {"ok": False, "error": {"code": "control_refused",
                                                 "message": "not this root's control secret"}}
        real = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real + 1)  # files and peer now "another user"
        with pytest.raises(UnsafePathError, match="belongs to uid"):
            control.call(root, "remember", {"text": "x"})
        monkeypatch.setattr(os, "getuid", lambda: real)
    assert [e for _, e in MemoryRoot.open(root).events() if isinstance(e, Memory.Recorded)] == []


def test_a_socket_left_by_a_writer_that_died_is_passed_over(tmp_path: Path) -> None:
    root = tmp_path / "root"
    host = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from memory_es.store import MemoryStore; "
        f"s = MemoryStore.open({str(root)!r}); print('up', flush=True); time.sleep(600)")],
        stdout=subprocess.PIPE, text=True)
    assert host.stdout is not None and host.stdout.readline().strip() == "up"
    os.kill(host.pid, signal.SIGKILL)
    host.wait(timeout=HANG_S)
    assert control.live(root)  # the dead writer's socket file is still there
    done = cli(root, "remember", "Written by the CLI itself")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "remembered"


def test_forget_goes_through_the_running_writer_and_prints_its_receipt(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL)) as store:
        line = store.remember("The alarm code is on the fridge note").memory_id
        dry = cli(root, "forget", line, "--reason", "user-request", "--dry-run")
        done = cli(root, "forget", line, "--reason", "user-request")
        as_json = cli(root, "--json", "forget", line, "--reason", "user-request")
    assert dry.returncode == 0 and dry.stdout.startswith("would forget 1 memory")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("forgot 1 memory and 0 turns (user-request)")
    assert "byte scan of" in done.stdout and "clean" in done.stdout
    assert json.loads(as_json.stdout)["status"] == "already_forgotten"
    texts = [e for _, e in MemoryRoot.open(root).events() if isinstance(e, Memory.Forgotten)]
    assert len(texts) == 1


def test_a_root_path_too_long_for_a_unix_socket_still_gets_one(tmp_path: Path) -> None:
    """AF_UNIX paths hold about 100 bytes: a deep root's socket lives in the user's own
    private folder under the temp directory, named from the root."""
    root = tmp_path / ("deep-" * 20) / "root"
    root.parent.mkdir()
    assert len(str(root / ".runtime" / "control.sock")) > 108
    with MemoryStore.open(root, parse_config(JOURNAL)):
        path = control.socket_path(root)
        assert path.parent.name == f"memory-es-{os.getuid()}"
        assert path.parent.stat().st_mode & 0o777 == 0o700
        done = cli(root, "remember", "Written through a socket outside the root")
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "remembered"
    assert not path.exists()


def test_a_writer_that_takes_the_request_but_never_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a request is sent the outcome is unknown: a one-line error (exit 3 in the CLI),
    never a second try by opening the root."""
    root = tmp_path / "root"
    runtime = root / ".runtime"
    runtime.mkdir(parents=True, mode=0o700)
    (runtime / "control.key").write_bytes(b"k" * 32)
    os.chmod(runtime / "control.key", 0o600)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(runtime / "control.sock"))
    os.chmod(runtime / "control.sock", 0o600)
    listener.listen(1)
    monkeypatch.setattr(control, "ANSWER_S", 0.5)
    try:
        with pytest.raises(control.MemoryEsError) as unanswered:
            control.call(root, "remember", {"text": "x"})
        accepted, _ = listener.accept()
        assert b'"op": "remember"' in accepted.recv(65536)  # the request did arrive
        accepted.close()
    finally:
        listener.close()
    assert unanswered.value.code == "control_unanswered"
    assert "may or may not be applied" in str(unanswered.value)


def test_only_long_work_draws_progress() -> None:
    """A bar for the long commands only: never for serve-mcp (its worker drains for hours)
    or a quick write."""
    from memory_es.cli.commands import commands

    assert {c.name for c in commands() if c.progress} == {
        "drain", "rebuild", "health", "replay", "export", "import", "migrate-journal",
        "migrate"}
