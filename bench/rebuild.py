"""Rebuild and health of a large journal, each beside a floor measured in the same run.

A Lite root of N observations (default 100,000; realistic sentences of 40-200 characters from
a seeded word list, spread over ~60 days) is admitted through ``MemoryStore`` and drained, so
its journal holds ~3 events per observation (Intake.Admitted, Memory.Recorded,
Intake.Resolved). Then, each in a fresh subprocess so that generating the journal does not
pollute the peak RSS:

- floor: open journal.db read-only with apsw, read every row in position order, decode each
  with the project's ``MsgspecMapper`` and bulk-insert the observation texts into a fresh FTS5
  table (same tokenizer and pragmas as the index) in one transaction.
- rebuild: ``memory_es.transfer.rebuild_root`` on the closed root (verify the chain, replay every
  event into a new index generation, render and compare Markdown).
  Targets: floor events/s / rebuild events/s <= 2.0; peak RSS < 500 MB.
- health: ``MemoryRoot.health`` on the same root (must be clean).
  Target: health time <= 1.5x rebuild time.

With ``--rounds`` > 1 the three phases alternate and medians are reported. ``--cache DIR``
keeps the generated root between runs. Ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 20260
DAYS = 60
THREADS = 8
DRAIN_EVERY = 2000  # the store rejects admissions beyond 4,096 active intakes
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)

RATIO_TARGET = 2.0
RSS_TARGET_MB = 500.0
HEALTH_TARGET = 1.5

# --------------------------------------------------------------------------------------------
# Journal generation.

_FUNCTION_WORDS = (
    "the", "a", "to", "and", "of", "in", "for", "on", "with", "is", "was", "that", "it", "at",
    "by", "from", "as", "be", "this", "we", "they", "should", "will", "after", "before", "about",
    "our", "their", "but", "not", "into", "next", "when", "still", "needs", "has",
)
_NAMES = ("Dana", "Ravi", "Mei", "Jonas", "Amara", "Luis", "Priya", "Olek", "Sana", "Theo")
_SYLLABLES = tuple(
    c + v for c in ("b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "st",
                    "tr", "pl", "gr", "ch", "sh") for v in ("a", "e", "i", "o", "u", "ai", "ou")
)


def vocabulary(rng: random.Random, size: int = 5000) -> tuple[list[str], list[float]]:
    """Pseudo-words (1-4 syllables) plus function words, with Zipf-like cumulative weights."""
    words: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 1, 2, 2, 2, 3))))
        if rng.random() < 0.3:
            word += rng.choice(("s", "ed", "ing", "er", "ly", "tion"))
        words.add(word)
    pseudo = sorted(words)
    rng.shuffle(pseudo)
    ordered = list(_FUNCTION_WORDS) + pseudo
    weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(ordered))]
    return ordered, list(itertools.accumulate(weights))


def sentences(n: int, seed: int = SEED) -> list[str]:
    """``n`` varied sentences of 40-200 characters (mostly 60-140), deterministic per seed."""
    rng = random.Random(seed)
    words, cum = vocabulary(rng)
    out = []
    for _ in range(n):
        target = min(200, max(40, int(rng.triangular(40, 200, 85))))
        parts: list[str] = []
        length = -1
        while length < target:
            r = rng.random()
            if r < 0.03:
                part = rng.choice(_NAMES)
            elif r < 0.05:
                part = str(rng.randint(2, 9999))
            elif r < 0.06:
                part = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            else:
                part = rng.choices(words, cum_weights=cum)[0]
                if rng.random() < 0.04:
                    part += ","
            if length + 1 + len(part) > 199 and length >= 40:
                break
            parts.append(part)
            length += 1 + len(part)
        text = " ".join(parts).rstrip(",")[:199]
        out.append(text[0].upper() + text[1:] + rng.choice((".", ".", ".", "!", "?")))
    return out


def generate(root: Path, observations: int, seed: int) -> float:
    """Admit ``observations`` turns through the store (8 threads), draining as it goes."""
    from memory_es import CompletedTurn, MemoryStore

    answers = sentences(observations, seed)
    rng = random.Random(seed + 1)
    sessions = [f"session-{rng.randrange(observations // 25 + 1):05d}" for _ in answers]
    # The clock ticks per call (admissions and drains), spreading the journal over DAYS days.
    step = timedelta(milliseconds=DAYS * 86_400_000 // max(1, observations))
    ticks = itertools.count()  # next() on a count is atomic under the GIL

    def clock() -> datetime:
        return START + next(ticks) * step

    t0 = time.perf_counter()
    with MemoryStore.open(root, clock=clock, background=False) as store:
        def admit(indices: range) -> None:
            for i in indices:
                result = store.persist_completed_turn(CompletedTurn(
                    run_id=f"r{i}", outcome="success", answer=answers[i], session=sessions[i]))
                if result.status != "admitted":
                    raise RuntimeError(f"turn {i}: {result}")

        for start in range(0, observations, DRAIN_EVERY):
            stop = min(observations, start + DRAIN_EVERY)
            workers = [threading.Thread(target=admit, args=(range(start + k, stop, THREADS),))
                       for k in range(THREADS)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            store.drain()
        if store.inspect().counts.active:
            raise RuntimeError("intakes left unresolved after the last drain")
    return time.perf_counter() - t0


def build_root(directory: Path, observations: int, seed: int,
               cache: Path | None) -> tuple[Path, float | None]:
    """The generated root (from the cache when present); seconds spent generating, or None."""
    base = cache if cache is not None else directory
    base.mkdir(parents=True, exist_ok=True)
    root = base / f"rebuild-root-{observations}-{seed}"
    done = base / f"rebuild-root-{observations}-{seed}.done"  # outside the root: health
    if cache is not None and done.exists() and root.is_dir():
        return root, None
    done.unlink(missing_ok=True)
    seconds: float = run_child("generate", root, base, observations=observations, seed=seed)[
        "seconds"]
    done.write_text("ok\n")
    return root, seconds


# --------------------------------------------------------------------------------------------
# Child phases: each runs in a fresh interpreter and prints one JSON line.


def peak_rss_mb() -> float:
    """This process's peak RSS. Linux carries ru_maxrss across exec (a vfork-spawned child
    starts at its parent's peak), so the parent keeps itself small: it generates the journal
    in a child too."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    with contextlib.suppress(OSError):  # cross-check: this address space's own high-water mark
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss = max(rss, int(line.split()[1]) / 1024)
    return rss


