"""Admission latency and group-commit throughput, each beside its floor measured in the same run.

- latency: ``persist_completed_turn`` of a 1 KiB turn vs the floor: one apsw
  ``BEGIN IMMEDIATE; INSERT; COMMIT`` of the same bytes into a WAL database with
  synchronous=FULL (the same durability the journal uses). Target: median ratio <= 2.0.
- throughput: admissions/s from 8 and 32 threads through one store vs 1 thread (goals:
  8 threads >= 4x, 32 threads >= 6x), with the distribution of group-commit batch sizes
  (admissions per shared transaction and fsync).
- CPU ceiling: the same 8-thread run against a journal with ``synchronous=OFF`` (no fsync): the
  rate this machine's one GIL allows, whatever the disk. Threads can only win what the fsync
  costs: 1 thread pays fsync + CPU per admission, many threads at best CPU alone, so the ratio
  cannot pass (fsync + CPU) / CPU. Printed as the share of that ceiling 8 threads reach, beside
  the bound no threading can pass: one thread with no fsync (CPU alone, no thread switches).

The store runs with its background worker off, so the figure is admission alone; the worker's
projection work under load is measured by bench/worker.py. One phase measures what the worker
costs a host: a Journal root with the offline model is handed ``--busy-backlog`` turns, then a
burst of ``--burst`` admissions at a steady rate (one every ``--gap-ms``) with the background
worker on, so it is projecting, resolving and embedding the backlog all through the burst,
beside the same burst into a root whose worker is off (goals: p50 <= 1.5x, p99 <= 3x). Runs
alternate between floor and store in rounds so that disk noise hits both alike.

``--backend postgres`` starts a throwaway PostgreSQL server (memory_es.pgcluster)
and puts each store's journal there: the floor is one ``INSERT ...; COMMIT`` of the same bytes
with ``synchronous_commit=on`` on the same server (goal: p50 <= 2x floor), and throughput runs
1, 8 and 32 writers as threads of one store and as processes, each its own root on the shared
journal (goal: 32 writers >= 8x one writer), beside their ceiling: the same 32 writers on a
database whose commits do not wait for their WAL flush, which no durable writer can beat.
Ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import MemoryConfig, parse_config
from memory_es.journal import recorder
from memory_es.keystore import throwaway_key_store

# The config every store of the run opens with: None (SQLite), or a journal on the server.
CONFIG: MemoryConfig | None = None

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
    with MemoryStore.open(root, CONFIG, background=False) as store:
        for i in range(n):
            turn = CompletedTurn(run_id=f"lat-{i}", outcome="success", answer=ANSWER)
            t0 = time.perf_counter()
            result = store.persist_completed_turn(turn)
            out.append(time.perf_counter() - t0)
            assert result.status == "admitted", result
    return out


def throughput(directory: Path, threads: int, per_thread: int,
               *, fsync: bool = True) -> tuple[float, float, dict[int, int]]:
    """Admissions per second, journal commits (fsyncs) per admission and the batch sizes."""
    root = directory / f"tp-{threads}-{time.monotonic_ns()}"
    with contextlib.ExitStack() as stack:
        if not fsync:
            stack.enter_context(no_fsync())
        store = stack.enter_context(MemoryStore.open(root, CONFIG, background=False))
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
        commits, sizes = store.commits, store.batch_sizes
    return threads * per_thread / elapsed, commits / (threads * per_thread), sizes


BUSY_CONFIG = {"mode": "journal", "embeddings": {"provider": "local"}}
BUSY_WORDS = ("dentist", "appointment", "tuesday", "mortgage", "bank", "priya", "berlin",
              "offsite", "washing", "machine", "repair", "garden", "tomatoes", "bicycle",
              "invoice", "passport")


def busy_text(i: int) -> str:
    return " ".join(BUSY_WORDS[(i * 7 + k) % len(BUSY_WORDS)] for k in range(12)) + f" {i}."


def busy_latencies(directory: Path, *, worker: bool, backlog: int, burst: int,
                   gap: float) -> tuple[list[float], int]:
    """A steady burst's admission latencies after ``backlog`` turns, the worker on (busy with
    the backlog) or off; and how many intakes were still pending when the burst ended."""
    root = directory / f"busy-{time.monotonic_ns()}"
    config = parse_config(BUSY_CONFIG)
    out = []
    with MemoryStore.open(root, config, background=worker) as store:
        store.persist_completed_turn(CompletedTurn(run_id="warm", outcome="success",
                                                   answer="The model is loaded now."))
        store.drain()
        for i in range(backlog):
            store.persist_completed_turn(CompletedTurn(run_id=f"b{i}", outcome="success",
                                                       answer=busy_text(i)))
        for i in range(burst):
            turn = CompletedTurn(run_id=f"x{i}", outcome="success", answer=busy_text(10**6 + i))
            t0 = time.perf_counter()
            result = store.persist_completed_turn(turn)
            out.append(time.perf_counter() - t0)
            assert result.status == "admitted", result
            time.sleep(gap)
        pending = store.inspect().counts.pending
    return out, pending


@contextlib.contextmanager
def no_fsync() -> Iterator[None]:
    """Journals opened inside get ``synchronous=OFF``: the CPU ceiling, never a product mode."""
    real = recorder._connect

    def connect(path: Path, *, readonly: bool) -> apsw.Connection:
        conn = real(path, readonly=readonly)
        conn.execute("PRAGMA synchronous=OFF")
        return conn

    recorder._connect = connect
    try:
        yield
    finally:
        recorder._connect = real


def batch_summary(sizes: Counter[int]) -> dict[str, float]:
    """Median and p90 batch size weighted by admissions (what a caller experiences)."""
    weighted = sorted(size for size, count in sizes.items() for _ in range(size * count))
    return {"median": float(statistics.median(weighted)), "p90": float(pct(weighted, 0.9)),
            "max": float(max(weighted))}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _counts(text: str) -> tuple[int, ...]:
    counts = tuple(sorted({int(part) for part in text.split(",")}))
    if not counts or counts[0] != 1:
        raise argparse.ArgumentTypeError("writer counts start at 1 (the figures are against "
                                         "one writer), e.g. 1,8,32")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=400, help="admissions per latency round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--total", type=int, default=1600, help="admissions per throughput run")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--busy-backlog", type=int, default=3000,
                        help="turns the worker is busy with during the burst")
    parser.add_argument("--burst", type=int, default=200, help="admissions per burst")
    parser.add_argument("--gap-ms", type=float, default=10.0, help="between a burst's turns")
    parser.add_argument("--writers", type=_counts, default=(1, 8, 32), metavar="1,8,32",
                        help="PostgreSQL: the writer counts (threads and processes) measured; "
                             "the ceiling is read at the largest (the smoke test runs 1,2)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    if args.backend == "postgres":
        run_postgres(args)
        return

    floor: list[float] = []
    ours: list[float] = []
    rates: dict[int, list[float]] = {1: [], 8: [], 32: []}
    fsyncs: dict[int, list[float]] = {8: [], 32: []}
    sizes: dict[int, Counter[int]] = {8: Counter(), 32: Counter()}
    ceiling: list[float] = []
    bound: list[float] = []
    busy: dict[bool, list[float]] = {False: [], True: []}
    left: list[int] = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        directory = Path(d)
        for _ in range(args.rounds):
            for worker in (False, True):
                latencies, pending = busy_latencies(
                    directory, worker=worker, backlog=args.busy_backlog, burst=args.burst,
                    gap=args.gap_ms / 1000)
                busy[worker] += latencies
                if worker:
                    left.append(pending)
            floor += floor_latencies(directory, args.n)
            ours += store_latencies(directory, args.n)
            rates[1].append(throughput(directory, 1, args.total)[0])
            for threads in (8, 32):
                rate, per_admission, batches = throughput(directory, threads,
                                                          args.total // threads)
                rates[threads].append(rate)
                fsyncs[threads].append(per_admission)
                sizes[threads].update(batches)
            ceiling.append(throughput(directory, 8, args.total // 8, fsync=False)[0])
            bound.append(throughput(directory, 1, args.total, fsync=False)[0])

    figures = {
        "bench": "admission",
        "n": len(ours),
        "median_ms": round(statistics.median(ours) * 1e3, 4),
        "p99_ms": round(pct(ours, 0.99) * 1e3, 4),
        "floor_median_ms": round(statistics.median(floor) * 1e3, 4),
        "floor_p99_ms": round(pct(floor, 0.99) * 1e3, 4),
        "ratio": round(statistics.median(ours) / statistics.median(floor), 3),
        "threads1_per_s": round(statistics.median(rates[1])),
        "cpu_ceiling_per_s": round(statistics.median(ceiling)),
        "cpu_bound_per_s": round(statistics.median(bound)),
    }
    one = statistics.median(rates[1])
    for threads in (8, 32):
        rate = statistics.median(rates[threads])
        figures[f"threads{threads}_per_s"] = round(rate)
        figures[f"threads{threads}_vs_1"] = round(rate / one, 3)
        figures[f"threads{threads}_commits_per_admission"] = round(
            statistics.median(fsyncs[threads]), 3)
        figures[f"threads{threads}_batch"] = batch_summary(sizes[threads])
    figures["ceiling_vs_1"] = round(statistics.median(ceiling) / one, 3)
    figures["bound_vs_1"] = round(statistics.median(bound) / one, 3)
    figures["threads8_of_ceiling"] = round(
        statistics.median(rates[8]) / statistics.median(ceiling), 3)
    for worker, name in ((False, "busy_off"), (True, "busy_on")):
        figures[f"{name}_p50_ms"] = round(statistics.median(busy[worker]) * 1e3, 3)
        figures[f"{name}_p99_ms"] = round(pct(busy[worker], 0.99) * 1e3, 3)
    figures["busy_p50_ratio"] = round(figures["busy_on_p50_ms"] / figures["busy_off_p50_ms"], 3)
    figures["busy_p99_ratio"] = round(figures["busy_on_p99_ms"] / figures["busy_off_p99_ms"], 3)
    figures["busy_backlog_left"] = max(left)
    print(f"admission (1 KiB turn)   median {figures['median_ms']:.3f} ms   "
          f"p99 {figures['p99_ms']:.3f} ms")
    print(f"floor (apsw commit, FULL) median {figures['floor_median_ms']:.3f} ms   "
          f"p99 {figures['floor_p99_ms']:.3f} ms")
    print(f"ratio {figures['ratio']:.2f} (target <= 2.0)")
    print(f"throughput 1 thread {figures['threads1_per_s']}/s")
    for threads, target in ((8, 4), (32, 6)):
        batch = figures[f"threads{threads}_batch"]
        print(f"  {threads} threads {figures[f'threads{threads}_per_s']}/s: "
              f"{figures[f'threads{threads}_vs_1']:.2f}x (goal >= {target}x); "
              f"{figures[f'threads{threads}_commits_per_admission']:.2f} fsyncs per admission; "
              f"batch size median {batch['median']:.0f}, p90 {batch['p90']:.0f}, "
              f"max {batch['max']:.0f}")
    print(f"CPU ceiling (8 threads, no fsync) {figures['cpu_ceiling_per_s']}/s = "
          f"{figures['ceiling_vs_1']:.2f}x one thread; 8 threads reach "
          f"{figures['threads8_of_ceiling']:.0%} of it")
    print(f"bound (1 thread, no fsync: CPU alone) {figures['cpu_bound_per_s']}/s = "
          f"{figures['bound_vs_1']:.2f}x one thread: no number of threads can pass it")
    print(f"a steady burst with the worker busy (backlog {args.busy_backlog}, "
          f"{max(left)} still pending at its end): p50 {figures['busy_on_p50_ms']:.2f} ms, "
          f"p99 {figures['busy_on_p99_ms']:.2f} ms; worker off p50 "
          f"{figures['busy_off_p50_ms']:.2f} ms, p99 {figures['busy_off_p99_ms']:.2f} ms: "
          f"{figures['busy_p50_ratio']:.2f}x (goal <= 1.5x), {figures['busy_p99_ratio']:.2f}x "
          f"(goal <= 3x)")
    print(json.dumps(figures, sort_keys=True))


# -- --backend postgres ------------------------------------------------------------


def use_database(cluster: Any, name: str) -> str:
    """A fresh database for the next run; every store opened after this puts its journal
    there."""
    global CONFIG
    dsn: str = cluster.create_database(f"{name}_{time.monotonic_ns()}")
    CONFIG = parse_config({"journal": {"backend": "postgres", "dsn": dsn}})
    return dsn


def no_flush(dsn: str) -> None:
    """This database's commits stop waiting for their WAL flush: the CPU ceiling of a run,
    never a product setting."""
    import psycopg

    name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')


def pg_floor_latencies(dsn: str, n: int) -> list[float]:
    """One ``INSERT ...; COMMIT`` of the same bytes, synchronous_commit=on, one connection."""
    import psycopg

    data = ANSWER.encode()
    out = []
    with psycopg.connect(dsn) as conn:
        conn.execute("SET synchronous_commit = on")
        conn.execute("CREATE TABLE t (id bigserial PRIMARY KEY, state bytea NOT NULL)")
        conn.commit()
        for _ in range(n):
            t0 = time.perf_counter()
            conn.execute("INSERT INTO t (state) VALUES (%s)", (data,))
            conn.commit()
            out.append(time.perf_counter() - t0)
    return out


def _writer_process(root: str, dsn: str, k: int, n: int, barrier: Any, done: Any) -> None:
    """One writer host: its own root on the shared journal, admitting after the barrier."""
    logging.disable(logging.WARNING)
    config = parse_config({"journal": {"backend": "postgres", "dsn": dsn}})
    with MemoryStore.open(root, config, background=False) as store:
        barrier.wait()
        start = time.time()
        for i in range(n):
            turn = CompletedTurn(run_id=f"pp-{k}-{i}", outcome="success", answer=ANSWER)
            assert store.persist_completed_turn(turn).status == "admitted"
        done.put((start, time.time()))


def process_throughput(directory: Path, dsn: str, writers: int, per_writer: int) -> float:
    """Admissions per second of ``writers`` processes, from the first start to the last end."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    barrier, done = ctx.Barrier(writers), ctx.Queue()
    procs = [ctx.Process(target=_writer_process, args=(
        str(directory / f"pp-{writers}-{k}-{time.monotonic_ns()}"), dsn, k, per_writer, barrier,
        done)) for k in range(writers)]
    for proc in procs:
        proc.start()
    spans = [done.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0, proc.exitcode
    return writers * per_writer / (max(e for _, e in spans) - min(s for s, _ in spans))


def run_postgres(args: argparse.Namespace) -> None:
    from memory_es.pgcluster import ThrowawayCluster

    floor: list[float] = []
    ours: list[float] = []
    writers = args.writers
    most = writers[-1]  # the ceiling and the batch sizes are read at the largest count
    threads: dict[int, list[float]] = {w: [] for w in writers}
    processes: dict[int, list[float]] = {w: [] for w in writers}
    sizes: Counter[int] = Counter()
    ceiling: dict[str, list[float]] = {"threads": [], "processes": []}
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")
                                     ) as d, ThrowawayCluster() as cluster:
        directory = Path(d)
        for _ in range(args.rounds):
            floor += pg_floor_latencies(use_database(cluster, "floor"), args.n)
            use_database(cluster, "lat")
            ours += store_latencies(directory, args.n)
            for w in writers:
                use_database(cluster, f"t{w}")
                rate, _, batches = throughput(directory, w, args.total // w)
                threads[w].append(rate)
                if w == most:
                    sizes.update(batches)
                dsn = use_database(cluster, f"p{w}")
                processes[w].append(process_throughput(directory, dsn, w, args.total // w))
            # the CPU ceiling: the most writers where no commit waits for its WAL flush
            dsn = use_database(cluster, "ceiling")
            no_flush(dsn)
            ceiling["threads"].append(throughput(directory, most, args.total // most)[0])
            dsn = use_database(cluster, "ceiling_p")
            no_flush(dsn)
            ceiling["processes"].append(process_throughput(directory, dsn, most,
                                                           args.total // most))
    figures: dict[str, Any] = {
        "bench": "admission", "backend": "postgres", "n": len(ours),
        "median_ms": round(statistics.median(ours) * 1e3, 4),
        "p99_ms": round(pct(ours, 0.99) * 1e3, 4),
        "floor_median_ms": round(statistics.median(floor) * 1e3, 4),
        "floor_p99_ms": round(pct(floor, 0.99) * 1e3, 4),
        "ratio": round(statistics.median(ours) / statistics.median(floor), 3),
        f"threads{most}_batch": batch_summary(sizes),
    }
    print(f"admission (1 KiB turn, PostgreSQL journal) median {figures['median_ms']:.3f} ms   "
          f"p99 {figures['p99_ms']:.3f} ms")
    print(f"floor (INSERT; COMMIT, synchronous_commit=on) median "
          f"{figures['floor_median_ms']:.3f} ms   p99 {figures['floor_p99_ms']:.3f} ms")
    print(f"ratio {figures['ratio']:.2f} (goal <= 2.0)")
    for kind, rates in (("threads", threads), ("processes", processes)):
        one = statistics.median(rates[1])
        for w in writers:
            rate = statistics.median(rates[w])
            figures[f"{kind}{w}_per_s"] = round(rate)
            figures[f"{kind}{w}_vs_1"] = round(rate / one, 3)
        top = statistics.median(ceiling[kind])
        figures[f"{kind}{most}_ceiling_per_s"] = round(top)
        figures[f"{kind}{most}_ceiling_vs_1"] = round(top / one, 3)
        print(f"{kind:<9}: " + "; ".join(
            f"{w} {figures[f'{kind}{w}_per_s']}/s ({figures[f'{kind}{w}_vs_1']:.2f}x)"
            for w in writers) + " (goal: 32 writers >= 8x one)")
        print(f"{'':<9}  ceiling, {most} with no WAL flush waited for (synchronous_commit=off): "
              f"{round(top)}/s ({top / one:.2f}x one durable writer)")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    with throwaway_key_store():  # the bench's roots are thrown away, so are their keys
        main()
