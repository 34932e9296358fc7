"""Approximate nearest-neighbour libraries for the recall vector index, each
beside the exact numpy floor measured in the same run.

Data: real embeddings, not random vectors (random 512-d vectors have no neighbourhoods and make
ANN look worse than it is). Texts are the seeded pseudo-sentences of ``bench/rebuild.py``
(``sentences(n, SEED)``); corpus = the first ``n`` of that stream, queries = 400 held-out
sentences of the same stream (positions 100,000-100,399, so the same vocabulary: another seed
draws another vocabulary), 200 to tune ``ef`` and 200 to measure. Vectors come from the default
local model (``UseEmbedder``, USE multilingual v3, 512-d, L2-normalised) and are cached as .npy
chunks of 10,000 rows under ``--cache`` so reruns do not embed again. Sizes above 100,000 (1M is
allowed, not run by default) are SYNTHETIC: the 100k vectors tiled with gaussian noise
(sigma 0.02 per component) and renormalised, labelled ``synthetic`` in the output.

Candidates, each imported lazily ("not installed" if missing; the project depends on none):
``usearch``, ``hnswlib``, ``faiss-cpu`` (IndexHNSWFlat), ``sqlite-vec`` (vec0, brute force,
loaded into apsw); ``usearch-f16`` is usearch storing half floats (half the memory and file).
HNSW libraries use inner product, float32 storage (but usearch-f16), ``M=--m`` and
``ef_construction=--ef-construction``, built with ``--threads`` threads.

Floor: exact numpy as the project does it today (``VectorMatrix``): float32 matrix @ query,
argpartition top-k, sorted; timed with numpy's default OpenBLAS threads (as the project runs it)
and again with one BLAS thread (set through OpenBLAS's own call, as the ANN queries use one
thread): on a busy 2-core machine the default threads can cost far more than they give. Ground
truth: the exact top-k of that product.

Per library and size:

- build: seconds to build the index from the float32 matrix, and RSS growth while building
  (MB, VmRSS of /proc/self/status after - before, and VmHWM peak - before).
- ef: the smallest ``ef`` (search expansion) from a sweep reaching recall >= 0.985 on the 200
  tuning queries (half a point of margin over the 0.98 target, for the measured queries), for
  k=10 and k=50 separately (brute-force sqlite-vec and numpy need none).
- query p50/p95 (ms): one query at a time on the 200 measuring queries, k=10 (at ef10) and k=50
  (at ef50), alternating with the numpy floor query so noise hits both alike; recall@10 and
  recall@50 against exact (tie-tolerant: a hit counts if its exact similarity reaches the k-th
  exact similarity).
- installed size (MB): the files of the library's distribution, and of its dependencies other
  than numpy, from their installed RECORD.

At the smallest size only, the features the projection needs, each tried rather than assumed:
incremental add (build on 90%, add the last 10% in batches of 32: ms per vector, recall after),
delete (remove 10%: supported? any deleted id returned?), save/load to a file (file MB, load
s, identical results?), determinism (two single-threaded builds of the same input: identical
top-10 for every query?) and concurrent queries (2 threads, 200 queries each: results identical
to serial? throughput vs serial).

The crossover estimate (k=50, the depth recall pulls): the exact floor as a line through the
smallest and largest size, the ANN p50 as ``a + b ln n`` through the same two (below the
smallest size: floor proportional to n, ANN flat), and the size where the floor becomes the
slower one, for each BLAS setting. Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import importlib
import importlib.metadata
import json
import logging
import math
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from rebuild import sentences  # bench/ is sys.path[0] when run as a script

SEED = 20262
DIM = 512
CHUNK = 10_000
REAL_MAX = 100_000  # embedded sizes; beyond this the vectors are synthesised
QUERY_AT = REAL_MAX  # held-out queries: positions QUERY_AT .. QUERY_AT + 399 of the stream
QUERIES = 200
NOISE = 0.02
TARGET = 0.98
TUNE_TARGET = TARGET + 0.005  # margin: the tuning queries are not the measured ones
EF_SWEEP = (10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
LIBRARIES = ("usearch", "usearch-f16", "hnswlib", "faiss", "sqlite-vec")
DISTS = {"usearch": "usearch", "usearch-f16": "usearch", "hnswlib": "hnswlib",
         "faiss": "faiss-cpu", "sqlite-vec": "sqlite-vec"}
MODULES = {"usearch": "usearch.index", "usearch-f16": "usearch.index", "hnswlib": "hnswlib",
           "faiss": "faiss", "sqlite-vec": "sqlite_vec"}


# --------------------------------------------------------------------------------------------
# Data.

def embed_cached(cache: Path, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Corpus (n real rows, n <= REAL_MAX), tuning queries and measuring queries."""
    cache.mkdir(parents=True, exist_ok=True)
    chunks = -(-n // CHUNK)
    qpath = cache / f"use-{SEED}-queries-{QUERY_AT}.npy"
    missing = [i for i in range(chunks) if not (cache / f"use-{SEED}-{i:03d}.npy").exists()]
    if missing or not qpath.exists():
        from memory_es.embeddings import UseEmbedder
        texts = sentences(QUERY_AT + 2 * QUERIES, SEED)
        embedder = UseEmbedder()
        for i in missing:
            t0 = time.perf_counter()
            block = np.asarray(embedder.embed(texts[i * CHUNK:(i + 1) * CHUNK]), np.float32)
            np.save(cache / f"use-{SEED}-{i:03d}.npy", block)
            print(f"embedded chunk {i} ({len(block)} texts) in {time.perf_counter() - t0:.1f}s",
                  flush=True)
        if not qpath.exists():
            np.save(qpath, np.asarray(embedder.embed(texts[QUERY_AT:]), np.float32))
    corpus = np.concatenate([np.load(cache / f"use-{SEED}-{i:03d}.npy")
                             for i in range(chunks)])[:n]
    queries = np.load(qpath)
    return np.ascontiguousarray(corpus), queries[:QUERIES], queries[QUERIES:]


def corpus_for(cache: Path, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Real vectors up to REAL_MAX; above it, the real ones tiled with noise (synthetic)."""
    real, tune, meas = embed_cached(cache, min(n, REAL_MAX))
    if n <= REAL_MAX:
        return real, tune, meas, False
    rng = np.random.default_rng(SEED)
    out = np.empty((n, DIM), dtype=np.float32)
    out[:REAL_MAX] = real
    for start in range(REAL_MAX, n, REAL_MAX):
        end = min(n, start + REAL_MAX)
        block = real[:end - start] + rng.standard_normal((end - start, DIM), np.float32) * NOISE
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:end] = block
    return out, tune, meas, True


def exact_top(data: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k ids and the k-th similarity per query (chunked: 1M x 200 fits)."""
    sims = np.concatenate([queries @ data[s:s + REAL_MAX].T
                           for s in range(0, len(data), REAL_MAX)], axis=1)
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return top, np.take_along_axis(sims, top[:, -1:], axis=1)[:, 0]


def recall_of(found: list[np.ndarray], data: np.ndarray, queries: np.ndarray,
              kth: np.ndarray, k: int, alive: np.ndarray | None = None) -> float:
    """Tie-tolerant recall@k: hits whose exact similarity reaches the exact k-th similarity."""
    hits = 0
    for q, ids, floor in zip(queries, found, kth, strict=True):
        ids = np.asarray(ids, dtype=np.int64)[:k]
        ids = ids[ids >= 0]
        if alive is not None:
            ids = ids[alive[ids]]
        hits += min(k, int(np.count_nonzero(data[ids] @ q >= floor - 1e-6)))
    return hits / (k * len(queries))


# --------------------------------------------------------------------------------------------
# Adapters: build(data, ids, threads) / set_ef(ef) / search(q, k) -> ids / add / delete /
# save / load. ``delete`` returns False when the library cannot delete.

class Exact:
    name = "numpy"
    ann = False

    def build(self, data: np.ndarray, ids: np.ndarray, threads: int) -> None:
        self.matrix = np.array(data, dtype=np.float32, order="C")
        self.ids = np.asarray(ids, dtype=np.int64).copy()

    def set_ef(self, ef: int) -> None:
        pass

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        sims = self.matrix @ q
        best = np.argpartition(-sims, k - 1)[:k]
        return self.ids[best[np.argsort(-sims[best], kind="stable")]]


class Usearch:
    name = "usearch"
    ann = True

    def __init__(self, m: int, efc: int, dtype: str = "f32") -> None:
        self.m, self.efc, self.dtype = m, efc, dtype

    def build(self, data: np.ndarray, ids: np.ndarray, threads: int) -> None:
        from usearch.index import Index
        self.index = Index(ndim=data.shape[1], metric="ip", dtype=self.dtype, connectivity=self.m,
                           expansion_add=self.efc, expansion_search=64)
        self.index.add(np.asarray(ids, np.uint64), data, threads=threads, log=False)

    def set_ef(self, ef: int) -> None:
        self.index.expansion_search = ef

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        return np.asarray(self.index.search(q, k, threads=1).keys, dtype=np.int64)

    def add(self, data: np.ndarray, ids: np.ndarray) -> None:
        self.index.add(np.asarray(ids, np.uint64), data, threads=1, log=False)

    def delete(self, ids: np.ndarray) -> bool:
        self.index.remove(np.asarray(ids, np.uint64))
        return True

    def save(self, path: Path) -> None:
        self.index.save(str(path))

    def load(self, path: Path) -> None:
        from usearch.index import Index
        ef = self.index.expansion_search
        self.index = Index.restore(str(path))
        self.index.expansion_search = ef


class Hnswlib:
    name = "hnswlib"
    ann = True

    def __init__(self, m: int, efc: int) -> None:
        self.m, self.efc = m, efc

    def build(self, data: np.ndarray, ids: np.ndarray, threads: int) -> None:
        import hnswlib
        self.index = hnswlib.Index(space="ip", dim=data.shape[1])
        self.index.init_index(max_elements=len(data), ef_construction=self.efc, M=self.m,
                              random_seed=100, allow_replace_deleted=True)
        self.index.add_items(data, ids, num_threads=threads)

    def set_ef(self, ef: int) -> None:
        self.index.set_ef(ef)

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        labels, _ = self.index.knn_query(q, k=k, num_threads=1)
        return labels[0].astype(np.int64)

    def add(self, data: np.ndarray, ids: np.ndarray) -> None:
        need = self.index.get_current_count() + len(ids)
        if need > self.index.get_max_elements():
            self.index.resize_index(max(need, 2 * self.index.get_max_elements()))
        self.index.add_items(data, ids, num_threads=1)

    def delete(self, ids: np.ndarray) -> bool:
        for i in ids:
            self.index.mark_deleted(int(i))
        return True

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))

    def load(self, path: Path) -> None:
        import hnswlib
        ef = self.index.ef
        self.index = hnswlib.Index(space="ip", dim=DIM)
        self.index.load_index(str(path), allow_replace_deleted=True)
        self.index.set_ef(ef)


