"""What every embedding provider shares: identity, protocol, batching, normalisation, errors.

Every provider returns a ``float32`` array of shape ``(len(texts), dim)`` whose rows are
L2-normalised, whatever the model produced, and is identified by ``(provider, model, dim)``
(:class:`EmbeddingIdentity`), the key the vector cache uses (B25). A failure is an
:class:`EmbeddingError` with a stable ``code``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory_es.providers import ProviderError
from memory_es.transport import Kind

__all__ = [
    "BATCH_SIZE",
    "Embedder",
    "EmbeddingError",
    "EmbeddingIdentity",
    "Vectors",
    "batched",
    "check_model_file",
    "check_texts",
    "dimension_mismatch",
    "embed_queries",
    "finish",
    "no_vectors",
    "normalise",
    "sha256_file",
]

Vectors = npt.NDArray[np.float32]


def sha256_file(path: Path) -> str:
    """A shipped model file's SHA-256, read in 1 MiB chunks (checked before it is loaded)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()

def check_model_file(path: Path, expected: str, package: str) -> None:
    """A shipped model file matches its pinned SHA-256 before anything reads it:
    ``embedding_unavailable`` when it cannot be read, ``embedding_model_corrupt`` (naming the
    package to reinstall) when it differs."""
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise EmbeddingError(f"local model file {path} is unreadable: {exc}",
                             code=UNAVAILABLE) from exc
    if actual != expected.lower():
        raise EmbeddingError(
            f"local model file {path} fails its SHA-256 check (sha256 {actual[:16]}..., "
            f"expected {expected[:16]}...); reinstall {package}", code=MODEL_CORRUPT)


BATCH_SIZE: Final = 32  # D4: semantic indexing is queued in batches of up to 32

# Stable error codes.
UNAVAILABLE: Final = "embedding_unavailable"
INVALID_RESPONSE: Final = "embedding_invalid_response"
DIMENSION_MISMATCH: Final = "embedding_dimension_mismatch"
REQUEST_REJECTED: Final = "embedding_request_rejected"
MODEL_CORRUPT: Final = "embedding_model_corrupt"
CONFIG_INVALID: Final = "embedding_config_invalid"
_CODES: Final = (UNAVAILABLE, INVALID_RESPONSE, DIMENSION_MISMATCH, REQUEST_REJECTED,
                 MODEL_CORRUPT, CONFIG_INVALID)

T = TypeVar("T")


class EmbeddingError(ProviderError):
    """An embedding call failed; ``code`` names the cause (and is its own ``category``).

    Codes: ``embedding_unavailable`` (server unreachable, timeout, 5xx, missing local extra),
    ``embedding_invalid_response`` (malformed body, wrong shape or count, non-finite or zero
    vectors), ``embedding_dimension_mismatch`` (the message names both numbers),
    ``embedding_request_rejected`` (a 4xx other than 408/429; the message names the status),
    ``embedding_model_corrupt`` (the local model file fails its SHA-256 check) and
    ``embedding_config_invalid`` (an unusable provider, model or endpoint).
    """

    family = "embedding"
    categories: ClassVar[Mapping[str, str]] = {code: code for code in _CODES}
    http_codes: ClassVar[Mapping[Kind, str]] = {
        "unavailable": UNAVAILABLE, "rejected": REQUEST_REJECTED, "too_large": INVALID_RESPONSE,
    }
    config_invalid = CONFIG_INVALID
    bad_reply = INVALID_RESPONSE
    endpoint_label = "embedding"


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


def check_texts(texts: Sequence[str]) -> None:
    """``embed()``'s argument is a sequence of str (a lone str is a mistake, not 1 text)."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str")
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"embed() texts must be str, got {type(text).__name__}")


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Questions' vectors: an asymmetric model's query form (``embed_queries``, E5's
    ``query:``), else :meth:`Embedder.embed`; memories are always ``embed``."""
    asks = getattr(embedder, "embed_queries", None)
    vectors: Vectors = asks(texts) if callable(asks) else embedder.embed(texts)
    return vectors


def no_vectors(dim: int) -> Vectors:
    """The reply to an empty input: shape ``(0, dim)``."""
    return np.zeros((0, dim), dtype=np.float32)


def dimension_mismatch(got: int, dim: int, who: str) -> EmbeddingError:
    """``embedding_dimension_mismatch``, naming both numbers."""
    return EmbeddingError(
        f"{who} returned {got}-dimensional vectors, memory.embeddings.dim is {dim}",
        code=DIMENSION_MISMATCH,
    )


def finish(rows: Sequence[Sequence[float]], count: int, dim: int, who: str) -> Vectors:
    """Check a decoded batch (count, shape, finiteness) and L2-normalise it to float32."""
    if len(rows) != count:
        raise EmbeddingError(f"{who} returned {len(rows)} vectors for {count} texts",
                             code=INVALID_RESPONSE)
    if count == 0:
        return no_vectors(dim)
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        raise EmbeddingError(f"{who} returned vectors of differing lengths "
                             f"{sorted(widths)[:5]}", code=INVALID_RESPONSE)
    width = widths.pop()
    if width == 0:
        raise EmbeddingError(f"{who} returned empty vectors", code=INVALID_RESPONSE)
    if width != dim:
        raise dimension_mismatch(width, dim, who)
    matrix = np.asarray(rows, dtype=np.float64)
    return normalise(matrix, who)


def normalise(matrix: npt.NDArray[np.floating[Any]], who: str) -> Vectors:
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
