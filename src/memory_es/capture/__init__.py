"""BuJo capture (SPEC E*, DESIGN 6): model contracts, chat providers and the pipeline.

The worker step itself is :mod:`memory_es.capture.pipeline` (with :mod:`.rules`,
:mod:`.reconcile` and :mod:`.commit`); :mod:`.reads` is what it reads from the index.
"""

from __future__ import annotations

from memory_es.capture.chat_http import OllamaChat, OpenAICompatibleChat
from memory_es.capture.contracts import (
    ExtractedEntity,
    ExtractedMemory,
    ExtractionPlan,
    ReconcileAdd,
    ReconcileDecision,
    ReconcileNoop,
    ReconcilePlan,
    ReconcileSupersede,
    ReconcileUpdate,
    Relation,
    ReviewDecision,
    ReviewPlan,
    parse_extraction,
    parse_reconcile,
    parse_review,
)
from memory_es.capture.factory import classifier_model, make_chat_model
from memory_es.capture.models import (
    ChatModel,
    Message,
    ModelError,
    timeout_seconds,
    to_step_failure,
)
from memory_es.capture.scripted import ScriptedChat

__all__ = [
    "ChatModel",
    "ExtractedEntity",
    "ExtractedMemory",
    "ExtractionPlan",
    "Message",
    "ModelError",
    "OllamaChat",
    "OpenAICompatibleChat",
    "ReconcileAdd",
    "ReconcileDecision",
    "ReconcileNoop",
    "ReconcilePlan",
    "ReconcileSupersede",
    "ReconcileUpdate",
    "Relation",
    "ReviewDecision",
    "ReviewPlan",
    "ScriptedChat",
    "classifier_model",
    "make_chat_model",
    "parse_extraction",
    "parse_reconcile",
    "parse_review",
    "timeout_seconds",
    "to_step_failure",
]
