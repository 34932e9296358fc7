"""Chat model providers against real HTTP servers on 127.0.0.1, and the scripted provider:
what is specific to each (request shape, headers, endpoints, retries, wire formats, byte
bounds, script semantics), the factories and the worker mapping. What every chat model
promises is tests/test_chat_model_contract.py."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers_chat import ollama_ok, openai_ok
from local_http import (
    Dripper,
    FakeServer,
    Recorded,
    Reply,
    Responder,
    drip_body,
    drip_headers,
    js,
    status,
)
from memory_es.capture import chat_http
from memory_es.capture.chat_http import OllamaChat, OpenAICompatibleChat
from memory_es.capture.contracts import MAX_COMPLETION_UTF16, parse_extraction
from memory_es.capture.factory import classifier_model, make_chat_model
from memory_es.capture.models import (
    ChatModel,
    Message,
    ModelError,
    RetryPolicy,
    timeout_seconds,
    to_step_failure,
)
from memory_es.capture.scripted import ScriptedChat
from memory_es.config import LlmConfig, MemoryConfig
from memory_es.step import StepFailure

FAST = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0)
MSGS = [Message("system", "You extract facts."), Message("user", "hello there")]

# --------------------------------------------------------------------------------------------
# Replies in the Ollama and OpenAI chat wire formats (server: tests/local_http.py).



def ollama(server: FakeServer, **kwargs: Any) -> OllamaChat:
    kwargs.setdefault("retry", FAST)
    return OllamaChat("qwen3:8b", server.url, **kwargs)


def openai(server: FakeServer, **kwargs: Any) -> OpenAICompatibleChat:
    kwargs.setdefault("retry", FAST)
    endpoint = kwargs.pop("endpoint", server.url)
    return OpenAICompatibleChat("gpt-4o-mini", endpoint, **kwargs)


Factory = Callable[[FakeServer], ChatModel]
PROVIDERS: list[tuple[str, Factory, Callable[[str], Responder]]] = [
    ("ollama", ollama, ollama_ok),
    ("openai", openai, openai_ok),
]
provider_params = pytest.mark.parametrize(
    ("make", "ok"), [(p[1], p[2]) for p in PROVIDERS], ids=[p[0] for p in PROVIDERS])


def wire_messages() -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in MSGS]


# --------------------------------------------------------------------------------------------
# Success paths and request shape


def test_ollama_success_sends_model_messages_stream_false_temperature_zero(
        server: FakeServer) -> None:
    server.default = ollama_ok('{"ok": true}')
    model = ollama(server)
    assert model.complete(MSGS, timeout=2.0) == '{"ok": true}'
    (req,) = server.requests
    assert req.path == "/api/chat"
    assert req.body == {"model": "qwen3:8b", "messages": wire_messages(), "stream": False,
                        "options": {"temperature": 0}}
    assert "format" not in req.body
    assert "authorization" not in req.headers
    assert req.headers["content-type"] == "application/json"


def test_ollama_default_endpoint() -> None:
    assert OllamaChat("m").url == "http://localhost:11434/api/chat"
    assert chat_http.DEFAULT_OLLAMA_ENDPOINT == "http://localhost:11434"


def test_openai_success_with_bearer_key(server: FakeServer) -> None:
    server.default = openai_ok("reply text")
    model = openai(server, api_key="sk-test-123")
    assert model.complete(MSGS, timeout=2.0) == "reply text"
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.body == {"model": "gpt-4o-mini", "messages": wire_messages(), "temperature": 0}
    assert req.headers["authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(model)


def test_openai_without_key_sends_no_authorization(server: FakeServer) -> None:
    server.default = openai_ok("x")
    assert openai(server).complete(MSGS, timeout=2.0) == "x"
    assert "authorization" not in server.requests[0].headers


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_openai_endpoint_already_ending_in_v1(server: FakeServer, suffix: str) -> None:
    server.default = openai_ok("x")
    openai(server, endpoint=server.url + suffix).complete(MSGS, timeout=2.0)
    assert server.requests[0].path == "/v1/chat/completions"


# --------------------------------------------------------------------------------------------
# Transient failures, timeouts and rejections


@provider_params
def test_500_then_success_is_retried(server: FakeServer, make: Factory,
                                     ok: Callable[[str], Responder]) -> None:
    server.script = [status(500), status(429)]
    server.default = ok("second time lucky")
    assert make(server).complete(MSGS, timeout=2.0) == "second time lucky"
    assert len(server.requests) == 3


def test_a_server_echoing_the_key_does_not_put_it_in_the_error(server: FakeServer) -> None:
    server.default = status(401, {"error": {"message": "Incorrect API key sk-echo-123 given"}})
    with pytest.raises(ModelError) as info:
        openai(server, api_key="sk-echo-123").complete(MSGS, timeout=2.0)
    assert info.value.code == "model_request_rejected"
    assert "sk-echo-123" not in str(info.value)
    assert "Incorrect API key [api key] given" in str(info.value)


def test_redirect_is_not_followed(server: FakeServer) -> None:
    server.default = status(307, {})
    with pytest.raises(ModelError) as info:
        openai(server, api_key="k").complete(MSGS, timeout=2.0)
    assert info.value.code == "model_request_rejected"
    assert "HTTP 307" in str(info.value)
    assert len(server.requests) == 1


# --------------------------------------------------------------------------------------------
# E36 (issue 13 item 5): the timeout bounds the whole call, not each socket read

DEADLINE_MARGIN = 0.5  # how far past its deadline a call may end, on a loaded machine


def assert_cut_off(server: FakeServer, start: float, elapsed: float, timeout: float) -> None:
    """The call ended within the margin of its deadline and its socket was closed then."""
    assert timeout - 0.05 <= elapsed < timeout + DEADLINE_MARGIN, elapsed
    give_up = time.monotonic() + 2.0
    while not server.hangups and time.monotonic() < give_up:
        time.sleep(0.01)
    assert server.hangups, "the client never closed its socket"
    assert server.hangups[0] - start < timeout + DEADLINE_MARGIN


@pytest.mark.parametrize("drip", [drip_headers, drip_body], ids=["headers", "body"])
@provider_params
def test_a_dripping_server_is_cut_off_at_the_deadline(
        server: FakeServer, make: Factory, ok: Callable[[str], Responder],
        drip: Callable[[float], Dripper]) -> None:
    server.default = drip(0.2)  # a byte every 0.2 s: no single read ever waits 1 s
    start = time.monotonic()
    with pytest.raises(ModelError) as info:
        make(server).complete(MSGS, timeout=1.0)
    elapsed = time.monotonic() - start
    assert info.value.code == "model_timeout"
    assert "timed out after 1 s" in str(info.value)
    assert len(server.requests) == 1
    assert_cut_off(server, start, elapsed, 1.0)


def test_the_reported_drip_ends_a_2_s_call_in_time(server: FakeServer) -> None:
    """Issue 13's case: one byte every 0.5 s kept a 2 s chat call running past 40 s."""
    server.default = drip_headers(0.5)
    start = time.monotonic()
    with pytest.raises(ModelError) as info:
        ollama(server).complete(MSGS, timeout=2.0)
    assert info.value.code == "model_timeout"
    assert_cut_off(server, start, time.monotonic() - start, 2.0)


