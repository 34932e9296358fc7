"""The `memory` block's vocabulary and defaults, as plain values: no pydantic.

The validating model (:mod:`~memory_es.config.model`) takes its defaults from here, and so does
a read of what a root recorded (:mod:`memory_es.recall.setup`), which needs no validation: the
record was validated when it was written and the journal's chain vouches for it. Keeping the
values in one place keeps the two from drifting (tests/test_read_setup.py compares them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

__all__ = [
    "DEFAULT_EMBEDDINGS_DIM",
    "DEFAULT_EMBEDDINGS_MODELS",
    "DEFAULT_EMBEDDINGS_PROVIDER",
    "DEFAULT_EMBEDDINGS_TIMEOUT_MS",
    "DEFAULT_LLM_ENDPOINT",
    "DEFAULT_LLM_TIMEOUT_MS",
    "DEFAULT_MODE",
    "DEFAULT_OPENAI_ENDPOINT",
    "DEFAULT_PATH",
    "DEFAULT_SCORING",
    "DEFAULT_WRITE_MODE",
    "FOCUS_MAX_BYTES",
    "KEYED_PROVIDERS",
    "LOCAL_EMBEDDINGS_DIM",
    "LOCAL_MODELS",
    "MAX_EMBEDDINGS_DIM",
    "MAX_TIMEOUT_MS",
    "CaptureKind",
    "EmbeddingsProvider",
    "LlmProvider",
    "Mode",
    "Scoring",
    "WriteMode",
]

Mode = Literal["lite", "journal", "bujo"]
WriteMode = Literal["disabled", "append-host-summary", "capture"]
LlmProvider = Literal["ollama", "agent-host", "openai"]
EmbeddingsProvider = Literal["ollama", "lmstudio", "openai", "local"]
CaptureKind = Literal["fact", "preference", "lesson"]
Scoring = Literal["hybrid", "reference"]

# DESIGN 9.13: the reference states no default for these three.
DEFAULT_MODE: Final[Mode] = "lite"
DEFAULT_WRITE_MODE: Final[WriteMode] = "append-host-summary"
DEFAULT_PATH: Final = "./.memory"
# `memory.recall.scoring`: lexical evidence fused with the cosine (README "Recall quality").
DEFAULT_SCORING: Final[Scoring] = "hybrid"

# Defaults the reference states (SPEC O table).
DEFAULT_LLM_ENDPOINT: Final = "http://localhost:11434"
DEFAULT_LLM_TIMEOUT_MS: Final = 60000
# Not in the reference: the OpenAI-compatible chat provider's server, and how long one
# embedding request may take, retries included (E36's deadline, for embeddings).
DEFAULT_OPENAI_ENDPOINT: Final = "https://api.openai.com"
DEFAULT_EMBEDDINGS_TIMEOUT_MS: Final = 30000
# The providers that send an API key (as a bearer token): the OpenAI-compatible ones.
KEYED_PROVIDERS: Final = frozenset({"openai", "lmstudio"})
DEFAULT_EMBEDDINGS_PROVIDER: Final[EmbeddingsProvider] = "ollama"
DEFAULT_EMBEDDINGS_DIM: Final = 768
DEFAULT_EMBEDDINGS_MODELS: Final[Mapping[str, str | None]] = {
    "ollama": "nomic-embed-text:v1.5",
    "lmstudio": "text-embedding-nomic-embed-text-v1.5",
    "openai": None,  # the reference states no default for openai
    # The offline provider (memory-es[local]): USE multilingual v3, chosen by measurement
    # (README "Offline embedding models"); all-MiniLM-L6-v2-onnx-int8 and
    # multilingual-e5-small-q4 by name.
    "local": "use-multilingual-v3",
}
LOCAL_EMBEDDINGS_DIM: Final = 512
# The offline models the local provider ships, with their dimensions (bench/models.py compares
# them; the README table says why each is there).
LOCAL_MODELS: Final[Mapping[str, int]] = {"use-multilingual-v3": 512,
                                          "all-MiniLM-L6-v2-onnx-int8": 384,
                                          "multilingual-e5-small-q4": 384}
FOCUS_MAX_BYTES: Final = 2048  # A15: UTF-8 bytes, not characters
MAX_TIMEOUT_MS: Final = 3_600_000  # an hour per model call; anything longer is a typo
MAX_EMBEDDINGS_DIM: Final = 65_536  # far above any embedding model's width
