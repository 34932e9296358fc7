"""Load: the 4,096 active-record cap, and N admissions (default 50,000) processed to resolution
by the background worker with bounded memory, beside a floor measured in the same run.

Each phase runs in a fresh subprocess (so its peak RSS is its own) on a fresh root:

- capacity: ``MemoryStore.open(root, background=False)``; 8 threads admit 4,096 distinct turns
  (all admitted); the 4,097th is rejected with ``too_many_active_records``; a repeat of an
  admitted turn is still a ``duplicate``; after a reopen, exactly the 4,096 admitted intakes
  are pending (nothing lost, nothing extra).
- worker: the default ``MemoryStore.open(root)`` (background worker on). 8 host threads admit
  N turns (realistic sentences of 40-200 characters, as in ``bench/rebuild.py``) as fast as they
  can; a ``too_many_active_records`` rejection is backpressure (the worker resolves records
  meanwhile): the host waits 1-5 ms and retries the same turn, and those rejections are
  counted. Then the counts are polled until N are resolved and none pending, and the store is
  closed. VmRSS is sampled every 50 ms against the number of admissions so far; peak RSS is
  ru_maxrss / VmHWM of the child (see ``bench/rebuild.py``).
- floor: the same N turns into a root opened with ``background=False`` (no worker thread),
  8 threads admitting 4,000 at a time, each chunk followed by a foreground ``store.drain()``:
  admission plus projection with no overlap between them.
- health: ``MemoryRoot.health`` on the worker's root (must be clean).

``ratio`` is worker seconds / floor seconds to full resolution (<= 1.0: the background worker
loses nothing against draining in the foreground). Targets: capacity check passes; health
clean; peak RSS < 500 MB; RSS at N admissions no more than 1.5x RSS at N/5 admissions.
The floor and worker phases alternate for ``--rounds`` rounds (default 3; medians reported;
~50 s a round at N = 50,000 on 2 cores). Ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from rebuild import (  # bench/ is sys.path[0] when run as a script
    mark,
    peak_rss_mb,
    run_phase,
    sentences,
)

SEED = 20261
THREADS = 8
FLOOR_DRAIN_EVERY = 4000  # under the 4,096 active-record cap
CAPACITY = 4096  # memory_es.intake.MAX_ACTIVE (asserted in the capacity phase)
BACKOFF_S = (0.001, 0.005)  # host wait after a too_many_active_records rejection
SAMPLE_S = 0.05  # VmRSS sampling period
POLL_S = 0.05  # resolution polling period
RESOLVE_TIMEOUT_S = 600.0

RSS_TARGET_MB = 500.0
GROWTH_TARGET = 1.5  # RSS at N admissions / RSS at N/5 admissions


def vm_rss_kib() -> int:
    """Current resident set size of this process (VmRSS), in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def turns(n: int, seed: int, prefix: str) -> list[Any]:
    """``n`` completed turns with realistic answers, spread over ~n/25 sessions."""
    from memory_es import CompletedTurn

    rng = random.Random(seed + 1)
    return [CompletedTurn(run_id=f"{prefix}-{i}", outcome="success", answer=answer,
                          session=f"session-{rng.randrange(n // 25 + 1):05d}")
            for i, answer in enumerate(sentences(n, seed))]


