"""BuJo capture (SPEC E*, DESIGN 6): chat model providers and, later, the capture pipeline."""

from __future__ import annotations

from memory_es.capture.models import (
    ChatModel,
    Message,
    ModelError,
    OllamaChat,
    OpenAICompatibleChat,
    ScriptedChat,
    classifier_model,
    make_chat_model,
    timeout_seconds,
    to_step_failure,
)

__all__ = [
    "ChatModel",
    "Message",
    "ModelError",
    "OllamaChat",
    "OpenAICompatibleChat",
    "ScriptedChat",
    "classifier_model",
    "make_chat_model",
    "timeout_seconds",
    "to_step_failure",
]
