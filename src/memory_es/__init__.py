"""memory_es: a durable, event-sourced long-term memory engine for AI agent hosts.

The face: the writer (:class:`MemoryStore`), the read-only door (:class:`MemoryRoot`), the
turn and result types, the config and the errors. Each name is imported on first use (PEP 562),
so ``import memory_es`` (and ``memory-es --version``) loads nothing heavy: numpy, apsw, the
event classes and the store come in only with the names that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_es.lazy import lazy_face

# public name -> the module that defines it
_FACE: dict[str, str] = {
    "AdmissionResult": "memory_es.intake",
    "Attachment": "memory_es.intake",
    "CompletedTurn": "memory_es.intake",
    "ConfigError": "memory_es.errors",
    "IntegrityError": "memory_es.errors",
    "JournalFilter": "memory_es.browse.journal_request",
    "LockTimeoutError": "memory_es.errors",
    "MemoryConfig": "memory_es.config",
    "MemoryEsError": "memory_es.errors",
    "MemoryRoot": "memory_es.root",
    "MemoryStore": "memory_es.store",
    "NotARootError": "memory_es.errors",
    "ReceiptCache": "memory_es.host.receipts",
    "UnsafePathError": "memory_es.errors",
    "load_config": "memory_es.config",
}

__all__ = [
    "AdmissionResult",
    "Attachment",
    "CompletedTurn",
    "ConfigError",
    "IntegrityError",
    "JournalFilter",
    "LockTimeoutError",
    "MemoryConfig",
    "MemoryEsError",
    "MemoryRoot",
    "MemoryStore",
    "NotARootError",
    "ReceiptCache",
    "UnsafePathError",
    "load_config",
]

if TYPE_CHECKING:
    from memory_es.browse.journal_request import JournalFilter
    from memory_es.config import MemoryConfig, load_config
    from memory_es.errors import (
        ConfigError,
        IntegrityError,
        LockTimeoutError,
        MemoryEsError,
        NotARootError,
        UnsafePathError,
    )
    from memory_es.host.receipts import ReceiptCache
    from memory_es.intake import AdmissionResult, Attachment, CompletedTurn
    from memory_es.root import MemoryRoot
    from memory_es.store import MemoryStore


__getattr__, __dir__ = lazy_face(__name__, _FACE)
