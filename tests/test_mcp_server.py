"""``memory-es serve-mcp`` (issue 17): the server runs as a real subprocess and the official
MCP SDK's own client drives it, over stdio and over Streamable HTTP on 127.0.0.1.

Covered: the tools a configuration offers and their schemas and annotations; Remember then
recall in the next call; the journal's cursor across calls; errors for bad arguments that name
the field while the server keeps serving; an honest degraded result with the embedder down;
forget (opt-in, destructive, idempotent); the resources; and the HTTP surface's bearer token,
Origin check and request size limit."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S

pytest.importorskip("mcp")

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.embeddings.use_cache import CACHE_ENV
from memory_es.keystore import KEY_STORE_ENV
from memory_es.serve.tools import EVIDENCE_NOTE

Session = Callable[[Client], Awaitable[None]]
FACTS = ("The dentist appointment is on Tuesday at 9.", "Priya's birthday is on 3 March.",
         "The office WiFi password was changed last week.")


def server_env() -> dict[str, str]:
    """What the server subprocess needs: the test session's key store and model cache, and
    the source under test on PYTHONPATH (the SDK starts stdio servers with a minimal
    environment)."""
    return {name: os.environ[name] for name in (KEY_STORE_ENV, CACHE_ENV, "PATH", "HOME",
                                                "PYTHONPATH")
            if name in os.environ}


def make_root(path: Path, config: dict[str, Any]) -> tuple[Path, Path]:
    """A root holding FACTS (remembered), and its config file."""
    config_file = path.parent / f"{path.name}.json"
    config_file.write_text(json.dumps({"memory": {**config, "path": str(path)}}))
    with MemoryStore.open(path, parse_config(config), background=False) as store:
        for fact in FACTS:
            store.remember(fact)
    return path, config_file


def over_stdio(root: Path, config_file: Path, session: Session) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_es.cli", "serve-mcp", "--root", str(root), "--config",
              str(config_file)], env=server_env())

    async def run() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await session(client)

    asyncio.run(run())


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_root(tmp_path_factory.mktemp("mcp") / "lite", {"mode": "lite"})


def test_tools_schemas_and_annotations(lite: tuple[Path, Path]) -> None:
    async def session(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == ["memory_recall", "memory_journal", "memory_remember"]
        recall, journal, remember = (tools[n] for n in tools)
        assert recall.annotations.read_only_hint is True
        assert journal.annotations.read_only_hint is True
        assert remember.annotations.read_only_hint is False
        assert remember.annotations.destructive_hint is False
        assert remember.annotations.idempotent_hint is True
        schema = recall.input_schema
        assert schema["required"] == ["query"]
        assert schema["properties"]["limit"]["minimum"] == 1
        assert schema["properties"]["limit"]["maximum"] == 50
        assert "one short, specific topic" in recall.description.lower()
        assert "memory_journal" in recall.description  # when not to use it
        assert set(journal.input_schema["properties"]) == {
            "fromDate", "throughDate", "timeZone", "limit", "cursor"}
        assert remember.input_schema["required"] == ["text"]
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert resources == {"memory://daily/today", "memory://health"}

    over_stdio(*lite, session)


def test_remember_then_recall_in_the_next_call(lite: tuple[Path, Path]) -> None:
    fact = "The plumber Marek comes on Friday morning."

    async def session(client: Client) -> None:
        written = await client.call_tool("memory_remember", {"text": fact})
        assert not written.is_error
        assert written.structured_content["status"] == "remembered"
        again = await client.call_tool("memory_remember", {"text": fact})
        assert again.structured_content == {**written.structured_content,
                                            "status": "duplicate"}
        found = await client.call_tool("memory_recall", {"query": "when does the plumber come"})
        body = found.structured_content
        assert not found.is_error and body["untrusted"] is True
        top = body["results"][0]
        assert top["text"] == fact and top["id"] == written.structured_content["id"]
        assert {"id", "score", "text", "type", "status", "createdAt", "currentness"} <= set(top)
        assert "source" not in top  # a model-facing surface carries no session or intake (H23)
        assert body["degraded"] is True and body["reason"] == "lexical_only"  # Lite says so
        assert body["text"].startswith(EVIDENCE_NOTE) and fact in body["text"]
        assert found.content[0].text == body["text"]  # what a model reads: the rendered hits
        assert written.content[0].text == f"remembered: {written.structured_content['id']}"
        today = await client.read_resource("memory://daily/today")
        assert fact in today.contents[0].text
        health = json.loads((await client.read_resource("memory://health")).contents[0].text)
        assert set(health) == {"pending", "due", "delayed", "dead", "resolved",
                               "vectorsPending"}

    over_stdio(*lite, session)


def test_bad_arguments_name_the_field_and_the_server_keeps_serving(
        lite: tuple[Path, Path]) -> None:
    async def session(client: Client) -> None:
        for name, args, field in [
                ("memory_recall", {"query": "dentist", "limit": 0}, "limit"),
                ("memory_recall", {"query": ""}, "query"),
                ("memory_recall", {"query": "x", "kind": "opinion"}, "kind"),
                ("memory_remember", {}, "text"),
                ("memory_journal", {"fromDate": "2026-12-01", "throughDate": "2026-12-02"},
                 "timeZone"),
                ("memory_journal", {"fromDate": "2026-12-01", "throughDate": "2026-02-30",
                                    "timeZone": "UTC"}, "throughDate"),
                ("memory_journal", {"cursor": "abc", "limit": 3}, "cursor"),
                ("memory_journal", {"cursor": "not-a-cursor"}, "journal_cursor_invalid"),
                ("memory_remember", {"text": "my api key is sk-" + "a" * 40},
                 "remember_credential")]:
            result = await client.call_tool(name, args)
            assert result.is_error, (name, args)
            message = result.content[0].text
            assert field in message, message
        still = await client.call_tool("memory_recall", {"query": "dentist"})
        assert not still.is_error
        assert "dentist" in still.structured_content["results"][0]["text"]

    over_stdio(*lite, session)


def test_the_journal_cursor_works_across_calls(lite: tuple[Path, Path]) -> None:
    async def session(client: Client) -> None:
        today = time.strftime("%Y-%m-%d", time.gmtime())
        first = await client.call_tool("memory_journal", {
            "fromDate": today, "throughDate": today, "timeZone": "UTC", "limit": 1})
        page = first.structured_content
        assert not first.is_error and len(page["entries"]) == 1 and page["cursor"]
        assert first.content[0].text.startswith(EVIDENCE_NOTE)
        assert page["entries"][0]["text"] in first.content[0].text
        seen = [page["entries"][0]["id"]]
        while page.get("cursor"):
            nxt = await client.call_tool("memory_journal", {"cursor": page["cursor"]})
            assert not nxt.is_error
            page = nxt.structured_content
            seen += [e["id"] for e in page["entries"]]
        assert len(seen) == len(set(seen)) >= len(FACTS)

    over_stdio(*lite, session)


def test_the_config_decides_which_tools_are_offered(tmp_path: Path) -> None:
    root, config = make_root(tmp_path / "gated", {
        "mode": "lite", "recallTool": {"enabled": False}, "forgetTool": {"enabled": True}})
    with MemoryStore.open(root, None, background=False) as store:  # a turn to forget by run id
        store.persist_completed_turn(CompletedTurn(
            run_id="turn-7", outcome="success", answer="The spare key is under the blue pot."))
        store.drain()

    async def session(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == ["memory_remember", "memory_forget"]  # no read tool at all
        forget = tools["memory_forget"]
        assert forget.annotations.destructive_hint is True
        assert forget.annotations.idempotent_hint is True
        written = await client.call_tool("memory_remember", {"text": "Forget me soon."})
        memory_id = written.structured_content["id"]
        gone = await client.call_tool("memory_forget", {"id": memory_id,
                                                        "reason": "user-request"})
        assert not gone.is_error and gone.structured_content["status"] == "forgotten"
        again = await client.call_tool("memory_forget", {"id": memory_id,
                                                         "reason": "user-request"})
        assert again.structured_content["status"] == "already_forgotten"
        both = await client.call_tool("memory_forget", {"reason": "x"})
        assert both.is_error and "forget_target_required" in both.content[0].text
        turn = await client.call_tool("memory_forget", {"runId": "turn-7",
                                                        "reason": "user-request"})
        assert not turn.is_error and turn.structured_content["status"] == "forgotten"

    over_stdio(root, config, session)
    with MemoryStore.open(root, None, background=False) as store:  # gone from the root too
        assert all("Forget me" not in h.text for h in store.recall("forget me").recall.hits)
        assert all("spare key" not in h.text for h in store.recall("spare key").recall.hits)


def test_a_provider_outage_is_an_honest_degraded_result(tmp_path: Path) -> None:
    """The embedder down (nothing listens on its port): recall answers lexically and says
    ``degraded`` with the reason, never an error and never invented hits (G20, G21)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    root, config = make_root(tmp_path / "down", {"mode": "lite"})
    config.write_text(json.dumps({"memory": {
        "mode": "journal", "path": str(root),
        "embeddings": {"provider": "ollama", "endpoint": f"http://127.0.0.1:{dead}",
                       "model": "nomic-embed-text", "timeoutMs": 2000}}}))

    async def session(client: Client) -> None:
        result = await client.call_tool("memory_recall", {"query": "dentist appointment"})
        body = result.structured_content
        assert not result.is_error
        assert body["degraded"] is True and body["reason"] == "provider_unavailable"
        assert [r["text"] for r in body["results"]][:1] == [FACTS[0]]

    over_stdio(root, config, session)


