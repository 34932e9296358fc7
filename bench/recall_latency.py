"""Hybrid recall latency at 10,000 and 100,000 memories, beside a floor measured in the same run.

Index generation (per size): ``projections.replay.build_generation`` replays generated
``Memory.Recorded`` events (the texts of ``bench/rebuild.py``: 40-200 characters from a seeded
Zipf vocabulary, spread over 60 days) into a fresh index, the same code path a rebuild takes.
This is much faster than admitting 100,000 turns through the store, and the read path does not
care how the rows got there. Vectors: seeded unit vectors around 2,000 random topics (dim 512,
the local provider's default model; cosine ~0.7 to their topic, the neighbourhoods real
embeddings have, which uniform random vectors lack) written straight into the index's
``vectors`` table under its identity, then loaded with ``VectorMatrix.refresh``, because
embedding 100,000 texts with the local model would take minutes (``bench/ann.py`` does, to
choose the ANN library).

Queries: 3-7 words of generated text (they match via FTS5), each with a fixed query vector (a
stored vector plus noise, so it has a real neighbourhood). No provider call in the timed section.

- recall: ``memory_es.recall.recall(conn, q, now=..., query_vector=..., matrix=..., limit=10)``
  over the exact matrix, and past ``ANN_THRESHOLD`` (20,000) again over the matrix a
  long-lived store serves, its HNSW index built (build time printed), with recall@10 of the
  index's top 10 against exact top 10 on the same queries (target >= 0.98).
- floor: the two retrievers recall cannot avoid, over the same matrix and index: numpy
  matrix-vector product + top-50 (argpartition, sorted), and one FTS5 bm25 query (top 50).
  Floor and recall alternate per query so noise hits both alike.
- embedder: one ``UseEmbedder().embed([q])`` (the default local model) per query, timed
  separately (not in recall's time).

Targets at 100,000: p50 ratio recall/floor <= 2.0 and p50 < 15 ms. With ``--profile`` a cProfile
of the recall calls at the largest size is printed. Ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memory_es.embeddings import USE_DIM, USE_MODEL, EmbeddingIdentity
from memory_es.events import Memory
from memory_es.ids import sha256_hex
from memory_es.recall import recall
from memory_es.recall.retrieve.candidates import RETRIEVER_DEPTH, _lexical_ranks
from memory_es.recall.retrieve.lexical import LexicalEvidence
from memory_es.vectors.ann import ANN_THRESHOLD
from memory_es.vectors.matrix import VectorMatrix
from memory_es.vectors.pending import store_vectors
from projections.replay import build_generation
from projections.search import fts_query
from rebuild import peak_rss_mb, sentences  # bench/ is sys.path[0] when run as a script

SEED = 20261
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 6, 12, 0, tzinfo=UTC)
DAYS = 60
IDENTITY = EmbeddingIdentity("local", USE_MODEL, USE_DIM)
RATIO_TARGET = 2.0
P50_TARGET_MS = 15.0
VECTOR_CHUNK = 10_000
TOPICS = 2_000  # vectors gather around topics (cosine ~0.7 to theirs), as embeddings do


def build_index(path: Path, n: int, seed: int) -> tuple[Any, VectorMatrix, float]:
    """A fresh generation of ``n`` memories with random unit vectors; seconds spent."""
    t0 = time.perf_counter()
    texts = sentences(n, seed)
    step = timedelta(milliseconds=DAYS * 86_400_000 // max(1, n))

    def events() -> Any:
        for i, text in enumerate(texts):
            at = START + i * step
            yield i + 1, Memory.recorded(
                at=at, memory_id=sha256_hex(f"{i}:{text}"), kind="observation", text=text,
                day=at.date().isoformat(), status="open", source="host-summary",
                session=f"session-{i // 25:05d}", run_hash=None, tier="journal")

    index = build_generation(path, events())
    conn = index.conn
    rowids = [r[0] for r in conn.execute("SELECT rowid FROM memories ORDER BY rowid")]
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((TOPICS, USE_DIM), dtype=np.float32)
    for start in range(0, len(rowids), VECTOR_CHUNK):
        chunk = rowids[start:start + VECTOR_CHUNK]
        block = topics[rng.integers(0, TOPICS, len(chunk))] \
            + rng.standard_normal((len(chunk), USE_DIM), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        store_vectors(conn, IDENTITY.key, chunk, [row.tobytes() for row in block])
    matrix = VectorMatrix(USE_DIM)
    matrix.refresh(conn, IDENTITY.key)
    if len(matrix.rowids) != n:
        raise SystemExit(f"{len(matrix.rowids)} vectors for {n} memories")
    return index, matrix, time.perf_counter() - t0


def make_queries(matrix: VectorMatrix, count: int, seed: int) -> list[tuple[str, np.ndarray]]:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    out = []
    for text in sentences(count, seed + 7):
        words = text.rstrip(".!?").split()
        k = rng.randint(3, 7)
        start = rng.randint(0, max(0, len(words) - k))
        query = " ".join(words[start:start + k])
        base = matrix.matrix[rng.randrange(len(matrix.rowids))]
        vec = base + nrng.standard_normal(USE_DIM).astype(np.float32) * 0.04
        out.append((query, (vec / np.linalg.norm(vec)).astype(np.float32)))
    return out


def floor_once(conn: Any, matrix: VectorMatrix, query: str, vec: np.ndarray) -> float:
    t0 = time.perf_counter()
    sims = matrix.matrix @ vec
    best = np.argpartition(-sims, RETRIEVER_DEPTH - 1)[:RETRIEVER_DEPTH]
    best = best[np.argsort(-sims[best], kind="stable")]
    _ = matrix.rowids[best]
    list(conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                      "ORDER BY bm25(memories_fts), rowid LIMIT ?",
                      (fts_query(query), RETRIEVER_DEPTH)))
    return time.perf_counter() - t0


def approximate(conn: Any, size: int) -> tuple[VectorMatrix, float] | None:
    """The matrix a long-lived store searches past ``ANN_THRESHOLD``: its HNSW index built
    (seconds spent, in the background thread a store uses); None below the threshold."""
    if size < ANN_THRESHOLD:
        return None
    t0 = time.perf_counter()
    fast = VectorMatrix(USE_DIM, IDENTITY.key, approximate=True)
    fast.refresh(conn, IDENTITY.key)
    while not fast.approximate:
        time.sleep(0.05)
    return fast, time.perf_counter() - t0


def recall_at_10(fast: VectorMatrix, exact: VectorMatrix, vectors: list[np.ndarray]) -> float:
    """The share of the exact top 10 the index's top 10 holds, over the bench's queries."""
    found = [len({r for r, _ in fast.top(v, 10)} & {r for r, _ in exact.top(v, 10)}) / 10
             for v in vectors]
    return statistics.fmean(found)


def recall_once(conn: Any, matrix: VectorMatrix, query: str, vec: np.ndarray) -> float:
    t0 = time.perf_counter()
    recall(conn, query, now=NOW, query_vector=vec, matrix=matrix, limit=10)
    return time.perf_counter() - t0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def known_items(conn: Any, size: int, count: int, seed: int) -> dict[str, float]:
    """Fragments (3-7 words) of stored texts: how often the bm25 lookup recall makes (the
    rarest words within the posting budget, ``LexicalEvidence.retrieval_words``) still ranks
    the source in its top 10, against the lookup of every word (what the budget costs)."""
    rng = random.Random(seed)
    stored = sentences(size, SEED)
    hits = {"budget": 0, "all_words": 0}
    for _ in range(count):
        rowid = rng.randrange(size) + 1  # build_index writes rows in text order from 1
        words = stored[rowid - 1].rstrip(".!?").split()
        k = rng.randint(3, 7)
        start = rng.randint(0, max(0, len(words) - k))
        query = " ".join(words[start:start + k])
        kept = LexicalEvidence.for_query(conn, query).retrieval_words(query)
        for name, lookup in (("budget", kept), ("all_words", query.split())):
            ranks = _lexical_ranks(conn, " ".join(lookup))
            hits[name] += ranks.get(rowid, 99) <= 10
    return {name: hit / count for name, hit in hits.items()}


def profile_recall(conn: Any, matrix: VectorMatrix, qs: list[tuple[str, np.ndarray]]) -> str:
    """cProfile of 100 recalls, the hot spots by cumulative time."""
    prof = cProfile.Profile()
    prof.enable()
    for query, vec in qs[: min(100, len(qs))]:
        recall_once(conn, matrix, query, vec)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(24)
    return buf.getvalue()


def measure(size: int, queries: int, directory: Path, profile: bool) -> dict[str, Any]:
    index, matrix, build_s = build_index(directory / f"gen-{size}.db", size, SEED)
    conn = index.conn
    qs = make_queries(matrix, queries, SEED + size)
    for query, vec in qs[:10]:  # warm caches and numpy
        floor_once(conn, matrix, query, vec)
        recall_once(conn, matrix, query, vec)
    floor: list[float] = []
    ours: list[float] = []
    for query, vec in qs:
        floor.append(floor_once(conn, matrix, query, vec))
        ours.append(recall_once(conn, matrix, query, vec))
    prof_text = profile_recall(conn, matrix, qs) if profile else None
    known = known_items(conn, size, min(queries, 200), SEED + 3)
    ann: dict[str, float] = {}
    if (built := approximate(conn, size)) is not None:
        fast, ann["build_s"] = built
        ann["recall_at_10"] = recall_at_10(fast, matrix, [v for _, v in qs])
        fast_floor: list[float] = []
        fast_ours: list[float] = []
        for query, vec in qs:
            fast_floor.append(floor_once(conn, matrix, query, vec))
            fast_ours.append(recall_once(conn, fast, query, vec))
        ann["p50_ms"] = statistics.median(fast_ours) * 1e3
        ann["p95_ms"] = pct(fast_ours, 0.95) * 1e3
        ann["ratio"] = statistics.median(fast_ours) / statistics.median(fast_floor)
        if profile:
            prof_text = profile_recall(conn, fast, qs)
        fast.close()
    index.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(directory / f"gen-{size}.db") + suffix).unlink(missing_ok=True)
    return {
        "size": size, "build_s": build_s, "queries": len(qs),
        "p50_ms": statistics.median(ours) * 1e3, "p95_ms": pct(ours, 0.95) * 1e3,
        "floor_p50_ms": statistics.median(floor) * 1e3, "floor_p95_ms": pct(floor, 0.95) * 1e3,
        "ratio": statistics.median(ours) / statistics.median(floor), "profile": prof_text,
        "known_budget": known["budget"], "known_all": known["all_words"], "ann": ann,
    }


def embedder_latency(count: int) -> dict[str, float] | None:
    """One-query embedding with the local model, timed apart from recall."""
    try:
        from memory_es.embeddings import UseEmbedder

        embedder = UseEmbedder()
    except Exception as e:  # the [local] extra may be missing: report, do not fail
        print(f"local embedder unavailable ({type(e).__name__}); not timed")
        return None
    texts = [" ".join(s.split()[:6]) for s in sentences(count + 5, SEED + 99)]
    for t in texts[:5]:
        embedder.embed([t])
    times = []
    for t in texts[5:]:
        t0 = time.perf_counter()
        embedder.embed([t])
        times.append(time.perf_counter() - t0)
    return {"p50_ms": statistics.median(times) * 1e3, "p95_ms": pct(times, 0.95) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, nargs="+", default=[10_000, 100_000],
                        help="index sizes (default 10000 100000)")
    parser.add_argument("--queries", type=int, default=300, help="timed queries per size")
    parser.add_argument("--small", action="store_true",
                        help="smoke test: 1,000 and 5,000 memories, 50 queries")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile recall at the largest size")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    if args.small:
        args.memories, args.queries = [1_000, 5_000], 50

    wall0 = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        for n, size in enumerate(args.memories):
            profile = args.profile and n == len(args.memories) - 1
            r = measure(size, args.queries, Path(d), profile)
            results.append(r)
            print(f"{size:>7} memories (built in {r['build_s']:.1f} s): recall p50 "
                  f"{r['p50_ms']:.2f} ms p95 {r['p95_ms']:.2f} ms | floor p50 "
                  f"{r['floor_p50_ms']:.2f} ms p95 {r['floor_p95_ms']:.2f} ms | ratio "
                  f"{r['ratio']:.2f} | a stored text's fragment in the bm25 top 10: "
                  f"{r['known_budget']:.1%} (all words looked up: {r['known_all']:.1%})",
                  flush=True)
            if r["ann"]:
                a = r["ann"]
                print(f"{'':>7} with the ANN index (built in {a['build_s']:.1f} s): recall p50 "
                      f"{a['p50_ms']:.2f} ms p95 {a['p95_ms']:.2f} ms | ratio {a['ratio']:.2f} "
                      f"| recall@10 against exact {a['recall_at_10']:.3f} (target >= 0.98)",
                      flush=True)
            if r["profile"]:
                print(r["profile"])
    emb = embedder_latency(50 if args.small else 200)
    if emb is not None:
        print(f"query embedding (local default model, 1 text, outside recall's time): p50 "
              f"{emb['p50_ms']:.2f} ms p95 {emb['p95_ms']:.2f} ms")

    figures: dict[str, Any] = {"bench": "recall_latency", "queries": args.queries,
                               "method": "build_generation + clustered unit vectors"}
    for r in results:
        tag = f"{r['size'] // 1000}k" if r["size"] % 1000 == 0 else str(r["size"])
        figures[f"p50_ms_{tag}"] = round(r["p50_ms"], 3)
        figures[f"p95_ms_{tag}"] = round(r["p95_ms"], 3)
        figures[f"floor_p50_ms_{tag}"] = round(r["floor_p50_ms"], 3)
        figures[f"ratio_{tag}"] = round(r["ratio"], 3)
        figures[f"known_item_top10_{tag}"] = round(r["known_budget"], 3)
        figures[f"known_item_top10_all_words_{tag}"] = round(r["known_all"], 3)
        for name, value in r["ann"].items():
            figures[f"ann_{name}_{tag}"] = round(value, 3)
    if emb is not None:
        figures["embed_p50_ms"] = round(emb["p50_ms"], 3)
    figures["peak_rss_mb"] = round(peak_rss_mb(), 1)
    last = results[-1]
    served = last["ann"] or last  # a long-lived store past the threshold searches the index
    ok_ratio = served["ratio"] <= RATIO_TARGET
    ok_p50 = served["p50_ms"] < P50_TARGET_MS
    print(f"at {last['size']}{' with the ANN index' if last['ann'] else ''}: ratio "
          f"{served['ratio']:.2f} (target <= {RATIO_TARGET}) "
          f"{'✓' if ok_ratio else '✗'}   p50 {served['p50_ms']:.2f} ms (target < "
          f"{P50_TARGET_MS:.0f} ms) {'✓' if ok_p50 else '✗'}   "
          f"(whole run {time.perf_counter() - wall0:.0f} s)")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
