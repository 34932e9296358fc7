"""Embedding providers over HTTP: Ollama and OpenAI-compatible servers.

- ``ollama``: ``POST {endpoint}/api/embed``;
- ``lmstudio`` and ``openai``: the OpenAI-compatible ``POST {endpoint}/v1/embeddings``.

A transient failure (connection refused, 5xx, 429) is retried a few times inside one request,
then reported as ``embedding_unavailable``. The timeout is each request's deadline, its
retries included (E36): a request that runs out of it is ``embedding_unavailable`` ("timed
out after N s"); an ``embed`` of more than 32 texts makes one request per batch. The endpoint
and API key come only from the caller (O1); transport and error wording are shared with the
chat models (:mod:`memory_es.providers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec
import numpy as np

from memory_es.embeddings.base import (
    BATCH_SIZE,
    CONFIG_INVALID,
    INVALID_RESPONSE,
    EmbeddingError,
    EmbeddingIdentity,
    Vectors,
    batched,
    check_texts,
    finish,
    no_vectors,
)
from memory_es.providers import HttpProvider
from memory_es.transport import RetryPolicy, one_line

__all__ = ["DEFAULT_ENDPOINTS", "DEFAULT_TIMEOUT_S", "OllamaEmbedder", "OpenAICompatibleEmbedder"]

DEFAULT_TIMEOUT_S: Final = 30.0
DEFAULT_ENDPOINTS: Final = {
    "ollama": "http://localhost:11434",
    "lmstudio": "http://localhost:1234",
    "openai": "https://api.openai.com",
}
_MAX_RESPONSE_BYTES: Final = 64 * 1024 * 1024


class _OllamaRequest(msgspec.Struct):
    model: str
    input: list[str]


class _OllamaResponse(msgspec.Struct):
    embeddings: list[list[float]]


class _OpenAIRequest(msgspec.Struct):
    model: str
    input: list[str]


class _OpenAIItem(msgspec.Struct):
    index: int
    embedding: list[float]


class _OpenAIResponse(msgspec.Struct):
    data: list[_OpenAIItem]


class _HttpEmbedder(HttpProvider):
    """An embedding model behind one URL; transient failures are retried within each request's
    deadline."""

    error = EmbeddingError

    def __init__(self, *, provider: str, model: str, dim: int, url: str, timeout: float,
                 api_key: str | None, retry: RetryPolicy | None, batch_size: int) -> None:
        if not model or not model.strip():
            raise EmbeddingError(f"{provider} embeddings need a model name", code=CONFIG_INVALID)
        if dim < 1:
            raise EmbeddingError(f"embedding dim must be positive, got {dim}", code=CONFIG_INVALID)
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._identity = EmbeddingIdentity(provider, model, dim)
        self._timeout = timeout
        self._batch_size = batch_size
        super().__init__(url, who=f"{provider} model {model!r}", service=f"{provider} embeddings",
                         api_key=api_key, retry=retry, max_bytes=_MAX_RESPONSE_BYTES)

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def __repr__(self) -> str:  # never shows the API key
        return f"{type(self).__name__}({self._identity!r}, url={self._url!r})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        check_texts(texts)
        if not texts:
            return no_vectors(self._identity.dim)
        parts = [self._embed_batch(list(batch)) for batch in batched(texts, self._batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        raise NotImplementedError


class OllamaEmbedder(_HttpEmbedder):
    """Ollama's ``POST /api/embed`` (``{"model", "input": [...]}`` -> ``{"embeddings"}``)."""

    def __init__(self, model: str, dim: int, endpoint: str = DEFAULT_ENDPOINTS["ollama"], *,
                 timeout: float = DEFAULT_TIMEOUT_S, retry: RetryPolicy | None = None,
                 batch_size: int = BATCH_SIZE) -> None:
        base = EmbeddingError.checked_endpoint(endpoint)
        super().__init__(provider="ollama", model=model, dim=dim, url=f"{base}/api/embed",
                         timeout=timeout, api_key=None, retry=retry, batch_size=batch_size)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        payload = msgspec.json.encode(_OllamaRequest(model=self._identity.model, input=texts))
        reply = self._decode(self._post(payload, self._timeout), _OllamaResponse)
        return finish(reply.embeddings, len(texts), self._identity.dim, self._who)


class OpenAICompatibleEmbedder(_HttpEmbedder):
    """The OpenAI-compatible ``POST /v1/embeddings`` (LM Studio, OpenAI and the like).

    ``endpoint`` is the server root (``http://localhost:1234``); one that already ends in ``/v1``
    is accepted too. The API key comes only from the ``api_key`` argument.
    """

    def __init__(self, provider: str, model: str, dim: int, endpoint: str | None = None, *,
                 api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 retry: RetryPolicy | None = None, batch_size: int = BATCH_SIZE) -> None:
        if endpoint is None:
            if provider not in DEFAULT_ENDPOINTS:
                raise EmbeddingError(f"no default endpoint for provider {one_line(provider)}",
                                     code=CONFIG_INVALID)
            endpoint = DEFAULT_ENDPOINTS[provider]
        base = EmbeddingError.checked_endpoint(endpoint)
        url = f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"
        super().__init__(provider=provider, model=model, dim=dim, url=url, timeout=timeout,
                         api_key=api_key, retry=retry, batch_size=batch_size)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        payload = msgspec.json.encode(_OpenAIRequest(model=self._identity.model, input=texts))
        reply = self._decode(self._post(payload, self._timeout), _OpenAIResponse)
        items = sorted(reply.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(len(items))):
            raise EmbeddingError(f"{self._who} returned indices that are not 0..n-1",
                                 code=INVALID_RESPONSE)
        return finish([item.embedding for item in items], len(texts), self._identity.dim,
                      self._who)
