"""Subprocess driver for tests/test_crash_capture.py (SPEC E17, E38, L3, F5); not a test module.

Usage: ``python helpers_crash_capture.py ROOT SCRIPT CALLS``

Opens a BuJo capture store on ROOT (no background worker) with :class:`ScriptedChat` reading the
JSONL script SCRIPT and the word-bag embedder, on a constant clock, then admits :data:`TURNS` one
at a time, draining after each: a seed fact naming an entity (extract, review), a correction
the classifier turns into a SUPERSEDE of the seed line (extract, review, reconcile) and a clearly
novel fact (extract, review; no classifier call, E5). Running it again on the same root admits
the same bytes (``duplicate``) and resumes whatever the last run left pending.

Every model call is appended to CALLS as one JSON line ``[stage, intake id]`` and fsynced before
the reply goes back to the pipeline: SIGKILL runs no exit hook, so this is the only way the
harness can count calls made by a killed process.

Kill controls (environment):

- ``MEMORY_ES_CRASH_AT=<point>`` and ``HELPER_CRASH_NTH=<n>`` (default 1): die by SIGKILL at the
  n-th time the run reaches the library's named crash point. The helper routes every crash
  point through its counter (``fsutil.set_crash_hooks``) and at the n-th calls ``fsutil.die``
  (SIGKILL). ``catalog.torn_write`` is reached through ``crash_armed`` (the torn half-slot is
  written by the library before it dies).
- ``HELPER_KILL_IN_ATOMIC_WRITE=<relpath>:<k>``: SIGKILL inside the k-th
  ``fsutil.atomic_write`` of the root-relative file ``relpath`` (``daily/2026-05-04.md``,
  ``graph.jsonl``, ``.replay-projection-v1.json``, ``index/CURRENT``, ...);
  ``HELPER_ATOMIC_WRITE_STAGE=before_rename`` (default: temp file written and fsynced, not
  renamed) or ``after_rename`` (renamed, directory not fsynced). The library's atomic_write
  runs unchanged: the kill happens where it calls ``os.replace`` or ``fsync_dir``.
- ``HELPER_TRACE=1``: print ``hit <point> <n>`` for every crash point reached and
  ``write <relpath> <k>`` for every atomic write, so the harness can check that each kill it
  asks for is reachable.

Progress lines (stdout, flushed): ``opened``, ``<status> <run id>`` per admission,
``drained <run id> <attempts>``, ``kill <what>`` just before a kill, ``closed``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helpers_capture import (
    CAPTURE,
    BagEmbedder,
    entity,
    extraction,
    memory,
    reconcile,
    review,
    script,
    turn,
)

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)  # the constant clock: every run stamps the same
DAY = NOW.date().isoformat()

SEED_TEXT = "Morgan lives in Berlin"
CORRECTION = "Actually Morgan moved to Madrid last month"
REPLACEMENT = "Morgan lives in Madrid"
NOVEL = "The quarterly report is due in March"

# (run id, capture text, session): admitted in this order, one drain after each.
TURNS: list[tuple[str, str, str]] = [
    ("cap-seed-0001", "Morgan lives in Berlin, by the way.", "web:a"),
    ("cap-fix-0002", "Actually Morgan moved to Madrid last month.", "web:b"),
    ("cap-novel-0003", "Note: the quarterly report is due in March.", "web:c"),
]

# The lines the three turns leave, with their statuses (the seed line is superseded).
FINAL_LINES = {SEED_TEXT: "superseded", REPLACEMENT: "open", NOVEL: "open"}


def records() -> list[dict[str, str]]:
    """The scripted model's replies: exactly one per (stage, turn) the no-crash run asks."""
    seed, fix, novel = (t[0] for t in TURNS)
    morgan = entity("m", "Morgan")
    return script(
        ("extract", seed, extraction(
            [memory(SEED_TEXT, entities=["m", "b"])],
            [morgan, entity("b", "Berlin", "place")], [("m", "lives_in", "b")])),
        ("review", seed, review("keep")),
        ("extract", fix, extraction(
            [memory(CORRECTION, entities=["m", "d"])],
            [morgan, entity("d", "Madrid", "place")], [("m", "lives_in", "d")])),
        ("review", fix, review("keep")),
        ("reconcile", fix, reconcile({"action": "SUPERSEDE", "target": "m1",
                                      "text": REPLACEMENT})),
        ("extract", novel, extraction([memory(NOVEL)])),
        ("review", novel, review("keep")),
    )


def write_script(path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records()), "utf-8")