def phase_generate(root: Path, observations: int, seed: int) -> dict[str, Any]:
    shutil.rmtree(root, ignore_errors=True)
    return {"seconds": generate(root, observations, seed), "peak_rss_mb": peak_rss_mb()}


def phase_floor(root: Path, scratch: Path) -> dict[str, Any]:
    import apsw
    from eventsourcing.persistence import StoredEvent

    from memory_es.events import Memory
    from memory_es.journal import MsgspecMapper
    from memory_es.journal.open import open_journal

    scratch.mkdir(parents=True, exist_ok=True)
    fts_path = scratch / f"floor-{os.getpid()}-{time.monotonic_ns()}.db"
    # Content fields are sealed and opening them is work any rebuild must do: the
    # floor decodes with the root's read-only sealer, found (chain verified, keys opened)
    # before its clock starts.
    opened = open_journal(root, writable=False, create=False)
    t0 = time.perf_counter()
    mapper = MsgspecMapper(opened.recorder.sealer)
    journal = apsw.Connection(str(root / "journal.db"), flags=apsw.SQLITE_OPEN_READONLY)
    fts = apsw.Connection(str(fts_path))
    fts.execute("PRAGMA journal_mode=WAL").fetchall()
    fts.execute("PRAGMA synchronous=NORMAL")
    fts.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
    events = 0
    texts: list[tuple[int, str]] = []
    for position, oid, version, topic, state in journal.execute(
        "SELECT position, originator_id, originator_version, topic, state FROM events "
        "ORDER BY position"
    ):
        event = mapper.to_domain_event(StoredEvent(oid, version, topic, state))
        events += 1
        if isinstance(event, Memory.Recorded):
            texts.append((position, event.text))
    with fts:
        fts.executemany("INSERT INTO t (rowid, text) VALUES (?, ?)", texts)
    journal.close()
    opened.close()
    fts.close()
    seconds = time.perf_counter() - t0
    for suffix in ("", "-wal", "-shm"):
        Path(str(fts_path) + suffix).unlink(missing_ok=True)
    return {"seconds": seconds, "events": events, "observations": len(texts),
            "peak_rss_mb": peak_rss_mb()}


def phase_rebuild(root: Path) -> dict[str, Any]:
    from memory_es.transfer import rebuild_root

    t0 = time.perf_counter()
    report = rebuild_root(root)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "events": report.position, "generation": report.generation,
            "written": len(report.written), "removed": len(report.removed),
            "peak_rss_mb": peak_rss_mb()}


def phase_health(root: Path) -> dict[str, Any]:
    from memory_es.root import MemoryRoot

    t0 = time.perf_counter()
    report = MemoryRoot.open(root).health()
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "status": report.status, "findings": len(report.findings),
            "events": report.journal_position, "peak_rss_mb": peak_rss_mb()}


def run_phase(script: str, phase: str, root: Path, *args: str) -> dict[str, Any]:
    """Run one phase of a bench script in a fresh interpreter (so its peak RSS is its own);
    the child's last stdout line is its JSON result. Shared with bench/worker.py."""
    cmd = [sys.executable, os.path.abspath(script), "--phase", phase, "--root", str(root), *args]
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_child(phase: str, root: Path, scratch: Path, *, observations: int = 0,
              seed: int = SEED) -> dict[str, Any]:
    return run_phase(__file__, phase, root, "--scratch", str(scratch),
                     "--observations", str(observations), "--seed", str(seed))


# --------------------------------------------------------------------------------------------