class Faiss:
    name = "faiss"
    ann = True

    def __init__(self, m: int, efc: int) -> None:
        self.m, self.efc = m, efc

    def build(self, data: np.ndarray, ids: np.ndarray, threads: int) -> None:
        import faiss
        faiss.omp_set_num_threads(threads)
        inner = faiss.IndexHNSWFlat(data.shape[1], self.m, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = self.efc
        self.index = faiss.IndexIDMap2(inner)  # the projection's keys are rowids
        self.index.add_with_ids(data, np.asarray(ids, np.int64))
        faiss.omp_set_num_threads(1)  # one query at a time: no OpenMP fan-out

    def set_ef(self, ef: int) -> None:
        import faiss
        faiss.downcast_index(self.index.index).hnsw.efSearch = ef

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        _, labels = self.index.search(q.reshape(1, -1), k)
        return labels[0]

    def add(self, data: np.ndarray, ids: np.ndarray) -> None:
        self.index.add_with_ids(data, np.asarray(ids, np.int64))

    def delete(self, ids: np.ndarray) -> bool:
        try:
            self.index.remove_ids(np.asarray(ids, np.int64))
        except RuntimeError:  # IndexHNSW has no remove_ids
            return False
        return True

    def save(self, path: Path) -> None:
        import faiss
        faiss.write_index(self.index, str(path))

    def load(self, path: Path) -> None:
        import faiss
        ef = faiss.downcast_index(self.index.index).hnsw.efSearch
        self.index = faiss.read_index(str(path))
        self.set_ef(ef)


class SqliteVec:
    name = "sqlite-vec"
    ann = False

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / "vec.db"

    def _connect(self, path: Path) -> Any:
        import apsw
        import sqlite_vec
        conn = apsw.Connection(str(path))
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        return conn

    def build(self, data: np.ndarray, ids: np.ndarray, threads: int) -> None:
        for suffix in ("", "-wal", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.conn = self._connect(self.path)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{data.shape[1]}])")
        self.add(data, ids)

    def set_ef(self, ef: int) -> None:
        pass

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        rows = self.conn.execute(
            "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (q.astype(np.float32).tobytes(), k))
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def add(self, data: np.ndarray, ids: np.ndarray) -> None:
        with self.conn:
            self.conn.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                                  ((int(i), row.tobytes()) for i, row in zip(ids, data,
                                                                             strict=True)))

    def delete(self, ids: np.ndarray) -> bool:
        with self.conn:
            self.conn.executemany("DELETE FROM v WHERE rowid = ?", ((int(i),) for i in ids))
        return True

    def save(self, path: Path) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        dest = self._connect(path)
        with dest.backup("main", self.conn, "main") as backup:
            backup.step()
        dest.close()

    def load(self, path: Path) -> None:
        self.conn.close()
        self.conn = self._connect(path)


