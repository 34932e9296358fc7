"""memory_es: a durable, event-sourced long-term memory engine for AI agent hosts.

The face: the writer (:class:`MemoryStore`), the read-only door (:class:`MemoryRoot`), the
turn and result types, the config and the errors. ``projections`` imports this package before
its own modules, so either package may be imported first (docs/ARCHITECTURE.md, "Import
order").
"""

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
from memory_es.recall.receipts import ReceiptCache
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore

__all__ = [
    "AdmissionResult",
    "Attachment",
    "CompletedTurn",
    "ConfigError",
    "IntegrityError",
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
