"""The chat model contract (``memory_es.capture.models``), one suite per model.

:class:`ChatModelContract` holds the tests; it is not collected itself (its name does not
start with ``Test``). Each ``Test*`` subclass supplies its model through the factory methods
(:meth:`~ChatModelContract.model`, :meth:`~ChatModelContract.failing_model`): Ollama and
OpenAI-compatible chat against a real HTTP server on 127.0.0.1 (the ``server`` fixture),
:class:`~memory_es.capture.scripted.ScriptedChat` and the demo's
:class:`~memory_es.capture.demo.DemoChat`.

The contract: a model is a :class:`ChatModel` with a ``name``; ``complete(messages,
timeout=...)`` returns the reply as ``str``; a call that ``check_call`` refuses (no messages, a
non-:class:`Message`, a timeout that is not positive) is a ``ValueError`` or ``TypeError`` that
reaches no provider; a failing provider raises :class:`ModelError`, never another exception
type, with a documented code whose ``category`` is a worker failure category
(``memory_es.intake.CATEGORIES``). Provider-specific checks (request shape, headers,
endpoints, wire formats, byte bounds, script semantics) stay in tests/test_chat_models.py.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest

from helpers_chat import ollama_ok, openai_ok
from helpers_contract import FailureCases
from local_http import FakeServer, Recorded, Reply, Responder, raw, status
from memory_es.capture.chat_http import OllamaChat, OpenAICompatibleChat
from memory_es.capture.contracts import parse_extraction
from memory_es.capture.demo import FIRST, DemoChat
from memory_es.capture.models import (
    CODE_CATEGORIES,
    ChatModel,
    Message,
    ModelError,
    RetryPolicy,
    to_step_failure,
)
from memory_es.capture.prompts import (
    Offered,
    ReconcileCandidate,
    TurnContext,
    extraction_messages,
    reconcile_messages,
)
from memory_es.capture.scripted import ScriptedChat
from memory_es.ids import run_hash
from memory_es.intake import CATEGORIES

REPLY = '{"memories": [], "entities": [], "relations": []}'


def extraction_call(run_id: str, capture_text: str, answer: str) -> list[Message]:
    """The messages of a capture's first call (extract) for the turn ``run_id``."""
    return extraction_messages(TurnContext(
        intake_id=run_hash(run_id), admitted_at=datetime(2026, 7, 6, 12, tzinfo=UTC),
        source_label="User", capture_text=capture_text, answer=answer, focus=None))


