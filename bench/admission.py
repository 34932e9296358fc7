"""Admission latency and group-commit throughput, each beside its floor measured in the same run.

- latency: ``persist_completed_turn`` of a 1 KiB turn vs the floor: one apsw
  ``BEGIN IMMEDIATE; INSERT; COMMIT`` of the same bytes into a WAL database with
  synchronous=FULL (the same durability the journal uses). Target: median ratio <= 2.0.
- throughput: admissions/s from 8 threads through one store vs 1 thread. Target: >= 3x.

The store runs with its background worker off, so the figure is admission alone; the worker's
projection work under load is measured by bench/worker.py. Runs alternate between floor and
store in rounds so that disk noise hits both alike.
Ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import apsw

from memory_es import CompletedTurn, MemoryStore
from memory_es.keystore import throwaway_key_store

ANSWER = ("The quarterly report is due on 2026-12-09; Dana owns the summary. " * 16)[:1024]


def floor_latencies(directory: Path, n: int) -> list[float]:
    path = directory / f"floor-{time.monotonic_ns()}.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, state BLOB NOT NULL)")
    data = ANSWER.encode()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (state) VALUES (?)", (data,))
        conn.execute("COMMIT")
        out.append(time.perf_counter() - t0)
    conn.close()
    return out


def store_latencies(directory: Path, n: int) -> list[float]:
    root = directory / f"root-{time.monotonic_ns()}"
    out = []
    with MemoryStore.open(root, background=False) as store:
        for i in range(n):
            turn = CompletedTurn(run_id=f"lat-{i}", outcome="success", answer=ANSWER)
            t0 = time.perf_counter()
            result = store.persist_completed_turn(turn)
            out.append(time.perf_counter() - t0)
            assert result.status == "admitted", result
    return out


def throughput(directory: Path, threads: int, per_thread: int) -> tuple[float, float]:
    """Admissions per second, and journal commits (fsyncs) per admission."""
    root = directory / f"tp-{threads}-{time.monotonic_ns()}"
    with MemoryStore.open(root, background=False) as store:
        def work(k: int) -> None:
            for i in range(per_thread):
                turn = CompletedTurn(run_id=f"tp-{k}-{i}", outcome="success", answer=ANSWER)
                assert store.persist_completed_turn(turn).status == "admitted"

        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - t0
        commits = store.commits
    return threads * per_thread / elapsed, commits / (threads * per_thread)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=400, help="admissions per latency round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--total", type=int, default=1600, help="admissions per throughput run")
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    floor: list[float] = []
    ours: list[float] = []
    rates1: list[float] = []
    rates8: list[float] = []
    fsyncs8: list[float] = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        directory = Path(d)
        for _ in range(args.rounds):
            floor += floor_latencies(directory, args.n)
            ours += store_latencies(directory, args.n)
            rates1.append(throughput(directory, 1, args.total)[0])
            rate8, per_admission = throughput(directory, 8, args.total // 8)
            rates8.append(rate8)
            fsyncs8.append(per_admission)

    figures = {
        "bench": "admission",
        "n": len(ours),
        "median_ms": round(statistics.median(ours) * 1e3, 4),
        "p99_ms": round(pct(ours, 0.99) * 1e3, 4),
        "floor_median_ms": round(statistics.median(floor) * 1e3, 4),
        "floor_p99_ms": round(pct(floor, 0.99) * 1e3, 4),
        "ratio": round(statistics.median(ours) / statistics.median(floor), 3),
        "threads1_per_s": round(statistics.median(rates1)),
        "threads8_per_s": round(statistics.median(rates8)),
        "threads8_vs_1": round(statistics.median(rates8) / statistics.median(rates1), 3),
        "threads8_commits_per_admission": round(statistics.median(fsyncs8), 3),
    }
    print(f"admission (1 KiB turn)   median {figures['median_ms']:.3f} ms   "
          f"p99 {figures['p99_ms']:.3f} ms")
    print(f"floor (apsw commit, FULL) median {figures['floor_median_ms']:.3f} ms   "
          f"p99 {figures['floor_p99_ms']:.3f} ms")
    print(f"ratio {figures['ratio']:.2f} (target <= 2.0)")
    print(f"throughput 1 thread {figures['threads1_per_s']}/s, 8 threads "
          f"{figures['threads8_per_s']}/s: {figures['threads8_vs_1']:.2f}x (target >= 3x); "
          f"8 threads share commits: {figures['threads8_commits_per_admission']:.2f} "
          "fsyncs per admission")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    with throwaway_key_store():  # the bench's roots are thrown away, so are their keys
        main()
