"""Chat models over HTTP: Ollama and OpenAI-compatible servers, temperature 0.

- ``ollama``: ``POST {endpoint}/api/chat`` with ``"stream": false`` (no ``format`` is forced:
  the stage prompts ask for JSON and the contracts check it);
- ``openai``: an OpenAI-compatible ``POST {endpoint}/v1/chat/completions`` (or
  ``{endpoint}/chat/completions`` when the endpoint already ends in ``/v1``), bearer key only
  when one is given.

A transient failure (connection refused or reset, HTTP 5xx, 429, 408) is retried a few times
inside the call; after that, and for every other failure, the call raises
:class:`~memory_es.capture.models.ModelError`. The timeout is the whole call's deadline (E36):
connect, send, headers and body of every try and the waits between tries all come out of it,
so a call never holds the worker longer than ``memory.llm.timeoutMs`` (plus a few
milliseconds); when it runs out the call fails with ``model_timeout`` and the durable backoff
takes over.
Transport and error wording are shared with the embedding providers (:mod:`memory_es.providers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from memory_es.capture.models import (
    CONFIG_INVALID,
    INVALID_OUTPUT,
    Message,
    ModelError,
    check_call,
)
from memory_es.providers import HttpProvider
from memory_es.transport import RetryPolicy, one_line

__all__ = ["DEFAULT_OLLAMA_ENDPOINT", "OllamaChat", "OpenAICompatibleChat"]

DEFAULT_OLLAMA_ENDPOINT: Final = "http://localhost:11434"
_MAX_RESPONSE_BYTES: Final = 16 * 1024 * 1024


class _OllamaOptions(msgspec.Struct):
    temperature: float


class _OllamaRequest(msgspec.Struct):
    model: str
    messages: list[Message]
    stream: bool
    options: _OllamaOptions


class _OllamaMessage(msgspec.Struct):
    content: str | None = None


class _OllamaResponse(msgspec.Struct):
    message: _OllamaMessage | None = None
    done: bool = True
    error: str | None = None


class _OpenAIRequest(msgspec.Struct):
    model: str
    messages: list[Message]
    temperature: float


class _OpenAIMessage(msgspec.Struct):
    content: str | None = None


class _OpenAIChoice(msgspec.Struct):
    message: _OpenAIMessage | None = None


class _OpenAIResponse(msgspec.Struct):
    choices: list[_OpenAIChoice] = msgspec.field(default_factory=list)


class _HttpChat(HttpProvider):
    """A chat model behind one URL. The timeout bounds the whole call, retries included: the
    durable backoff takes over after it."""

    error = ModelError
    reply_name = "response envelope"
    provider: str = ""

    def __init__(self, model: str, url: str, *, api_key: str | None,
                 retry: RetryPolicy | None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ModelError(f"{self.provider} chat needs a model name", code=CONFIG_INVALID)
        self.model = model
        self.name = f"{self.provider}:{model}"
        super().__init__(url, who=f"{self.provider} model {model!r}", api_key=api_key,
                         retry=retry, max_bytes=_MAX_RESPONSE_BYTES)

    def __repr__(self) -> str:  # never shows the API key
        return f"{type(self).__name__}(model={self.model!r}, url={self._url!r})"

    def _content(self, content: str | None) -> str:
        if content is None:
            raise ModelError(f"{self._who} sent no message content", code=INVALID_OUTPUT)
        if not content.strip():
            raise ModelError(f"{self._who} sent empty message content", code=INVALID_OUTPUT)
        return content


class OllamaChat(_HttpChat):
    """Ollama's ``POST /api/chat``, non-streaming, temperature 0."""

    provider = "ollama"

    def __init__(self, model: str, endpoint: str = DEFAULT_OLLAMA_ENDPOINT, *,
                 retry: RetryPolicy | None = None) -> None:
        url = ModelError.checked_endpoint(endpoint) + "/api/chat"
        super().__init__(model, url, api_key=None, retry=retry)

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        checked = check_call(messages, timeout)
        request = _OllamaRequest(self.model, checked, stream=False,
                                 options=_OllamaOptions(temperature=0.0))
        reply = self._decode(self._post(msgspec.json.encode(request), timeout), _OllamaResponse)
        if reply.error is not None:
            raise ModelError(f"{self._who} answered with an error: {one_line(reply.error)}",
                             code=INVALID_OUTPUT)
        if reply.message is None:
            raise ModelError(f"{self._who} sent no message", code=INVALID_OUTPUT)
        if not reply.done:
            raise ModelError(f"{self._who} sent an unfinished reply (done: false)",
                             code=INVALID_OUTPUT)
        return self._content(reply.message.content)


class OpenAICompatibleChat(_HttpChat):
    """An OpenAI-compatible ``POST /v1/chat/completions``, temperature 0.

    ``endpoint`` is the server's base URL; when it already ends in ``/v1`` only
    ``/chat/completions`` is appended. ``api_key`` is sent as a bearer token only when given.
    """

    provider = "openai"

    def __init__(self, model: str, endpoint: str, *, api_key: str | None = None,
                 retry: RetryPolicy | None = None) -> None:
        base = ModelError.checked_endpoint(endpoint)
        path = "/chat/completions" if base.endswith("/v1") else "/v1/chat/completions"
        super().__init__(model, base + path, api_key=api_key, retry=retry)

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        checked = check_call(messages, timeout)
        request = _OpenAIRequest(self.model, checked, temperature=0.0)
        reply = self._decode(self._post(msgspec.json.encode(request), timeout), _OpenAIResponse)
        if not reply.choices:
            raise ModelError(f"{self._who} sent no choices", code=INVALID_OUTPUT)
        message = reply.choices[0].message
        if message is None:
            raise ModelError(f"{self._who} sent a choice without a message", code=INVALID_OUTPUT)
        return self._content(message.content)
