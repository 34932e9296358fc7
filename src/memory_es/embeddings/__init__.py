"""Embedding providers: one protocol, ``embed(texts) -> float32 array``, one identity each.

- ``ollama``, ``lmstudio``, ``openai``: HTTP servers (:mod:`memory_es.embeddings.http`);
- ``local``: in-process, no server: USE multilingual v3 by default
  (:mod:`memory_es.embeddings.use`), all-MiniLM-L6-v2 int8 (:mod:`memory_es.embeddings.local`)
  and multilingual-e5-small 4-bit (:mod:`memory_es.embeddings.e5`) by name.

Rows come back L2-normalised, shape ``(len(texts), dim)``, and an :class:`EmbeddingIdentity`
keys the vector cache (B25; :mod:`memory_es.embeddings.base`). :func:`make_embedder` builds the
provider a ``memory.embeddings`` block names, with its endpoint, timeout and API key; a provider
never falls back to another one (O9). The environment is read only for the variable the block's
``apiKeyEnv`` names, when the provider is built (O1 maps no variable to a setting).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from memory_es.config.defaults import DEFAULT_EMBEDDINGS_MODELS, LOCAL_MODELS
from memory_es.embeddings.base import (
    BATCH_SIZE,
    CONFIG_INVALID,
    Embedder,
    EmbeddingError,
    EmbeddingIdentity,
    batched,
    dimension_mismatch,
    embed_queries,
)
from memory_es.embeddings.e5 import E5_DIM, E5_MODEL, E5Embedder
from memory_es.embeddings.http import (
    DEFAULT_ENDPOINTS,
    DEFAULT_TIMEOUT_S,
    OllamaEmbedder,
    OpenAICompatibleEmbedder,
)
from memory_es.embeddings.local import LOCAL_DIM, LOCAL_MAX_TOKENS, LOCAL_MODEL, LocalEmbedder
from memory_es.embeddings.use import USE_DIM, USE_MODEL, UseEmbedder
from memory_es.providers import configured_key
from memory_es.transport import RetryPolicy, one_line

# The models the ``local`` provider runs and its default: the config's own tables (what a
# config may name is what runs; tests/test_embeddings.py pins them to the embedders' sizes).
LOCAL_DIMS: Final = LOCAL_MODELS
LOCAL_DEFAULT: Final = str(DEFAULT_EMBEDDINGS_MODELS["local"])

if TYPE_CHECKING:
    from memory_es.config import EmbeddingsConfig

__all__ = [
    "BATCH_SIZE",
    "DEFAULT_ENDPOINTS",
    "DEFAULT_TIMEOUT_S",
    "E5_DIM",
    "E5_MODEL",
    "LOCAL_DIM",
    "LOCAL_DIMS",
    "LOCAL_MAX_TOKENS",
    "LOCAL_MODEL",
    "USE_DIM",
    "USE_MODEL",
    "E5Embedder",
    "Embedder",
    "EmbeddingError",
    "EmbeddingIdentity",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAICompatibleEmbedder",
    "RetryPolicy",
    "UseEmbedder",
    "batched",
    "configured_identity",
    "embed_queries",
    "local_embedder",
    "local_identity",
    "make_embedder",
]


def configured_identity(config: EmbeddingsConfig) -> EmbeddingIdentity | None:
    """The identity :func:`make_embedder` would give this block's vectors, without loading a
    model or touching a provider (counting a backlog must not); None when the block cannot
    make an embedder (no model)."""
    if config.provider == "local":
        return local_identity(config.model if config.model is not None
                              and config.model in LOCAL_DIMS else LOCAL_DEFAULT)
    if config.model is None:
        return None
    return EmbeddingIdentity(str(config.provider), config.model, int(config.dim))


def local_identity(model: str) -> EmbeddingIdentity:
    """The identity of the ``local`` provider's vectors of one of :data:`LOCAL_DIMS`' models."""
    return EmbeddingIdentity("local", model, LOCAL_DIMS[model])


def local_embedder(model: str) -> Embedder:
    """The ``local`` provider's embedder for one of :data:`LOCAL_DIMS`' models."""
    if model == USE_MODEL:
        return UseEmbedder()
    return E5Embedder() if model == E5_MODEL else LocalEmbedder()


def make_embedder(
    config: EmbeddingsConfig | None,
    *,
    endpoint: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
) -> Embedder | None:
    """The provider a ``memory.embeddings`` block names; ``None`` when there is no block.

    There is never a fallback to another provider (O9). The block's ``endpoint`` (else the
    provider's, :data:`DEFAULT_ENDPOINTS`), ``timeoutMs`` (each request's deadline, retries
    included, E36) and API key (``apiKey``, or the variable ``apiKeyEnv`` names, read from
    ``environ``, by default the process environment) are used; the keyword arguments, when
    given, override them. The key is sent as a bearer token by the OpenAI-compatible
    providers. ``local`` takes no endpoint and runs only the models in :data:`LOCAL_DIMS`,
    each at its own dimension: an explicitly set different ``dim`` is a dimension mismatch.
    """
    if config is None:
        return None
    provider: str = str(config.provider)
    model = config.model
    dim = int(config.dim)
    explicit: set[str] = set(getattr(config, "model_fields_set", set()) or ())
    endpoint = endpoint if endpoint is not None else config.endpoint
    seconds = timeout if timeout is not None else config.timeout_ms / 1000.0
    if provider == "local":
        if endpoint is not None:
            raise EmbeddingError("the local embedding provider takes no endpoint",
                                 code=CONFIG_INVALID)
        model = model or LOCAL_DEFAULT
        if model not in LOCAL_DIMS:
            raise EmbeddingError(f"the local embedding provider runs {USE_MODEL}, "
                                 f"{LOCAL_MODEL} or {E5_MODEL}, not {one_line(str(model))}",
                                 code=CONFIG_INVALID)
        if "dim" in explicit and dim != LOCAL_DIMS[model]:
            raise dimension_mismatch(LOCAL_DIMS[model], dim, f"local model {model}")
        return local_embedder(model)
    if model is None:
        raise EmbeddingError(f"memory.embeddings.model is required for provider "
                             f"{one_line(provider)}", code=CONFIG_INVALID)
    if provider == "ollama":
        return OllamaEmbedder(model, dim, endpoint or DEFAULT_ENDPOINTS["ollama"],
                              timeout=seconds, retry=retry)
    if provider in ("lmstudio", "openai"):
        if api_key is None:
            secret = config.api_key.get_secret_value() if config.api_key is not None else None
            api_key = configured_key(secret, config.api_key_env, setting="memory.embeddings",
                                     error=EmbeddingError, environ=environ)
        return OpenAICompatibleEmbedder(provider, model, dim, endpoint, api_key=api_key,
                                        timeout=seconds, retry=retry)
    raise EmbeddingError(f"unknown embeddings provider {one_line(provider)}", code=CONFIG_INVALID)
