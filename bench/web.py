"""How fast the web inspector's pages answer, beside the API call each one makes.

Builds a Journal root of ``--memories`` notes with the local model (as ``bench/cli_start.py``
does), starts ``memory-es serve-web`` on it as its own process on 127.0.0.1, then alternates,
``--runs`` times, a GET of each page (the whole HTTP round trip: the gate, the read, the
template) with the same read through ``MemoryRoot`` in this process. Reports p50 and p90 of
each and the page's cost over its read; the goal is a page p50 of at most 50 ms at 100,000
memories. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_start import QUERY, build_root
from memory_es import MemoryRoot
from memory_es.embeddings.use_cache import CACHE_ENV
from memory_es.keystore import KEY_STORE_ENV
from memory_es.web.graph import read_graph

GOAL_MS = 50.0


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], int, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "memory_es.cli", "serve-web", "--root",
                             str(root), "--port", str(port)], stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    said = proc.stderr.readline()
    if "web inspector on" not in said:
        raise SystemExit(f"serve-web did not start: {said}")
    token = Path(said.split("bearer token in ")[1].rstrip(")\n")).read_text().strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            get(port, token, "/static/style.css")
            return proc, port, token
        except OSError:
            time.sleep(0.1)
    raise SystemExit("serve-web did not answer")


def get(port: int, token: str, path: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    answer = conn.getresponse()
    answer.read()
    elapsed = time.perf_counter() - t0
    conn.close()
    if answer.status != 200:
        raise SystemExit(f"GET {path}: {answer.status}")
    return elapsed


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(1000 * statistics.median(ordered), 2),
            "p90_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--small", action="store_true", help="smoke test: 300 memories, 3 runs")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="build the root (and its keys and model cache) in DIR and keep "
                             "it; a later run with the same DIR measures it again without "
                             "building (the 100,000-memory build takes about 13 minutes)")
    args = parser.parse_args()
    if args.small:
        args.memories, args.runs = 300, 3
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="memory-es-web-", dir=os.environ.get("TMPDIR")) as d:
        base = args.keep or Path(d)
        base.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, KEY_STORE_ENV: str(base / "keys"), CACHE_ENV: str(base / "models")}
        os.environ.update({KEY_STORE_ENV: env[KEY_STORE_ENV], CACHE_ENV: env[CACHE_ENV]})
        root = base / "root"
        built = 0.0 if args.keep and root.exists() else build_root(root, args.memories)
        handle = MemoryRoot.open(root)
        some = handle.list_memories(limit=1).memories[0].id
        today = time.strftime("%Y-%m-%d", time.gmtime())
        journal = {"fromDate": today, "throughDate": today, "timeZone": "UTC", "limit": 25}
        pages: dict[str, tuple[str, Callable[[], Any]]] = {
            "timeline": (f"/?from={today}&through={today}&tz=UTC",
                         lambda: handle.journal(journal)),
            "search": (f"/search?q={QUERY.replace(' ', '+').replace('?', '%3F')}",
                       lambda: handle.search(QUERY, 10, explain=True)),
            "memory": (f"/memory/{some}", lambda: handle.show(some)),
            "people": ("/people", lambda: read_graph(root)),
            "health": ("/health", lambda: (handle.intake_counts(), handle.vector_backlog())),
            "profile": ("/profile", lambda: handle.profile()),
        }
        proc, port, token = start(root, env)
        try:
            page_s: dict[str, list[float]] = {name: [] for name in pages}
            api_s: dict[str, list[float]] = {name: [] for name in pages}
            for path, read in pages.values():  # warm: the model, the caches
                get(port, token, path)
                read()
            for _ in range(args.runs):
                for name, (path, read) in pages.items():
                    page_s[name].append(get(port, token, path))
                    t0 = time.perf_counter()
                    read()
                    api_s[name].append(time.perf_counter() - t0)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    made = f"built in {built:.1f} s" if built else f"kept in {args.keep}"
    print(f"{args.memories:,}-memory Journal root {made}; {args.runs} runs of each page and "
          "its read, alternating")
    figures: dict[str, Any] = {}
    for name in pages:
        page, api = summary(page_s[name]), summary(api_s[name])
        mark = "✓" if page["p50_ms"] <= GOAL_MS else "✗"
        over = page["p50_ms"] - api["p50_ms"]
        print(f"  {name:<9} page p50 {page['p50_ms']:8.1f} ms p90 {page['p90_ms']:8.1f} ms   "
              f"its read p50 {api['p50_ms']:8.1f} ms   over it {over:7.1f} ms   "
              f"(goal <= {GOAL_MS:.0f} ms {mark})")
        figures[name] = {"page": page, "read": api}
    print(json.dumps({"bench": "web", "memories": args.memories, "runs": args.runs,
                      "goal_ms": GOAL_MS, "figures": figures}, sort_keys=True))


if __name__ == "__main__":
    main()
