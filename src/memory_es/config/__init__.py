"""The `memory` config block: keys, defaults and validation (SPEC section O, DESIGN 9.13).

Config is strict on purpose: a typo, a wrong type or a setting the chosen tier cannot honour is an
error, never a silent default, coercion, fallback or tier downshift (O1-O9, A5). Every problem found
is reported at once, one line each, starting with the dotted camelCase key path, so an operator can
fix a file in one pass. No environment variable is ever consulted (O1): a provider's
``apiKeyEnv`` is only the name of one, read when that provider is built (``make_embedder``,
``make_chat_model``), never by validation or a projection.

- :mod:`~memory_es.config.defaults`: the vocabulary and the defaults, plain values;
- :mod:`~memory_es.config.model`: the pydantic blocks (:class:`MemoryConfig` and its parts);
- :mod:`~memory_es.config.rules`: cross-field rules and the wording of every problem;
- :mod:`~memory_es.config.load`: decoded JSON or a strict JSON file in, a config or a
  :class:`ConfigError` out.

The names below are imported on first use (PEP 562): pydantic costs a cold process about
0.1 s, and a command that reads a root with its recorded configuration never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_es.lazy import lazy_face

if TYPE_CHECKING:
    from memory_es.config.defaults import (
        DEFAULT_EMBEDDINGS_DIM,
        DEFAULT_EMBEDDINGS_MODELS,
        DEFAULT_EMBEDDINGS_PROVIDER,
        DEFAULT_EMBEDDINGS_TIMEOUT_MS,
        DEFAULT_LLM_ENDPOINT,
        DEFAULT_LLM_TIMEOUT_MS,
        DEFAULT_MODE,
        DEFAULT_OPENAI_ENDPOINT,
        DEFAULT_PATH,
        DEFAULT_WRITE_MODE,
        FOCUS_MAX_BYTES,
        KEYED_PROVIDERS,
        CaptureKind,
        EmbeddingsProvider,
        LlmProvider,
        Mode,
        WriteMode,
    )
    from memory_es.config.load import config_notices, load_config, parse_config, validate_file
    from memory_es.config.model import (
        CalibrationConfig,
        CaptureConfig,
        EmbeddingsConfig,
        LlmConfig,
        MemoryConfig,
        OptInToggle,
        ProfileConfig,
        RecallConfig,
        ToolToggle,
        is_runtime_model_ref,
    )
    from memory_es.errors import ConfigError

_HOMES = {
    "memory_es.config.defaults": (
        "DEFAULT_EMBEDDINGS_DIM", "DEFAULT_EMBEDDINGS_MODELS", "DEFAULT_EMBEDDINGS_PROVIDER",
        "DEFAULT_EMBEDDINGS_TIMEOUT_MS", "DEFAULT_LLM_ENDPOINT", "DEFAULT_LLM_TIMEOUT_MS",
        "DEFAULT_MODE", "DEFAULT_OPENAI_ENDPOINT", "DEFAULT_PATH", "DEFAULT_WRITE_MODE",
        "FOCUS_MAX_BYTES", "KEYED_PROVIDERS", "CaptureKind", "EmbeddingsProvider",
        "LlmProvider", "Mode", "WriteMode"),
    "memory_es.config.load": ("config_notices", "load_config", "parse_config", "validate_file"),
    "memory_es.config.model": (
        "CalibrationConfig", "CaptureConfig", "EmbeddingsConfig", "LlmConfig", "MemoryConfig",
        "OptInToggle", "ProfileConfig", "RecallConfig", "ToolToggle", "is_runtime_model_ref"),
    "memory_es.errors": ("ConfigError",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


_SUBMODULES = frozenset({"defaults", "load", "model", "rules"})


__getattr__, __dir__ = lazy_face(__name__, _HOME_OF, _SUBMODULES)

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
    "DEFAULT_WRITE_MODE",
    "FOCUS_MAX_BYTES",
    "KEYED_PROVIDERS",
    "CalibrationConfig",
    "CaptureConfig",
    "CaptureKind",
    "ConfigError",
    "EmbeddingsConfig",
    "EmbeddingsProvider",
    "LlmConfig",
    "LlmProvider",
    "MemoryConfig",
    "Mode",
    "OptInToggle",
    "ProfileConfig",
    "RecallConfig",
    "ToolToggle",
    "WriteMode",
    "config_notices",
    "is_runtime_model_ref",
    "load_config",
    "parse_config",
    "validate_file",
]
