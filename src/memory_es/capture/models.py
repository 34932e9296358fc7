"""Chat model providers for capture: one protocol, ``complete(messages, *, timeout) -> str``.

- ``ollama``: ``POST {endpoint}/api/chat`` with ``"stream": false`` and temperature 0 (no
  ``format`` is forced: the stage prompts ask for JSON and the contracts check it);
- ``openai``: an OpenAI-compatible ``POST {endpoint}/v1/chat/completions`` (or
  ``{endpoint}/chat/completions`` when the endpoint already ends in ``/v1``), bearer key only
  when one is given;
- ``scripted``: responses from a JSONL file keyed by stage and turn, for tests, fixtures and the
  demo (:class:`ScriptedChat`).

``timeout`` is seconds per HTTP request; callers pass ``memory.llm.timeoutMs / 1000``
(:func:`timeout_seconds`). A transient failure (connection refused or reset, HTTP 5xx, 429,
408) is retried a few times inside the call with tenacity; after that, and for every other
failure, the call raises :class:`ModelError` and the worker's durable backoff takes over
(:func:`to_step_failure`). A timeout is *not* retried inside the call: the budget is per call,
and three back-to-back 60 s waits would only hold the worker longer.

As in :mod:`memory_es.embeddings`: standard-library HTTP only, msgspec-typed envelopes, no
environment variable read here (the caller passes endpoint and API key, O1), no proxy from the
environment and no redirect followed. A provider never falls back to another one, and the
alternate classifier (``memory.capture.reconcileModel``) is never a fallback either (E31-E34).
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar, runtime_checkable

import msgspec

from memory_es.errors import MemoryEsError
from memory_es.step import StepFailure
from memory_es.transport import HttpError, JsonClient, RetryPolicy, endpoint_problem, one_line

if TYPE_CHECKING:
    from memory_es.config import LlmConfig, MemoryConfig

__all__ = [
    "CODE_CATEGORIES",
    "DEFAULT_OLLAMA_ENDPOINT",
    "STAGES",
    "ChatModel",
    "Message",
    "ModelError",
    "OllamaChat",
    "OpenAICompatibleChat",
    "RetryPolicy",
    "ScriptedChat",
    "classifier_model",
    "make_chat_model",
    "timeout_seconds",
    "to_step_failure",
]

DEFAULT_OLLAMA_ENDPOINT: Final = "http://localhost:11434"
STAGES: Final = ("extract", "review", "reconcile")
_MAX_RESPONSE_BYTES: Final = 16 * 1024 * 1024

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

T = TypeVar("T")


class ModelError(MemoryEsError):
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

    def __init__(self, message: str, *, code: str) -> None:
        if code not in CODE_CATEGORIES:
            raise ValueError(f"unknown model error code {code!r}")
        super().__init__(message, code=code)

    @property
    def category(self) -> str:
        """The worker's failure category for this error (see the table above)."""
        return CODE_CATEGORIES[self.code]


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


def _check_call(messages: Sequence[Message], timeout: float) -> list[Message]:
    if not timeout > 0:
        raise ValueError("timeout must be a positive number of seconds")
    checked = list(messages)
    if not checked:
        raise ValueError("complete() needs at least one message")
    for message in checked:
        if not isinstance(message, Message):
            raise TypeError(f"messages must be Message, got {type(message).__name__}")
    return checked


# --------------------------------------------------------------------------------------------
# HTTP providers


class _OllamaOptions(msgspec.Struct):
    temperature: float


class _OllamaRequest(msgspec.Struct):
    model: str
    messages: list[Message]
    stream: bool
    options: _OllamaOptions


class _OllamaMessage(msgspec.Struct):
    content: str | None = None


class _OllamaResponse(msgspec.Struct):
    message: _OllamaMessage | None = None
    done: bool = True
    error: str | None = None


class _OpenAIRequest(msgspec.Struct):
    model: str
    messages: list[Message]
    temperature: float


class _OpenAIMessage(msgspec.Struct):
    content: str | None = None


class _OpenAIChoice(msgspec.Struct):
    message: _OpenAIMessage | None = None


class _OpenAIResponse(msgspec.Struct):
    choices: list[_OpenAIChoice] = msgspec.field(default_factory=list)


def _check_endpoint(endpoint: str) -> str:
    problem = endpoint_problem(endpoint)
    if problem is not None:
        raise ModelError(f"chat model endpoint {problem}", code=CONFIG_INVALID)
    return endpoint.rstrip("/")


