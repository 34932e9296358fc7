"""Choosing the chat models a capture uses: ``memory.llm`` for extraction and review, and the
classifier for reconcile (E31-E33). Separate from ``models`` so providers and protocol never
import each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from memory_es.capture.chat_http import OllamaChat, OpenAICompatibleChat
from memory_es.capture.models import (
    CONFIG_INVALID,
    PROVIDER_UNSUPPORTED,
    ChatModel,
    ModelError,
)
from memory_es.config import LlmConfig, MemoryConfig
from memory_es.providers import configured_key
from memory_es.transport import RetryPolicy, one_line


def make_chat_model(llm: LlmConfig, *, api_key: str | None = None,
                    openai_endpoint: str | None = None,
                    retry: RetryPolicy | None = None,
                    environ: Mapping[str, str] | None = None) -> ChatModel:
    """The chat model ``memory.llm`` names, used for extraction and review (and classification
    unless ``reconcileModel`` is set, E31). Each call's timeout is ``llm.timeoutMs``, passed
    per call (:func:`~memory_es.capture.models.timeout_seconds`).

    ``openai`` talks to the OpenAI-compatible ``llm.endpoint`` (default
    ``https://api.openai.com``) with the key ``llm.apiKey`` holds or the environment variable
    ``llm.apiKeyEnv`` names (read from ``environ``, by default the process environment, here
    and only here). ``ollama`` talks to ``llm.endpoint``'s ``/api/chat``; a host that serves an
    ``ollama`` block's model from an OpenAI-compatible server may still pass that server's
    ``openai_endpoint`` (and ``api_key``). ``agent-host`` runs models through the host's
    runtime, which is host plumbing (SPEC P), so it raises ``model_provider_unsupported``.
    """
    if llm.provider == "openai":
        if api_key is None:
            secret = llm.api_key.get_secret_value() if llm.api_key is not None else None
            api_key = configured_key(secret, llm.api_key_env, setting="memory.llm",
                                     error=ModelError, environ=environ)
        return OpenAICompatibleChat(llm.model, openai_endpoint or llm.endpoint,
                                    api_key=api_key, retry=retry)
    if llm.provider == "agent-host":
        raise ModelError(f'memory.llm.provider "agent-host" ({one_line(llm.model)}) runs on '
                         "the agent-host runtime, which is host plumbing (SPEC P): the host "
                         "must supply that chat model", code=PROVIDER_UNSUPPORTED)
    if llm.provider != "ollama":
        raise ModelError(f"unknown chat model provider {one_line(str(llm.provider))}",
                         code=PROVIDER_UNSUPPORTED)
    if openai_endpoint is not None:
        return OpenAICompatibleChat(llm.model, openai_endpoint, api_key=api_key, retry=retry)
    if api_key is not None:
        raise ModelError("an API key is only sent to an OpenAI-compatible endpoint "
                         "(pass openai_endpoint)", code=CONFIG_INVALID)
    return OllamaChat(llm.model, llm.endpoint, retry=retry)


def classifier_model(config: MemoryConfig, default: ChatModel, *,
                     reconcile_factory: Callable[[str], ChatModel] | None = None) -> ChatModel:
    """The model for the reconcile (classification) stage only (E31).

    Without ``memory.capture.reconcileModel`` this is ``default`` (the ``memory.llm`` model).
    With it, the host-supplied ``reconcile_factory`` builds the alternate from the runtime ref
    (E33); without a factory that is ``model_provider_unsupported``. The alternate is never a
    fallback (E32): nothing here returns ``default`` when it is set, and a factory failure
    propagates.
    """
    ref = config.capture.reconcile_model
    if ref is None:
        return default
    if reconcile_factory is None:
        raise ModelError(f"memory.capture.reconcileModel {one_line(ref)} runs on the "
                         "agent-host runtime, which is host plumbing (E33, SPEC P): the host "
                         "must supply it; it is never replaced by memory.llm",
                         code=PROVIDER_UNSUPPORTED)
    return reconcile_factory(ref)