def _cache_argument() -> Path | None:
    """``--cache DIR`` of this command line, read before the parser runs (the key store is
    chosen before anything opens a root)."""
    for n, arg in enumerate(sys.argv):
        if arg == "--cache" and n + 1 < len(sys.argv):
            return Path(sys.argv[n + 1])
        if arg.startswith("--cache="):
            return Path(arg.split("=", 1)[1])
    return None


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3, help="floor/rebuild/health rounds")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep (and reuse) the generated root in this directory")
    parser.add_argument("--phase", choices=("generate", "floor", "rebuild", "health"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    if args.phase is not None:
        if args.phase == "generate":
            print(json.dumps(phase_generate(args.root, args.observations, args.seed)))
        elif args.phase == "floor":
            print(json.dumps(phase_floor(args.root, args.scratch)))
        elif args.phase == "rebuild":
            print(json.dumps(phase_rebuild(args.root)))
        else:
            print(json.dumps(phase_health(args.root)))
        return

    wall0 = time.perf_counter()
    floors: list[dict[str, Any]] = []
    rebuilds: list[dict[str, Any]] = []
    healths: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        directory = Path(d)
        root, gen_seconds = build_root(directory, args.observations, args.seed, args.cache)
        if gen_seconds is None:
            print(f"journal: reusing {root}", flush=True)
        else:
            print(f"journal: {args.observations} observations admitted and drained in "
                  f"{gen_seconds:.1f} s", flush=True)
        scratch = directory / "scratch"
        for _ in range(args.rounds):
            floors.append(run_child("floor", root, scratch))
            rebuilds.append(run_child("rebuild", root, scratch))
            healths.append(run_child("health", root, scratch))
            if healths[-1]["status"] != "clean":
                raise SystemExit(f"health on the rebuilt root is not clean: {healths[-1]}")

    events = rebuilds[0]["events"]
    if any(f["events"] != events for f in floors) or any(r["events"] != events for r in rebuilds):
        raise SystemExit("floor and rebuild saw different event counts")
    observations = floors[0]["observations"]
    floor_s = statistics.median(f["seconds"] for f in floors)
    rebuild_s = statistics.median(r["seconds"] for r in rebuilds)
    health_s = statistics.median(h["seconds"] for h in healths)
    rss = max(r["peak_rss_mb"] for r in rebuilds)
    figures = {
        "bench": "rebuild",
        "events": events,
        "observations": observations,
        "events_per_s": round(events / rebuild_s),
        "floor_events_per_s": round(events / floor_s),
        "ratio": round(rebuild_s / floor_s, 3),
        "peak_rss_mb": round(rss, 1),
        "floor_peak_rss_mb": round(max(f["peak_rss_mb"] for f in floors), 1),
        "health_vs_rebuild": round(health_s / rebuild_s, 3),
        "rebuild_s": round(rebuild_s, 3),
        "floor_s": round(floor_s, 3),
        "health_s": round(health_s, 3),
        "health_peak_rss_mb": round(max(h["peak_rss_mb"] for h in healths), 1),
        "markdown_rewritten": max(r["written"] + r["removed"] for r in rebuilds),
        "rounds": args.rounds,
    }
    ratio_ok = figures["ratio"] <= RATIO_TARGET
    rss_ok = rss < RSS_TARGET_MB
    health_ok = figures["health_vs_rebuild"] <= HEALTH_TARGET
    print(f"{events} events ({observations} observations), median of {args.rounds} round(s)")
    print(f"  {'':<9}{'seconds':>9}{'events/s':>11}{'peak RSS':>11}")
    print(f"  {'rebuild':<9}{rebuild_s:>9.2f}{figures['events_per_s']:>11}{rss:>8.0f} MB")
    print(f"  {'floor':<9}{floor_s:>9.2f}{figures['floor_events_per_s']:>11}"
          f"{figures['floor_peak_rss_mb']:>8.0f} MB")
    print(f"  {'health':<9}{health_s:>9.2f}{round(events / health_s):>11}"
          f"{figures['health_peak_rss_mb']:>8.0f} MB")
    print(f"ratio {figures['ratio']:.2f} (target <= {RATIO_TARGET}) {mark(ratio_ok)}   "
          f"peak RSS {rss:.0f} MB (target < {RSS_TARGET_MB:.0f}) {mark(rss_ok)}   "
          f"health {figures['health_vs_rebuild']:.2f}x rebuild (target <= {HEALTH_TARGET}) "
          f"{mark(health_ok)}")
    print(f"(Markdown files rewritten by rebuild: {figures['markdown_rewritten']}; "
          f"whole run {time.perf_counter() - wall0:.0f} s)")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    from memory_es.keystore import KEY_STORE_ENV, throwaway_key_store

    with contextlib.ExitStack() as keys:
        if "--phase" in sys.argv:  # a child: the parent's key store holds the root's keys
            pass
        elif (cache := _cache_argument()) is not None:  # a cached root's keys live beside it
            os.environ[KEY_STORE_ENV] = str((cache / "keys").absolute())
        else:  # the bench's roots are thrown away, so are their keys
            keys.enter_context(throwaway_key_store())
        main()