def make(name: str, args: argparse.Namespace, directory: Path) -> Any:
    if name in ("usearch", "usearch-f16"):
        return Usearch(args.m, args.ef_construction, "f16" if name.endswith("f16") else "f32")
    if name == "hnswlib":
        return Hnswlib(args.m, args.ef_construction)
    if name == "faiss":
        return Faiss(args.m, args.ef_construction)
    return SqliteVec(directory)


# --------------------------------------------------------------------------------------------
# Measurement helpers.

def proc_status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def trim() -> None:
    """Collect, and hand freed heap back to the OS (glibc), so that one library's build does
    not grow into the pages another library freed and look smaller than it is."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def timed_build(lib: Any, data: np.ndarray, ids: np.ndarray, threads: int) -> dict[str, Any]:
    trim()
    before = proc_status("VmRSS")
    peak_ok = reset_peak()
    t0 = time.perf_counter()
    lib.build(data, ids, threads)
    seconds = time.perf_counter() - t0
    after = proc_status("VmRSS")
    out = {"build_s": round(seconds, 3), "rss_growth_mb": round(after - before, 1)}
    if peak_ok:
        out["rss_peak_growth_mb"] = round(proc_status("VmHWM") - before, 1)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(value: float) -> float:
    return round(value * 1000, 3)


def search_all(lib: Any, queries: np.ndarray, k: int) -> list[np.ndarray]:
    return [lib.search(q, k) for q in queries]


def tune_ef(lib: Any, data: np.ndarray, tune: np.ndarray, k: int) -> tuple[int | None, float]:
    """Smallest ef of the sweep with recall@k >= TUNE_TARGET on the tuning queries."""
    top, kth = exact_top(data, tune, k)
    del top
    best = 0.0
    for ef in (e for e in EF_SWEEP if e >= k):
        lib.set_ef(ef)
        best = recall_of(search_all(lib, tune, k), data, tune, kth, k)
        if best >= TUNE_TARGET:
            return ef, best
    return None, best


def blas_threads(n: int | None = None) -> int | None:
    """numpy's OpenBLAS thread count, set to ``n`` first if given; None if not found."""
    for lib in sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("*openblas*.so*")):
        dll = ctypes.CDLL(str(lib))  # the copy numpy already loaded: same handle
        for suffix in ("64_", "_64_", ""):
            get = getattr(dll, f"scipy_openblas_get_num_threads{suffix}", None)
            put = getattr(dll, f"scipy_openblas_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                if n is not None:
                    put(ctypes.c_int(n))
                return int(get())
    return None


def timed_queries(lib: Any, floor: Exact, queries: np.ndarray, k: int
                  ) -> tuple[list[float], list[float], list[float], list[np.ndarray]]:
    """Per-query seconds of ``lib`` and of the exact floor, alternating, twice: with numpy's
    default BLAS threads (as the project runs) and with one BLAS thread (as the ANN queries
    run). The library's times and ids come from the first pass."""
    default = blas_threads()
    for q in queries[:10]:  # warm
        lib.search(q, k)
        floor.search(q, k)
    ours: list[float] = []
    base: list[float] = []
    found = []
    for q in queries:
        t0 = time.perf_counter()
        ids = lib.search(q, k)
        t1 = time.perf_counter()
        floor.search(q, k)
        t2 = time.perf_counter()
        ours.append(t1 - t0)
        base.append(t2 - t1)
        found.append(ids)
    single: list[float] = []
    if default is not None:
        blas_threads(1)
        for q in queries:
            lib.search(q, k)
            t0 = time.perf_counter()
            floor.search(q, k)
            single.append(time.perf_counter() - t0)
        blas_threads(default)
    return ours, base, single, found


def query_row(ours: list[float], base: list[float], single: list[float], recall: float
              ) -> dict[str, Any]:
    row = {"p50_ms": ms(statistics.median(ours)), "p95_ms": ms(pct(ours, 0.95)),
           "floor_p50_ms": ms(statistics.median(base)), "floor_p95_ms": ms(pct(base, 0.95)),
           "recall": round(recall, 4)}
    if single:
        row["floor1_p50_ms"] = ms(statistics.median(single))
        row["floor1_p95_ms"] = ms(pct(single, 0.95))
    return row


def installed_mb(dist_name: str) -> dict[str, Any]:
    """MB of a distribution's installed files, and of its dependencies other than numpy."""
    def size(name: str) -> float:
        dist = importlib.metadata.distribution(name)
        total = 0
        for f in dist.files or []:
            p = Path(str(dist.locate_file(f)))
            if p.is_file():
                total += p.stat().st_size
        return total / 1e6

    try:
        own = size(dist_name)
        requires = importlib.metadata.requires(dist_name) or []
    except importlib.metadata.PackageNotFoundError:
        return {"installed": False}
    deps: dict[str, float] = {}
    for req in requires:
        if "extra ==" in req:
            continue
        name = req.split(";")[0].split("[")[0].split(" ")[0]
        for sep in "<>=!~":
            name = name.split(sep)[0]
        if name.lower() == "numpy":
            continue
        try:
            deps[name] = round(size(name), 1)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {"installed": True, "own_mb": round(own, 1), "deps_mb": deps,
            "total_mb": round(own + sum(deps.values()), 1),
            "version": importlib.metadata.version(dist_name)}


# --------------------------------------------------------------------------------------------
# Features, tried at the smallest size.

def features(name: str, args: argparse.Namespace, data: np.ndarray, meas: np.ndarray,
             ef10: int | None, directory: Path) -> dict[str, Any]:
    n = len(data)
    ids = np.arange(n, dtype=np.int64)
    k = 10
    out: dict[str, Any] = {}
    top, kth = exact_top(data, meas, k)
    del top

    def fresh() -> Any:
        return make(name, args, directory)

    # incremental add: 90% built, the rest added in batches of 32 (the embed worker's batches)
    lib = fresh()
    cut = int(n * 0.9)
    lib.build(data[:cut], ids[:cut], args.threads)
    lib.set_ef(ef10 or 64)
    t0 = time.perf_counter()
    for s in range(cut, n, 32):
        lib.add(data[s:s + 32], ids[s:s + 32])
    per = (time.perf_counter() - t0) / (n - cut)
    out["incremental_add"] = {"ok": True, "ms_per_vector": ms(per),
                              "recall10_after": round(recall_of(search_all(lib, meas, k), data,
                                                                meas, kth, k), 4)}
    # delete 10% (seeded), then no deleted id may come back
    gone = np.random.default_rng(SEED).choice(n, size=n // 10, replace=False)
    alive = np.ones(n, dtype=bool)
    alive[gone] = False
    try:
        supported = lib.delete(gone)
    except Exception as exc:
        supported, out["delete_error"] = False, f"{type(exc).__name__}: {exc}"[:120]
    if supported:
        found = search_all(lib, meas, k)
        leaked = sum(int(np.count_nonzero(~alive[f[f >= 0]])) for f in found)
        # exact over the survivors only
        live = data[alive]
        _, kth_live = exact_top(live, meas, k)
        hits = 0
        for q, f, floor in zip(meas, found, kth_live, strict=True):
            f = f[f >= 0]
            f = f[alive[f]]
            hits += min(k, int(np.count_nonzero(data[f] @ q >= floor - 1e-6)))
        out["delete"] = {"ok": True, "deleted_returned": leaked,
                         "recall10_after": round(hits / (k * len(meas)), 4)}
    else:
        out["delete"] = {"ok": False}
    # save / load on the full build
    lib = fresh()
    lib.build(data, ids, args.threads)
    lib.set_ef(ef10 or 64)
    before = search_all(lib, meas, k)
    path = directory / f"{name}.index"
    t0 = time.perf_counter()
    lib.save(path)
    save_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lib.load(path)
    load_s = time.perf_counter() - t0
    after = search_all(lib, meas, k)
    out["save_load"] = {"ok": True, "file_mb": round(path.stat().st_size / 1e6, 1),
                        "save_s": round(save_s, 3), "load_s": round(load_s, 3),
                        "identical": all(np.array_equal(a, b)
                                         for a, b in zip(before, after, strict=True))}
    # concurrency: 2 threads of queries on the loaded index, each must match serial
    serial_t0 = time.perf_counter()
    expected = search_all(lib, meas, k) + search_all(lib, meas, k)
    serial_s = time.perf_counter() - serial_t0
    results: list[list[np.ndarray]] = [[], []]
    errors: list[str] = []
    conns = [lib, lib]
    if isinstance(lib, SqliteVec):  # one connection per thread, the apsw rule
        other = SqliteVec(directory)
        other.conn = other._connect(path)
        conns = [lib, other]

    def worker(slot: int) -> None:
        try:
            results[slot] = search_all(conns[slot], meas, k)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:120])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    par_s = time.perf_counter() - t0
    same = not errors and all(np.array_equal(a, b) for a, b in
                              zip(results[0] + results[1], expected, strict=True))
    out["concurrent_queries"] = {"identical": same, "errors": errors,
                                 "speedup_2_threads": round(serial_s / par_s, 2)}
    # determinism: two single-threaded builds of the same input
    runs = []
    for _ in range(2):
        lib = fresh()
        lib.build(data, ids, 1)
        lib.set_ef(ef10 or 64)
        runs.append(search_all(lib, meas, k))
    out["deterministic_1_thread"] = all(np.array_equal(a, b)
                                        for a, b in zip(*runs, strict=True))
    if args.threads > 1:
        lib = fresh()
        lib.build(data, ids, args.threads)
        lib.set_ef(ef10 or 64)
        again = search_all(lib, meas, k)
        out[f"same_as_{args.threads}_thread_build"] = sum(
            np.array_equal(a, b) for a, b in zip(again, before, strict=True)) / len(meas)
    return out


