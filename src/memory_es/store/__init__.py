"""The writable store: :class:`MemoryStore` and the collaborators it wires together."""

from memory_es.store.facade import MemoryStore, require_writable, resolve_root

__all__ = ["MemoryStore", "require_writable", "resolve_root"]