def run_threads(target: Any, n: int) -> None:
    """Run ``target(indices)`` on THREADS threads, thread k taking indices k, k+8, ..."""
    workers = [threading.Thread(target=target, args=(range(k, n, THREADS),))
               for k in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


# --------------------------------------------------------------------------------------------
# Child phases: each runs in a fresh interpreter and prints one JSON line.


def phase_capacity(root: Path, seed: int) -> dict[str, Any]:
    from memory_es import MemoryStore
    from memory_es.intake import MAX_ACTIVE

    if MAX_ACTIVE != CAPACITY:
        raise RuntimeError(f"MAX_ACTIVE is {MAX_ACTIVE}, the bench expects {CAPACITY}")
    batch = turns(CAPACITY + 1, seed, "cap")
    ids: list[str | None] = [None] * CAPACITY
    statuses: dict[str, int] = {}
    lock = threading.Lock()
    t0 = time.perf_counter()
    with MemoryStore.open(root, background=False) as store:
        def admit(indices: range) -> None:
            for i in indices:
                result = store.persist_completed_turn(batch[i])
                ids[i] = result.intake_id
                with lock:
                    statuses[result.status] = statuses.get(result.status, 0) + 1

        run_threads(admit, CAPACITY)
        admit_s = time.perf_counter() - t0
        over = store.persist_completed_turn(batch[CAPACITY])
        repeat = store.persist_completed_turn(batch[0])
    seconds_before_reopen = time.perf_counter() - t0
    with MemoryStore.open(root, background=False) as store:
        report = store.inspect()
    seconds = time.perf_counter() - t0
    counts = report.counts
    pending_ids = {r.id for r in report.records if r.state == "pending"}
    checks = {
        "all_admitted": statuses == {"admitted": CAPACITY},
        "over_rejected": over.status == "rejected" and over.code == "too_many_active_records",
        "repeat_duplicate": repeat.status == "duplicate" and repeat.intake_id == ids[0],
        "reopen_pending": counts.pending == CAPACITY and counts.total == CAPACITY,
        "nothing_lost": pending_ids == set(ids),
        "rejected_not_recorded": over.intake_id not in pending_ids,
    }
    return {"seconds": seconds, "admit_s": admit_s, "before_reopen_s": seconds_before_reopen,
            "statuses": statuses, "over": over.to_json(), "repeat": repeat.to_json(),
            "pending_after_reopen": counts.pending, "checks": checks,
            "ok": all(checks.values()), "peak_rss_mb": peak_rss_mb()}


def phase_worker(root: Path, n: int, seed: int) -> dict[str, Any]:
    from memory_es import MemoryStore

    batch = turns(n, seed, "w")
    admitted = [0] * THREADS  # each host thread writes only its own slot
    rejections = [0] * THREADS
    samples: list[tuple[float, int, int]] = []  # (seconds, admitted so far, VmRSS KiB)
    sampling = threading.Event()
    rss_start = vm_rss_kib()

    def sample() -> None:
        while not sampling.wait(SAMPLE_S):
            samples.append((time.perf_counter() - t0, sum(admitted), vm_rss_kib()))

    t0 = time.perf_counter()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    store = MemoryStore.open(root)
    try:
        def admit(indices: range) -> None:
            k = indices.start
            rng = random.Random(seed + k)
            for i in indices:
                while True:
                    result = store.persist_completed_turn(batch[i])
                    if result.status == "admitted":
                        break
                    if result.code != "too_many_active_records":
                        raise RuntimeError(f"turn {i}: {result}")
                    rejections[k] += 1
                    time.sleep(rng.uniform(*BACKOFF_S))
                admitted[k] += 1

        run_threads(admit, n)
        admit_s = time.perf_counter() - t0
        if sum(admitted) != n:
            raise RuntimeError(f"admitted {sum(admitted)} of {n} (a host thread failed)")
        rss_admitted = vm_rss_kib()
        # inspect() with one intake id still counts every record but builds one record.
        probe = batch[-1]
        from memory_es.ids import run_hash

        probe_id = run_hash(probe.run_id)
        deadline = time.monotonic() + RESOLVE_TIMEOUT_S
        polls = 0
        while True:
            counts = store.inspect(probe_id).counts
            polls += 1
            if counts.resolved == n and counts.pending == 0 and counts.dead == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"not resolved after {RESOLVE_TIMEOUT_S:.0f} s: {counts.to_json()}")
            time.sleep(POLL_S)
        resolve_s = time.perf_counter() - t0
        rss_resolved = vm_rss_kib()
    finally:
        c0 = time.perf_counter()
        store.close()
        close_s = time.perf_counter() - c0
    sampling.set()
    sampler.join()
    seconds = time.perf_counter() - t0

    marks = {}  # VmRSS (MB) at the first sample reaching each fifth of the admissions
    for fifth in range(1, 6):
        target = n * fifth // 5
        rss = next((r for _, a, r in samples if a >= target), rss_admitted)
        marks[target] = round(rss / 1024, 1)
    return {"admit_s": admit_s, "resolve_s": resolve_s, "close_s": close_s, "seconds": seconds,
            "rejections": sum(rejections), "counts": counts.to_json(), "polls": polls,
            "rss_start_mb": round(rss_start / 1024, 1), "rss_marks_mb": marks,
            "rss_admitted_mb": round(rss_admitted / 1024, 1),
            "rss_resolved_mb": round(rss_resolved / 1024, 1),
            "rss_sampled_max_mb": round(max((r for _, _, r in samples), default=0) / 1024, 1),
            "samples": len(samples), "peak_rss_mb": peak_rss_mb()}


