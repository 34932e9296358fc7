"""Remember latency at 10,000 and 100,000 stored memories, beside a floor measured in the same
run (goal p50 <= 3x the floor).

Fill (per size, untimed): a Journal-tier root reaches N stored memories the fastest honest way
through the product: N turns (realistic sentences of 40-200 characters, as in
``bench/rebuild.py``) admitted by 8 threads through the store's group commit (concurrent
admissions share one fsynced transaction), 4,000 at a time (under the 4,096-active cap), each
chunk resolved by one foreground ``drain(embed=False)``: the model-free step and one projection
catch-up (Remember never waits for a vector, so none are made). Each chunk lands on its own UTC
day (the store runs on the bench's clock while filling), so the day Remember writes to holds
only Remember lines, as a real store's today does.

Timed: ``store.remember(text, session=...)`` of a distinct sentence on the real clock. Before
it returns, one ``Memory.Recorded`` is committed with synchronous=FULL and the integrity catalog
advanced, then the index row (+ FTS5) is projected and the day's Markdown file rewritten
atomically (J1: recallable at once).

Floor (same run, same N): one FULL-sync apsw ``BEGIN IMMEDIATE; INSERT; COMMIT`` of the same
event bytes (the journal's own mapper encodes the same ``Memory.Recorded``), plus one index row
with its FTS5 row in a WAL database (synchronous=NORMAL, as the index) prefilled with the same
N texts, plus one Markdown bullet appended to a file and fsynced. Floor and Remember alternate
in rounds so disk noise hits both alike.

``--quick`` measures 1,000 and 10,000 (under a minute). Ends with one JSON line of the figures.
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.events import Memory
from memory_es.ids import text_key
from memory_es.journal.codec import MsgspecMapper
from memory_es.keystore import throwaway_key_store
from memory_es.text import journal_text
from projections.index_schema import FTS_DDL
from rebuild import sentences  # bench/ is sys.path[0] when run as a script

SEED = 20263
THREADS = 8
CHUNK = 4000  # under the 4,096 active-record cap
FILL_START = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
JOURNAL = {"mode": "journal", "embeddings": {"dim": 512}}
RATIO_TARGET = 3.0


class FillClock:
    """The store's clock: one UTC day per fill chunk, then the real time."""

    def __init__(self) -> None:
        self.day: int | None = 0

    def __call__(self) -> datetime:
        if self.day is None:
            now = datetime.now(UTC)
            return now.replace(microsecond=now.microsecond // 1000 * 1000)
        return FILL_START + timedelta(days=self.day)


def fill(store: MemoryStore, clock: FillClock, texts: list[str]) -> float:
    """Admit ``texts`` as turns (8 threads, group commit), draining every 4,000."""
    t0 = time.perf_counter()

    def admit(indices: range) -> None:
        for i in indices:
            result = store.persist_completed_turn(CompletedTurn(
                run_id=f"fill-{i}", outcome="success", answer=texts[i],
                session=f"session-{i // 25:05d}"))
            if result.status != "admitted":
                raise RuntimeError(f"turn {i}: {result}")

    for start in range(0, len(texts), CHUNK):
        clock.day = start // CHUNK
        stop = min(len(texts), start + CHUNK)
        workers = [threading.Thread(target=admit, args=(range(start + k, stop, THREADS),))
                   for k in range(THREADS)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        store.drain(embed=False)
    if store.inspect().counts.active:
        raise RuntimeError("intakes left unresolved after the last drain")
    clock.day = None
    return time.perf_counter() - t0


class Floor:
    """The three writes Remember cannot avoid, on files of the same size."""

    def __init__(self, directory: Path, texts: list[str]) -> None:
        self.journal = _db(directory / "floor-journal.db", "FULL")
        self.journal.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, state BLOB NOT NULL)")
        self.index = _db(directory / "floor-index.db", "NORMAL")
        self.index.execute("CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL "
                           "UNIQUE, text TEXT NOT NULL, day TEXT NOT NULL)")
        self.index.execute(FTS_DDL)
        with self.index:
            for i, text in enumerate(texts, start=1):
                self.index.execute("INSERT INTO memories VALUES (?, ?, ?, ?)",
                                   (i, f"fill-{i}", text, "2025-01-06"))
                self.index.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
                                   (i, text))
        self.rowid = len(texts)
        self.markdown = directory / "floor-daily.md"
        self.mapper = MsgspecMapper()

    def once(self, text: str) -> float:
        clean = journal_text(text)
        memory_id = text_key(clean)
        now = datetime.now(UTC)
        state = self.mapper.to_stored_event(Memory.recorded(
            at=now, memory_id=memory_id, kind="note", text=clean, day=now.date().isoformat(),
            status="open", source="remember", session="bench", run_hash=None,
            tier="journal")).state
        bullet = (f"- {clean}\n  <!--mem id={memory_id} type=note status=open "
                  "source=remember source_session=bench-->\n").encode()
        self.rowid += 1
        t0 = time.perf_counter()
        self.journal.execute("BEGIN IMMEDIATE")
        self.journal.execute("INSERT INTO t (state) VALUES (?)", (state,))
        self.journal.execute("COMMIT")
        self.index.execute("BEGIN IMMEDIATE")
        self.index.execute("INSERT INTO memories VALUES (?, ?, ?, ?)",
                           (self.rowid, memory_id, clean, now.date().isoformat()))
        self.index.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
                           (self.rowid, clean))
        self.index.execute("COMMIT")
        fd = os.open(self.markdown, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, bullet)
            os.fsync(fd)
        finally:
            os.close(fd)
        return time.perf_counter() - t0

    def close(self) -> None:
        self.journal.close()
        self.index.close()