@provider_params
def test_retries_spend_the_same_deadline(server: FakeServer, make: Factory,
                                         ok: Callable[[str], Responder]) -> None:
    """A 5xx is retried, but the retry only gets what is left of the call's deadline."""
    server.script = [status(503), status(500)]
    server.default = drip_body(0.2)
    start = time.monotonic()
    with pytest.raises(ModelError) as info:
        make(server).complete(MSGS, timeout=1.0)
    assert info.value.code == "model_timeout"
    assert len(server.requests) == 3
    assert_cut_off(server, start, time.monotonic() - start, 1.0)


def test_the_deadline_holds_over_https(tls_server: FakeServer) -> None:
    """The TLS handshake and the encrypted reads come out of the same budget."""
    tls_server.default = openai_ok("over tls")
    assert openai(tls_server, api_key="sk-t").complete(MSGS, timeout=5.0) == "over tls"
    assert tls_server.requests[0].headers["authorization"] == "Bearer sk-t"
    tls_server.default = drip_headers(0.2)
    start = time.monotonic()
    with pytest.raises(ModelError) as info:
        openai(tls_server).complete(MSGS, timeout=1.0)
    assert info.value.code == "model_timeout"
    assert_cut_off(tls_server, start, time.monotonic() - start, 1.0)


def test_no_retry_starts_after_the_deadline(server: FakeServer) -> None:
    """A wait between tries that would pass the deadline ends the call with the real cause."""
    server.default = status(503, {"error": "model is loading"})
    start = time.monotonic()
    with pytest.raises(ModelError) as info:
        ollama(server, retry=RetryPolicy(3, 1.0, 1.0)).complete(MSGS, timeout=0.3)
    assert time.monotonic() - start < 0.3
    assert info.value.code == "model_unavailable"
    assert "HTTP 503" in str(info.value) and "model is loading" in str(info.value)
    assert len(server.requests) == 1


