"""The read path (SPEC G*, H*, I*; DESIGN 9.4-9.8, 9.12): everything that answers a question
from the index, and nothing that writes a journal.

- :mod:`~memory_es.recall.anchors`, :mod:`~memory_es.recall.score`,
  :mod:`~memory_es.recall.select`, :mod:`~memory_es.recall.render`: pure scoring, selection and
  text forms over a candidate pool;
- :mod:`~memory_es.recall.vectors`: the vector cache, the pending-vector queue, the matrix;
- :mod:`~memory_es.recall.candidates`: the SQL candidate pool and ``auto_block``;
  :mod:`~memory_es.recall.explicit`: deliberate ``recall`` over one lookup, with
  :mod:`~memory_es.recall.guidance` (Preferences & lessons) and
  :mod:`~memory_es.recall.factsheet` (the explicit fact sheet);
  :mod:`~memory_es.recall.result`: what recall returns and its explanation;
  :mod:`~memory_es.recall.lexical`: lexical evidence from the index's own statistics;
- :mod:`~memory_es.recall.card`: the person card; :mod:`~memory_es.recall.chronology`:
  MemoryJournal, whose typed pages are :mod:`~memory_es.recall.journal_page`;
- :mod:`~memory_es.recall.engine`: :class:`Recaller`, config + embedder + calibration bound once;
- :mod:`~memory_es.recall.profile`: the owner profile (M*);
  :mod:`~memory_es.recall.receipts`: the host's served-line receipt cache (M10-M12);
- :mod:`~memory_es.recall.calibrate`, :mod:`~memory_es.recall.labelled`,
  :mod:`~memory_es.recall.calibrate_report`: fitting a calibration (``memory-es calibrate``);
  not imported here: only `memory-es calibrate` needs them.

The functions ``score`` and ``select`` are not re-exported: their names are their modules'.
"""

from __future__ import annotations

from memory_es.recall.anchors import Anchors, extract_anchors, normalize
from memory_es.recall.candidates import (
    auto_block,
    candidate_pool,
    check_limit,
    check_query,
    expand_one_hop,
    has_content,
)
from memory_es.recall.card import person_card
from memory_es.recall.chronology import MemoryJournal
from memory_es.recall.engine import (
    LOCAL_MINILM,
    Recaller,
    calibration_for,
    configured_calibration,
    embeddings_block,
)
from memory_es.recall.explicit import Lookup, check_about, deliberate, direct_lookup, recall
from memory_es.recall.factsheet import FactRow, FactSheet
from memory_es.recall.guidance import GUIDANCE_HEADING, GuidanceLine, check_kind
from memory_es.recall.journal_page import JournalCoverage, JournalEntry, JournalPage
from memory_es.recall.render import (
    AUTO_HEADING,
    BACKGROUND_HEADING,
    Hit,
    Recall,
    format_recall,
    render_auto_block,
    render_background,
)
from memory_es.recall.result import AutoContext, RecallResult
from memory_es.recall.score import (
    MAX_CANDIDATES,
    NOMIC_V15,
    Calibration,
    Candidate,
    Fact,
    Scored,
    score_all,
)
from memory_es.recall.select import auto_select, background_select, owner_text_gate
from memory_es.recall.vectors import (
    MAX_IN_FLIGHT,
    MAX_IN_FLIGHT_BYTES,
    VectorCache,
    VectorMatrix,
    embed_texts,
    fill_vectors,
    pending_texts,
    store_vectors,
    vector_backlog,
)

__all__ = [
    "AUTO_HEADING",
    "BACKGROUND_HEADING",
    "GUIDANCE_HEADING",
    "LOCAL_MINILM",
    "MAX_CANDIDATES",
    "MAX_IN_FLIGHT",
    "MAX_IN_FLIGHT_BYTES",
    "NOMIC_V15",
    "Anchors",
    "AutoContext",
    "Calibration",
    "Candidate",
    "Fact",
    "FactRow",
    "FactSheet",
    "GuidanceLine",
    "Hit",
    "JournalCoverage",
    "JournalEntry",
    "JournalPage",
    "Lookup",
    "MemoryJournal",
    "Recall",
    "RecallResult",
    "Recaller",
    "Scored",
    "VectorCache",
    "VectorMatrix",
    "auto_block",
    "auto_select",
    "background_select",
    "calibration_for",
    "candidate_pool",
    "check_about",
    "check_kind",
    "check_limit",
    "check_query",
    "configured_calibration",
    "deliberate",
    "direct_lookup",
    "embed_texts",
    "embeddings_block",
    "expand_one_hop",
    "extract_anchors",
    "fill_vectors",
    "format_recall",
    "has_content",
    "normalize",
    "owner_text_gate",
    "pending_texts",
    "person_card",
    "recall",
    "render_auto_block",
    "render_background",
    "score_all",
    "store_vectors",
    "vector_backlog",
]
