"""Who may look, from where, and with which verbs: the web inspector's gate (ASGI middleware).

- **Read only.** Every route answers GET and HEAD; any other method is 405 before a handler
  runs, so no request can write (forget, Remember and status changes stay in the CLI and API).
- **The token.** A request carries ``Authorization: Bearer <token>`` (the token file's rules
  are ``serve-mcp``'s, :func:`memory_es.serve.http.read_token`) or the cookie of a browser
  session. A browser gets one by opening the one-time login link printed at start
  (``/login/<code>``: good once, for :data:`LOGIN_SECONDS`); the code is not the token, and
  neither is ever logged. Sessions are bounded: at most :data:`MAX_SESSIONS` at once (the least
  recently used goes first), each ended after :data:`SESSION_IDLE_SECONDS` without a request
  and :data:`SESSION_MAX_SECONDS` after sign-in. A session's cookie is signed with a key
  derived from the token, so it outlives a restart of ``serve-web`` (the signature and the
  sign-in instant are checked again; its idle time starts afresh) and dies with the token.
- **Host and Origin.** The ``Host`` must name the bound address and port (a loopback bind:
  every loopback name; one ``Host`` header; 421 otherwise) and a browser's ``Origin``, when
  sent, the same (403): a page elsewhere cannot reach the inspector through DNS rebinding.
- **Headers.** A Content-Security-Policy without inline script or style (``'self'`` only),
  no framing, no referrer, no caching, no MIME sniffing, on every answer.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final

from starlette.requests import cookie_parser

from memory_es.serve.http import App, Receive, Scope, Send

LOGIN_PREFIX: Final = "/login/"
LOGIN_SECONDS: Final = 3600.0
COOKIE: Final = "memory_es_session"
MAX_SESSIONS: Final = 16
SESSION_IDLE_SECONDS: Final = 8 * 3600.0
SESSION_MAX_SECONDS: Final = 7 * 24 * 3600.0
ENDED_KEPT: Final = 4096  # ended sessions remembered (one sign-in per start: never reached)
METHODS: Final = ("GET", "HEAD")
POLICY: Final = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
                 "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS: Final = (
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
)

Clock = Callable[[], float]


class Sessions:
    """Browser sessions: a cookie ``<id>.<signed-in instant>.<HMAC>`` under a key derived from
    the token; the live ones in a table, least recently used first out, idle ones expire. A
    cookie this process has not seen (it was issued before a restart) joins the table when
    its signature holds and it is younger than ``lifetime``."""

    def __init__(self, token: str, *, limit: int = MAX_SESSIONS,
                 idle: float = SESSION_IDLE_SECONDS, lifetime: float = SESSION_MAX_SECONDS,
                 clock: Clock = time.time) -> None:
        self._key = hmac.new(token.encode(), b"memory-es web session", "sha256").digest()
        self._seen: OrderedDict[str, float] = OrderedDict()
        # Cookies this process ended (idle, or pushed out by the bound): refused from then on,
        # else the signature would let them straight back in. Only cookies we signed get here.
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._limit, self._idle, self._lifetime, self._clock = limit, idle, lifetime, clock

    def _sign(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), "sha256").hexdigest()

    def start(self) -> str:
        body = f"{secrets.token_urlsafe(24)}.{int(self._clock())}"
        cookie = f"{body}.{self._sign(body)}"
        self._admit(cookie)
        return cookie

    def _admit(self, cookie: str) -> None:
        self._seen[cookie] = self._clock()
        while len(self._seen) > self._limit:
            self._end(self._seen.popitem(last=False)[0])

    def _end(self, cookie: str) -> None:
        self._seen.pop(cookie, None)
        self._ended[cookie] = None
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)

    def valid(self, cookie: str) -> bool:
        now = self._clock()
        last = self._seen.get(cookie)
        if last is None:
            if cookie in self._ended or not self._genuine(cookie, now):
                return False
            self._admit(cookie)  # signed in before this process started
        elif now - last > self._idle or not self._genuine(cookie, now):
            self._end(cookie)
            return False
        self._seen[cookie] = now
        self._seen.move_to_end(cookie)
        return True

    def _genuine(self, cookie: str, now: float) -> bool:
        body, _, mac = cookie.rpartition(".")
        issued = body.rpartition(".")[2]
        if not (cookie.isascii() and body and issued.isdigit()
                and hmac.compare_digest(mac, self._sign(body))):
            return False
        return 0 <= now - int(issued) <= self._lifetime

    def __len__(self) -> int:
        return len(self._seen)


class LoginCode:
    """The one-time code of the login link: redeemed once, within :data:`LOGIN_SECONDS`."""

    def __init__(self, *, seconds: float = LOGIN_SECONDS, clock: Clock = time.monotonic) -> None:
        self.code = secrets.token_urlsafe(24)
        self._until = clock() + seconds
        self._clock = clock
        self._used = False

    def redeem(self, given: str) -> bool:
        ok = not self._used and self._clock() <= self._until \
            and hmac.compare_digest(given.encode(), self.code.encode())
        if ok:
            self._used = True
        return ok


def guard(app: App, *, token: str, hosts: Sequence[str], port: int, sessions: Sessions,
          login: LoginCode) -> App:
    """``app`` behind the gate the module docstring describes. ``hosts``: the names the
    ``Host`` header and an ``Origin`` may use, with ``port`` (or none, as HTTP's default)."""
    expected = f"Bearer {token}".encode()
    allowed = {(h.lower(), p) for h in hosts for p in (str(port), "")}

    async def gate(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        listed = list(scope.get("headers") or ())
        headers = dict(listed)
        hosts_sent = [v for k, v in listed if k == b"host"]
        if len(hosts_sent) != 1 or _host(hosts_sent[0].decode("latin-1")) not in allowed:
            await _answer(send, 421, "this inspector answers only to its own address")
            return
        origin = headers.get(b"origin")
        if origin is not None and _origin(origin.decode("latin-1")) not in allowed:
            await _answer(send, 403, "requests from other sites are refused")
            return
        if scope["method"] not in METHODS:
            await _answer(send, 405, "the inspector is read-only",
                          extra=((b"allow", b"GET, HEAD"),))
            return
        path: str = scope["path"]
        if path.startswith(LOGIN_PREFIX):
            if scope["method"] != "GET":  # a link preview's HEAD must not use up the code
                await _answer(send, 405, "open the login link in a browser",
                              extra=((b"allow", b"GET"),))
                return
            if not login.redeem(path[len(LOGIN_PREFIX):]):
                await _answer(send, 401, "this login link was used already or has expired; "
                              "restart memory-es serve-web for a new one")
                return
            cookie = (f"{COOKIE}={sessions.start()}; HttpOnly; SameSite=Strict; Path=/")
            await _answer(send, 303, "signed in", extra=((b"location", b"/"),
                                                          (b"set-cookie", cookie.encode())))
            return
        sid = _cookie(headers.get(b"cookie", b"").decode("latin-1"))
        if not (hmac.compare_digest(headers.get(b"authorization", b""), expected)
                or (sid is not None and sessions.valid(sid))):
            await _answer(send, 401, "open the login link memory-es serve-web printed, or "
                          "send the bearer token", extra=((b"www-authenticate", b"Bearer"),))
            return

        async def secured(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                listed = list(message.get("headers") or ())  # type: ignore[call-overload]
                message = {**message, "headers": [*listed, *SECURITY_HEADERS]}
            await send(message)

        await app(scope, receive, secured)  # type: ignore[arg-type]

    return gate


def _host(host: str) -> tuple[str, str]:
    """(name, port) of a ``Host`` header (``[::1]:8766`` is ``("::1", "8766")``; no port:
    ``""``); something that is neither is ``("", "?")``, which no bind allows."""
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return "", "?"
        return name, rest[1:]
    if host.count(":") > 1:  # a bare IPv6 address is no Host
        return "", "?"
    name, _, port = host.partition(":")
    return name, port


def _origin(origin: str) -> tuple[str, str]:
    scheme, _, rest = origin.strip().lower().partition("://")
    return _host(rest) if scheme in ("http", "https") and "/" not in rest else ("", "?")


def _cookie(header: str) -> str | None:
    """This inspector's session id among the cookies every app on this host shares (each
    parsed on its own: another app's odd cookie never hides ours)."""
    return cookie_parser(header).get(COOKIE) or None


async def _answer(send: Send, status: int, message: str,
                  extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = f"{status}: {message}\n".encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS, *extra]})
    await send({"type": "http.response.body", "body": body})
