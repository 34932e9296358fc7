"""The MCP server under load: concurrent clients over HTTP against one server.

A Journal root with the offline default model (USE) is seeded with ``--seed`` facts; then
``memory-es serve-mcp --transport http`` runs as its own process on 127.0.0.1 and ``--clients``
SDK clients (default 8, each its own session and HTTP connection) make ``--calls`` mixed calls
each (default 500: recall 50 %, Remember 30 % with distinct texts, journal 20 %), all at once.

Checked, and the run fails (exit 1) when any is violated: no call failed; after the server
stops, every acknowledged Remember is in the root exactly once; strict health is clean.
Reported: p50 / p95 per tool under that load (queueing included: the clients share two
cores with the server), then one client making the first client's calls again one at a time,
beside the same calls made in-process on the same root through the same tool methods
(``MemoryTools``): that difference is the overhead of the protocol, the HTTP hop and the SDK
(goal: p50 overhead <= 2 ms). Ends with one JSON line.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python bench/mcp.py``, this file's folder is first on sys.path and would shadow
# the ``mcp`` package (the SDK) that the clients import: drop it before anything imports mcp.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from memory_es import MemoryRoot, MemoryStore  # noqa: E402
from memory_es.config import parse_config  # noqa: E402
from memory_es.embeddings.use_cache import CACHE_ENV  # noqa: E402
from memory_es.keystore import KEY_STORE_ENV  # noqa: E402
from memory_es.serve.tools import MemoryTools  # noqa: E402

CONFIG = {"mode": "journal", "embeddings": {"provider": "local"}}
TOPICS = ("dentist", "mortgage", "Priya", "Berlin offsite", "bicycle repair", "passport",
          "tomatoes", "piano lesson", "Lisbon flight", "insurance")
TODAY = time.strftime("%Y-%m-%d", time.gmtime())


def seed_root(root: Path, config_file: Path, facts: int) -> None:
    config_file.write_text(json.dumps({"memory": {**CONFIG, "path": str(root)}}))
    rng = random.Random(17)
    with MemoryStore.open(root, parse_config(CONFIG), background=False) as store:
        for n in range(facts):
            store.remember(f"Seed fact {n}: the {rng.choice(TOPICS)} note number {n} is "
                           f"filed under {rng.choice(TOPICS)}.")
        store.drain()


def plan(client: int, calls: int, tag: str = "") -> list[tuple[str, dict[str, Any]]]:
    """One client's calls, in order (seeded: the same mix on every run; ``tag`` makes its
    Remember texts new ones)."""
    rng = random.Random(client)
    out: list[tuple[str, dict[str, Any]]] = []
    for n in range(calls):
        roll = rng.random()
        if roll < 0.5:
            out.append(("memory_recall", {"query": f"what about the {rng.choice(TOPICS)}?"}))
        elif roll < 0.8:
            out.append(("memory_remember", {
                "text": f"Client {client}{tag} call {n}: the {rng.choice(TOPICS)} is "
                        "settled."}))
        else:
            out.append(("memory_journal", {"fromDate": TODAY, "throughDate": TODAY,
                                           "timeZone": "UTC", "limit": 5}))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(root: Path, config_file: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_es.cli", "serve-mcp", "--root", str(root), "--config",
         str(config_file), "--transport", "http", "--port", str(port)],
        stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if "MCP server on" not in line:
        proc.kill()
        raise SystemExit(f"the server did not start: {line}{proc.stderr.read()[-2000:]}")
    token = Path(line.split("bearer token in ")[1].rstrip(")\n")).read_text().strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, token
        time.sleep(0.05)
    raise SystemExit("the server never listened")


async def run_clients(url: str, token: str, clients: int, calls: int, tag: str = ""
                      ) -> tuple[dict[str, list[float]], list[str], list[str]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    timings: dict[str, list[float]] = {}
    errors: list[str] = []
    remembered: list[str] = []

    async def one(client: int) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=120) as http, \
                Client(streamable_http_client(url, http_client=http),
                       cache=None) as session:  # tool calls are never cached: skip the layer
            for name, args in plan(client, calls, tag):
                t0 = time.perf_counter()
                try:
                    result = await session.call_tool(name, args)
                except Exception as e:  # a transport failure is a failed call
                    errors.append(f"{name}: {type(e).__name__}: {e}")
                    continue
                timings.setdefault(name, []).append(time.perf_counter() - t0)
                if result.is_error:
                    errors.append(f"{name}: {result.content[0].text[:200]}")
                elif name == "memory_remember":
                    remembered.append(args["text"])

    await asyncio.gather(*(one(c) for c in range(clients)))
    return timings, errors, remembered


async def wait_quiet(url: str, token: str, timeout: float = 600) -> None:
    """Until the server's worker has no backlog (health: nothing due, no vector pending), so
    the one-client run is not timed against the load run's embedding, and compares with an
    in-process run on a drained store."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    deadline = time.monotonic() + timeout
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=120) as http, \
            Client(streamable_http_client(url, http_client=http), cache=None) as session:
        while time.monotonic() < deadline:
            result = await session.read_resource("memory://health")
            health = json.loads(result.contents[0].text)  # type: ignore[union-attr]
            if health["due"] == 0 and health["vectorsPending"] == 0:
                return
            await asyncio.sleep(0.5)
    raise SystemExit("the server's backlog did not drain")