class _HttpChat:
    """Shared transport: POST JSON, bounded read, tenacity retries for transient failures."""

    provider: str = ""

    def __init__(self, model: str, url: str, *, api_key: str | None,
                 retry: RetryPolicy | None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ModelError(f"{self.provider} chat needs a model name", code=CONFIG_INVALID)
        self.model = model
        self.name = f"{self.provider}:{model}"
        self._url = url
        # Timeouts are not retried inside a call: the durable backoff takes over.
        self._client = JsonClient(url, api_key=api_key, retry=retry,
                                  max_bytes=_MAX_RESPONSE_BYTES, retry_timeouts=False)

    def __repr__(self) -> str:  # never shows the API key
        return f"{type(self).__name__}(model={self.model!r}, url={self._url!r})"

    @property
    def url(self) -> str:
        """The full URL every request is POSTed to."""
        return self._url

    @property
    def _who(self) -> str:
        return f"{self.provider} model {self.model!r}"

    def _post(self, payload: bytes, timeout: float) -> bytes:
        """POST with retries; every failure ends as a ModelError."""
        try:
            return self._client.post(payload, timeout)
        except HttpError as exc:
            if exc.kind == "timeout":
                raise ModelError(f"{self._who} at {self._url} timed out after {timeout:g} s",
                                 code=TIMEOUT) from exc
            if exc.kind == "rejected":
                raise ModelError(f"{self._who} request to {self._url} rejected with "
                                 f"{exc.detail}", code=REQUEST_REJECTED) from exc
            if exc.kind == "too_large":
                raise ModelError(f"{self._who} sent {exc.detail}", code=INVALID_OUTPUT) from exc
            raise ModelError(f"{self._who} unavailable at {self._url} ({exc.detail})",
                             code=UNAVAILABLE) from exc

    def _decode(self, body: bytes, kind: type[T]) -> T:
        try:
            return msgspec.json.decode(body, type=kind, strict=True)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ModelError(f"{self._who} sent a malformed response envelope: {exc}",
                             code=INVALID_OUTPUT) from exc

    def _content(self, content: str | None) -> str:
        if content is None:
            raise ModelError(f"{self._who} sent no message content", code=INVALID_OUTPUT)
        if not content.strip():
            raise ModelError(f"{self._who} sent empty message content", code=INVALID_OUTPUT)
        return content


class OllamaChat(_HttpChat):
    """Ollama's ``POST /api/chat``, non-streaming, temperature 0."""

    provider = "ollama"

    def __init__(self, model: str, endpoint: str = DEFAULT_OLLAMA_ENDPOINT, *,
                 retry: RetryPolicy | None = None) -> None:
        super().__init__(model, _check_endpoint(endpoint) + "/api/chat", api_key=None,
                         retry=retry)

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        checked = _check_call(messages, timeout)
        request = _OllamaRequest(self.model, checked, stream=False,
                                 options=_OllamaOptions(temperature=0.0))
        reply = self._decode(self._post(msgspec.json.encode(request), timeout), _OllamaResponse)
        if reply.error is not None:
            raise ModelError(f"{self._who} answered with an error: {one_line(reply.error)}",
                             code=INVALID_OUTPUT)
        if reply.message is None:
            raise ModelError(f"{self._who} sent no message", code=INVALID_OUTPUT)
        if not reply.done:
            raise ModelError(f"{self._who} sent an unfinished reply (done: false)",
                             code=INVALID_OUTPUT)
        return self._content(reply.message.content)


class OpenAICompatibleChat(_HttpChat):
    """An OpenAI-compatible ``POST /v1/chat/completions``, temperature 0.

    ``endpoint`` is the server's base URL; when it already ends in ``/v1`` only
    ``/chat/completions`` is appended. ``api_key`` is sent as a bearer token only when given.
    """

    provider = "openai"

    def __init__(self, model: str, endpoint: str, *, api_key: str | None = None,
                 retry: RetryPolicy | None = None) -> None:
        base = _check_endpoint(endpoint)
        path = "/chat/completions" if base.endswith("/v1") else "/v1/chat/completions"
        super().__init__(model, base + path, api_key=api_key, retry=retry)

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        checked = _check_call(messages, timeout)
        request = _OpenAIRequest(self.model, checked, temperature=0.0)
        reply = self._decode(self._post(msgspec.json.encode(request), timeout), _OpenAIResponse)
        if not reply.choices:
            raise ModelError(f"{self._who} sent no choices", code=INVALID_OUTPUT)
        message = reply.choices[0].message
        if message is None:
            raise ModelError(f"{self._who} sent a choice without a message", code=INVALID_OUTPUT)
        return self._content(message.content)


# --------------------------------------------------------------------------------------------
# Scripted provider

Stage = Literal["extract", "review", "reconcile"]
ScriptedErrorCode = Literal["model_timeout", "model_unavailable", "model_invalid_output",
                            "model_request_rejected"]


class _ScriptRecord(msgspec.Struct, forbid_unknown_fields=True):
    stage: Stage
    turn: str
    response: str | None = None
    error: ScriptedErrorCode | None = None


_MARKER = re.compile(r"^[ \t]*(stage|turn):[ \t]*(\S+)[ \t]*$", re.MULTILINE)


def _markers(messages: Sequence[Message]) -> tuple[str | None, str | None]:
    """``stage: X`` / ``turn: Y`` lines of the last user message (the first of each wins)."""
    for message in reversed(messages):
        if message.role == "user":
            found: dict[str, str] = {}
            for key, value in _MARKER.findall(message.content):
                found.setdefault(key, value)
            return found.get("stage"), found.get("turn")
    return None, None


class ScriptedChat:
    """Replies read from a script: one JSON object per line (JSONL), or the same records given
    directly as mappings::

        {"stage": "extract", "turn": "<run id or intake id>", "response": "<reply text>"}
        {"stage": "review", "turn": "<id>", "error": "model_timeout"}

    ``stage`` is ``extract``, ``review`` or ``reconcile``; each record holds exactly one of
    ``response`` or ``error`` (a :class:`ModelError` code to raise, to simulate a failure). A
    (stage, turn) key may appear several times: its records are used in file order, one per
    call, so retries can see a failure and then a success. A call names its key with the
    ``stage``/``turn`` keyword arguments or, to fit the plain :class:`ChatModel` protocol, with
    ``stage: X`` and ``turn: Y`` lines in the last user message (keyword arguments win). An
    unknown or used-up key raises ``model_invalid_output``. ``calls`` logs every call's
    (stage, turn), failed ones included.
    """

    def __init__(self, source: str | Path | Iterable[Mapping[str, Any]], *,
                 name: str = "scripted") -> None:
        self.name = name
        self.calls: list[tuple[str | None, str | None]] = []
        self._lock = threading.Lock()
        self._queues: dict[tuple[str, str], deque[_ScriptRecord]] = {}
        self._used: dict[tuple[str, str], int] = {}
        for where, record in self._load(source):
            if (record.response is None) == (record.error is None):
                raise ModelError(f"{where}: a script record needs exactly one of "
                                 f'"response" or "error"', code=CONFIG_INVALID)
            self._queues.setdefault((record.stage, record.turn), deque()).append(record)

    @staticmethod
    def _load(source: str | Path | Iterable[Mapping[str, Any]]
              ) -> Iterable[tuple[str, _ScriptRecord]]:
        if isinstance(source, str | Path):
            path = Path(source)
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise ModelError(f"cannot read chat script {path}: {exc}",
                                 code=CONFIG_INVALID) from exc
            out = []
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    out.append((where, msgspec.json.decode(line, type=_ScriptRecord,
                                                           strict=True)))
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    raise ModelError(f"{where}: invalid script record: {exc}",
                                     code=CONFIG_INVALID) from exc
            return out
        out = []
        for index, item in enumerate(source):
            where = f"script record {index}"
            try:
                out.append((where, msgspec.convert(dict(item), type=_ScriptRecord, strict=True)))
            except (msgspec.ValidationError, TypeError, ValueError) as exc:
                raise ModelError(f"{where}: invalid script record: {exc}",
                                 code=CONFIG_INVALID) from exc
        return out

    def remaining(self) -> dict[tuple[str, str], int]:
        """Records not yet used, per (stage, turn) key (empty keys left out)."""
        with self._lock:
            return {key: len(queue) for key, queue in self._queues.items() if queue}

    def complete(self, messages: Sequence[Message], *, timeout: float,
                 stage: str | None = None, turn: str | None = None) -> str:
        checked = _check_call(messages, timeout)
        marked_stage, marked_turn = _markers(checked)
        stage = stage if stage is not None else marked_stage
        turn = turn if turn is not None else marked_turn
        with self._lock:
            self.calls.append((stage, turn))
            if stage is None or turn is None:
                raise ModelError(f"{self.name}: the call names no stage and turn (pass "
                                 f'stage=/turn= or put "stage: X" and "turn: Y" lines in the '
                                 f"last user message)", code=INVALID_OUTPUT)
            key = (stage, turn)
            queue = self._queues.get(key)
            if queue is None:
                raise ModelError(f"{self.name}: no scripted response for stage {stage!r} "
                                 f"turn {turn!r}", code=INVALID_OUTPUT)
            if not queue:
                raise ModelError(f"{self.name}: scripted responses for stage {stage!r} turn "
                                 f"{turn!r} are used up ({self._used[key]} used)",
                                 code=INVALID_OUTPUT)
            record = queue.popleft()
            self._used[key] = self._used.get(key, 0) + 1
        if record.error is not None:
            raise ModelError(f"{self.name}: scripted {record.error} for stage {stage!r} "
                             f"turn {turn!r}", code=record.error)
        assert record.response is not None
        return record.response


# --------------------------------------------------------------------------------------------
# Factories


def make_chat_model(llm: LlmConfig, *, api_key: str | None = None,
                    openai_endpoint: str | None = None,
                    retry: RetryPolicy | None = None) -> ChatModel:
    """The chat model ``memory.llm`` names, used for extraction and review (and classification
    unless ``reconcileModel`` is set, E31).

    ``ollama`` talks to ``llm.endpoint``'s ``/api/chat``. The config has no ``openai``
    provider: a host that serves ``llm.model`` from an OpenAI-compatible server passes that
    server's ``openai_endpoint`` (and ``api_key``), read from its own config or environment;
    nothing is read here (O1). ``agent-host`` runs models through the host's runtime, which is
    host plumbing (SPEC P), so it raises ``model_provider_unsupported``.
    """
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
