"""What the providers' JSON-over-HTTP transport shares with its callers, with nothing of
the network imported: the failure kinds, the retry policy, ``HttpError`` and the bounded
one-line rendering of untrusted text. The client itself is :mod:`memory_es.transport.client`,
imported only where a provider is built, so a process that never calls one (a search with
the local model) never loads http.client, ssl or tenacity.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

ERROR_SNIPPET: Final = 200

Kind = Literal["unavailable", "timeout", "rejected", "too_large"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Tries per request for transient failures, with exponential waits between them; every
    try and wait comes out of the call's one deadline."""

    attempts: int = 3
    wait_initial_s: float = 0.25
    wait_max_s: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if self.wait_initial_s < 0 or self.wait_max_s < 0:
            raise ValueError("RetryPolicy waits must not be negative")


class HttpError(Exception):
    """A request that failed for good. ``detail`` is transport text (status, server error,
    timeout), never a request body: ``unavailable`` (transient failures, retries spent or no
    time left for another), ``timeout`` (the call's deadline passed), ``rejected`` (a 4xx
    other than 408/429, ``status`` set) or ``too_large`` (the response exceeded the read
    bound)."""

    def __init__(self, kind: Kind, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.kind: Kind = kind
        self.detail = detail
        self.status = status


def one_line(text: str, limit: int = ERROR_SNIPPET) -> str:
    """A bounded, quoted, single-line rendering of untrusted text for an error message."""
    flat = " ".join(text.split())
    shown = flat if len(flat) <= limit else flat[:limit] + "..."
    return json.dumps(shown, ensure_ascii=True)


def error_detail(body: bytes) -> str:
    """The server's own error text if it sent one (Ollama and OpenAI both use ``error``)."""
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return one_line(text) if text.strip() else ""
    if isinstance(parsed, dict):
        err = parsed.get("error")
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return one_line(str(err))
    return one_line(text)


def endpoint_problem(endpoint: str) -> str | None:
    """Why ``endpoint`` is not a usable base URL, or None."""
    try:
        parts = urlsplit(endpoint)
        valid = parts.scheme in ("http", "https") and bool(parts.netloc)
    except ValueError:
        valid = False
    if not valid or any(ch.isspace() for ch in endpoint):
        return f"must be an http(s) URL, got {one_line(endpoint)}"
    if parts.query or parts.fragment:
        return "must not carry a query or fragment"
    return None
