"""The chat model interface capture talks to: protocol, messages, errors and the factories.

:class:`ChatModel` is ``complete(messages, *, timeout) -> str``; ``timeout`` is seconds per
HTTP request, ``memory.llm.timeoutMs / 1000`` (:func:`timeout_seconds`). Every failure is a
:class:`ModelError` with a stable code, which :func:`to_step_failure` turns into the worker's
content-free category so its durable backoff takes over. The providers live beside this module:
:mod:`memory_es.capture.chat_http` (Ollama, OpenAI-compatible) and
:mod:`memory_es.capture.scripted` (replies from a script, for tests, fixtures and the demo).

No environment variable is read (the caller passes endpoint and API key, O1). A provider never
falls back to another one, and the alternate classifier (``memory.capture.reconcileModel``) is
never a fallback either (E31-E34).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Protocol, runtime_checkable

import msgspec

from memory_es.providers import ProviderError
from memory_es.step import StepFailure
from memory_es.transport import Kind, RetryPolicy

if TYPE_CHECKING:
    from memory_es.config import LlmConfig

__all__ = [
    "CODE_CATEGORIES",
    "STAGES",
    "ChatModel",
    "Message",
    "ModelError",
    "RetryPolicy",
    "check_call",
    "timeout_seconds",
    "to_step_failure",
]

STAGES: Final = ("extract", "review", "reconcile")

# Stable error codes.
TIMEOUT: Final = "model_timeout"
UNAVAILABLE: Final = "model_unavailable"
INVALID_OUTPUT: Final = "model_invalid_output"
REQUEST_REJECTED: Final = "model_request_rejected"
PROVIDER_UNSUPPORTED: Final = "model_provider_unsupported"
CONFIG_INVALID: Final = "model_config_invalid"

#: ``ModelError.code`` -> the worker's content-free ``StepFailure`` category.
CODE_CATEGORIES: Final[Mapping[str, str]] = {
    TIMEOUT: "model_timeout",  # the server did not answer within ``timeout``
    UNAVAILABLE: "model_unavailable",  # refused/reset, 5xx, 429, 408 after the retries
    INVALID_OUTPUT: "model_invalid_output",  # malformed envelope, missing or empty content
    REQUEST_REJECTED: "model_unavailable",  # any other 4xx (bad model name, auth, ...)
    PROVIDER_UNSUPPORTED: "model_unavailable",  # agent-host / reconcileModel without a host
    CONFIG_INVALID: "model_unavailable",  # an unusable endpoint, model or script file
}


class ModelError(ProviderError):
    """A chat model call failed; ``code`` names the cause, ``category`` the worker's bucket.

    ============================== =========================================================
    code                           category (``StepFailure``) and cause
    ============================== =========================================================
    ``model_timeout``              ``model_timeout``: no answer within the per-call timeout
    ``model_unavailable``          ``model_unavailable``: connection refused or reset, HTTP
                                   5xx, 429 or 408, still failing after the in-call retries
    ``model_invalid_output``       ``model_invalid_output``: malformed JSON envelope, missing
                                   message content, empty content; an unknown scripted turn
    ``model_request_rejected``     ``model_unavailable``: any other 4xx (the message names
                                   the status)
    ``model_provider_unsupported`` ``model_unavailable``: agent-host runtime plumbing or a
                                   ``reconcileModel`` the host did not supply (SPEC P, E33)
    ``model_config_invalid``       ``model_unavailable``: an unusable endpoint, model name or
                                   script file
    ============================== =========================================================
    """

    family = "model"
    categories = CODE_CATEGORIES
    http_codes: ClassVar[Mapping[Kind, str]] = {
        "timeout": TIMEOUT, "unavailable": UNAVAILABLE, "rejected": REQUEST_REJECTED,
        "too_large": INVALID_OUTPUT,
    }
    config_invalid = CONFIG_INVALID
    bad_reply = INVALID_OUTPUT
    endpoint_label = "chat model"


def to_step_failure(err: ModelError) -> StepFailure:
    """The content-free worker failure for a model error; chain it with ``raise ... from err``."""
    return StepFailure(err.category)


def timeout_seconds(llm: LlmConfig) -> float:
    """``memory.llm.timeoutMs`` as the per-call ``timeout`` in seconds."""
    return llm.timeout_ms / 1000.0


class Message(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One chat message: ``role`` is ``system``, ``user`` or ``assistant``."""

    role: Literal["system", "user", "assistant"]
    content: str

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant"):
            raise ValueError(f"message role must be system, user or assistant, got {self.role!r}")
        if not isinstance(self.content, str):
            raise TypeError(f"message content must be str, got {type(self.content).__name__}")


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: the assistant's reply text to ``messages``, or a :class:`ModelError`."""

    name: str

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str: ...


def check_call(messages: Sequence[Message], timeout: float) -> list[Message]:
    """The call's messages as a list, after checking the timeout and each message's type."""
    if not timeout > 0:
        raise ValueError("timeout must be a positive number of seconds")
    checked = list(messages)
    if not checked:
        raise ValueError("complete() needs at least one message")
    for message in checked:
        if not isinstance(message, Message):
            raise TypeError(f"messages must be Message, got {type(message).__name__}")
    return checked