def _db(path: Path, synchronous: str) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute(f"PRAGMA synchronous={synchronous}")
    return conn


def remember_once(store: MemoryStore, text: str) -> float:
    t0 = time.perf_counter()
    result = store.remember(text, session="bench")
    elapsed = time.perf_counter() - t0
    if result.status != "remembered":
        raise RuntimeError(f"remember: {result}")
    return elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(size: int, directory: Path, rounds: int, per_round: int) -> dict[str, Any]:
    texts = sentences(size, SEED + size)
    extra = [f"Remember {i}: {t}" for i, t in
             enumerate(sentences(rounds * per_round + 20, SEED + size + 1))]
    root = directory / f"root-{size}"
    clock = FillClock()
    ours: list[float] = []
    floor_s: list[float] = []
    with MemoryStore.open(root, parse_config(JOURNAL), clock=clock, background=False) as store:
        fill_s = fill(store, clock, texts)
        stored = store.vector_backlog()  # every live memory, none embedded: exactly the fill
        if stored != size:
            raise RuntimeError(f"{stored} memories stored for {size} turns")
        (directory / f"floor-{size}").mkdir()
        floor = Floor(directory / f"floor-{size}", texts)
        for text in extra[:10]:  # warm caches on both sides
            remember_once(store, text)
            floor.once(text)
        texts_left = iter(extra[10:])
        for _ in range(rounds):
            batch = [next(texts_left) for _ in range(per_round)]
            ours += [remember_once(store, t) for t in batch]
            floor_s += [floor.once(t) for t in batch]
        floor.close()
    p50, floor_p50 = statistics.median(ours), statistics.median(floor_s)
    return {"stored": size, "fill_s": round(fill_s, 1), "n": len(ours),
            "p50_ms": round(p50 * 1e3, 3), "p95_ms": round(pct(ours, 0.95) * 1e3, 3),
            "floor_p50_ms": round(floor_p50 * 1e3, 3),
            "floor_p95_ms": round(pct(floor_s, 0.95) * 1e3, 3),
            "ratio": round(p50 / floor_p50, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 stored")
    parser.add_argument("--sizes", type=int, nargs="+", help="stored memories per run "
                        "(default 10,000 and 100,000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=40)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    sizes = args.sizes or ([1_000, 10_000] if args.quick else [10_000, 100_000])
    results = []
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-",
                                     dir=os.environ.get("TMPDIR")) as d:
        for size in sizes:
            r = measure(size, Path(d), args.rounds, args.per_round)
            results.append(r)
            ok = "✓" if r["ratio"] <= RATIO_TARGET else "✗"
            print(f"remember at {size:>7,} stored  p50 {r['p50_ms']:.3f} ms  "
                  f"p95 {r['p95_ms']:.3f} ms   floor p50 {r['floor_p50_ms']:.3f} ms  "
                  f"p95 {r['floor_p95_ms']:.3f} ms   ratio {r['ratio']:.2f} "
                  f"(goal <= {RATIO_TARGET}) {ok}   (fill {r['fill_s']:.0f} s)", flush=True)
    print(json.dumps({"bench": "remember", "quick": args.quick, "sizes": results},
                     sort_keys=True))


if __name__ == "__main__":
    with throwaway_key_store():  # the bench's roots are thrown away, so are their keys
        main()
