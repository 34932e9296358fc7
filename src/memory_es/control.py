"""Writing beside a running agent: the root's control socket, client side and protocol.

While a long-lived writer holds a root (a host's ``MemoryStore`` running its worker,
``memory-es serve-mcp``), other processes cannot open it for writing (B23). That writer serves
``.runtime/control.sock``, a Unix domain socket, and the CLI's write commands (``admit``,
``remember``, ``set-status``, ``mark``, ``forget``) hand their request to it and print what they
print today. Maintenance that needs a stopped agent keeps refusing (C16).

Who may write through it: the socket is owner-only (0600 in the 0700 runtime folder) and the
server checks its peer's uid (``SO_PEERCRED``); each request carries the root's control
secret (``.runtime/control.key``, 32 random bytes, 0600, new on every open of the writer),
which only a process that can read the root's runtime folder has. The client refuses a socket
or secret file that is a link, belongs to another user or that group or others can reach.

One JSON object per line each way: ``{"secret", "op", "args"}`` in, ``{"ok": true,
"result": {...}}`` or ``{"ok": false, "error": {"code", "message"}}`` out. The server side is
:mod:`memory_es.store.control`.
"""

from __future__ import annotations

import hmac
import json
import os
import socket
import stat
from pathlib import Path
from typing import Any, Final

from memory_es.errors import MemoryEsError, UnsafePathError

RUNTIME_DIR: Final = ".runtime"
SOCKET_FILE: Final = "control.sock"
SECRET_FILE: Final = "control.key"
OPS: Final = ("admit", "remember", "set_status", "mark", "forget")
MAX_LINE: Final = 2 * 1024 * 1024  # a request or an answer: a turn's record is at most 640 KiB
TIMEOUT_S: Final = 300.0  # a write waits for the writer's journal like any admission


def socket_path(root: Path) -> Path:
    return root / RUNTIME_DIR / SOCKET_FILE


def secret_path(root: Path) -> Path:
    return root / RUNTIME_DIR / SECRET_FILE


def _owned(path: Path, kind: int) -> os.stat_result:
    """``path``'s stat when it is ours, of ``kind``, and no one else can reach it."""
    info = path.lstat()
    if stat.S_IFMT(info.st_mode) != kind:
        raise UnsafePathError(f"{path}: not a {'socket' if kind == stat.S_IFSOCK else 'file'} "
                              "(a link or another kind of file); refusing it")
    if info.st_uid != os.getuid():
        raise UnsafePathError(f"{path}: belongs to uid {info.st_uid}, not to you; refusing it")
    if info.st_mode & 0o077:
        raise UnsafePathError(f"{path}: mode {oct(info.st_mode & 0o777)} lets others in; "
                              "expected 0600; refusing it")
    return info


def live(root: Path) -> bool:
    """Is a control socket there to try (its safety is checked when it is used)?"""
    return os.path.lexists(socket_path(root))


def read_secret(root: Path) -> bytes:
    path = secret_path(root)
    _owned(path, stat.S_IFREG)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        return f.read(64)


def call(root: Path, op: str, args: dict[str, Any]) -> dict[str, Any]:
    """Send one write to the writer holding ``root``; its result, or the writer's error as a
    :class:`MemoryEsError` with the writer's code. ``ConnectionError``: no writer answers
    there (a socket left by one that died), so the caller opens the root itself."""
    if op not in OPS:
        raise ValueError(f"unknown control op {op!r}")
    path = socket_path(root)
    _owned(path, stat.S_IFSOCK)
    request = {"secret": read_secret(root).hex(), "op": op, "args": args}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(TIMEOUT_S)
        try:
            conn.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError) as e:
            raise ConnectionError(str(e)) from None
        conn.sendall(json.dumps(request).encode() + b"\n")
        answer = json.loads(read_line(conn) or b"{}")
    if answer.get("ok"):
        return dict(answer["result"])
    error = answer.get("error") or {}
    raise MemoryEsError(str(error.get("message", "the writer gave no answer")),
                        code=str(error.get("code", "control_failed")))


def read_line(conn: socket.socket) -> bytes:
    """One newline-ended line (without it), at most :data:`MAX_LINE` bytes."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_LINE:
            raise MemoryEsError("control: a line longer than the protocol allows",
                                code="control_failed")
    return bytes(data).rstrip(b"\n")


def same_secret(given: object, secret: bytes) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), secret.hex().encode())
