"""A real ``memory-es serve-web`` process on 127.0.0.1 over a BuJo root, for the web tests; not
a test module.

The root is the golden consolidation fixture replayed (entities, relations, supersessions,
``index.md``) plus one Remember whose text is markup, so every page has something to show and
escaping has something to prove.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from helpers_replay import FIXTURES
from memory_es import MemoryStore

MARKUP = "<script>alert(1)</script> Morgan's <b>bold</b> plan"
FIXTURE_DAY = "2026-07-06"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_root(path: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "memory_es.cli", "--root", str(path), "--quiet",
                           "replay", str(FIXTURES / "consolidation" / "journal.jsonl")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with MemoryStore.open(path, background=False) as store:
        assert store.remember(MARKUP).status == "remembered"
    return path


@dataclass
class Served:
    proc: subprocess.Popen[str]
    port: int
    token: str
    login: str  # the one-time login path, /login/<code>
    root: Path

    def get(self, path: str, *, method: str = "GET", auth: bool = True,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sent = {"Authorization": f"Bearer {self.token}"} if auth else {}
        try:
            conn.request(method, path, headers={**sent, **(headers or {})})
            answer = conn.getresponse()
            body = answer.read().decode("utf-8")
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body
        finally:
            conn.close()

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err


def serve(root: Path, *extra: str) -> Served:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "memory_es.cli", "serve-web", "--root",
                             str(root), "--port", str(port), *extra],
                            stderr=subprocess.PIPE, text=True, env={**os.environ})
    assert proc.stderr is not None
    said = proc.stderr.readline()
    assert "web inspector on" in said, said
    login = re.search(r"(/login/[A-Za-z0-9_-]+)", said)
    assert login is not None
    token = Path(said.split("bearer token in ")[1].rstrip(")\n")).read_text().strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    return Served(proc, port, token, login.group(1), root)