class ChatModelContract(FailureCases):
    """What every chat model promises; subclasses supply the model."""

    #: the model's ``name``
    name: ClassVar[str]

    # -- factories --------------------------------------------------------------------------

    def model(self) -> ChatModel:
        """A working model that answers :meth:`messages`."""
        raise NotImplementedError

    def messages(self) -> list[Message]:
        """A call the working model answers."""
        return extraction_call("contract-turn", "I prefer window seats on trains.",
                               "Noted: window seats.")

    def check_reply(self, reply: str) -> None:
        """The working model's reply to :meth:`messages` (beyond being a str)."""
        assert reply == REPLY

    def failing_model(self, failure: str) -> tuple[ChatModel, list[Message], float]:
        """A model, a call and a timeout that fail the way ``failure`` names."""
        raise NotImplementedError

    def provider_calls(self, model: ChatModel) -> int | None:
        """How many calls reached the provider behind ``model`` (None: cannot tell)."""
        return None

    def check_failure(self, failure: str, error: ModelError, elapsed: float) -> None:
        """Provider-specific checks after ``failure`` raised ``error`` in ``elapsed`` s."""

    # -- the protocol -----------------------------------------------------------------------

    def test_is_a_chat_model_with_a_name(self) -> None:
        model = self.model()
        assert isinstance(model, ChatModel)
        assert model.name == self.name

    def test_complete_returns_the_reply_as_str(self) -> None:
        reply = self.model().complete(self.messages(), timeout=5.0)
        assert type(reply) is str
        self.check_reply(reply)

    # -- calls check_call refuses -----------------------------------------------------------

    def test_no_messages_is_refused_before_the_provider(self) -> None:
        model = self.model()
        before = self.provider_calls(model)
        for empty in ([], ()):
            with pytest.raises(ValueError, match="at least one message"):
                model.complete(empty, timeout=5.0)
        assert self.provider_calls(model) == before

    @pytest.mark.parametrize("bad", [
        {"role": "user", "content": "a dict, not a Message"},
        ("user", "a tuple"),
        "a bare string",
        None,
    ], ids=["dict", "tuple", "str", "none"])
    def test_a_message_that_is_not_a_message_is_refused_before_the_provider(
            self, bad: Any) -> None:
        model = self.model()
        before = self.provider_calls(model)
        with pytest.raises(TypeError, match="messages must be Message"):
            model.complete([*self.messages(), bad], timeout=5.0)
        assert self.provider_calls(model) == before

    @pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
    def test_a_timeout_that_is_not_positive_is_refused_before_the_provider(
            self, timeout: float) -> None:
        model = self.model()
        before = self.provider_calls(model)
        with pytest.raises(ValueError, match="timeout"):
            model.complete(self.messages(), timeout=timeout)
        assert self.provider_calls(model) == before

    # -- provider failures --------------------------------------------------------------------

    def test_a_failing_provider_raises_a_model_error_the_worker_can_file(
            self, failure: str) -> None:
        model, messages, timeout = self.failing_model(failure)
        started = time.monotonic()
        with pytest.raises(ModelError) as info:
            model.complete(messages, timeout=timeout)
        elapsed = time.monotonic() - started
        error = info.value
        assert error.code == self.failures[failure], str(error)
        assert error.code in CODE_CATEGORIES  # the documented, closed set
        assert error.category == CODE_CATEGORIES[error.code]
        assert error.category in CATEGORIES
        assert to_step_failure(error).category == error.category
        self.check_failure(failure, error, elapsed)


# --------------------------------------------------------------------------------------------
# HTTP chat models against a real server on 127.0.0.1


FAST = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0)


def free_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hang(req: Recorded) -> Reply:
    return -1, b""


class HttpChatContract(ChatModelContract):
    """The HTTP models' failures: a 5xx that outlasts the retries, no answer within the
    timeout, a 4xx rejection, a body that is not JSON, and nobody listening."""

    failures: ClassVar[Mapping[str, str]] = {
        "server_503": "model_unavailable",
        "timeout": "model_timeout",
        "rejected_400": "model_request_rejected",
        "malformed_json": "model_invalid_output",
        "connection_refused": "model_unavailable",
    }
    server: FakeServer
    refused_port: int

    def build(self, url: str) -> ChatModel:
        raise NotImplementedError

    def replies(self, content: str) -> Responder:
        raise NotImplementedError

    @pytest.fixture(autouse=True)
    def _serve(self, server: FakeServer) -> None:
        self.server = server
        server.default = self.replies(REPLY)

    def model(self) -> ChatModel:
        return self.build(self.server.url)

    def failing_model(self, failure: str) -> tuple[ChatModel, list[Message], float]:
        timeout = 2.0
        if failure == "server_503":
            self.server.default = status(503, {"error": "model is loading"})
        elif failure == "timeout":
            self.server.default = hang
            timeout = 0.2
        elif failure == "rejected_400":
            self.server.default = status(400, {"error": {"message": "model 'nope' not found"}})
        elif failure == "malformed_json":
            self.server.default = raw(b"<html>oops")
        elif failure == "connection_refused":
            self.refused_port = free_port()
            return self.build(f"http://127.0.0.1:{self.refused_port}"), self.messages(), 1.0
        return self.model(), self.messages(), timeout

    def provider_calls(self, model: ChatModel) -> int | None:
        return len(self.server.requests)

    def check_failure(self, failure: str, error: ModelError, elapsed: float) -> None:
        message = str(error)
        if failure == "server_503":  # transient: retried, then unavailable, naming the cause
            assert len(self.server.requests) == FAST.attempts
            assert "HTTP 503" in message and "model is loading" in message
        elif failure == "timeout":  # the budget is per call: not retried inside it
            assert len(self.server.requests) == 1
            assert "0.2 s" in message
            assert elapsed < 2.0
        elif failure == "rejected_400":  # names the status; a rejection is not retried
            assert len(self.server.requests) == 1
            assert "HTTP 400" in message and "not found" in message
        elif failure == "malformed_json":
            assert len(self.server.requests) == 1
            assert "malformed" in message
        elif failure == "connection_refused":
            assert f"127.0.0.1:{self.refused_port}" in message
            assert self.server.requests == []


