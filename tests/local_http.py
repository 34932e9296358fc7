"""Scripted replies for the real HTTP server on 127.0.0.1 that provider protocol tests use
(the ``server`` fixture lives in conftest.py).

Each test scripts replies (``server.script`` in order, then ``server.default``); the server
records every request (path, lower-cased headers, decoded JSON body) for server-side asserts.
A reply code of -1 holds the response past the client's timeout.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Reply = tuple[int, bytes]
Responder = Callable[["Recorded"], Reply]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeServer:
    url: str
    requests: list[Recorded] = field(default_factory=list)
    script: list[Responder] = field(default_factory=list)
    default: Responder | None = None
    release: threading.Event = field(default_factory=threading.Event)

    def reply(self, request: Recorded) -> Reply:
        if self.script:
            return self.script.pop(0)(request)
        assert self.default is not None, "no responder configured"
        return self.default(request)


def js(status: int, payload: Any) -> Reply:
    return status, json.dumps(payload).encode()


def status(code: int, payload: Any = None) -> Responder:
    return lambda req: js(code, payload if payload is not None else {"error": f"boom {code}"})


def raw(body: bytes, code: int = 200) -> Responder:
    return lambda req: (code, body)
