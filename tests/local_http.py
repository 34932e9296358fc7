"""Scripted replies for the real HTTP server on 127.0.0.1 that provider protocol tests use
(the ``server`` fixture lives in conftest.py).

Each test scripts replies (``server.script`` in order, then ``server.default``); the server
records every request (path, lower-cased headers, decoded JSON body) for server-side asserts.
A reply code of -1 holds the response past the client's timeout. A :class:`Drip` reply sends
its head, then one byte every ``every`` seconds (so no single socket read ever waits long),
until the client hangs up; the server notes when it did in ``hangups``.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Drip:
    """A reply that never finishes: ``head``, then ``byte`` every ``every`` seconds for at most
    ``limit`` seconds, stopping as soon as the client closes its end."""

    head: bytes
    byte: bytes = b" "
    every: float = 0.5
    limit: float = 60.0

    def serve(self, sock: socket.socket, fake: FakeServer) -> None:
        try:
            sock.sendall(self.head)
            end = time.monotonic() + self.limit
            while time.monotonic() < end and not fake.release.is_set():
                readable, _, _ = select.select([sock], [], [], self.every)
                if readable and not sock.recv(4096):  # EOF: the client closed its socket
                    break
                if not readable:
                    sock.sendall(self.byte)
            else:
                return
        except OSError:  # reset or broken pipe: the client closed its socket
            pass
        fake.hangups.append(time.monotonic())


Reply = tuple[int, bytes]
Responder = Callable[[Recorded], Reply]
Dripper = Callable[[Recorded], Drip]


@dataclass
class FakeServer:
    url: str
    requests: list[Recorded] = field(default_factory=list)
    script: list[Responder | Dripper] = field(default_factory=list)
    default: Responder | Dripper | None = None
    release: threading.Event = field(default_factory=threading.Event)
    #: monotonic instants at which a client hung up on a dripping reply
    hangups: list[float] = field(default_factory=list)

    def reply(self, request: Recorded) -> Reply | Drip:
        if self.script:
            return self.script.pop(0)(request)
        assert self.default is not None, "no responder configured"
        return self.default(request)


def drip_headers(every: float = 0.5) -> Dripper:
    """A status line, then a header line that grows by one byte every ``every`` seconds."""
    return lambda req: Drip(b"HTTP/1.1 200 OK\r\nX-Drip: ", b"x", every)


def drip_body(every: float = 0.5) -> Dripper:
    """Complete headers promising a large JSON body, then one space every ``every`` seconds."""
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000\r\n\r\n")
    return lambda req: Drip(head, b" ", every)


def js(status: int, payload: Any) -> Reply:
    return status, json.dumps(payload).encode()


def status(code: int, payload: Any = None) -> Responder:
    return lambda req: js(code, payload if payload is not None else {"error": f"boom {code}"})


def raw(body: bytes, code: int = 200) -> Responder:
    return lambda req: (code, body)