class TestOllamaChat(HttpChatContract):
    name = "ollama:qwen3:8b"

    def build(self, url: str) -> ChatModel:
        return OllamaChat("qwen3:8b", url, retry=FAST)

    def replies(self, content: str) -> Responder:
        return ollama_ok(content)


class TestOpenAICompatibleChat(HttpChatContract):
    name = "openai:gpt-4o-mini"

    def build(self, url: str) -> ChatModel:
        return OpenAICompatibleChat("gpt-4o-mini", url, retry=FAST)

    def replies(self, content: str) -> Responder:
        return openai_ok(content)


# --------------------------------------------------------------------------------------------
# Scripted replies (tests, replay fixtures)


class TestScriptedChat(ChatModelContract):
    """A scripted ``error`` record raises that code; an unscripted or used-up key is invalid
    output."""

    name = "scripted"
    failures: ClassVar[Mapping[str, str]] = {
        **{f"scripted_{code}": code for code in (
            "model_timeout", "model_unavailable", "model_invalid_output",
            "model_request_rejected")},
        "unscripted_turn": "model_invalid_output",
        "used_up": "model_invalid_output",
    }

    def model(self) -> ChatModel:
        return ScriptedChat([{"stage": "extract", "turn": run_hash("contract-turn"),
                              "response": REPLY}])

    def failing_model(self, failure: str) -> tuple[ChatModel, list[Message], float]:
        turn = run_hash("contract-turn")
        if failure.startswith("scripted_"):
            records = [{"stage": "extract", "turn": turn, "error": self.failures[failure]}]
        elif failure == "unscripted_turn":
            records = [{"stage": "extract", "turn": run_hash("another-turn"), "response": "x"}]
        else:  # used_up: the key's one reply is taken by the first call
            records = [{"stage": "extract", "turn": turn, "response": REPLY}]
        model = ScriptedChat(records)
        if failure == "used_up":
            assert model.complete(self.messages(), timeout=5.0) == REPLY
        return model, self.messages(), 5.0

    def provider_calls(self, model: ChatModel) -> int | None:
        assert isinstance(model, ScriptedChat)
        return len(model.calls)


# --------------------------------------------------------------------------------------------
# The demo's offline stand-in


class TestDemoChat(ChatModelContract):
    """Answers the demo turns' capture calls; anything else is refused."""

    name = "demo"
    failures: ClassVar[Mapping[str, str]] = {
        "unknown_stage": "model_invalid_output",
        "turn_outside_the_demo": "model_invalid_output",
        "reconcile_outside_the_demo": "model_invalid_output",
    }

    def model(self) -> ChatModel:
        return DemoChat(run_hash)

    def messages(self) -> list[Message]:
        assert FIRST.capture_text is not None
        return extraction_call(FIRST.run_id, FIRST.capture_text, FIRST.answer or "")

    def check_reply(self, reply: str) -> None:
        plan = parse_extraction(reply)
        assert "Morgan works at Acme Robotics" in [m.text for m in plan.memories]

    def failing_model(self, failure: str) -> tuple[ChatModel, list[Message], float]:
        if failure == "unknown_stage":
            messages = [Message("user", f"stage: summarise\nturn: {run_hash(FIRST.run_id)}\n")]
        elif failure == "turn_outside_the_demo":
            messages = extraction_call("not-a-demo-turn", "Anything at all.", "Sure.")
        else:
            messages = reconcile_messages(run_hash("not-a-demo-turn"), [ReconcileCandidate(
                text="Dana lives in Oslo", source="user", day="2026-07-06",
                offered=[Offered(ref="m1", text="Dana lives in Bergen", day="2026-07-01",
                                 labels=["fact"])])])
        return DemoChat(run_hash), messages, 5.0

    def provider_calls(self, model: ChatModel) -> int | None:
        assert isinstance(model, DemoChat)
        return len(model.calls)
