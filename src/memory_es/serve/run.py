"""Run the MCP server over stdio or HTTP with the store held open for its whole life."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from memory_es.errors import MemoryEsError
from memory_es.journal import DEFAULT_LOCK_TIMEOUT
from memory_es.keystore import KeyStore

if TYPE_CHECKING:
    from memory_es.config import MemoryConfig

Transport = Literal["stdio", "http"]
MCP_PATH = "/mcp"


def require_sdk() -> None:
    """The ``mcp`` SDK is the ``[mcp]`` extra: say how to get it instead of a traceback."""
    try:
        import mcp  # noqa: F401
    except ImportError as e:
        raise MemoryEsError("mcp_unavailable: the MCP server needs the [mcp] extra (in a "
                            "checkout: pip install -e '.[mcp]')", code="mcp_unavailable") from e


def serve(root: Path, config: MemoryConfig | None, *, transport: Transport = "stdio",
          host: str = "127.0.0.1", port: int = 8765, token_path: Path | None = None,
          lock_timeout: float = DEFAULT_LOCK_TIMEOUT, create: bool = True,
          allow_hosts: tuple[str, ...] = (), max_sessions: int | None = None,
          session_idle: float | None = None) -> None:
    """Open ``root`` (its worker running), serve its tools until the client goes away (stdio)
    or the process is stopped (HTTP), then close the store: due work drains first (B22).

    ``create`` as in ``MemoryStore.open``: false (what ``memory-es serve-mcp`` passes) refuses
    a path that holds no memory root (``NotARootError``) instead of starting an empty one.
    HTTP only: ``allow_hosts`` adds ``Host`` names to the bound address's, ``max_sessions``
    and ``session_idle`` (seconds) bound the MCP sessions (defaults: ``MAX_SESSIONS`` and
    ``SESSION_IDLE_SECONDS`` of :mod:`memory_es.serve.http`)."""
    require_sdk()
    from memory_es.serve.http import (
        MAX_SESSIONS,
        SESSION_IDLE_SECONDS,
        bind_warning,
        read_token,
        token_file,
    )
    from memory_es.serve.server import build_server
    from memory_es.store import MemoryStore

    # a given token file is read before the root is opened: a bad one creates nothing
    token = read_token(token_path) if token_path is not None else None
    with MemoryStore.open(root, config, background=True, lock_timeout=lock_timeout,
                          create=create) as store:
        server = build_server(store)
        if transport == "stdio":
            server.run("stdio")
            return
        if token_path is None:
            if store.root_id is None:
                raise MemoryEsError("mcp_token_required: this root keeps no keys (schema 1): "
                                    "pass --token-file", code="mcp_token_required")
            token_path = token_file(KeyStore.resolve(None), store.root_id)
            token = read_token(token_path)
        assert token is not None
        print(f"memory-es: MCP server on http://{_url_host(host)}:{port}{MCP_PATH} "
              f"(bearer token in {token_path})", file=sys.stderr, flush=True)
        warning = bind_warning(host)
        if warning is not None:
            print(warning, file=sys.stderr, flush=True)
        _run_http(server, host, port, token, allow_hosts=allow_hosts,
                  max_sessions=max_sessions or MAX_SESSIONS,
                  session_idle=session_idle or SESSION_IDLE_SECONDS)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _run_http(server: object, host: str, port: int, token: str, *,
              allow_hosts: tuple[str, ...], max_sessions: int, session_idle: float) -> None:
    import anyio
    import uvicorn

    from memory_es.serve.http import MAX_REQUEST_BYTES, require_token, security_settings

    app = server.streamable_http_app(  # type: ignore[attr-defined]
        streamable_http_path=MCP_PATH, max_request_body_size=MAX_REQUEST_BYTES,
        transport_security=security_settings(host, allow_hosts), host=host,
        max_sessions=max_sessions, session_idle_timeout=session_idle)
    config = uvicorn.Config(require_token(app, token), host=host, port=port,
                            log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, backend_options={"use_uvloop": _has_uvloop()})


def _has_uvloop() -> bool:
    """uvloop (in the ``mcp`` extra) trims the per-call HTTP overhead; asyncio's is the fallback."""
    import importlib.util

    return importlib.util.find_spec("uvloop") is not None
