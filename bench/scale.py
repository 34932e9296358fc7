"""Scale: admission, recall, the automatic block, rebuild, health and peak RSS at 10k-1M memories.

Per size N (default 10,000 and 100,000; ``--large`` adds 1,000,000, run by ``make bench-large``)
a Lite root of N observations is admitted through ``MemoryStore`` by 8 threads and drained
(``bench/rebuild.py``'s generator: ~3 events per observation). Vectors: a seeded random unit
vector per memory text is written into the root's vector cache (``embeddings/cache.db``,
``VectorCache``) under the local default identity (USE multilingual v3, 512-d), and rebuild runs
with ``{"mode": "journal", "embeddings": {"provider": "local"}}``. So rebuild takes its real
path (``fill_vectors``: pending queue, cache lookup per text, ``store_vectors``) and finds every
vector in the cache: the model is loaded but never embeds (``vectors_pending`` must be 0), as
the 1M goal asks. Embedding 1M texts with a model would take hours and time the model, not us.

Each phase runs in a fresh interpreter (its peak RSS is its own), beside its floor:

- admission: p50 of ``persist_completed_turn`` (1 KiB turn) into a copy of the root (and of its
  keys) that already holds N, vs one FULL-sync apsw commit of the same bytes (bench/admission.py)
  measured in the same child, alternating in chunks. Also the store open time at N.
- recall / auto block: ``recall`` and ``auto_block`` on the rebuilt root's active index with the
  matrix a long-lived store serves (the ANN index past 20,000, rows in a mapped file), vs
  numpy top-50 over the whole matrix in RAM + one FTS5 bm25 query (bench/recall_latency.py) on
  the same queries in a process of its own, so that the floor's 2 GB matrix at 1M is not
  counted in the engine's RSS. The queries are bench/recall_latency.py's (3-7 words, a vector
  near a stored one).
- rebuild: ``memory_es.transfer.rebuild_root`` with vectors from the cache; health:
  ``MemoryRoot.health`` (always strict: a full replay compared with the live root); both vs
  bench/rebuild.py's floor (read every event, decode, bulk-insert the texts into FTS5).
- peak RSS: the largest of the engine phases, beside the floor phase's.

Goals at 1,000,000: recall p50 < 30 ms, rebuild < 10 min, peak RSS < 2 GB; printed
beside the largest size, with each figure's growth exponent (log-log slope between the last two
sizes: 1.0 is linear) and, below 1M, a projection (the per-memory increment between the last
two sizes carried on; the power law when growth is above linear). Writes a log-log plot
(``--plot``, default docs/scale.png; needs the ``bench`` extra; ``--no-plot`` skips it) and
ends with one JSON line of the figures.

``--backend postgres [--roots 1,4,16,64] [--per-root K]`` measures something else: many roots,
one writer process each, on one PostgreSQL server (``bench/pg_roots.py``).

Takes ~4 minutes at the default sizes on 2 cores (half of it admitting 100k turns; ``--cache
DIR`` keeps the roots, their vectors and their keys, and a rerun takes ~2 minutes). A root
takes ~12 KB of disk per memory (journal 2 KB, index 4.7 KB, vector cache 4.5 KB), so 1M needs
~12 GB plus a ~8 GB copy for the admission phase, and about an hour.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import rebuild
from admission import ANSWER, floor_latencies
from memory_es.cli.progress import TerminalProgress
from memory_es.embeddings import USE_MODEL
from memory_es.keystore import KEY_STORE_ENV, throwaway_key_store
from memory_es.progress import set_sink, step
from rebuild import SEED, mark, peak_rss_mb, run_phase
from recall_latency import IDENTITY, NOW, floor_once, make_queries, recall_once

SIZES = (10_000, 100_000)
LARGE = 1_000_000
CONFIG = {"mode": "journal", "embeddings": {"provider": "local", "model": USE_MODEL}}
CHUNK = 10_000
ADMIT_CHUNK = 10  # admission and its floor alternate in chunks of this many
GOALS = {"recall_ms": 30.0, "rebuild_s": 600.0, "peak_rss_mb": 2048.0}  # at 1,000,000

# --------------------------------------------------------------------------------------------
# Child phases (run through bench/rebuild.py's run_phase; each prints one JSON line).


def phase_vectors(root: Path) -> dict[str, Any]:
    """A seeded unit vector per distinct memory text into the root's vector cache."""
    from memory_es.ids import sha256_hex
    from memory_es.vectors.cache import VectorCache
    from projections.derived import open_active_index

    t0 = time.perf_counter()
    conn = open_active_index(root)
    assert conn is not None, "the generated root has no index"
    texts = sorted({text for (text,) in conn.execute("SELECT text FROM memories")})
    conn.close()
    cache = VectorCache(root)
    rng = np.random.default_rng(SEED)
    for start in range(0, len(texts), CHUNK):
        chunk = texts[start:start + CHUNK]
        block = rng.standard_normal((len(chunk), IDENTITY.dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        cache.put_many(IDENTITY.key, [(sha256_hex(t), row.tobytes())
                                      for t, row in zip(chunk, block, strict=True)])
        step("vectors", start + len(chunk), len(texts))
    cache.close()
    return {"seconds": time.perf_counter() - t0, "texts": len(texts)}


def phase_rebuild(root: Path) -> dict[str, Any]:
    from memory_es.config import parse_config
    from memory_es.transfer import rebuild_root

    config = parse_config(CONFIG)
    t0 = time.perf_counter()
    report = rebuild_root(root, config)
    return {"seconds": time.perf_counter() - t0, "events": report.position,
            "vectors_pending": report.vectors_pending, "peak_rss_mb": peak_rss_mb()}


def phase_read(root: Path, queries: int) -> dict[str, Any]:
    """The engine's reads, alone in their process (its peak RSS is the engine's): recall and
    the automatic block over the matrix a long-lived store serves."""
    from memory_es.recall.automatic import auto_block
    from memory_es.vectors.ann import ANN_THRESHOLD
    from memory_es.vectors.matrix import VectorMatrix
    from projections.derived import open_active_index

    conn = open_active_index(root)
    assert conn is not None
    t0 = time.perf_counter()
    # what a long-lived store serves: past ANN_THRESHOLD an HNSW index proposes the rows (kept
    # beside the generation, so a rerun on a cached root loads it) and the rows live in a
    # mapped file (recall.spill)
    matrix = VectorMatrix(IDENTITY.dim, IDENTITY.key, approximate=True,
                          ann_dir=Path(conn.filename).parent)
    matrix.refresh(conn, IDENTITY.key)
    load_s = time.perf_counter() - t0
    while len(matrix.rowids) >= ANN_THRESHOLD and not matrix.approximate:
        time.sleep(0.05)
    ann_s = time.perf_counter() - t0 - load_s

    def auto_once(query: str, vec: np.ndarray) -> float:
        t = time.perf_counter()
        auto_block(conn, query, now=NOW, query_vector=vec, matrix=matrix, session=None)
        return time.perf_counter() - t

    qs = make_queries(matrix, queries, SEED + len(matrix.rowids))
    for query, vec in qs[:10]:  # warm caches and numpy
        recall_once(conn, matrix, query, vec)
        auto_once(query, vec)
    ours, auto = [], []
    for query, vec in qs:
        ours.append(recall_once(conn, matrix, query, vec))
        auto.append(auto_once(query, vec))
    matrix.close()
    conn.close()
    return {"vectors": len(matrix.rowids), "matrix_load_s": load_s, "ann_ready_s": ann_s,
            "recall_ms": statistics.median(ours) * 1e3, "auto_ms": statistics.median(auto) * 1e3,
            "peak_rss_mb": peak_rss_mb()}


def phase_read_floor(root: Path, queries: int) -> dict[str, Any]:
    """The floor of a read, in its own process: numpy top-50 over the whole float32 matrix in
    RAM + one FTS5 bm25 query of every word (bench/recall_latency.py), on the same queries."""
    from memory_es.vectors.matrix import VectorMatrix
    from projections.derived import open_active_index

    conn = open_active_index(root)
    assert conn is not None
    matrix = VectorMatrix(IDENTITY.dim, IDENTITY.key)
    matrix.refresh(conn, IDENTITY.key)
    qs = make_queries(matrix, queries, SEED + len(matrix.rowids))
    for query, vec in qs[:10]:
        floor_once(conn, matrix, query, vec)
    floor = [floor_once(conn, matrix, query, vec) for query, vec in qs]
    conn.close()
    return {"recall_floor_ms": statistics.median(floor) * 1e3, "peak_rss_mb": peak_rss_mb()}


def phase_admit(root: Path, scratch: Path, turns: int) -> dict[str, Any]:
    """Admission into a copy of the root (and of the key store, so the original's per-record
    keys are untouched): the cached root keeps holding exactly N."""
    from memory_es import CompletedTurn, MemoryStore

    copy, keys = scratch / "admit-root", scratch / "admit-keys"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(keys, ignore_errors=True)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("embeddings"))
    shutil.copytree(os.environ[KEY_STORE_ENV], keys)
    os.sync()  # the copy's dirty pages must not ride on the first fsyncs timed below
    os.environ[KEY_STORE_ENV] = str(keys)
    floor: list[float] = []
    ours: list[float] = []
    t0 = time.perf_counter()
    with MemoryStore.open(copy, background=False) as store:
        open_s = time.perf_counter() - t0
        for start in range(0, turns, ADMIT_CHUNK):
            floor += floor_latencies(scratch, ADMIT_CHUNK)
            for i in range(start, start + ADMIT_CHUNK):
                turn = CompletedTurn(run_id=f"scale-{i}", outcome="success", answer=ANSWER)
                t = time.perf_counter()
                result = store.persist_completed_turn(turn)
                ours.append(time.perf_counter() - t)
                assert result.status == "admitted", result
            step("admit", start + ADMIT_CHUNK, turns)
    rss = peak_rss_mb()
    shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(keys, ignore_errors=True)
    for path in scratch.glob("floor-*"):
        path.unlink()
    return {"admission_ms": statistics.median(ours) * 1e3, "open_s": open_s,
            "admission_floor_ms": statistics.median(floor) * 1e3, "peak_rss_mb": rss}


def child(phase: str, root: Path, scratch: Path, *extra: str) -> dict[str, Any]:
    """A child of this script: it shares the parent's key store, which holds the roots' keys."""
    return run_phase(__file__, phase, root, "--scratch", str(scratch), *extra)


def build_root(base: Path, size: int, cache: Path | None) -> tuple[Path, float | None]:
    """bench/rebuild.py's generated root, from the cache when present; seconds, or None."""
    base = cache if cache is not None else base
    base.mkdir(parents=True, exist_ok=True)
    root, done = base / f"scale-root-{size}-{SEED}", base / f"scale-root-{size}-{SEED}.done"
    if done.exists() and root.is_dir():
        return root, None
    done.unlink(missing_ok=True)
    seconds: float = child("generate", root, base, "--n", str(size))["seconds"]
    done.write_text("ok\n")
    return root, seconds


# --------------------------------------------------------------------------------------------


def measure(base: Path, size: int, cache: Path | None, queries: int,
            turns: int) -> dict[str, Any]:
    root, gen_s = build_root(base, size, cache)
    print(f"{size}: " + (f"reusing {root}" if gen_s is None else
                         f"{size} observations admitted and drained in {gen_s:.0f} s"), flush=True)
    marker = root.parent / f"{root.name}.vectors"  # outside the root (health)
    if gen_s is not None or not marker.exists():
        vec = child("vectors", root, base)
        marker.write_text("ok\n")
        print(f"{size}: {vec['texts']} vectors into the cache in {vec['seconds']:.0f} s",
              flush=True)
    scratch = base / "scratch"
    floor = child("floor", root, scratch)
    rebuilt = child("rebuild", root, scratch)
    if rebuilt["vectors_pending"] != 0 or rebuilt["events"] != floor["events"]:
        raise SystemExit(f"rebuild at {size}: {rebuilt} (floor {floor})")
    health = child("health", root, scratch)
    if health["status"] != "clean":
        raise SystemExit(f"health at {size} is not clean: {health}")
    read = child("read", root, scratch, "--n", str(queries))
    read_floor = child("read_floor", root, scratch, "--n", str(queries))
    admit = child("admit", root, scratch, "--n", str(turns))
    rss = {"rebuild": rebuilt["peak_rss_mb"], "health": health["peak_rss_mb"],
           "read": read["peak_rss_mb"], "admit": admit["peak_rss_mb"]}
    out = {"size": size, "events": floor["events"], "generate_s": gen_s,
           "admission_ms": admit["admission_ms"], "admission_floor_ms": admit["admission_floor_ms"],
           "open_s": admit["open_s"], "recall_ms": read["recall_ms"], "auto_ms": read["auto_ms"],
           "recall_floor_ms": read_floor["recall_floor_ms"],
           "matrix_load_s": read["matrix_load_s"],
           "ann_ready_s": read["ann_ready_s"],
           "rebuild_s": rebuilt["seconds"], "health_s": health["seconds"],
           "rebuild_floor_s": floor["seconds"], "peak_rss_mb": max(rss.values()),
           "floor_peak_rss_mb": max(floor["peak_rss_mb"], read_floor["peak_rss_mb"]),
           "rss_by_phase_mb": rss}
    print(f"{size}: done ({json.dumps({k: v for k, v in out.items() if k != 'rss_by_phase_mb'})})",
          flush=True)
    return out


FLOOR_LABELS = {"admission_floor_ms": "apsw FULL commit", "recall_floor_ms": "numpy top-50 + bm25",
                "rebuild_floor_s": "read, decode, FTS5", "floor_peak_rss_mb": "floor RSS"}
# (label, key, floor key, unit)
ROWS = (
    ("admission p50", "admission_ms", "admission_floor_ms", "ms"),
    ("recall p50", "recall_ms", "recall_floor_ms", "ms"),
    ("auto block p50", "auto_ms", "recall_floor_ms", "ms"),
    ("rebuild", "rebuild_s", "rebuild_floor_s", "s"),
    ("strict health", "health_s", "rebuild_floor_s", "s"),
    ("peak RSS", "peak_rss_mb", "floor_peak_rss_mb", "MB"),
)


def slope(results: list[dict[str, Any]], key: str) -> float | None:
    """Growth exponent between the last two sizes (1.0: linear)."""
    if len(results) < 2:
        return None
    a, b = results[-2], results[-1]
    if a[key] <= 0 or b[key] <= 0:
        return None
    return math.log(b[key] / a[key]) / math.log(b["size"] / a["size"])


def project(results: list[dict[str, Any]], key: str, growth: float) -> float:
    """``key`` at 1M: the per-memory increment between the last two sizes carried on (a fixed
    cost plus a linear one), or the power law when the growth is above linear."""
    a, b = results[-2], results[-1]
    if growth > 1.0:
        return float(b[key] * (LARGE / b["size"]) ** growth)
    step = max(0.0, b[key] - a[key]) / (b["size"] - a["size"])
    return float(b[key] + step * (LARGE - b["size"]))


def report(results: list[dict[str, Any]]) -> None:
    head = "".join(f"{r['size']:>24,}" for r in results)
    print(f"\n{'':<16}{head}   growth  goal at 1M")
    print(f"{'':<16}" + f"{'engine / floor':>24}" * len(results))
    for label, key, fkey, unit in ROWS:
        cells = "".join(f"{f'{r[key]:.2f} / {r[fkey]:.2f} {unit}':>24}" for r in results)
        s = slope(results, key)
        growth = f"{s:>+8.2f}" if s is not None else f"{'':>8}"
        goal = GOALS.get(key)
        tail = ""
        if goal is not None:
            last = results[-1]
            tail = f"  < {goal:g} {unit}"
            if last["size"] >= LARGE:
                tail += f" {mark(last[key] < goal)}"
            elif s is not None:
                tail += f" (projected {project(results, key, s):.0f})"
        print(f"{label:<16}{cells}{growth}{tail}")
    print(f"{'events':<16}" + "".join(f"{r['events']:>24,}" for r in results))
    print(f"{'store open':<16}" + "".join(f"{r['open_s']:>22.2f} s" for r in results)
          + "   (MemoryStore.open before admitting)")
    print(f"{'matrix load':<16}" + "".join(f"{r['matrix_load_s']:>22.2f} s" for r in results)
          + "   (VectorMatrix.refresh before recall)")
    print(f"{'ANN index ready':<16}" + "".join(f"{r['ann_ready_s']:>22.2f} s" for r in results)
          + "   (built, or loaded from beside the generation; 0 below 20,000)")
    for phase in ("rebuild", "health", "read", "admit"):
        print(f"{f'RSS {phase}':<16}"
              + "".join(f"{r['rss_by_phase_mb'][phase]:>21.0f} MB" for r in results))


def plot(results: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("no plot: matplotlib is missing (pip install -e '.[bench]')")
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size"] for r in results]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(8, 5), dpi=100,
                                     gridspec_kw={"width_ratios": [2, 1]})
    floors_drawn: set[str] = set()
    for n, (label, key, fkey, unit) in enumerate(ROWS):
        ax = ax_m if unit == "MB" else ax_t
        to_ms = 1e3 if unit == "s" else 1.0
        color = f"C{n}"
        ax.plot(sizes, [r[key] * to_ms for r in results], "o-", color=color, label=label)
        if fkey not in floors_drawn:
            floors_drawn.add(fkey)
            ax.plot(sizes, [r[fkey] * to_ms for r in results], "o--", color=color, alpha=0.6,
                    label=f"floor: {FLOOR_LABELS[fkey]}")
    for ax, ylabel in ((ax_t, "time (ms)"), (ax_m, "peak RSS (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("memory_es at scale (dashed: floor measured in the same run)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def main() -> None:
    if "--backend" in sys.argv:  # many roots on one PostgreSQL server: bench/pg_roots.py
        backend = sys.argv[sys.argv.index("--backend") + 1:][:1]
        if backend != ["postgres"]:
            raise SystemExit("scale.py: --backend takes postgres (many roots on one server)")
        import pg_roots

        pg_roots.main([a for a in sys.argv[1:] if a not in ("--backend", "postgres")])
        return
    if sys.stderr.isatty():  # each phase runs in a child with this stderr: bars on a terminal
        set_sink(TerminalProgress(sys.stderr))
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES),
                        help="comma-separated memory counts (default 10000,100000)")
    parser.add_argument("--large", action="store_true", help=f"add {LARGE:,} (make bench-large)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per size")
    parser.add_argument("--turns", type=int, default=400, help="timed admissions per size")
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep (and reuse) the generated roots and their keys here")
    parser.add_argument("--plot", type=Path, default=Path("docs/scale.png"))
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--phase", choices=("generate", "floor", "vectors", "rebuild", "health",
                                            "read", "read_floor", "admit"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    if args.phase is not None:  # a child: the key store its parent chose
        phases: dict[str, Any] = {
            "generate": lambda: rebuild.phase_generate(args.root, args.n, SEED),
            "floor": lambda: rebuild.phase_floor(args.root, args.scratch),
            "health": lambda: rebuild.phase_health(args.root),
            "vectors": lambda: phase_vectors(args.root),
            "rebuild": lambda: phase_rebuild(args.root),
            "read": lambda: phase_read(args.root, args.n),
            "read_floor": lambda: phase_read_floor(args.root, args.n),
            "admit": lambda: phase_admit(args.root, args.scratch, args.n)}
        print(json.dumps(phases[args.phase]()))
        return

    with contextlib.ExitStack() as stack:
        if args.cache is not None:  # the cached roots' keys live beside them
            os.environ[KEY_STORE_ENV] = str((args.cache / "keys").absolute())
        else:  # the bench's roots are thrown away, so are their keys
            stack.enter_context(throwaway_key_store())
        run(args)


def run(args: argparse.Namespace) -> None:
    sizes = sorted({int(s) for s in args.sizes.split(",") if s}
                   | ({LARGE} if args.large else set()))
    wall0 = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        for size in sizes:
            results.append(measure(Path(d), size, args.cache, args.queries, args.turns))
    report(results)
    wall = time.perf_counter() - wall0
    print(f"(whole run {wall:.0f} s)")
    if not args.no_plot and plot(results, args.plot):
        print(f"plot: {args.plot}")
    figures: dict[str, Any] = {"bench": "scale", "queries": args.queries, "turns": args.turns,
                               "wall_s": round(wall)}
    for r in results:
        tag = f"{r['size'] // 1000}k" if r["size"] % 1000 == 0 else str(r["size"])
        for key, value in r.items():
            if key not in ("size", "rss_by_phase_mb") and value is not None:
                figures[f"{key}_{tag}"] = round(value, 3)
        for phase, mb in r["rss_by_phase_mb"].items():
            figures[f"rss_{phase}_mb_{tag}"] = round(mb, 1)
    for _, key, _, _ in ROWS:
        s = slope(results, key)
        if s is not None:
            figures[f"growth_{key}"] = round(s, 3)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
