"""Memory in from elsewhere: ``memory-es import apply SRC --from FORMAT`` (C6).

A user moving from another memory tool brings what it kept; each item becomes a completed
turn admitted exactly as a host's would be (so capture, when configured, curates it like a
live turn, and a Lite or Journal root keeps it as its memory), with

- a run id derived from the source's own id (``import:<format>:<id>``): importing twice
  writes nothing new, and an item is never stored twice;
- the source's own time as its admission time: it lands on its original day;
- provenance in the import's receipt (``Root.Imported``: format, source digest, and per item
  the intake id, the source's id and time), journalled after the items; content-free;
- the same screens as a live write: a credential, an unsafe character, an oversized or empty
  item, a repeated source id is refused with a one-line reason, and the rest goes in.

Layers: :mod:`~memory_es.imports.items` (the values), :mod:`~memory_es.imports.formats` (one
reader per format), :mod:`~memory_es.imports.apply` (the dry run and the apply).
"""

from memory_es.imports.apply import ImportReport, apply_import, plan_import
from memory_es.imports.formats import FORMATS, read_source
from memory_es.imports.items import ImportItem, ImportSourceError, Refusal, SourceRead

__all__ = ["FORMATS", "ImportItem", "ImportReport", "ImportSourceError", "Refusal",
           "SourceRead", "apply_import", "plan_import", "read_source"]