# --------------------------------------------------------------------------------------------
# Invalid output


INVALID_OLLAMA: list[tuple[str, Responder, str]] = [
    ("no message", lambda r: js(200, {"done": True}), "no message"),
    ("no content", lambda r: js(200, {"message": {"role": "assistant"}, "done": True}),
     "no message content"),
    ("null content", lambda r: js(200, {"message": {"role": "assistant", "content": None},
                                        "done": True}), "no message content"),
    ("empty content", ollama_ok(""), "empty"),
    ("blank content", ollama_ok("  \n "), "empty"),
    ("content not str", lambda r: js(200, {"message": {"content": 5}, "done": True}),
     "malformed"),
    ("not done", lambda r: js(200, {"message": {"content": "x"}, "done": False}), "done"),
    ("error body", lambda r: js(200, {"error": "model crashed"}), "model crashed"),
]

INVALID_OPENAI: list[tuple[str, Responder, str]] = [
    ("no choices", lambda r: js(200, {"choices": []}), "no choices"),
    ("missing choices", lambda r: js(200, {"id": "x"}), "no choices"),
    ("no message", lambda r: js(200, {"choices": [{"index": 0}]}), "without a message"),
    ("null content", lambda r: js(200, {"choices": [{"message": {"content": None}}]}),
     "no message content"),
    ("empty content", openai_ok(""), "empty"),
    ("choices not list", lambda r: js(200, {"choices": {"a": 1}}), "malformed"),
]


@pytest.mark.parametrize(("responder", "words"), [(c[1], c[2]) for c in INVALID_OLLAMA],
                         ids=[c[0] for c in INVALID_OLLAMA])
