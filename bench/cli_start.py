"""How fast the CLI answers from a cold process.

Each command runs as a whole new process, as a user's shell runs it, alternating with its floor
so that both see the same machine:

- ``memory-es --version`` beside ``python -c pass`` (goal: at most 100 ms over the floor);
- ``memory-es search`` on a Journal root of ``--memories`` memories (default 10,000) embedded by
  the offline default model (USE multilingual v3), beside ``python -c pass`` and beside the
  same process stopped after its imports (``python -c "import ..."`` of :data:`SEARCH_IMPORTS`), so
  the figure splits into interpreter, imports and the read itself (goal: at most 500 ms over
  ``python -c pass``).

The root is built once through ``MemoryStore`` (admitted in batches below the active cap,
drained and embedded) and the model's load cache is filled by one untimed run, as any second
``memory-es`` command on a machine finds it. Reports median and p90 of ``--runs`` runs each
and ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.embeddings.use_cache import CACHE_ENV
from memory_es.keystore import KEY_STORE_ENV

# What ``memory-es search`` imports before it reads: the CLI, the config, the reader and the
# question path, and the default model's code (the CLI imports these inside the command).
SEARCH_IMPORTS = ("memory_es.cli", "memory_es.cli.reading", "memory_es.config", "memory_es.root",
                  "memory_es.recall.engine", "memory_es.recall.sections.result",
                  "memory_es.embeddings.use")

WORDS = ("dentist", "appointment", "tuesday", "mortgage", "bank", "priya", "berlin", "offsite",
         "washing", "machine", "repair", "garden", "tomatoes", "bicycle", "invoice", "passport",
         "renewal", "flight", "lisbon", "hotel", "booking", "sister", "birthday", "cake",
         "recipe", "piano", "lesson", "school", "kuba", "skoda", "insurance")
QUERY = "when is the dentist appointment?"
CONFIG = {"mode": "journal", "embeddings": {"provider": "local"}}
BATCH = 2_000  # admissions between drains: below the 4,096 active intakes (capacity)


def build_root(root: Path, memories: int) -> float:
    """A Journal root of ``memories`` distinct notes, drained and embedded; seconds taken."""
    rng = random.Random(16)
    t0 = time.perf_counter()
    with MemoryStore.open(root, parse_config(CONFIG), background=False) as store:
        for n in range(memories):
            text = f"Note {n}: " + " ".join(rng.choice(WORDS) for _ in range(10)) + "."
            result = store.persist_completed_turn(
                CompletedTurn(run_id=f"cli-{n}", outcome="success", answer=text))
            if result.status != "admitted":
                raise SystemExit(f"note {n} not admitted: {result}")
            if n % BATCH == BATCH - 1:
                store.drain()
        store.drain()
        if store.inspect().vectors_pending:
            raise SystemExit("the root still has memories without a vector")
    return time.perf_counter() - t0


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} ... failed: {done.stderr.strip()[-500:]}")
    return elapsed


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(ordered),
            "p90_ms": 1000 * ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--small", action="store_true", help="smoke test: 200 memories, 3 runs")
    args = parser.parse_args()
    if args.small:
        args.memories, args.runs = 200, 3
    logging.disable(logging.WARNING)
    bindir = Path(sys.executable).parent
    cli = [str(bindir / "memory-es")] if (bindir / "memory-es").exists() else \
        [sys.executable, "-m", "memory_es.cli"]
    with tempfile.TemporaryDirectory(prefix="memory-es-cli-",
                                     dir=os.environ.get("TMPDIR")) as d:
        base = Path(d)
        env = {**os.environ, KEY_STORE_ENV: str(base / "keys"),
               CACHE_ENV: str(base / "models")}
        os.environ.update({KEY_STORE_ENV: env[KEY_STORE_ENV], CACHE_ENV: env[CACHE_ENV]})
        root = base / "root"
        build_s = build_root(root, args.memories)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "imports only": [sys.executable, "-c", f"import {', '.join(SEARCH_IMPORTS)}"],
            "memory-es --version": [*cli, "--version"],
            "memory-es search": [*cli, "search", "--root", str(root), QUERY],
        }
        timed(commands["memory-es search"], env)  # fills the model's load cache
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                samples[name].append(timed(argv, env))
    figures: dict[str, Any] = {name: summary(s) for name, s in samples.items()}
    floor = figures["python -c pass"]["p50_ms"]
    print(f"{args.memories:,}-memory Journal root built in {build_s:.1f} s; "
          f"{args.runs} runs of each command, alternating")
    for name, fig in figures.items():
        print(f"  {name:<22} p50 {fig['p50_ms']:7.1f} ms  p90 {fig['p90_ms']:7.1f} ms")
    version_over = figures["memory-es --version"]["p50_ms"] - floor
    search = figures["memory-es search"]["p50_ms"]
    print(f"--version: {version_over:.1f} ms over the floor (goal <= 100 ms)")
    print(f"search:    {search:.0f} ms, {search - floor:.0f} ms over the floor (goal <= 500 ms "
          f"over it): interpreter {floor:.0f} ms, imports "
          f"{figures['imports only']['p50_ms'] - floor:.0f} ms, the read "
          f"{search - figures['imports only']['p50_ms']:.0f} ms")
    print(json.dumps({"bench": "cli_start", "memories": args.memories, "runs": args.runs,
                      "figures": {k: {m: round(v, 1) for m, v in f.items()}
                                  for k, f in figures.items()},
                      "version_over_floor_ms": round(version_over, 1),
                      "search_p50_ms": round(search, 1),
                      "search_over_floor_ms": round(search - floor, 1)}, sort_keys=True))


if __name__ == "__main__":
    main()
