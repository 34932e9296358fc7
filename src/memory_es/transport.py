"""The one JSON-over-HTTP transport the providers share (embeddings, chat models).

stdlib ``urllib`` only: no proxy from the environment, redirects never followed (a POST and its
Authorization header stay on the configured endpoint), bounded reads, and tenacity retries for
transient failures (connection errors, 5xx, 408, 429) inside one call. Every failure ends as an
``HttpError`` whose ``kind`` :mod:`memory_es.providers` maps to the provider's error codes.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

ERROR_SNIPPET: Final = 200

Kind = Literal["unavailable", "timeout", "rejected", "too_large"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Tries per request for transient failures, with exponential waits between them."""

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
    timeout), never a request body: ``unavailable`` (transient failures, retries spent),
    ``timeout`` (only when timeouts are not retried), ``rejected`` (a 4xx other than 408/429,
    ``status`` set) or ``too_large`` (the response exceeded the read bound)."""

    def __init__(self, kind: Kind, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.kind: Kind = kind
        self.detail = detail
        self.status = status


class _Transient(Exception):
    """Worth another try inside the same call."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> None:
        return None


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


class JsonClient:
    """POSTs JSON to one URL with bounded reads and retries for transient failures."""

    def __init__(self, url: str, *, api_key: str | None, retry: RetryPolicy | None,
                 max_bytes: int, retry_timeouts: bool) -> None:
        self.url = url
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._max_bytes = max_bytes
        self._retry_timeouts = retry_timeouts
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def post(self, payload: bytes, timeout: float) -> bytes:
        policy = self._retry
        retrying = Retrying(
            stop=stop_after_attempt(policy.attempts),
            wait=wait_exponential(multiplier=policy.wait_initial_s, min=policy.wait_initial_s,
                                  max=policy.wait_max_s),
            retry=retry_if_exception_type(_Transient),
            reraise=True,
        )
        try:
            body: bytes = retrying(self._post_once, payload, timeout)
            return body
        except _Transient as exc:
            tries = "1 try" if policy.attempts == 1 else f"{policy.attempts} tries"
            raise HttpError("unavailable", f"{exc}; {tries}") from exc

    def _timed_out(self, timeout: float) -> Exception:
        text = f"timed out after {timeout:g} s"
        return _Transient(text) if self._retry_timeouts else HttpError("timeout", text)

    def _post_once(self, payload: bytes, timeout: float) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "memory-es"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=timeout) as response:
                body: bytes = response.read(self._max_bytes + 1)
        except urllib.error.HTTPError as exc:
            status = exc.code
            try:
                detail = error_detail(exc.read(64 * 1024))
            except (OSError, http.client.HTTPException):
                detail = ""
            finally:
                exc.close()
            text = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
            if status >= 500 or status in (408, 429):
                raise _Transient(text) from exc
            raise HttpError("rejected", text, status) from exc
        except TimeoutError as exc:
            raise self._timed_out(timeout) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._timed_out(timeout) from exc
            raise _Transient(str(exc.reason)) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        if len(body) > self._max_bytes:
            raise HttpError("too_large", f"a response over {self._max_bytes} bytes")
        return body
