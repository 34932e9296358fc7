"""memory_es: a durable, event-sourced long-term memory engine for AI agent hosts.

Public names are imported lazily (PEP 562): the ``projections`` package imports small
``memory_es`` modules (errors, events, fsutil), and an eager ``store`` import here would close
an import cycle through ``projections``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_es.config import MemoryConfig, load_config
    from memory_es.errors import (
        ConfigError,
        IntegrityError,
        LockTimeoutError,
        MemoryEsError,
        NotARootError,
        UnsafePathError,
    )
    from memory_es.intake import AdmissionResult, Attachment, CompletedTurn
    from memory_es.store import MemoryStore

_EXPORTS = {
    "AdmissionResult": "memory_es.intake",
    "Attachment": "memory_es.intake",
    "CompletedTurn": "memory_es.intake",
    "ConfigError": "memory_es.errors",
    "IntegrityError": "memory_es.errors",
    "LockTimeoutError": "memory_es.errors",
    "MemoryConfig": "memory_es.config",
    "MemoryEsError": "memory_es.errors",
    "MemoryStore": "memory_es.store",
    "NotARootError": "memory_es.errors",
    "UnsafePathError": "memory_es.errors",
    "load_config": "memory_es.config",
}

__all__ = [
    "AdmissionResult",
    "Attachment",
    "CompletedTurn",
    "ConfigError",
    "IntegrityError",
    "LockTimeoutError",
    "MemoryConfig",
    "MemoryEsError",
    "MemoryStore",
    "NotARootError",
    "UnsafePathError",
    "load_config",
]


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'memory_es' has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), name)
