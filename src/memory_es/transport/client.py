"""The one JSON-over-HTTP client the providers share (embeddings, chat models).

stdlib ``http.client`` and ``socket``: no proxy from the environment, redirects never
followed (a POST and its Authorization header stay on the configured endpoint), bounded reads,
and tenacity retries for transient failures (connection errors, 5xx, 408, 429) inside one
call. Every failure ends as an ``HttpError`` whose ``kind`` :mod:`memory_es.providers` maps
to the provider's error codes.

The timeout is the whole call's deadline (E36), not a per-read socket timeout: name
resolution, connect, TLS handshake, sending, the response headers and the body of every try,
and the waits between tries, all come out of one budget. Each socket operation may wait only
for what is left of it, so a server that drips one byte at a time is cut off when the budget
runs out (kind ``timeout``) and the socket is closed. A retry starts only if its wait ends
before the deadline; otherwise the call ends with the failure that called for it.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import ssl
import threading
import time
from typing import Any, Final
from urllib.parse import urlsplit

from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential,
)

from memory_es.transport import HttpError, RetryPolicy, error_detail


class _Transient(Exception):
    """Worth another try inside the same call."""


# The longest single socket wait: a very large timeout still fits the OS's timeval.
_MAX_WAIT_S: Final = 86400.0


class Deadline:
    """One call's time budget, on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left for the next wait; ``TimeoutError`` once the deadline has passed."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"timed out after {self.seconds:g} s")
        return min(left, _MAX_WAIT_S)


def _resolve(host: str, port: int, deadline: Deadline) -> list[Any]:
    """getaddrinfo bounded by the deadline: a literal address needs no lookup; a name is
    looked up on a daemon thread that is abandoned if the deadline passes first."""
    try:
        return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except socket.gaierror:
        pass
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    thread = threading.Thread(target=lookup, name="memory-es-resolve", daemon=True)
    thread.start()
    thread.join(deadline.left())
    if not found:
        raise TimeoutError(f"timed out after {deadline.seconds:g} s")
    if isinstance(found[0], OSError):
        raise found[0]
    addresses: list[Any] = found[0]
    return addresses


def _connect(host: str, port: int, deadline: Deadline) -> socket.socket:
    """A TCP connection to the first address of ``host`` that answers within the deadline."""
    last: OSError | None = None
    for family, kind, proto, _, address in _resolve(host, port, deadline):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(deadline.left())
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(deadline.left())  # what is left bounds the TLS handshake too
        except BaseException as exc:
            sock.close()
            if isinstance(exc, TimeoutError) or not isinstance(exc, OSError):
                raise
            last = exc
            continue
        return sock
    raise last if last is not None else OSError(f"no address found for {host}")


class _Reader(io.RawIOBase):
    """Reads from the socket, each read waiting only for what is left of the deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(self._deadline.left())
        return self._sock.recv_into(buffer)


class _BoundedSocket:
    """What ``http.client`` sees of the connection's socket: sends and reads bounded by the
    deadline. Closing it is a no-op; :meth:`JsonClient._post_once` closes the real socket."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self._sock = sock
        self._deadline = deadline

    def sendall(self, data: bytes) -> None:
        view = memoryview(data).cast("B")
        while view:
            self._sock.settimeout(self._deadline.left())
            view = view[self._sock.send(view):]

    def makefile(self, mode: str) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"unsupported mode {mode!r}")
        return io.BufferedReader(_Reader(self._sock, self._deadline))

    def close(self) -> None:
        pass


class _Connection(http.client.HTTPConnection):
    """An HTTP connection that connects within a deadline and never reconnects by itself."""

    def __init__(self, host: str, port: int, deadline: Deadline) -> None:
        super().__init__(host, port)  # an explicit port: "::1" is never split at a colon
        self.deadline = deadline
        self.auto_open = 0

    def open(self) -> socket.socket:
        """Connect (and for HTTPS, shake hands); returns the real socket to close later."""
        self.sock = _connect(self.host, self.port, self.deadline)
        return self.sock

    def bound(self, sock: socket.socket) -> None:
        self.sock = _BoundedSocket(sock, self.deadline)


