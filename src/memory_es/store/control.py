"""The control socket's server: a thread of a long-lived writer store (protocol and client:
:mod:`memory_es.control`).

It answers one connection at a time, so the writes it acknowledges are in the order it
acknowledged them, each durable (an admission fsynced, a Remember projected) before its
answer is sent. A peer of another uid is refused before a byte is read; a request without
the root's current secret is refused without being looked at.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import struct
import threading
from pathlib import Path
from typing import Any

from memory_es.control import (
    MAX_LINE,
    RUNTIME_DIR,
    read_line,
    same_secret,
    secret_path,
    socket_path,
)
from memory_es.errors import MemoryEsError
from memory_es.fsutil import atomic_write, check_private, make_private_dir

# The MemoryStore that runs the server: typed loosely, as store.facade imports this module.
MemoryStore = Any

log = logging.getLogger("memory_es")
_CRED = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


def _admit(store: MemoryStore, args: dict[str, Any]) -> dict[str, Any]:
    from memory_es.intake import CompletedTurn

    return dict(store.persist_completed_turn(CompletedTurn(**args)).to_json())


def _remember(store: MemoryStore, args: dict[str, Any]) -> dict[str, Any]:
    return dict(store.remember(**args).to_json())


def _set_status(store: MemoryStore, args: dict[str, Any]) -> dict[str, Any]:
    return dict(store.set_status(args["memory_id"], args["status"],
                                 reason=args.get("reason")).to_json())


def _mark(store: MemoryStore, args: dict[str, Any]) -> dict[str, Any]:
    return dict(store.mark(args["memory_id"], insight=bool(args["insight"])).to_json())


def _forget(store: MemoryStore, args: dict[str, Any]) -> dict[str, Any]:
    target, value = args["target"], args["value"]
    options = {"reason": args["reason"], "dry_run": bool(args.get("dry_run"))}
    if target == "query":
        receipt = store.forget_matching(value, **options, limit=int(args["limit"]))
    elif target == "run_id":
        receipt = store.forget_turn(value, **options, show_text=bool(args.get("show_text")))
    else:
        receipt = store.forget(value, **options, show_text=bool(args.get("show_text")))
    return dict(receipt.to_json())


def _curate(store: MemoryStore, args: dict[str, Any]) -> dict[str, Any]:
    return dict(store.curate(args["memory_id"], args["decision"], kind=args.get("kind")).to_json())


HANDLERS = {"admit": _admit, "remember": _remember, "set_status": _set_status, "mark": _mark,
            "forget": _forget, "curate": _curate}


class ControlServer:
    """Serve ``.runtime/control.sock`` for ``store`` until :meth:`close`."""

    def __init__(self, store: MemoryStore, root: Path, shutdown_timeout: float) -> None:
        self._store = store
        self._root = root
        self._shutdown_timeout = shutdown_timeout
        make_private_dir(root / RUNTIME_DIR)
        path = socket_path(root)
        make_private_dir(path.parent)  # the runtime folder, or the user's own under /tmp
        check_private(path.parent, is_dir=True)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # one a writer that died left: we hold the writer lock now
        self._secret = secrets.token_bytes(32)
        atomic_write(secret_path(root), self._secret, durable=False)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(str(path))  # in a 0700 folder: no one else can reach it meanwhile
            os.chmod(path, 0o600)
        except OSError:
            self._sock.close()
            raise
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="memory-es-control",
                                        daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                try:
                    self._answer(conn)
                except Exception:  # a broken client must never stop the writer
                    log.exception("memory_es control request failed")

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(60.0)
        peercred = getattr(socket, "SO_PEERCRED", None)  # Linux; elsewhere the 0600 file and
        if peercred is not None:  # the secret decide alone
            _pid, uid, _gid = _CRED.unpack(conn.getsockopt(socket.SOL_SOCKET, peercred,
                                                           _CRED.size))
            if uid != os.getuid():
                self._send(conn, error=("control_refused", "another user's process"))
                return
        if self._stop.is_set():
            self._send(conn, error=("store_closed", "the writer is closing"))
            return
        try:
            request = json.loads(read_line(conn))
        except ValueError:
            self._send(conn, error=("control_failed", f"not one JSON line of at most "
                                                      f"{MAX_LINE} bytes"))
            return
        if not isinstance(request, dict) or not same_secret(request.get("secret"),
                                                            self._secret):
            self._send(conn, error=("control_refused", "not this root's control secret"))
            return
        handler = HANDLERS.get(str(request.get("op")))
        args = request.get("args")
        if handler is None or not isinstance(args, dict):
            self._send(conn, error=("control_failed", f"unknown op {request.get('op')!r}"))
            return
        try:
            self._send(conn, result=handler(self._store, args))
        except MemoryEsError as e:
            self._send(conn, error=(e.code, str(e)))
        except (TypeError, KeyError, ValueError) as e:  # an argument the store does not take
            self._send(conn, error=("invalid_argument", f"{type(e).__name__}: {e}"))
        except Exception as e:
            log.exception("memory_es control request failed")
            self._send(conn, error=("control_failed", type(e).__name__))

    @staticmethod
    def _send(conn: socket.socket, *, result: dict[str, Any] | None = None,
              error: tuple[str, str] | None = None) -> None:
        answer = ({"ok": True, "result": result} if error is None else
                  {"ok": False, "error": {"code": error[0], "message": error[1]}})
        with contextlib.suppress(OSError):  # the client went away: its write still stands
            conn.sendall(json.dumps(answer).encode() + b"\n")

    def close(self) -> None:
        """Stop answering (a request in flight finishes, within the store's shutdown
        timeout), then remove the socket and the secret (no later write can come)."""
        self._stop.set()
        self._thread.join(timeout=self._shutdown_timeout)
        self._sock.close()
        for path in (socket_path(self._root), secret_path(self._root)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
