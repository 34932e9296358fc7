"""The MCP tool server: :func:`serve` runs ``memory-es serve-mcp``."""

from memory_es.serve.run import serve

__all__ = ["serve"]