def say(*words: object) -> None:
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def append_durably(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


class LoggedChat:
    """A ScriptedChat whose every call is on disk before its reply is returned."""

    def __init__(self, inner: Any, log: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.log = log

    def complete(self, messages: Sequence[Any], *, timeout: float) -> str:
        before = len(self.inner.calls)
        try:
            return str(self.inner.complete(messages, timeout=timeout))
        finally:
            if len(self.inner.calls) > before:
                stage, intake = self.inner.calls[-1]
                append_durably(self.log, json.dumps([stage, intake]) + "\n")


class CrashCounter:
    """Counts named crash points; the n-th hit of the chosen one goes to the library's kill."""

    GATED = ("catalog.torn_write",)  # reached through crash_armed, counted there

    def __init__(self, crash_at: str | None, nth: int, trace: bool) -> None:
        from memory_es import fsutil

        self.fsutil = fsutil
        self.crash_at, self.nth, self.trace = crash_at, nth, trace
        self.hits: Counter[str] = Counter()

    def _count(self, name: str) -> bool:
        self.hits[name] += 1
        if self.trace:
            say("hit", name, self.hits[name])
        return name == self.crash_at and self.hits[name] == self.nth

    def point(self, name: str) -> None:
        chosen = (name == self.crash_at and self.hits[name] == self.nth) \
            if name in self.GATED else self._count(name)
        if chosen:
            say("kill", name, self.nth)
            self.fsutil.die()  # SIGKILL: never returns

    def armed(self, name: str) -> bool:
        """Counted here; the library writes the torn slot, then reaches ``point``."""
        return self._count(name)

    def install(self) -> None:
        self.fsutil.set_crash_hooks(self)


class AtomicWriteKiller:
    """SIGKILL inside the k-th atomic_write of one root-relative file (before or after rename)."""

    def __init__(self, root: Path, target: str | None, k: int, stage: str, trace: bool) -> None:
        from memory_es import fsutil

        if stage not in ("before_rename", "after_rename"):
            raise SystemExit(f"unknown HELPER_ATOMIC_WRITE_STAGE {stage!r}")
        self.root, self.target, self.k, self.stage, self.trace = root, target, k, stage, trace
        self.writes: Counter[str] = Counter()
        self.dying: str | None = None
        self._real_write: Callable[[Path, bytes], None] = fsutil.atomic_write
        self._real_fsync_dir = fsutil.fsync_dir
        real_os = getattr(fsutil, "os")  # noqa: B009 (not re-exported by fsutil)
        killer = self

        class _Os:
            def __getattr__(self, name: str) -> Any:
                return getattr(real_os, name)

            def replace(self, src: Any, dst: Any) -> None:
                if killer.dying is not None and killer.stage == "before_rename":
                    killer.die()
                real_os.replace(src, dst)

        import projections.replay

        setattr(fsutil, "os", _Os())  # noqa: B010
        fsutil.fsync_dir = self.fsync_dir
        fsutil.atomic_write = self.atomic_write
        projections.replay.atomic_write = self.atomic_write  # type: ignore[attr-defined]

    def die(self) -> None:
        say("kill", "atomic_write", self.stage, self.dying)
        os.kill(os.getpid(), signal.SIGKILL)

    def fsync_dir(self, path: Path) -> None:
        if self.dying is not None and self.stage == "after_rename":
            self.die()
        self._real_fsync_dir(path)

    def atomic_write(self, path: Path, data: bytes) -> None:
        try:
            rel = str(Path(path).relative_to(self.root))
        except ValueError:
            rel = str(path)
        self.writes[rel] += 1
        if self.trace:
            say("write", rel, self.writes[rel])
        if rel == self.target and self.writes[rel] == self.k:
            self.dying = rel
        try:
            self._real_write(path, data)
        finally:
            self.dying = None


def main(argv: list[str]) -> int:
    root, script_path, calls_path = Path(argv[0]), Path(argv[1]), Path(argv[2])
    trace = os.environ.get("HELPER_TRACE") == "1"

    from memory_es import fsutil

    counter = CrashCounter(fsutil._CRASH_AT, int(os.environ.get("HELPER_CRASH_NTH", "1")), trace)
    counter.install()
    target, _, k = os.environ.get("HELPER_KILL_IN_ATOMIC_WRITE", "").rpartition(":")
    AtomicWriteKiller(root, target or None, int(k or 0),
                      os.environ.get("HELPER_ATOMIC_WRITE_STAGE", "before_rename"), trace)

    from memory_es.capture.scripted import ScriptedChat
    from memory_es.config import parse_config
    from memory_es.store import MemoryStore

    chat = LoggedChat(ScriptedChat(script_path), calls_path)
    store = MemoryStore.open(root, parse_config(CAPTURE), clock=lambda: NOW, background=False,
                             embedder=BagEmbedder(), chat_model=chat)
    say("opened")
    for run_id, text, session in TURNS:
        result = store.persist_completed_turn(turn(run_id, text, session=session))
        say(result.status, run_id)
        say("drained", run_id, store.drain())
    store.close()
    say("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
