"""The error scheme and HTTP plumbing shared by the model providers (chat models, embeddings).

A :class:`ProviderError` carries a stable ``code`` from its family's closed table
(``ModelError``: ``model_*``, ``EmbeddingError``: ``embedding_*``) and the ``category`` that code
maps to. :class:`HttpProvider` POSTs through :class:`~memory_es.transport.client.JsonClient`
and turns every transport failure and malformed reply into its family's error, worded one way
for both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import ClassVar, TypeVar

import msgspec

from memory_es.errors import MemoryEsError
from memory_es.transport import HttpError, Kind, RetryPolicy, endpoint_problem

__all__ = ["HttpProvider", "ProviderError", "configured_key"]

T = TypeVar("T")

# A key goes into an HTTP header: whitespace or a control character would break it (and
# http.client's complaint would quote it).
_UNSENDABLE = re.compile(r"[\s\x00-\x1f\x7f]")


class ProviderError(MemoryEsError):
    """A provider call failed; ``code`` names the cause, ``category`` the bucket it falls in.

    Subclasses name their family and its closed code table; an unknown code is a programming
    error (``ValueError``), never a new cause.
    """

    family: ClassVar[str] = "provider"
    #: every code of the family -> its category
    categories: ClassVar[Mapping[str, str]] = {}
    #: how a failed HTTP call (``HttpError.kind``) is coded; an unlisted kind counts as
    #: ``unavailable``
    http_codes: ClassVar[Mapping[Kind, str]] = {}
    #: an unusable endpoint, model or other setting
    config_invalid: ClassVar[str] = ""
    #: a reply that cannot be used (malformed, too large, wrong shape)
    bad_reply: ClassVar[str] = ""
    #: what the endpoint belongs to, in the endpoint check's message
    endpoint_label: ClassVar[str] = "provider"

    def __init__(self, message: str, *, code: str) -> None:
        if code not in self.categories:
            raise ValueError(f"unknown {self.family} error code {code!r}")
        super().__init__(message, code=code)

    @property
    def category(self) -> str:
        """The category of this error's code (the subclass's table)."""
        return self.categories[self.code]

    @classmethod
    def checked_endpoint(cls, endpoint: str) -> str:
        """``endpoint`` without a trailing slash, or this family's ``config_invalid`` error."""
        problem = endpoint_problem(endpoint)
        if problem is not None:
            raise cls(f"{cls.endpoint_label} endpoint {problem}", code=cls.config_invalid)
        return endpoint.rstrip("/")


def configured_key(literal: str | None, env_name: str | None, *, setting: str,
                   error: type[ProviderError],
                   environ: Mapping[str, str] | None = None) -> str | None:
    """The API key a provider block configures: its literal ``apiKey``, else the value of the
    environment variable its ``apiKeyEnv`` names, else None.

    This is the one place the engine reads the environment, and only when a provider is built
    (never in validation or a projection). A named variable that is unset or empty is the
    family's ``config_invalid`` error, naming the variable, never a value.
    """
    if literal is not None:
        return literal
    if env_name is None:
        return None
    value = (os.environ if environ is None else environ).get(env_name)
    if not value:
        state = "not set" if value is None else "empty"
        raise error(f"{setting}.apiKeyEnv names the environment variable {env_name}, which is "
                    f"{state}", code=error.config_invalid)
    return value


class HttpProvider:
    """POSTs JSON to one URL with bounded reads and retries, each call within its timeout
    (one deadline for every try, E36); failures end as ``error``.

    ``who`` names the model in messages (``ollama model 'm'``); ``service`` names what was
    unavailable or rejected (by default ``who``).
    """

    error: ClassVar[type[ProviderError]] = ProviderError
    #: what a body that fails to decode is called in the message
    reply_name: ClassVar[str] = "response"

    def __init__(self, url: str, *, who: str, service: str | None = None,
                 api_key: str | None, retry: RetryPolicy | None, max_bytes: int) -> None:
        self._url = url
        self._who = who
        self._service = who if service is None else service
        if api_key is not None and (not api_key or _UNSENDABLE.search(api_key)):
            raise self.error(f"the API key for {who} must be non-empty, without whitespace or "
                             "control characters", code=self.error.config_invalid)
        from memory_es.transport.client import JsonClient  # the network, once one is built

        self._client = JsonClient(url, api_key=api_key, retry=retry, max_bytes=max_bytes)

    @property
    def url(self) -> str:
        """The full URL every request is POSTed to."""
        return self._url

    def _post(self, payload: bytes, timeout: float) -> bytes:
        """POST with retries; every failure ends as a :attr:`error`."""
        try:
            return self._client.post(payload, timeout)
        except HttpError as exc:
            raise self._failure(exc, timeout) from exc

    def _failure(self, exc: HttpError, timeout: float) -> ProviderError:
        # A kind the family does not code separately (embeddings: timeouts) is unavailable.
        kind: Kind = exc.kind if exc.kind in self.error.http_codes else "unavailable"
        if kind == "timeout":
            message = f"{self._service} at {self._url} timed out after {timeout:g} s"
        elif kind == "rejected":
            message = f"{self._service} request to {self._url} rejected with {exc.detail}"
        elif kind == "too_large":
            message = f"{self._who} sent {exc.detail}"
        else:
            message = f"{self._service} unavailable at {self._url} ({exc.detail})"
        return self.error(message, code=self.error.http_codes[kind])

    def _decode(self, body: bytes, kind: type[T]) -> T:
        try:
            return msgspec.json.decode(body, type=kind, strict=True)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise self.error(f"{self._who} sent a malformed {self.reply_name}: {exc}",
                             code=self.error.bad_reply) from exc
