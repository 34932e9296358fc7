"""Answering a question (SPEC G*, H*, M*; DESIGN 9.4-9.8): everything that turns a question
into an answer from the index, and nothing that writes a journal or browses it.

- :mod:`~memory_es.recall.engine`: :class:`Recaller`, config + embedder + calibration bound
  once, and the one orchestration of a recall both doors call (now and as of an instant);
- :mod:`~memory_es.recall.asking`: what a question may be (its arguments, checked once);
- :mod:`~memory_es.recall.explicit`: deliberate recall over one lookup (G11-G29, G34);
  :mod:`~memory_es.recall.automatic`: the automatic context (H1-H22);
  :mod:`~memory_es.recall.as_of`: the journal folded at an instant, for recall then;
- :mod:`~memory_es.recall.retrieve`: the candidate pool and lexical evidence (what to look at);
- :mod:`~memory_es.recall.rank`: pure scoring, selection, read policies and line forms over
  a pool (what comes first, what is cut);
- :mod:`~memory_es.recall.sections`: what an answer is made of beyond its hits: the result
  and its explanation, guidance, fact sheets, the person card, the owner profile.

The index's vectors are :mod:`memory_es.vectors`; reading by date or id is
:mod:`memory_es.browse`; fitting a calibration is :mod:`memory_es.calibration`.
This face is the answer's types and its entry points, nothing more.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_es.recall.engine import Recaller
    from memory_es.recall.explicit import recall
    from memory_es.recall.rank.render import AUTO_HEADING, BACKGROUND_HEADING, Recall
    from memory_es.recall.sections.result import AutoContext, RecallResult

__all__ = [
    "AUTO_HEADING",
    "BACKGROUND_HEADING",
    "AutoContext",
    "Recall",
    "RecallResult",
    "Recaller",
    "recall",
]

# Imported on first use (PEP 562): a writer that needs one pure module of this package
# (``rank.select`` for a line's validity) does not import the engine, its embedders and numpy.
_HOME = {"Recaller": "engine", "recall": "explicit", "AUTO_HEADING": "rank.render",
         "BACKGROUND_HEADING": "rank.render", "Recall": "rank.render",
         "AutoContext": "sections.result", "RecallResult": "sections.result"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