# --------------------------------------------------------------------------------------------
# HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(lite: tuple[Path, Path]) -> Iterator[tuple[str, str]]:
    root, config = lite
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_es.cli", "serve-mcp", "--root", str(root), "--config",
         str(config), "--transport", "http", "--port", str(port)],
        stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "MCP server on" in line, line
        token_file = Path(line.split("bearer token in ")[1].rstrip(")\n"))
        assert token_file.stat().st_mode & 0o777 == 0o600
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:  # uvicorn binds after the line is printed
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield url, token_file.read_text().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=HANG_S)


def raw_post(url: str, headers: dict[str, str], body: bytes) -> httpx2.Response:
    return httpx2.post(url, content=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})


def test_http_with_the_token_serves_the_tools(http_server: tuple[str, str]) -> None:
    url, token = http_server

    async def run() -> list[str]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool("memory_recall", {"query": "dentist"})
            assert not result.is_error
            return [r["text"] for r in result.structured_content["results"]]

    assert asyncio.run(run())[0] == FACTS[0]


def test_http_refuses_without_the_token_a_foreign_origin_and_a_huge_body(
        http_server: tuple[str, str]) -> None:
    url, token = http_server
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    assert raw_post(url, {}, ping).status_code == 401
    assert raw_post(url, {"Authorization": f"Bearer {token}x"}, ping).status_code == 401
    assert raw_post(url, {"Authorization": f"Bearer {token}",
                          "Origin": "http://evil.example"}, ping).status_code == 403
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "memory_remember", "arguments": {"text": "x" * (1 << 20)}}}
    assert raw_post(url, {"Authorization": f"Bearer {token}"},
                    json.dumps(call).encode()).status_code == 413