def phase_floor(root: Path, n: int, seed: int) -> dict[str, Any]:
    from memory_es import MemoryStore

    batch = turns(n, seed, "w")
    admit_s = drain_s = 0.0
    t0 = time.perf_counter()
    with MemoryStore.open(root, background=False) as store:
        for start in range(0, n, FLOOR_DRAIN_EVERY):
            stop = min(n, start + FLOOR_DRAIN_EVERY)

            def admit(indices: range, start: int = start) -> None:
                for i in indices:
                    result = store.persist_completed_turn(batch[start + i])
                    if result.status != "admitted":
                        raise RuntimeError(f"turn {start + i}: {result}")

            a0 = time.perf_counter()
            run_threads(admit, stop - start)
            d0 = time.perf_counter()
            store.drain()
            admit_s += d0 - a0
            drain_s += time.perf_counter() - d0
        resolve_s = time.perf_counter() - t0
        counts = store.inspect().counts
    seconds = time.perf_counter() - t0
    if counts.resolved != n or counts.active:
        raise RuntimeError(f"floor left work unresolved: {counts.to_json()}")
    return {"resolve_s": resolve_s, "admit_s": admit_s, "drain_s": drain_s, "seconds": seconds,
            "counts": counts.to_json(), "rss_end_mb": round(vm_rss_kib() / 1024, 1),
            "peak_rss_mb": peak_rss_mb()}


def phase_health(root: Path) -> dict[str, Any]:
    from memory_es.root import MemoryRoot

    t0 = time.perf_counter()
    report = MemoryRoot.open(root).health()
    return {"seconds": time.perf_counter() - t0, "status": report.status,
            "findings": [str(f) for f in report.findings][:10],
            "events": report.journal_position, "peak_rss_mb": peak_rss_mb()}


