"""Many roots on one PostgreSQL server: N agents, each its own root in its own schema, one
writer process per root, all admitting at once (``bench/scale.py --backend postgres``).

For each N (default 1, 4, 16, 64) a throwaway PostgreSQL 15 server on 127.0.0.1 gets a fresh
database; N spawned processes each open a store whose journal is schema ``r<k>`` there, wait
at a barrier, admit ``--per-root`` 1 KiB turns one after another (a host reporting its turns),
then wait until the server's CPU has been read. Reported per N: aggregate admissions/s (all
turns over the span from the first start to the last end), p50/p99 of one admission across
every writer, and the server's CPU (the postmaster and its backends: utime + stime over the
same span, in cores). The floor is N = 1: one root alone on the server. Writes a plot
(``--plot``, default docs/pg_roots.png; needs the ``bench`` extra) and ends with one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ANSWER = ("The quarterly report is due on 2026-12-09; Dana owns the summary. " * 16)[:1024]
ROOTS = (1, 4, 16, 64)
TICKS = os.sysconf("SC_CLK_TCK")


def _writer(root: str, dsn: str, schema: str, per_root: int, barrier: Any, sampled: Any,
            done: Any) -> None:
    """One agent host: its own root, its journal in ``schema``, admitting after the barrier."""
    from memory_es import CompletedTurn, MemoryStore
    from memory_es.config import parse_config
    from memory_es.keystore import throwaway_key_store

    logging.disable(logging.WARNING)
    config = parse_config({"journal": {"backend": "postgres", "dsn": dsn, "schema": schema}})
    with throwaway_key_store(), contextlib.ExitStack() as stack:
        try:
            store = stack.enter_context(MemoryStore.open(root, config, background=False))
        except BaseException:
            barrier.abort()  # the parent fails at once instead of waiting for this writer
            raise
        barrier.wait()
        start, latencies = time.time(), []
        try:
            for i in range(per_root):
                turn = CompletedTurn(run_id=f"{schema}-{i}", outcome="success", answer=ANSWER)
                t0 = time.perf_counter()
                result = store.persist_completed_turn(turn)
                if result.status != "admitted":
                    raise RuntimeError(f"{schema}: {result.status} ({result.code})")
                latencies.append(time.perf_counter() - t0)
        except BaseException as e:
            done.put(repr(e))  # the parent reports it instead of waiting
            raise
        done.put((start, time.time(), latencies))
        sampled.wait(600)  # the server's CPU is read while every backend is still there


def server_cpu(data: Path) -> float:
    """CPU seconds (user + system) of the postmaster and every process it started."""
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid == postmaster or ppid == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def run_roots(cluster: Any, directory: Path, roots: int, per_root: int) -> dict[str, Any]:
    """One N: spawn, release, time, read the server's CPU, let the writers close."""
    import psycopg

    dsn = cluster.create_database(f"roots{roots}_{time.monotonic_ns()}")
    with psycopg.connect(dsn, autocommit=True) as conn:  # one schema per root
        for k in range(roots):
            conn.execute(f"CREATE SCHEMA r{k}")
    ctx = multiprocessing.get_context("spawn")
    barrier, sampled, done = ctx.Barrier(roots + 1), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(
        str(directory / f"n{roots}-{k}"), dsn, f"r{k}", per_root, barrier, sampled, done))
        for k in range(roots)]
    for proc in procs:
        proc.start()
    barrier.wait(600)  # every writer has opened its root: the timed span starts
    cpu0, wall0 = server_cpu(cluster.data), time.time()
    results = [done.get(timeout=600) for _ in procs]
    failed = [r for r in results if isinstance(r, str)]
    if failed:
        sampled.set()
        raise SystemExit(f"pg_roots: {len(failed)} of {roots} writers failed: {failed[0]}")
    cpu1, wall1 = server_cpu(cluster.data), time.time()
    sampled.set()
    for proc in procs:
        proc.join(600)
        assert proc.exitcode == 0, proc.exitcode
    span = max(end for _, end, _ in results) - min(start for start, _, _ in results)
    latencies = sorted(x for _, _, lat in results for x in lat)
    return {"roots": roots, "admissions": len(latencies),
            "per_s": round(len(latencies) / span, 1),
            "p50_ms": round(statistics.median(latencies) * 1e3, 3),
            "p99_ms": round(latencies[min(len(latencies) - 1,
                                          int(0.99 * len(latencies)))] * 1e3, 3),
            "server_cores": round((cpu1 - cpu0) / (wall1 - wall0), 2)}


def plot(results: list[dict[str, Any]], path: Path) -> bool:
    """Aggregate admissions/s and p99 against N, log-x; False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    roots = [r["roots"] for r in results]
    fig, left = plt.subplots(figsize=(6.4, 4.0))
    left.plot(roots, [r["per_s"] for r in results], "o-", label="admissions/s (all roots)")
    left.set_xscale("log", base=2)
    left.set_xlabel("roots on one server (one writer process each)")
    left.set_ylabel("admissions/s")
    right = left.twinx()
    right.plot(roots, [r["p99_ms"] for r in results], "s--", color="tab:red",
               label="p99 of one admission (ms)")
    right.set_ylabel("p99 ms")
    fig.legend(loc="upper left", bbox_to_anchor=(0.12, 0.88), fontsize=8)
    left.set_title("Many roots on one PostgreSQL server (2 cores)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--roots", default=",".join(map(str, ROOTS)),
                        help="comma-separated numbers of roots (default 1,4,16,64)")
    parser.add_argument("--per-root", type=int, default=100, help="admissions per root")
    parser.add_argument("--plot", type=Path, default=Path("docs/pg_roots.png"))
    parser.add_argument("--no-plot", action="store_true")
    args, _ = parser.parse_known_args(argv)
    from memory_es.pgcluster import ThrowawayCluster

    sizes = [int(x) for x in args.roots.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")
                                     ) as d, ThrowawayCluster(
            max_connections=max(200, 8 * max(sizes) + 20)) as cluster:  # a store's pool
        for roots in sizes:
            results.append(run_roots(cluster, Path(d), roots, args.per_root))
    one = results[0]["per_s"]
    print(f"{'roots':>5}  {'adm/s':>8}  {'vs one':>6}  {'p50 ms':>7}  {'p99 ms':>7}  "
          f"{'server cores':>12}")
    for r in results:
        print(f"{r['roots']:>5}  {r['per_s']:>8.0f}  {r['per_s'] / one:>6.2f}  "
              f"{r['p50_ms']:>7.2f}  {r['p99_ms']:>7.2f}  {r['server_cores']:>12.2f}")
    drawn = not args.no_plot and plot(results, args.plot)
    if drawn:
        print(f"plot: {args.plot}")
    print(json.dumps({"bench": "pg_roots", "per_root": args.per_root, "results": results},
                     sort_keys=True))


if __name__ == "__main__":
    main()