def in_process(root: Path, clients: int, calls: int) -> dict[str, list[float]]:
    """The same calls through the same tool methods, in this process, one at a time, with the
    background worker running as in the server (the Remember texts tagged: new facts, not
    duplicates of the run's)."""
    timings: dict[str, list[float]] = {}
    with MemoryStore.open(root, None, background=True) as store:  # as the server, and a host
        tools = MemoryTools(store)
        methods = {"memory_recall": lambda a: tools.recall(a["query"]),
                   "memory_remember": lambda a: tools.remember(a["text"]),
                   "memory_journal": lambda a: tools.journal(a["fromDate"], a["throughDate"],
                                                             a["timeZone"], a["limit"])}
        for client in range(clients):
            for name, args in plan(client, calls, " in-process"):
                t0 = time.perf_counter()
                methods[name](args)
                timings.setdefault(name, []).append(time.perf_counter() - t0)
    return timings


def quantiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(ordered),
            "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
            "calls": len(ordered)}


def check_root(root: Path, remembered: list[str]) -> list[str]:
    """Problems after the run: an acknowledged Remember missing or stored twice, health."""
    problems = []
    handle = MemoryRoot.open(root)
    with handle.index() as conn:
        assert conn is not None
        for text in remembered:
            (count,) = conn.execute("SELECT count(*) FROM memories WHERE text = ?",
                                    (text,)).fetchone()
            if count != 1:
                problems.append(f"{count} copies of an acknowledged Remember: {text!r}")
    report = handle.health()
    if report.findings:
        problems.append(f"health: {[f.code for f in report.findings]}")
    return problems


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=500, help="calls per client")
    parser.add_argument("--seed", type=int, default=1000, help="facts stored before the run")
    parser.add_argument("--small", action="store_true", help="smoke test: 2 x 20, 50 facts")
    args = parser.parse_args()
    if args.small:
        args.clients, args.calls, args.seed = 2, 20, 50
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="memory-es-mcp-",
                                     dir=os.environ.get("TMPDIR")) as d:
        base = Path(d)
        os.environ.setdefault(KEY_STORE_ENV, str(base / "keys"))
        os.environ.setdefault(CACHE_ENV, str(base / "models"))
        root, config_file = base / "root", base / "memory.json"
        seed_root(root, config_file, args.seed)
        port = free_port()
        proc, token = start_server(root, config_file, port)
        url = f"http://127.0.0.1:{port}/mcp"
        t0 = time.perf_counter()
        try:
            timings, errors, remembered = asyncio.run(run_clients(url, token, args.clients,
                                                                  args.calls))
            wall = time.perf_counter() - t0
            asyncio.run(wait_quiet(url, token))
            alone, alone_errors, alone_remembered = asyncio.run(run_clients(
                url, token, 1, args.calls, tag="alone"))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        problems = errors + alone_errors + check_root(root, remembered + alone_remembered)
        local = in_process(root, 1, args.calls)
    total = sum(len(v) for v in timings.values())
    print(f"{args.clients} clients x {args.calls} calls over HTTP in {wall:.1f} s "
          f"({total / wall:.0f} calls/s); {len(remembered)} Remembers acknowledged")
    figures: dict[str, Any] = {}
    for name in sorted(local):
        loaded = quantiles(timings.get(name, [0.0]))
        over, here = quantiles(alone.get(name, [0.0])), quantiles(local[name])
        overhead = over["p50_ms"] - here["p50_ms"]
        figures[name] = {"under_load": loaded, "mcp": over, "in_process": here,
                         "p50_overhead_ms": overhead}
        print(f"  {name:<16} under load p50 {loaded['p50_ms']:7.1f} ms p95 "
              f"{loaded['p95_ms']:7.1f} ms | one client p50 {over['p50_ms']:6.2f} ms | "
              f"in-process p50 {here['p50_ms']:6.2f} ms | overhead {overhead:+.2f} ms "
              "(goal <= 2 ms)")
    print("problems: " + ("none" if not problems else f"{len(problems)}, first: {problems[0]}"))
    print(json.dumps({"bench": "mcp", "clients": args.clients, "calls": args.calls,
                      "wall_s": round(wall, 2), "errors": len(problems),
                      "tools": rounded(figures)}, sort_keys=True))
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