def test_ollama_invalid_output(server: FakeServer, responder: Responder, words: str) -> None:
    server.default = responder
    with pytest.raises(ModelError) as info:
        ollama(server).complete(MSGS, timeout=2.0)
    assert info.value.code == "model_invalid_output"
    assert info.value.category == "model_invalid_output"
    assert words in str(info.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize(("responder", "words"), [(c[1], c[2]) for c in INVALID_OPENAI],
                         ids=[c[0] for c in INVALID_OPENAI])
def test_openai_invalid_output(server: FakeServer, responder: Responder, words: str) -> None:
    server.default = responder
    with pytest.raises(ModelError) as info:
        openai(server).complete(MSGS, timeout=2.0)
    assert info.value.code == "model_invalid_output"
    assert words in str(info.value)
    assert len(server.requests) == 1


# --------------------------------------------------------------------------------------------
# Arguments and configuration


@pytest.mark.parametrize("endpoint", ["localhost:11434", "ftp://x", "http://h/?q=1", "", "http://"])
def test_bad_endpoint_is_config_invalid(endpoint: str) -> None:
    with pytest.raises(ModelError) as info:
        OllamaChat("m", endpoint)
    assert info.value.code == "model_config_invalid"


def test_blank_model_is_config_invalid() -> None:
    with pytest.raises(ModelError) as info:
        OpenAICompatibleChat(" ", "http://127.0.0.1:1")
    assert info.value.code == "model_config_invalid"


def test_a_message_role_is_system_user_or_assistant() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("tool", "x")  # type: ignore[arg-type]


def test_unknown_error_code_is_refused() -> None:
    with pytest.raises(ValueError):
        ModelError("x", code="model_oops")


def test_timeout_seconds_from_config() -> None:
    assert timeout_seconds(LlmConfig(provider="ollama", model="m")) == 60.0
    assert timeout_seconds(LlmConfig(provider="ollama", model="m", timeout_ms=250)) == 0.25


# --------------------------------------------------------------------------------------------
# Worker mapping


@pytest.mark.parametrize(("code", "category"), [
    ("model_timeout", "model_timeout"),
    ("model_unavailable", "model_unavailable"),
    ("model_invalid_output", "model_invalid_output"),
    ("model_request_rejected", "model_unavailable"),
    ("model_provider_unsupported", "model_unavailable"),
    ("model_config_invalid", "model_unavailable"),
])
def test_to_step_failure_mapping(code: str, category: str) -> None:
    failure = to_step_failure(ModelError("boom", code=code))
    assert isinstance(failure, StepFailure)
    assert failure.category == category
    assert "boom" not in str(failure)  # content-free


# --------------------------------------------------------------------------------------------
# ScriptedChat


def write_script(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n", encoding="utf-8")
    return path


def test_scripted_ordered_responses_per_key_via_kwargs(tmp_path: Path) -> None:
    path = write_script(tmp_path, [
        {"stage": "extract", "turn": "run-1", "response": "first"},
        {"stage": "review", "turn": "run-1", "response": "review-1"},
        {"stage": "extract", "turn": "run-1", "response": "second"},
        {"stage": "extract", "turn": "run-2", "response": "other turn"},
    ])
    model = ScriptedChat(path)
    assert model.complete(MSGS, timeout=1.0, stage="extract", turn="run-1") == "first"
    assert model.complete(MSGS, timeout=1.0, stage="extract", turn="run-2") == "other turn"
    assert model.complete(MSGS, timeout=1.0, stage="extract", turn="run-1") == "second"
    assert model.remaining() == {("review", "run-1"): 1}
    assert model.complete(MSGS, timeout=1.0, stage="review", turn="run-1") == "review-1"
    assert model.calls == [("extract", "run-1"), ("extract", "run-2"), ("extract", "run-1"),
                           ("review", "run-1")]
    with pytest.raises(ModelError) as info:
        model.complete(MSGS, timeout=1.0, stage="extract", turn="run-1")
    assert info.value.code == "model_invalid_output"
    assert "used up" in str(info.value)


def test_scripted_markers_in_last_user_message() -> None:
    model = ScriptedChat([
        {"stage": "reconcile", "turn": "intake-7", "response": '{"ops": []}'},
        {"stage": "extract", "turn": "intake-7", "response": "extracted"},
    ])
    messages = [Message("system", "stage: extract\nturn: intake-7"),
                Message("user", "older"),
                Message("assistant", "stage: extract"),
                Message("user", "Classify these.\n  stage: reconcile\nturn: intake-7\nbody")]
    plain: ChatModel = model
    assert plain.complete(messages, timeout=1.0) == '{"ops": []}'
    # keyword arguments win over markers
    assert model.complete(messages, timeout=1.0, stage="extract") == "extracted"
    assert model.calls == [("reconcile", "intake-7"), ("extract", "intake-7")]


def test_scripted_without_stage_or_turn(tmp_path: Path) -> None:
    model = ScriptedChat([{"stage": "extract", "turn": "t", "response": "x"}])
    with pytest.raises(ModelError) as info:
        model.complete([Message("user", "stage: extract")], timeout=1.0)
    assert info.value.code == "model_invalid_output"
    assert "no stage and turn" in str(info.value)
    assert model.calls == [("extract", None)]


def test_scripted_error_records_then_success(tmp_path: Path) -> None:
    path = write_script(tmp_path, [
        {"stage": "extract", "turn": "t1", "error": "model_timeout"},
        {"stage": "extract", "turn": "t1", "error": "model_request_rejected"},
        {"stage": "extract", "turn": "t1", "response": "ok"},
    ])
    model = ScriptedChat(path)
    with pytest.raises(ModelError) as first:
        model.complete(MSGS, timeout=1.0, stage="extract", turn="t1")
    assert first.value.code == "model_timeout"
    with pytest.raises(ModelError) as second:
        model.complete(MSGS, timeout=1.0, stage="extract", turn="t1")
    assert second.value.code == "model_request_rejected"
    assert model.complete(MSGS, timeout=1.0, stage="extract", turn="t1") == "ok"


def test_scripted_unknown_key() -> None:
    model = ScriptedChat([{"stage": "extract", "turn": "t1", "response": "x"}])
    with pytest.raises(ModelError) as info:
        model.complete(MSGS, timeout=1.0, stage="review", turn="t1")
    assert info.value.code == "model_invalid_output"
    assert "no scripted response" in str(info.value)
    assert "'review'" in str(info.value) and "'t1'" in str(info.value)
    assert model.calls == [("review", "t1")]
    assert model.remaining() == {("extract", "t1"): 1}  # nothing consumed


@pytest.mark.parametrize("record", [
    {"stage": "summarise", "turn": "t", "response": "x"},
    {"stage": "extract", "turn": "t"},
    {"stage": "extract", "turn": "t", "response": "x", "error": "model_timeout"},
    {"stage": "extract", "turn": "t", "error": "boom"},
    {"stage": "extract", "turn": "t", "response": "x", "extra": 1},
    {"stage": "extract", "turn": 3, "response": "x"},
])
def test_scripted_bad_records_are_refused(tmp_path: Path, record: dict[str, Any]) -> None:
    with pytest.raises(ModelError) as info:
        ScriptedChat(write_script(tmp_path, [record]))
    assert info.value.code == "model_config_invalid"
    assert "script.jsonl:1" in str(info.value)
    with pytest.raises(ModelError):
        ScriptedChat([record])


def test_scripted_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        ScriptedChat(tmp_path / "nope.jsonl")
    assert info.value.code == "model_config_invalid"


# --------------------------------------------------------------------------------------------
# Factories and classifier routing


def test_make_chat_model_ollama() -> None:
    model = make_chat_model(LlmConfig(provider="ollama", model="qwen3:8b",
                                      endpoint="http://127.0.0.1:9999/"))
    assert isinstance(model, OllamaChat)
    assert model.url == "http://127.0.0.1:9999/api/chat"
    assert model.name == "ollama:qwen3:8b"
    default = make_chat_model(LlmConfig(provider="ollama", model="m"))
    assert isinstance(default, OllamaChat)
    assert default.url == "http://localhost:11434/api/chat"


def test_make_chat_model_openai_endpoint(server: FakeServer) -> None:
    server.default = openai_ok("hi")
    model = make_chat_model(LlmConfig(provider="ollama", model="gpt-4o-mini"),
                            openai_endpoint=server.url + "/v1", api_key="sk-x", retry=FAST)
    assert isinstance(model, OpenAICompatibleChat)
    assert model.complete(MSGS, timeout=2.0) == "hi"
    assert server.requests[0].headers["authorization"] == "Bearer sk-x"
    assert server.requests[0].body["model"] == "gpt-4o-mini"
    with pytest.raises(ModelError) as info:
        make_chat_model(LlmConfig(provider="ollama", model="m"), api_key="sk-x")
    assert info.value.code == "model_config_invalid"


def test_make_chat_model_openai_provider_from_config(server: FakeServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13 item 15: memory.llm provider "openai", endpoint and key variable."""
    server.default = openai_ok("hi")
    llm = LlmConfig.model_validate({"provider": "openai", "model": "gpt-4o-mini",
                                    "endpoint": server.url, "apiKeyEnv": "MEMORY_ES_TEST_KEY"})
    monkeypatch.setenv("MEMORY_ES_TEST_KEY", "sk-env-key")
    model = make_chat_model(llm, retry=FAST)
    assert isinstance(model, OpenAICompatibleChat)
    assert model.complete(MSGS, timeout=2.0) == "hi"
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env-key"
    assert "sk-env-key" not in repr(model)
    monkeypatch.delenv("MEMORY_ES_TEST_KEY")
    with pytest.raises(ModelError) as info:
        make_chat_model(llm)
    assert info.value.code == "model_config_invalid"
    assert "MEMORY_ES_TEST_KEY" in str(info.value) and "not set" in str(info.value)
    default = make_chat_model(LlmConfig(provider="openai", model="gpt-4o-mini"))
    assert isinstance(default, OpenAICompatibleChat)
    assert default.url == "https://api.openai.com/v1/chat/completions"


def test_make_chat_model_agent_host_is_unsupported() -> None:
    llm = LlmConfig(provider="agent-host", model="openai-codex:gpt-5")
    with pytest.raises(ModelError) as info:
        make_chat_model(llm, openai_endpoint="http://127.0.0.1:1")
    assert info.value.code == "model_provider_unsupported"
    assert "agent-host" in str(info.value) and "host plumbing" in str(info.value)
    assert info.value.category == "model_unavailable"


def bujo(reconcile_model: str | None = None) -> MemoryConfig:
    capture: dict[str, Any] = {}
    if reconcile_model is not None:
        capture["reconcileModel"] = reconcile_model
    return MemoryConfig.model_validate({
        "mode": "bujo", "writeMode": "capture",
        "llm": {"provider": "ollama", "model": "qwen3:8b"},
        "embeddings": {"provider": "ollama"},
        "capture": capture,
    })


def test_classifier_is_default_without_reconcile_model() -> None:
    default = ScriptedChat([], name="default")
    called: list[str] = []

    def factory(ref: str) -> ChatModel:
        called.append(ref)
        return ScriptedChat([], name="alt")

    assert classifier_model(bujo(), default) is default
    assert classifier_model(bujo(), default, reconcile_factory=factory) is default
    assert called == []


def test_classifier_uses_factory_with_reconcile_model() -> None:
    default = ScriptedChat([], name="default")
    alternate = ScriptedChat([], name="alt")
    called: list[str] = []

    def factory(ref: str) -> ChatModel:
        called.append(ref)
        return alternate

    config = bujo("openai-codex:gpt-5")
    assert classifier_model(config, default, reconcile_factory=factory) is alternate
    assert called == ["openai-codex:gpt-5"]


def test_classifier_reconcile_model_without_factory_is_not_a_fallback() -> None:
    default = ScriptedChat([], name="default")
    with pytest.raises(ModelError) as info:
        classifier_model(bujo("openai-codex:gpt-5"), default)
    assert info.value.code == "model_provider_unsupported"
    assert "reconcileModel" in str(info.value)

    def broken(ref: str) -> ChatModel:
        raise ModelError("runtime down", code="model_unavailable")

    with pytest.raises(ModelError, match="runtime down"):
        classifier_model(bujo("openai-codex:gpt-5"), default, reconcile_factory=broken)


# --------------------------------------------------------------------------------------------
# Oversize completions from a real server: the transport's byte bound, then the E9 cap


def sized(size: int, ok: Callable[[str], Responder]) -> Responder:
    """``ok``'s reply padded with ASCII content to exactly ``size`` bytes of HTTP body."""
    def respond(req: Recorded) -> Reply:
        _, empty = ok("")(req)
        code, body = ok("x" * (size - len(empty)))(req)
        assert len(body) == size
        return code, body
    return respond


@provider_params
def test_response_body_at_the_byte_bound_is_read(server: FakeServer, make: Factory,
                                                 ok: Callable[[str], Responder]) -> None:
    server.default = sized(chat_http._MAX_RESPONSE_BYTES, ok)
    content = make(server).complete(MSGS, timeout=30.0)
    assert set(content) == {"x"} and len(content) > chat_http._MAX_RESPONSE_BYTES - 512


@provider_params
def test_response_body_over_the_byte_bound_is_invalid_output(
        server: FakeServer, make: Factory, ok: Callable[[str], Responder]) -> None:
    limit = chat_http._MAX_RESPONSE_BYTES
    server.default = sized(limit + 1, ok)
    with pytest.raises(ModelError) as info:
        make(server).complete(MSGS, timeout=30.0)
    assert info.value.code == "model_invalid_output"
    assert info.value.category == "model_invalid_output"
    assert f"a response over {limit} bytes" in str(info.value)
    assert "xxxx" not in str(info.value)
    assert len(server.requests) == 1  # not retried


@provider_params
@pytest.mark.parametrize("pad", ["spaces", "astral"])
def test_completion_over_the_utf16_cap_is_rejected_before_parsing(
        server: FakeServer, make: Factory, ok: Callable[[str], Responder], pad: str) -> None:
    """E9: a provider's completion over 262,144 UTF-16 code units, well within the byte bound,
    comes back from complete() unchanged, and parse_extraction rejects it by its length before
    any parsing (the message names the length, not a JSON or field rule)."""
    plan: dict[str, Any] = {"memories": [], "entities": [], "relations": []}
    if pad == "spaces":  # valid JSON: only its length is wrong
        content = json.dumps(plan) + " " * (MAX_COMPLETION_UTF16 + 1 - len(json.dumps(plan)))
        units = MAX_COMPLETION_UTF16 + 1
        assert parse_extraction(content.rstrip()).memories == []
    else:  # fewer code points than the cap, more UTF-16 code units (sent \ud83d\ude00-escaped)
        emoji = MAX_COMPLETION_UTF16 // 2 + 1
        plan["memories"] = [{"text": "😀" * emoji, "kind": "note", "labels": [],
                             "source": "user", "salience": 0.5, "entities": []}]
        content = json.dumps(plan, ensure_ascii=False)
        units = len(content) + emoji
        assert len(content) < MAX_COMPLETION_UTF16 < units
    server.default = ok(content)
    got = make(server).complete(MSGS, timeout=10.0)
    assert got == content
    assert len(server.requests) == 1
    assert len(json.dumps(content).encode()) < chat_http._MAX_RESPONSE_BYTES
    with pytest.raises(ModelError) as info:
        parse_extraction(got)
    assert info.value.code == "model_invalid_output"
    assert str(info.value) == (
        f"$: completion is {units} UTF-16 code units, more than {MAX_COMPLETION_UTF16}")
