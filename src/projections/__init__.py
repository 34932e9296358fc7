"""Projections of the memory_es journal (filled by the projections issue)."""