def run_child(phase: str, root: Path, *, admissions: int = 0, seed: int = SEED) -> dict[str, Any]:
    return run_phase(__file__, phase, root, "--admissions", str(admissions), "--seed", str(seed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admissions", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3, help="floor/worker rounds (median)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--phase", choices=("capacity", "worker", "floor", "health"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # every backpressure rejection logs memory_degraded
    n: int = args.admissions
    if n < 5 and args.phase in (None, "worker", "floor"):
        parser.error("--admissions must be at least 5")

    if args.phase is not None:
        if args.phase == "capacity":
            print(json.dumps(phase_capacity(args.root, args.seed)))
        elif args.phase == "worker":
            print(json.dumps(phase_worker(args.root, n, args.seed)))
        elif args.phase == "floor":
            print(json.dumps(phase_floor(args.root, n, args.seed)))
        else:
            print(json.dumps(phase_health(args.root)))
        return

    wall0 = time.perf_counter()
    floors: list[dict[str, Any]] = []
    workers: list[dict[str, Any]] = []
    healths: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        directory = Path(d)
        cap = run_child("capacity", directory / "capacity", seed=args.seed)
        print(f"capacity: {CAPACITY} admitted in {cap['admit_s']:.2f} s, 4,097th "
              f"{cap['over']['status']} ({cap['over']['code']}), repeat "
              f"{cap['repeat']['status']}, {cap['pending_after_reopen']} pending after reopen "
              f"{mark(cap['ok'])} ({cap['seconds']:.2f} s in all)", flush=True)
        for r in range(args.rounds):
            floors.append(run_child("floor", directory / f"floor-{r}", admissions=n,
                                    seed=args.seed))
            print(f"floor: {n} resolved in {floors[-1]['resolve_s']:.1f} s", flush=True)
            workers.append(run_child("worker", directory / f"worker-{r}", admissions=n,
                                     seed=args.seed))
            print(f"worker: {n} resolved in {workers[-1]['resolve_s']:.1f} s", flush=True)
            healths.append(run_child("health", directory / f"worker-{r}"))

    worker_s = statistics.median(w["resolve_s"] for w in workers)
    admit_s = statistics.median(w["admit_s"] for w in workers)
    floor_s = statistics.median(f["resolve_s"] for f in floors)
    floor_admit_s = statistics.median(f["admit_s"] for f in floors)
    floor_drain_s = statistics.median(f["drain_s"] for f in floors)
    health_s = statistics.median(h["seconds"] for h in healths)
    w0 = sorted(workers, key=lambda w: w["resolve_s"])[len(workers) // 2]  # median round's RSS
    marks = {int(k): v for k, v in w0["rss_marks_mb"].items()}
    early, last = min(marks), max(marks)
    peak = max(w["peak_rss_mb"] for w in workers)
    health_clean = all(h["status"] == "clean" for h in healths)
    figures = {
        "bench": "worker",
        "admissions": n,
        "admissions_per_s": round(n / admit_s),
        "resolutions_per_s": round(n / worker_s),
        "floor_resolutions_per_s": round(n / floor_s),
        "floor_admissions_per_s": round(n / floor_admit_s),
        "ratio": round(worker_s / floor_s, 3),
        "worker_s": round(worker_s, 3),
        "worker_admit_s": round(admit_s, 3),
        "worker_close_s": round(max(w["close_s"] for w in workers), 3),
        "floor_s": round(floor_s, 3),
        "floor_admit_s": round(floor_admit_s, 3),
        "floor_drain_s": round(floor_drain_s, 3),
        "backpressure_rejections": max(w["rejections"] for w in workers),
        "peak_rss_mb": round(peak, 1),
        "floor_peak_rss_mb": round(max(f["peak_rss_mb"] for f in floors), 1),
        "rss_mark_early": early,
        "rss_10k_mb": marks[early],
        "rss_50k_mb": marks[last],
        "rss_resolved_mb": w0["rss_resolved_mb"],
        "rss_growth": round(marks[last] / marks[early], 3),
        "rss_mb_per_10k": round((marks[last] - marks[early]) * 10_000 / max(1, last - early), 1),
        "capacity_ok": cap["ok"],
        "capacity_s": round(cap["seconds"], 3),
        "capacity_admit_s": round(cap["admit_s"], 3),
        "health": "clean" if health_clean else healths[0]["status"],
        "health_s": round(health_s, 3),
        "health_peak_rss_mb": round(max(h["peak_rss_mb"] for h in healths), 1),
        "events": healths[0]["events"],
        "rounds": args.rounds,
    }
    rss_ok = peak < RSS_TARGET_MB
    growth_ok = figures["rss_growth"] <= GROWTH_TARGET
    print(f"{n} admissions, 8 host threads, median of {args.rounds} round(s)")
    print(f"  {'':<8}{'to resolve':>11}{'admit':>8}{'adm/s':>8}{'res/s':>8}{'peak RSS':>11}")
    print(f"  {'worker':<8}{worker_s:>9.1f} s{admit_s:>6.1f} s"
          f"{figures['admissions_per_s']:>8}{figures['resolutions_per_s']:>8}{peak:>8.0f} MB")
    print(f"  {'floor':<8}{floor_s:>9.1f} s{floor_admit_s:>6.1f} s"
          f"{figures['floor_admissions_per_s']:>8}{figures['floor_resolutions_per_s']:>8}"
          f"{figures['floor_peak_rss_mb']:>8.0f} MB   (drains {floor_drain_s:.1f} s)")
    print(f"  backpressure rejections {figures['backpressure_rejections']} (host waits "
          f"{BACKOFF_S[0] * 1e3:.0f}-{BACKOFF_S[1] * 1e3:.0f} ms and retries)")
    print("  VmRSS by admissions: " + ", ".join(f"{k}: {v:.0f} MB" for k, v in marks.items())
          + f"; all resolved: {w0['rss_resolved_mb']:.0f} MB "
          f"(+{figures['rss_mb_per_10k']:.1f} MB per 10,000 admissions)")
    print(f"ratio {figures['ratio']:.2f} (worker time / floor time)   "
          f"capacity {mark(cap['ok'])}   health {figures['health']} {mark(health_clean)}   "
          f"peak RSS {peak:.0f} MB (target < {RSS_TARGET_MB:.0f}) {mark(rss_ok)}   "
          f"RSS {last} vs {early} admissions {figures['rss_growth']:.2f}x "
          f"(target <= {GROWTH_TARGET}) {mark(growth_ok)}")
    print(f"(health {health_s:.1f} s on {figures['events']} events; "
          f"whole run {time.perf_counter() - wall0:.0f} s)")
    print(json.dumps(figures, sort_keys=True))
    if not (cap["ok"] and health_clean):
        raise SystemExit(f"capacity {cap['checks']}; health {healths[0]}")


if __name__ == "__main__":
    import sys

    from memory_es.keystore import throwaway_key_store

    if "--phase" in sys.argv:  # a child: the parent's key store holds the root's keys
        main()
    else:
        with throwaway_key_store():  # the bench's roots are thrown away, so are their keys
            main()