# --------------------------------------------------------------------------------------------

def measure(name: str, args: argparse.Namespace, data: np.ndarray, tune: np.ndarray,
            meas: np.ndarray, directory: Path, with_features: bool) -> dict[str, Any]:
    n = len(data)
    ids = np.arange(n, dtype=np.int64)
    lib = make(name, args, directory)
    row: dict[str, Any] = timed_build(lib, data, ids, args.threads)
    floor = Exact()
    floor.build(data, ids, 1)
    for k in (10, 50):
        if lib.ann:
            ef, tuned = tune_ef(lib, data, tune, k)
            row[f"ef{k}"] = ef
            row[f"tune_recall{k}"] = round(tuned, 4)
            lib.set_ef(ef or EF_SWEEP[-1])
        ours, base, single, found = timed_queries(lib, floor, meas, k)
        _, kth = exact_top(data, meas, k)
        row[f"k{k}"] = query_row(ours, base, single, recall_of(found, data, meas, kth, k))
    del lib
    gc.collect()
    if with_features and name != "numpy":
        lib_ef = row.get("ef10")
        row["features"] = features(name, args, data, meas, lib_ef, directory)
    return row


def print_row(name: str, size: int, row: dict[str, Any]) -> None:
    def q(k: int) -> str:
        r = row[f"k{k}"]
        return (f"k={k}: p50 {r['p50_ms']:.3f} ms p95 {r['p95_ms']:.3f} ms "
                f"| floor {r['floor_p50_ms']:.3f}/{r['floor_p95_ms']:.3f}, 1-thread BLAS "
                f"{r.get('floor1_p50_ms', float('nan')):.3f}/"
                f"{r.get('floor1_p95_ms', float('nan')):.3f} | recall {r['recall']:.4f}")
    ef = f" ef10={row.get('ef10')} ef50={row.get('ef50')}" if "ef10" in row else ""
    peak = row.get("rss_peak_growth_mb", float("nan"))
    print(f"{name:>10} n={size:>8,}: build {row['build_s']:.2f}s rss +{row['rss_growth_mb']}MB "
          f"(peak +{peak}MB){ef}\n{'':>12}{q(10)}\n{'':>12}{q(50)}", flush=True)
    if "features" in row:
        print(f"{'':>12}features: {json.dumps(row['features'])}", flush=True)


