"""Deterministic stand-ins for tests, golden fixtures, benchmarks and demos.

Nothing here is for real recall: :class:`WordBagEmbedder` knows words, not meaning.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from memory_es.embeddings import EmbeddingError, EmbeddingIdentity
from memory_es.embeddings.base import check_texts

_WORD = re.compile(r"\w+")


class WordBagEmbedder:
    """A bag of case-folded words, each hashed (SHA-256) into one of ``dim`` buckets, L2
    normalised: the same words give cosine 1, no shared word cosine 0 (bar collisions).

    ``down = True`` makes :meth:`embed` fail like a provider outage; ``calls`` counts calls.
    """

    def __init__(self, dim: int = 256, *, provider: str = "fake", model: str = "bag") -> None:
        self.identity = EmbeddingIdentity(provider, model, dim)
        self.down = False
        self.calls = 0

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.identity.dim, dtype=np.float64)
        for word in _WORD.findall(text.casefold()):
            digest = hashlib.sha256(word.encode()).digest()
            v[int.from_bytes(digest[:4], "big") % self.identity.dim] += 1.0
        if not v.any():
            v[-1] = 1.0
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        check_texts(texts)
        if self.down:
            raise EmbeddingError("word-bag embedder is down", code="embedding_unavailable")
        self.calls += 1
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts])
