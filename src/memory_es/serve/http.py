"""The MCP server's HTTP surface: who may call it, from where, and how much.

- A bearer token on every request (``Authorization: Bearer <token>``, compared in constant
  time); without it the answer is 401 and nothing reaches the tools. The token is generated on
  first start into an owner-only file beside the root's keys (:func:`token_file`), or read
  from ``--token-file``.
- The SDK's DNS-rebinding protection: the ``Host`` must name the bound address (421
  Misdirected Request otherwise, the SDK's answer) and a browser's ``Origin``, when sent, the
  same names (403 otherwise). A loopback bind accepts every loopback name; a wildcard bind
  (``0.0.0.0``, ``::``) accepts this machine's names and addresses (:func:`host_names`) and
  any ``--allow-host``.
- Request bodies are limited to :data:`MAX_REQUEST_BYTES` (413 past it).
- Sessions: at most :data:`MAX_SESSIONS` at once (503 for one more), each ended after
  :data:`SESSION_IDLE_SECONDS` without a request (its id then answers 404).
- A given token file must be owner-only, like the key store (``mcp_token_unsafe``).
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
WILDCARD: Final = ("0.0.0.0", "::", "")
# One agent host holds one or two sessions; the SDK's own default allows 10,000 for 30 min.
MAX_SESSIONS: Final = 32
SESSION_IDLE_SECONDS: Final = 600.0

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def token_file(store: KeyStore, root_id: str, name: str = TOKEN_FILE) -> Path:
    """The root's token file ``name`` in the key store (0600, no symlinks; the MCP server's
    by default), created with a fresh 256-bit token when absent."""
    path = private_key_file(store, root_id, name, create=True)
    assert path is not None
    if path.stat().st_size == 0:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, (secrets.token_urlsafe(32) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    return path


def read_token(path: Path, kind: str = "mcp") -> str:
    """The token in ``path``: its first line, at least 16 characters. The file must be
    owner-only (no group or other access, owned by this user: the key store's rule), since
    whoever reads it can call every tool (or, ``kind`` "web", read every memory). Errors are
    ``<kind>_token_unreadable``, ``_unsafe`` and ``_invalid``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise InvalidArgumentError(f"{kind}_token_unreadable: {path}: {type(e).__name__}",
                                   code=f"{kind}_token_unreadable") from e
    try:
        st = os.fstat(fd)
        problems = ([f"mode {st.st_mode & 0o7777:04o}"] if st.st_mode & 0o077 else []) + \
            ([f"owned by uid {st.st_uid}"] if st.st_uid != os.geteuid() else [])
        if problems:
            raise InvalidArgumentError(
                f"{kind}_token_unsafe: {path} must be owner-only (mode 0600, owned by you; "
                f"this one is {' and '.join(problems)}): chmod 600 it",
                code=f"{kind}_token_unsafe")
        with os.fdopen(os.dup(fd), "rb") as f:
            token = f.read(64 * 1024).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"{kind}_token_unreadable: {path}: {type(e).__name__}",
                                   code=f"{kind}_token_unreadable") from e
    finally:
        os.close(fd)
    if len(token) < 16 or any(c.isspace() for c in token):
        raise InvalidArgumentError(f"{kind}_token_invalid: {path} must hold one token of at "
                                   "least 16 characters", code=f"{kind}_token_invalid")
    return token


def host_names() -> list[str]:
    """What a client on this machine or the network may put in ``Host`` for a wildcard bind:
    the loopback names, this machine's host name and fully qualified name, and the addresses
    they resolve to."""
    import socket

    names = list(LOOPBACK)
    for name in {socket.gethostname(), socket.getfqdn()} - {""}:
        names.append(name)
        try:
            infos = socket.getaddrinfo(name, None)
        except OSError:
            continue
        names += [str(info[4][0]).split("%")[0] for info in infos]
    return list(dict.fromkeys(names))


def is_wildcard(host: str) -> bool:
    return host in WILDCARD


def bind_warning(host: str) -> str | None:
    """The stderr warning for a bind beyond this machine: plain HTTP, token in clear."""
    if host in LOOPBACK:
        return None
    where = "on all interfaces" if is_wildcard(host) else f"on {host}"
    return (f"memory-es: warning: serving plain HTTP {where}: the bearer token and every "
            "memory cross the network unencrypted; put a TLS proxy in front or bind "
            "127.0.0.1")


def bound_names(host: str, allow_hosts: tuple[str, ...] = ()) -> list[str]:
    """The names a client may put in ``Host`` (and ``Origin``) for a bind on ``host``
    (loopback: every loopback name; a wildcard: :func:`host_names`), plus ``allow_hosts``."""
    names = (list(LOOPBACK) if host in LOOPBACK else host_names() if is_wildcard(host)
             else [host]) + [n for n in allow_hosts if n]
    return list(dict.fromkeys(names))


def security_settings(host: str, allow_hosts: tuple[str, ...] = ()) -> Any:
    """The SDK's Host and Origin checks for :func:`bound_names`."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = bound_names(host, allow_hosts)
    shown = [f"[{n}]" if ":" in n else n for n in names]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=shown + [f"{n}:*" for n in shown],
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