def crossing(lo: int, hi: int, floor: tuple[float, float], ann: tuple[float, float]
             ) -> int | None:
    """First size from 100 up (1% steps) where the floor (ms at lo, hi) is slower than the ANN.

    From lo up: the floor as a line through its two points, the ANN as ``a + b ln n``. Below
    lo: the floor proportional to n, the ANN flat at its lo time (an upper bound on it, so the
    estimate leans high). With lo == hi: floor through the origin, ANN flat."""
    def floor_ms(n: float) -> float:
        if n <= lo or lo == hi:
            return floor[0] * n / lo
        return floor[0] + (floor[1] - floor[0]) * (n - lo) / (hi - lo)

    def ann_ms(n: float) -> float:
        if n <= lo or lo == hi:
            return ann[0]
        return ann[0] + (ann[1] - ann[0]) * math.log(n / lo) / math.log(hi / lo)

    n = 100.0
    while n < 1e9 and floor_ms(n) <= ann_ms(n):
        n *= 1.01
    return int(n) if n < 1e9 else None


def crossover(results: dict[str, Any]) -> dict[str, Any]:
    """Size above which each ANN answers k=50 faster than exact numpy, for both BLAS settings
    (:func:`crossing` between the smallest and the largest size)."""
    sizes = sorted(int(s) for s in results)
    lo, hi = sizes[0], sizes[-1]
    out: dict[str, Any] = {}
    for name, row in results[str(hi)].items():
        if not isinstance(row, dict) or "k50" not in row or name == "numpy":
            continue
        small = results[str(lo)].get(name, {}).get("k50", row["k50"])
        big = row["k50"]
        out[name] = {
            key: crossing(lo, hi, (small[f], big[f]), (small["p50_ms"], big["p50_ms"]))
            for key, f in (("default_blas", "floor_p50_ms"), ("one_blas_thread", "floor1_p50_ms"))
            if big.get(f) and small.get(f)}
    return out


