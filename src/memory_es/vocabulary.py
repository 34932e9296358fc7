"""Domain vocabulary shared by capture, recall and the projections: closed sets and bounds.

Words and numbers that more than one layer must agree on live here, so that capture never
imports the read path or a projection to learn them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

# Record statuses (DESIGN 9.8). Terminal records never enter a retriever (G22, I14).
TERMINAL_STATUSES: Final = frozenset({"dropped", "invalidated"})
# History: terminal, or superseded. Never a duplicate, a reconcile target or a card fact.
HISTORY_STATUSES: Final = TERMINAL_STATUSES | {"superseded"}
# Live statuses (K14): recall returns them all, a status other than open as a prefix (G23).
LIVE_STATUSES: Final = frozenset({"open", "done", "scheduled", "migrated"})
# The transitions an operator or host may write as ``Memory.StatusChanged`` (K14): between the
# live statuses, and from any of them to the terminal ``dropped``. ``superseded`` and
# ``invalidated`` come only from a supersession (a capture's SUPERSEDE, a Remember's
# ``supersedes``) and ``forgotten`` only from a forget; terminal lines never come back.
STATUS_TRANSITIONS: Final = {
    "open": frozenset({"done", "scheduled", "migrated", "dropped"}),
    "scheduled": frozenset({"open", "done", "migrated", "dropped"}),
    "migrated": frozenset({"open", "done", "scheduled", "dropped"}),
    "done": frozenset({"open", "dropped"}),
}

# ``list`` (``memory-es list``): the statuses it filters by and its page bounds; here so the
# CLI's parser needs no read path to know them.
LIST_STATUSES: Final = ("open", "done", "scheduled", "migrated", "dropped", "superseded",
                        "invalidated")
LIST_DEFAULT_LIMIT: Final = 50
# What a journal filter may name (``memory-es journal --status/--currentness``): I14 keeps
# dropped and invalidated rows out of the journal, so a filter never names them; the
# currentness values are G14's.
JOURNAL_STATUSES: Final = (*sorted(LIVE_STATUSES), "superseded")
JOURNAL_CURRENTNESS: Final = ("current", "ended", "superseded")
LIST_MAX_LIMIT: Final = 1000

# The ``source`` of a Remember line (J*): capture never supersedes one unless it was written
# ``replaceable`` (J10).
REMEMBER_SOURCE: Final = "remember"

# The replay sidecar's bounds (F8).
SIDECAR_MAX_BYTES: Final = 32 * 1024 * 1024
SIDECAR_MAX_ENTRIES: Final = 131_072
SIDECAR_ENTRY_MAX_BYTES: Final = 512  # an upper bound of one canonical entry (ids are 64 hex)

# Index meta keys: a file's length at the committed position.
GRAPH_BYTES: Final = "graph_bytes"
SIDECAR_BYTES: Final = "sidecar_bytes"


def sql_list(values: Iterable[str]) -> str:
    """A constant set of our own (never user-supplied) words as an SQL list literal."""
    return "(" + ", ".join(f"'{v}'" for v in sorted(values)) + ")"


# G22: ``status NOT IN`` this keeps a query to live (and superseded) rows
TERMINAL_SQL: Final = sql_list(TERMINAL_STATUSES)

# ``import apply --from``: the source formats a reader exists for (memory_es.imports.formats);
# here so the CLI's parser lists them without importing the readers.
IMPORT_FORMATS: Final = ("mem0", "notes", "chatgpt", "memory-es", "mcp-memory",
                                "reference")

# Providers' rows are L2-normalised float32 (embeddings.normalise): a stored vector further
# than this from unit length was not written by one (the vector cache and health both check).
VECTOR_NORM_TOLERANCE: Final = 1e-3

# ``reflect``: how many days ahead "validity ends soon" looks by default, and at most.
REFLECT_SOON_DAYS: Final = 7
REFLECT_SOON_MAX: Final = 366