def tls_context() -> ssl.SSLContext:
    """What ``http.client`` uses for HTTPS: certificates and host names verified."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


class _TlsConnection(_Connection):
    """HTTPS: the handshake waits at most for what is left of the deadline."""

    default_port = http.client.HTTPS_PORT  # the Host header names no port for 443

    def __init__(self, host: str, port: int, deadline: Deadline,
                 context: ssl.SSLContext) -> None:
        super().__init__(host, port, deadline)
        self._context = context

    def open(self) -> socket.socket:
        raw = _connect(self.host, self.port, self.deadline)
        try:
            self.sock = self._context.wrap_socket(raw, server_hostname=self.host)
        except BaseException:
            raw.close()
            raise
        self.sock.settimeout(self.deadline.left())
        return self.sock


class JsonClient:
    """POSTs JSON to one URL with bounded reads and retries for transient failures, all
    within one deadline per call."""

    def __init__(self, url: str, *, api_key: str | None, retry: RetryPolicy | None,
                 max_bytes: int) -> None:
        self.url = url
        parts = urlsplit(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (http.client.HTTPS_PORT if self._tls
                                    else http.client.HTTP_PORT)
        self._path = parts.path or "/"
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._max_bytes = max_bytes
        self._context = tls_context() if self._tls else None

    def post(self, payload: bytes, timeout: float) -> bytes:
        """The response body of a 2xx reply; ``HttpError`` for everything else."""
        policy = self._retry
        deadline = Deadline(timeout)
        # tenacity retries transient failures; a retry starts only if its wait ends before
        # the deadline (stop_before_delay), so waits and tries share the one budget.
        retrying = Retrying(
            stop=stop_after_attempt(policy.attempts) | stop_before_delay(timeout),
            wait=wait_exponential(multiplier=policy.wait_initial_s, min=policy.wait_initial_s,
                                  max=policy.wait_max_s),
            retry=retry_if_exception_type(_Transient),
            reraise=True,
        )
        try:
            body: bytes = retrying(self._post_once, payload, deadline)
            return body
        except _Transient as exc:
            tries = int(retrying.statistics.get("attempt_number", 1))
            said = "1 try" if tries == 1 else f"{tries} tries"
            if tries < policy.attempts:
                said += f", no time left for another within {timeout:g} s"
            raise HttpError("unavailable", f"{exc}; {said}") from exc

    def _headers(self, size: int) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "memory-es", "Connection": "close",
                   "Content-Length": str(size)}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _redacted(self, text: str) -> str:
        """``text`` without the API key, should a server echo it back in an error."""
        if not self._api_key:
            return text
        return text.replace(self._api_key, "[api key]").replace(
            json.dumps(self._api_key, ensure_ascii=True)[1:-1], "[api key]")

    def _post_once(self, payload: bytes, deadline: Deadline) -> bytes:
        connection = (_Connection(self._host, self._port, deadline) if self._context is None
                      else _TlsConnection(self._host, self._port, deadline, self._context))
        sock: socket.socket | None = None
        try:
            try:
                sock = connection.open()
            except TimeoutError:
                raise
            except OSError as exc:
                raise _Transient(str(exc)) from exc
            connection.bound(sock)
            connection.request("POST", self._path, body=payload,
                               headers=self._headers(len(payload)))
            response = connection.getresponse()
            status = response.status
            if not 200 <= status < 300:
                try:
                    detail = self._redacted(error_detail(response.read(64 * 1024)))
                except (OSError, http.client.HTTPException):
                    detail = ""
                text = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
                if status >= 500 or status in (408, 429):
                    raise _Transient(text)
                raise HttpError("rejected", text, status)
            body: bytes = response.read(self._max_bytes + 1)
        except TimeoutError as exc:
            raise HttpError("timeout", f"timed out after {deadline.seconds:g} s") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        finally:
            connection.sock = None
            if sock is not None:
                sock.close()
        if len(body) > self._max_bytes:
            raise HttpError("too_large", f"a response over {self._max_bytes} bytes")
        return body