def measure_exact(data: np.ndarray, tune: np.ndarray, meas: np.ndarray) -> dict[str, Any]:
    """The floor itself as a row: its build is a matrix copy, its p50 its own."""
    ids = np.arange(len(data), dtype=np.int64)
    lib = Exact()
    row: dict[str, Any] = timed_build(lib, data, ids, 1)
    other = Exact()
    other.build(data, ids, 1)
    for k in (10, 50):
        ours, base, single, found = timed_queries(lib, other, meas, k)
        _, kth = exact_top(data, meas, k)
        row[f"k{k}"] = query_row(ours, base, single, recall_of(found, data, meas, kth, k))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000",
                        help="comma-separated corpus sizes (above 100000: synthetic, tiled)")
    parser.add_argument("--libs", default=",".join(LIBRARIES))
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "memory_es-ann",
                        help="embedded vectors (.npy) kept here between runs")
    parser.add_argument("--m", type=int, default=16, help="HNSW links per node (M)")
    parser.add_argument("--ef-construction", type=int, default=128)
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1),
                        help="build threads (queries are always one at a time)")
    parser.add_argument("--no-features", action="store_true",
                        help="skip the add/delete/save/determinism/concurrency checks")
    args = parser.parse_args()
    logging.getLogger("memory_es").setLevel(logging.ERROR)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    wanted = [n.strip() for n in args.libs.split(",") if n.strip()]

    installed: dict[str, Any] = {}
    available = []
    for name in wanted:
        installed[name] = installed_mb(DISTS[name])
        try:
            importlib.import_module(MODULES[name])
            if name == "sqlite-vec":
                importlib.import_module("apsw")
            available.append(name)
        except ImportError as exc:
            installed[name] = {"installed": False, "error": str(exc)[:120]}
        state = (f"{installed[name]['version']}, {installed[name]['own_mb']} MB "
                 f"+ deps {installed[name]['deps_mb']}" if name in available
                 else "not installed")
        print(f"{name}: {state}", flush=True)

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            data, tune, meas, synthetic = corpus_for(args.cache, size)
            label = " (synthetic: 100k real vectors tiled with noise)" if synthetic else ""
            print(f"--- n={size:,}{label}", flush=True)
            results[str(size)] = {"synthetic": synthetic}
            for name in ["numpy", *available]:
                directory = Path(tmp) / f"{name}-{size}"
                directory.mkdir()
                if name == "numpy":
                    row = measure_exact(data, tune, meas)
                else:
                    row = measure(name, args, data, tune, meas, directory,
                                  with_features=not args.no_features and size == sizes[0])
                results[str(size)][name] = row
                print_row(name, size, row)
            del data
            gc.collect()

    cross = crossover(results)
    print(f"crossover (exact numpy slower than the ANN at k=50 above about n =): {cross}")
    print(json.dumps({
        "bench": "ann", "dim": DIM, "blas_threads_default": blas_threads(), "queries": QUERIES,
        "target_recall": TARGET,
        "m": args.m, "ef_construction": args.ef_construction, "build_threads": args.threads,
        "installed": installed, "results": results, "crossover_n": cross}))

if __name__ == "__main__":
    main()
