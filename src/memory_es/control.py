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

import hashlib
import hmac
import json
import os
import socket
import stat
import tempfile
from pathlib import Path
from typing import Any, Final

from memory_es.errors import MemoryEsError, UnsafePathError
from memory_es.fsutil import check_private

RUNTIME_DIR: Final = ".runtime"
SOCKET_FILE: Final = "control.sock"
SECRET_FILE: Final = "control.key"
OPS: Final = ("admit", "remember", "set_status", "mark", "forget", "curate")
MAX_LINE: Final = 4 * 1024 * 1024  # a request or an answer: a turn's record is at most 640 KiB
CONNECT_S: Final = 5.0
ANSWER_S: Final = 120.0  # a write waits for the writer's journal like any admission
_SUN_PATH: Final = 100  # AF_UNIX paths hold 108 bytes on Linux, 104 elsewhere


class WriterGone(Exception):
    """No writer answers at the root (none runs, or one died and left its socket): the
    caller opens the root itself. Raised only before a request was sent."""


def socket_path(root: Path) -> Path:
    """``.runtime/control.sock``, or, when that path is too long for a Unix socket, a name
    derived from the root in the user's own private folder under ``/tmp`` (not ``$TMPDIR``,
    which may itself be long)."""
    path = root / RUNTIME_DIR / SOCKET_FILE
    if len(os.fsencode(path)) < _SUN_PATH:
        return path
    digest = hashlib.sha256(os.fsencode(root.resolve())).hexdigest()[:24]
    base = Path("/tmp") if os.path.isdir("/tmp") else Path(tempfile.gettempdir())  # short
    return base / f"memory-es-{os.getuid()}" / f"{digest}.sock"


def secret_path(root: Path) -> Path:
    return root / RUNTIME_DIR / SECRET_FILE


def _owned(path: Path, kind: int) -> os.stat_result:
    """``path``'s stat when it is ours, of ``kind``, and no one else can reach it; its folder
    too (a link or another user's folder would lead somewhere else)."""
    check_private(path.parent, is_dir=True)
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
    :class:`MemoryEsError` with the writer's code. :class:`WriterGone` when no writer answers
    before the request is sent (the caller then opens the root itself); once it is sent, a
    failure is ``control_unanswered`` (exit 3): the write may or may not have been applied,
    and it is never tried a second time."""
    if op not in OPS:
        raise ValueError(f"unknown control op {op!r}")
    path = socket_path(root)
    try:
        _owned(path, stat.S_IFSOCK)
        secret = read_secret(root)
    except FileNotFoundError:  # the writer closed since live() looked
        raise WriterGone(str(path)) from None
    request = json.dumps({"secret": secret.hex(), "op": op, "args": args}).encode() + b"\n"
    if len(request) > MAX_LINE:
        raise MemoryEsError(f"control_request_too_large: {len(request)} bytes, more than the "
                            f"{MAX_LINE} the control socket takes", code="invalid_argument")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(CONNECT_S)
        try:
            conn.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError, TimeoutError) as e:
            raise WriterGone(str(e)) from None
        conn.settimeout(ANSWER_S)
        try:
            conn.sendall(request)
            answer = json.loads(read_line(conn))
        except (OSError, ValueError) as e:
            raise MemoryEsError(
                f"control_unanswered: the writer holding {root} did not answer ({e}); the "
                "write may or may not be applied: look before writing again",
                code="control_unanswered") from None
    if not isinstance(answer, dict):
        raise MemoryEsError("control_unanswered: the writer's answer is not an object",
                            code="control_unanswered")
    if answer.get("ok") is True and isinstance(answer.get("result"), dict):
        return dict(answer["result"])
    found = answer.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    code = str(error.get("code", "control_unanswered"))
    message = str(error.get("message", "the writer gave no answer"))
    raise MemoryEsError(message if message.startswith(code) else f"{code}: {message}",
                        code=code)


def read_line(conn: socket.socket) -> bytes:
    """One newline-ended line (without it), at most :data:`MAX_LINE` bytes."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_LINE:
            raise ValueError("a line longer than the control protocol allows")
    return bytes(data).rstrip(b"\n")


def same_secret(given: object, secret: bytes) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), secret.hex().encode())
