"""The MCP server's HTTP surface: who may call it, from where, and how much (issue 17 item 3).

- A bearer token on every request (``Authorization: Bearer <token>``, compared in constant
  time); without it the answer is 401 and nothing reaches the tools. The token is generated on
  first start into an owner-only file beside the root's keys (:func:`token_file`), or read
  from ``--token-file``.
- The SDK's DNS-rebinding protection: the ``Host`` must be the bound address and a browser's
  ``Origin``, when sent, one of the same loopback origins (403 otherwise).
- Request bodies are limited to :data:`MAX_REQUEST_BYTES` (413 past it).
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, Final

from memory_es.errors import InvalidArgumentError
from memory_es.keystore import KeyStore, private_key_file

MAX_REQUEST_BYTES: Final = 256 * 1024  # a tool call's arguments are at most a few KB
TOKEN_FILE: Final = "mcp.token"
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def token_file(store: KeyStore, root_id: str) -> Path:
    """The root's MCP token file in the key store (0600, no symlinks), created with a fresh
    256-bit token when absent."""
    path = private_key_file(store, root_id, TOKEN_FILE, create=True)
    assert path is not None
    if path.stat().st_size == 0:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, (secrets.token_urlsafe(32) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    return path


def read_token(path: Path) -> str:
    """The token in ``path``: its first line, at least 16 characters."""
    try:
        token = path.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"mcp_token_unreadable: {path}: {type(e).__name__}",
                                   code="mcp_token_unreadable") from e
    if len(token) < 16 or any(c.isspace() for c in token):
        raise InvalidArgumentError(f"mcp_token_invalid: {path} must hold one token of at "
                                   "least 16 characters", code="mcp_token_invalid")
    return token


def security_settings(host: str) -> Any:
    """Host and Origin checks for the bound address (loopback: every loopback name)."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = LOOPBACK if host in LOOPBACK else (host,)
    shown = [f"[{n}]" if ":" in n else n for n in names]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in shown],
        allowed_origins=[f"{scheme}://{n}:*" for n in shown for scheme in ("http", "https")])


def require_token(app: App, token: str) -> App:
    """``app`` behind a bearer-token check: a request without the token gets 401."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await _refuse(send, 401, b"missing or wrong bearer token")
                return
        await app(scope, receive, send)

    return guarded


async def _refuse(send: Send, status: int, message: bytes) -> None:
    body = b'{"error": "' + message + b'"}'
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": body})