@pytest.mark.parametrize("argv,problem", [
    (["--port", "0"], "not a TCP port"),
    (["--token-file", "t.txt"], "--token-file is for --transport http"),
    (["--transport", "smtp"], "invalid choice"),
    (["--transport", "http", "--token-file", "missing.txt"], "mcp_token_unreadable"),
    (["--transport", "http", "--token-file", "short.txt"], "mcp_token_invalid"),
    (["--transport", "http", "--token-file", "loose.txt"], "mcp_token_unsafe"),
    (["--allow-host", "mem.example"], "--allow-host is for --transport http"),
    (["--transport", "http", "--max-sessions", "0"], "--max-sessions"),
    (["--transport", "http", "--session-idle", "nan"], "--session-idle")])
def test_bad_serve_options_are_usage_errors(tmp_path: Path, argv: list[str],
                                            problem: str) -> None:
    (tmp_path / "short.txt").write_text("too-short\n")
    (tmp_path / "short.txt").chmod(0o600)
    (tmp_path / "loose.txt").write_text("a-token-long-enough-to-pass-1234\n")
    (tmp_path / "loose.txt").chmod(0o644)  # world-readable: anyone could call the tools
    done = subprocess.run([sys.executable, "-m", "memory_es.cli", "serve-mcp", "--root",
                           str(tmp_path / "r"), *argv], capture_output=True, text=True,
                          timeout=HANG_S, cwd=tmp_path)
    assert done.returncode == 2 and problem in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "r").exists()  # refused before anything was created


