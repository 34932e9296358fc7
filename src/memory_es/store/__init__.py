"""The writable store: :class:`MemoryStore` and the collaborators it wires together.

The names are imported on first use (PEP 562), so a read path that needs one module of this
package (``memory_es.store.access``) does not import the whole writer: the capture pipeline,
the worker and the journal writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_es.rootconfig import resolve_root

if TYPE_CHECKING:
    from memory_es.store.admission import require_writable
    from memory_es.store.facade import MemoryStore

__all__ = ["MemoryStore", "require_writable", "resolve_root"]


def __getattr__(name: str) -> Any:
    if name == "MemoryStore":
        from memory_es.store.facade import MemoryStore

        return MemoryStore
    if name == "require_writable":
        from memory_es.store.admission import require_writable

        return require_writable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
