"""Crash matrix over forget (issue 14 item 3): SIGKILL a real subprocess at every write
boundary of a forget, reopen, and show it is never half-forgotten: either the Forgotten event
is absent and the text is recallable, or the event is there and the text is gone from every
file under the root (and from recall), health clean."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ceilings import HANG_S
from helpers_attack import open_store
from helpers_capture import entity, extraction, memory, open_capture, review, script, turn
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.events import Intake, Memory

HELPER = Path(__file__).with_name("helpers_crash_forget.py")
MARKER = "xqzvkptwq"
BOUNDARIES = (
    "journal.before_commit",  # the Forgotten event is not durable: nothing happened
    "journal.after_commit",  # durable, the catalog not yet advanced
    "forget.after_commit",
    "forget.after_cache",  # cached vectors dropped, keys still there
    "records.before_checkpoint",  # keys deleted, their WAL frames not yet truncated
    "forget.after_destroy",  # keys gone, projections still show the text
    "projection.before_index_commit",  # Markdown rewritten, index rows not committed
    "forget.after_project",  # projected, the index not yet VACUUMed
)


def scan(root: Path, needle: str = MARKER) -> list[str]:
    data = needle.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and data in p.read_bytes())


def lite_root(root: Path, tier: str) -> str:
    with open_store(root, tier, background=False) as store:
        for run_id, answer in (("r1", "The boiler was serviced in April."),
                               ("r2", f"My locker code word is {MARKER} today."),
                               ("r3", "The cat prefers the blue bowl.")):
            store.persist_completed_turn(CompletedTurn(run_id=run_id, outcome="success",
                                                       answer=answer, session="web:c"))
        store.drain()
        return store.lexical_search(MARKER)[0].id


def capture_root(root: Path) -> str:
    plan = extraction(
        [memory(f"Morgan keeps the key under the {MARKER} stone", entities=["m", "a"]),
         memory("Acme Robotics builds warehouse arms", entities=["a"])],
        [entity("m", "Morgan"), entity("a", "Acme Robotics", "organization")],
        [("m", "works_at", "a")])
    store, _ = open_capture(root, script(("extract", "c1", plan),
                                         ("review", "c1", review("keep", "keep"))))
    with store:
        store.persist_completed_turn(turn("c1", f"Morgan: key under the {MARKER} stone."))
        store.drain()
        return store.lexical_search(MARKER)[0].id


def assert_readers_serve_nothing_forgotten(root: Path, tmp_path: Path, memory_id: str) -> None:
    """From the moment the Forgotten event commits, before any writer finishes the forget:
    no read-only door serves the text (recall, lexical search, list, show, export)."""
    reader = MemoryRoot.open(root)
    assert MARKER not in json.dumps(reader.recall(MARKER, 10).to_json())
    assert reader.lexical_search(MARKER) == []
    assert MARKER not in json.dumps(reader.list_memories(limit=100).to_json())
    out = tmp_path / "window-export.jsonl"
    reader.export_to(out)
    assert MARKER.encode() not in out.read_bytes()
    out.unlink()


def reopen(root: Path, tier: str) -> MemoryStore:
    return open_capture(root, [])[0] if tier == "capture" \
        else open_store(root, tier, background=False)


@pytest.mark.parametrize("tier", ["lite", "journal", "capture"])
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_a_killed_forget_is_never_half_done(tmp_path: Path, tier: str, boundary: str) -> None:
    root = tmp_path / "root"
    memory_id = capture_root(root) if tier == "capture" else lite_root(root, tier)
    env = {**os.environ, "FORGET_CRASH_AT": boundary}
    done = subprocess.run([sys.executable, str(HELPER), str(root), tier, memory_id],
                          env=env, capture_output=True, text=True, timeout=HANG_S, check=False)
    assert done.returncode == -signal.SIGKILL, (done.stdout, done.stderr)
    if boundary in ("forget.after_commit", "forget.after_cache"):  # before the next writer
        codes = {f.code for f in MemoryRoot.open(root).health().findings}
        assert "forgotten_key_present" in codes, codes
    if boundary == "forget.after_project":  # rows gone, free pages not yet scrubbed
        codes = {f.code for f in MemoryRoot.open(root).health().findings}
        assert "forget_unscrubbed" in codes, codes
    if boundary != "journal.before_commit":
        assert_readers_serve_nothing_forgotten(root, tmp_path, memory_id)
    with reopen(root, tier) as store:  # the writer open completes what the kill left
        committed = any(topic == Memory.Forgotten.TOPIC and memory_id.encode() in bytes(state)
                        for _p, _o, _v, topic, state, _c in store.events())
        hits = [h.id for h in store.lexical_search(MARKER)]
        if committed:
            assert hits == []
        else:
            assert hits == [memory_id]
    health = MemoryRoot.open(root).health()
    assert health.status == "clean", health.to_json()
    if committed:
        assert scan(root) == [], boundary
        with reopen(root, tier) as store:  # and forgetting again finds nothing more to do
            assert store.forget(memory_id, reason="crash-test").status == "already_forgotten"
    else:
        assert scan(root) != []
        assert boundary == "journal.before_commit"
        with reopen(root, tier) as store:  # the forget can simply be asked again
            receipt = store.forget(memory_id, reason="crash-test")
            assert receipt.byte_scan is not None and receipt.byte_scan.clean


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_a_killed_forget_turn_is_never_half_done(tmp_path: Path, boundary: str) -> None:
    """The same over ``forget_turn``: the capture's lines, audit line and payload together."""
    root = tmp_path / "root"
    capture_root(root)
    env = {**os.environ, "FORGET_CRASH_AT": boundary}
    done = subprocess.run([sys.executable, str(HELPER), str(root), "capture", "run:c1"],
                          env=env, capture_output=True, text=True, timeout=HANG_S, check=False)
    assert done.returncode == -signal.SIGKILL, (done.stdout, done.stderr)
    with reopen(root, "capture") as store:
        committed = any(topic == Intake.Forgotten.TOPIC
                        for _p, _o, _v, topic, _s, _c in store.events())
        hits = store.lexical_search(f"{MARKER} warehouse")
        assert len(hits) == (0 if committed else 2)
    health = MemoryRoot.open(root).health()
    assert health.status == "clean", health.to_json()
    assert (scan(root) == [] and scan(root, "Acme") == []) if committed else scan(root) != []
    assert committed or boundary == "journal.before_commit"