def start_http(root: Path, config: Path, *extra: str, host: str = "127.0.0.1"
               ) -> tuple[subprocess.Popen[str], int, str, list[str]]:
    """A ``serve-mcp --transport http`` process: it, its port, its token and what it said on
    stderr before serving (the start line, any warning)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_es.cli", "serve-mcp", "--root", str(root), "--config",
         str(config), "--transport", "http", "--host", host, "--port", str(port), *extra],
        stderr=subprocess.PIPE, text=True, env={**os.environ})
    assert proc.stderr is not None
    said = [proc.stderr.readline()]
    assert "MCP server on" in said[0], said
    token = Path(said[0].split("bearer token in ")[1].rstrip(")\n")).read_text().strip()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    if host != "127.0.0.1":
        said.append(proc.stderr.readline())
    return proc, port, token, said


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=30)


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}}).encode()


def test_a_wildcard_bind_warns_and_answers_this_machines_names(tmp_path: Path) -> None:
    """``--host 0.0.0.0``: a warning that it is plain HTTP on all interfaces; a client may
    name the machine as it reaches it (loopback, the host name, ``--allow-host``); another
    ``Host`` is 421 (the SDK's Misdirected Request), a foreign ``Origin`` 403."""
    lite = make_root(tmp_path / "wild", {"mode": "lite"})  # its own: a server holds the lock
    proc, port, token, said = start_http(*lite, "--allow-host", "memory.lan", host="0.0.0.0")
    try:
        assert "warning: serving plain HTTP on all interfaces" in said[1], said
        auth = {"Authorization": f"Bearer {token}"}
        url = f"http://127.0.0.1:{port}/mcp"
        for name in ("127.0.0.1", "localhost", socket.gethostname(), "memory.lan"):
            answer = raw_post(url, {**auth, "Host": f"{name}:{port}"}, INITIALIZE)
            assert answer.status_code == 200, (name, answer.status_code, answer.text)
        assert raw_post(url, {**auth, "Host": f"evil.example:{port}"},
                        INITIALIZE).status_code == 421
        assert raw_post(url, {**auth, "Origin": "http://evil.example"},
                        INITIALIZE).status_code == 403

        async def run() -> str:
            async with httpx2.AsyncClient(headers=auth) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                result = await client.call_tool("memory_recall", {"query": "dentist"})
                return str(result.structured_content["results"][0]["text"])

        assert asyncio.run(run()) == FACTS[0]
    finally:
        stop(proc)


def test_loopback_serving_says_nothing_more(tmp_path: Path) -> None:
    proc, _port, _token, said = start_http(*make_root(tmp_path / "quiet", {"mode": "lite"}))
    try:
        assert len(said) == 1 and "warning" not in said[0]
    finally:
        stop(proc)


def test_sessions_are_capped_and_idle_ones_expire(tmp_path: Path) -> None:
    """At most ``--max-sessions`` at once (503 for one more, the open ones unaffected); a
    session idle for ``--session-idle`` seconds is ended (404 for its id) and makes room."""
    lite = make_root(tmp_path / "capped", {"mode": "lite"})
    proc, port, token, _said = start_http(*lite, "--max-sessions", "2", "--session-idle", "2")
    try:
        auth = {"Authorization": f"Bearer {token}"}
        url = f"http://127.0.0.1:{port}/mcp"
        first = raw_post(url, auth, INITIALIZE)
        second = raw_post(url, auth, INITIALIZE)
        assert first.status_code == second.status_code == 200
        assert raw_post(url, auth, INITIALIZE).status_code == 503
        session = first.headers["mcp-session-id"]
        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
        assert raw_post(url, {**auth, "mcp-session-id": session,
                              "mcp-protocol-version": "2025-06-18"}, ping).status_code == 200
        time.sleep(4)  # both idle past 2 s
        assert raw_post(url, {**auth, "mcp-session-id": session,
                              "mcp-protocol-version": "2025-06-18"}, ping).status_code == 404

        async def run() -> bool:  # the SDK's own client gets a session again
            async with httpx2.AsyncClient(headers=auth) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                result = await client.call_tool("memory_recall", {"query": "dentist"})
                return bool(result.is_error)

        assert asyncio.run(run()) is False
    finally:
        stop(proc)


@pytest.mark.parametrize("delay", [0.4, 0.9, 1.6])
def test_a_killed_server_never_acknowledged_a_remember_it_lost(tmp_path: Path,
                                                               delay: float) -> None:
    """SIGKILL while Remembers stream in over HTTP: after a restart every acknowledged fact
    is there exactly once, and one in flight at the kill is there once or not at all."""
    root, config = make_root(tmp_path / "killed", {"mode": "lite"})
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_es.cli", "serve-mcp", "--root", str(root), "--config",
         str(config), "--transport", "http", "--port", str(port)],
        stderr=subprocess.PIPE, text=True, env={**os.environ})
    assert proc.stderr is not None
    line = proc.stderr.readline()
    token = Path(line.split("bearer token in ")[1].rstrip(")\n")).read_text().strip()
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    sent: list[str] = []
    acknowledged: list[str] = []

    async def stream() -> None:
        # the kill is timed from the first acknowledgement, not from the start: on a loaded
        # machine the client's handshake alone may take longer than the shortest delay
        loop = asyncio.get_running_loop()
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) \
                    as http, Client(streamable_http_client(
                        f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
                for n in range(10_000):
                    text = f"Fact {n} streamed before the kill."
                    sent.append(text)
                    result = await client.call_tool("memory_remember", {"text": text})
                    if not result.is_error:
                        if not acknowledged:
                            loop.call_later(delay, proc.kill)
                        acknowledged.append(text)
        except Exception:  # the connection died with the server
            pass

    asyncio.run(stream())
    if not acknowledged:  # nothing ever acknowledged: fail below, leave no server behind
        proc.kill()
    proc.wait(timeout=HANG_S)
    assert proc.returncode == -9 and acknowledged  # killed mid-stream, after some writes
    with MemoryStore.open(root, None, background=False) as store:  # recovery, then count
        conn = store.projections.get().index.conn
        counts = {t: conn.execute("SELECT count(*) FROM memories WHERE text = ?",
                                  (t,)).fetchone()[0] for t in sent}
    assert all(counts[t] == 1 for t in acknowledged)
    assert all(counts[t] in (0, 1) for t in sent)
    assert set(sent) - set(acknowledged) <= {sent[-1]}  # only the call in flight is unknown
    health = MemoryRoot.open(root).health()
    assert not health.findings, health.findings
