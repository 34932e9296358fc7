"""Subprocess driver for tests/test_crash_matrix.py (DESIGN 12); not a test module.

Usage: ``python helpers_worker.py ROOT MODE STEP N``

Opens a real :class:`MemoryStore` on ROOT (MODE ``lite``, ``journal`` or ``bujo``) with the
background worker and a step chosen by STEP, admits the first N turns of :func:`plan`, waits
until the worker has dealt with them, then closes the store:

- ``ok``: the model-free :class:`ObserveProcessor`.
- ``fail``: the first attempt of each intake raises ``StepFailure("model_timeout")``; once every
  intake has failed once the helper moves its clock past the backoff and the retry succeeds.
- ``hang``: the step blocks on ``ctx.cancel`` (at most 60 s); the helper waits until it hangs,
  then closes with a short shutdown timeout so the store cancels it (B22).

Kill controls (environment):

- ``MEMORY_ES_CRASH_AT=<boundary>``: the library SIGKILLs the process at that named boundary.
- ``HELPER_ARM=import|admitted|retry``: when the boundary is armed. ``import`` (default) is the
  library's own behaviour (read at import). ``admitted`` disarms it until every admission has
  returned, and holds ``ok``/``fail`` steps until then, so the kill lands in the worker's
  transactions, projections or snapshot rather than in an admission. ``retry`` (STEP ``fail``)
  arms it once every intake has failed once, just before the clock moves: the kill lands in the
  successful retry.
- ``HELPER_KILL_IN_ATOMIC_WRITE=k``: SIGKILL inside the k-th ``fsutil.atomic_write`` call
  counted from the arming point; ``HELPER_ATOMIC_WRITE_STAGE=before_rename`` (default: the temp
  file is written and fsynced, the rename not done) or ``after_rename`` (renamed, the directory
  not yet fsynced).
- ``HELPER_KILL_WHEN_HUNG=1`` (STEP ``hang``): SIGKILL as soon as the step is hanging.

Progress lines go to stdout (flushed), so the harness sees how far the run got:
``opened``, ``<status> <run_id>`` per admission, ``armed``, ``hanging``, ``failed-once``,
``processed``, ``closed``, and ``kill <what>`` just before a helper-made kill.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

CONFIGS: dict[str, dict[str, Any]] = {
    "lite": {},
    "journal": {"mode": "journal", "embeddings": {"dim": 384}},
    "bujo": {"mode": "bujo", "embeddings": {"dim": 384},
             "llm": {"provider": "ollama", "model": "m"}},
}

# Realistic host answers. The third repeats the first with different whitespace, so Journal
# mode converges on one memory for both (and for SEED, which the test writes before the crash).
ANSWERS = [
    "The user prefers dark mode in the editor and wants tabs set to four spaces.",
    "Deployment to staging is scheduled for Thursday after the database migration lands.",
    "The user prefers  dark mode in the editor\nand wants tabs set to four spaces.",
    "The user's cat is called Miso; suggest that name for test fixtures.",
    "Release notes for 2.4 must mention the new export command and its --out flag.",
]
SEED = ("seed-run-0001", ANSWERS[0])
SESSION = "web:thread-7"
DEADLINE = 20.0
POLL = 0.005


def plan(n: int) -> list[tuple[str, str]]:
    """The (run_id, answer) pairs a run admits, in order: distinct run ids, repeated content."""
    return [(f"run-{i:04d}-7f3a", ANSWERS[i % len(ANSWERS)]) for i in range(n)]


_SAY = threading.Lock()


def say(*words: object) -> None:
    """One whole progress line (the worker thread and the main thread both report)."""
    line = " ".join(str(w) for w in words) + "\n"
    with _SAY:
        sys.stdout.write(line)
        sys.stdout.flush()


def die(what: str) -> None:
    say("kill", what)
    os.kill(os.getpid(), signal.SIGKILL)


class Clock:
    """Real UTC time plus an offset the helper moves forward to make backoff retries due."""

    def __init__(self) -> None:
        from memory_es.intake import utc_now

        self._now = utc_now
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return self._now() + self.offset


class AtomicWriteKiller:
    """Counts ``fsutil.atomic_write`` calls; the k-th dies before the rename or the dir fsync.

    The real ``atomic_write`` runs unchanged: the kill happens where it calls ``os.replace`` or
    ``fsync_dir`` (looked up in the ``fsutil`` module), so temp-file naming, fsync and rename
    stay exactly the library's.
    """

    def __init__(self, root: Path, k: int, stage: str) -> None:
        from memory_es import fsutil

        if stage not in ("before_rename", "after_rename"):
            raise SystemExit(f"unknown HELPER_ATOMIC_WRITE_STAGE {stage!r}")
        self.root, self.k, self.stage = root, k, stage
        self.calls = 0
        self.counting = False
        self.target: Path | None = None
        self._real_write = fsutil.atomic_write
        self._real_fsync_dir = fsutil.fsync_dir
        killer = self
        real_os = fsutil.os

        class _Os:
            def __getattr__(self, name: str) -> Any:
                return getattr(real_os, name)

            def replace(self, src: Any, dst: Any) -> None:
                if killer.target is not None and killer.stage == "before_rename":
                    killer.die()
                real_os.replace(src, dst)

        fsutil.os = _Os()  # type: ignore[assignment]
        fsutil.fsync_dir = self.fsync_dir
        # Every name the library calls it by: fsutil's own, and the one replay imported.
        import projections.replay

        fsutil.atomic_write = self.atomic_write
        projections.replay.atomic_write = self.atomic_write  # type: ignore[attr-defined]

    def die(self) -> None:
        assert self.target is not None
        try:
            rel = self.target.relative_to(self.root)
        except ValueError:
            rel = self.target
        die(f"atomic_write {self.stage} {rel}")

    def fsync_dir(self, path: Path) -> None:
        if self.target is not None and self.stage == "after_rename":
            self.die()
        self._real_fsync_dir(path)

    def atomic_write(self, path: Path, data: bytes) -> None:
        if self.counting:
            self.calls += 1
            if self.calls == self.k:
                self.target = Path(path)
        try:
            self._real_write(path, data)
        finally:
            self.target = None


def make_processor(step: str, gate: threading.Event, hanging: threading.Event) -> Any:
    from memory_es.observe import ObserveProcessor
    from memory_es.step import StepFailure

    class OkStep(ObserveProcessor):
        def process(self, admitted: Any, payload: bytes | None, ctx: Any) -> list[Any]:
            gate.wait(DEADLINE)
            return super().process(admitted, payload, ctx)

    class FailOnceStep(ObserveProcessor):
        """Times out on the first attempt of each intake (tracked per run hash)."""

        def __init__(self) -> None:
            self.seen: set[str] = set()

        def process(self, admitted: Any, payload: bytes | None, ctx: Any) -> list[Any]:
            gate.wait(DEADLINE)
            if admitted.run_hash not in self.seen:
                self.seen.add(admitted.run_hash)
                raise StepFailure("model_timeout")
            return super().process(admitted, payload, ctx)

    class HangStep:
        needs_model = False

        def process(self, admitted: Any, payload: bytes | None, ctx: Any) -> list[Any]:
            hanging.set()
            if not ctx.cancel.wait(60):
                raise StepFailure("model_timeout")
            return []

    steps = {"ok": OkStep, "fail": FailOnceStep, "hang": HangStep}
    if step not in steps:
        raise SystemExit(f"unknown STEP {step!r}")
    return steps[step]()


def wait_until(what: str, cond: Any) -> None:
    deadline = time.monotonic() + DEADLINE
    while not cond():
        if time.monotonic() > deadline:
            say("timeout", what)
            os._exit(2)
        time.sleep(POLL)


def main(argv: list[str]) -> int:
    root, mode, step, n = Path(argv[0]), argv[1], argv[2], int(argv[3])
    arm = os.environ.get("HELPER_ARM", "import")
    if arm not in ("import", "admitted", "retry") or (arm == "retry" and step != "fail"):
        raise SystemExit(f"HELPER_ARM={arm!r} does not fit STEP {step!r}")

    from memory_es import fsutil
    from memory_es.config import parse_config
    from memory_es.intake import CompletedTurn, IntakeRecord
    from memory_es.store import MemoryStore

    crash_at = fsutil._CRASH_AT
    killer = None
    if os.environ.get("HELPER_KILL_IN_ATOMIC_WRITE"):
        killer = AtomicWriteKiller(root, int(os.environ["HELPER_KILL_IN_ATOMIC_WRITE"]),
                                   os.environ.get("HELPER_ATOMIC_WRITE_STAGE", "before_rename"))

    def arm_now() -> None:
        fsutil._CRASH_AT = crash_at
        if killer is not None:
            killer.counting = True
        say("armed")

    if arm == "import":
        arm_now()
    else:
        fsutil._CRASH_AT = None

    gate = threading.Event()  # ok/fail steps wait here until the kill point is armed
    hanging = threading.Event()
    if arm == "import":
        gate.set()
    clock = Clock()
    store = MemoryStore.open(
        root, parse_config(CONFIGS[mode]), clock=clock, background=True,
        processor=make_processor(step, gate, hanging),
        shutdown_timeout=0.3 if step == "hang" else 10.0,
    )
    say("opened")
    for run_id, answer in plan(n):
        result = store.persist_completed_turn(CompletedTurn(
            run_id=run_id, outcome="success", answer=answer, session=SESSION,
            speaker_kind="human-turn"))
        say(result.status, run_id)
    if arm == "admitted":
        arm_now()
    gate.set()

    def records() -> list[IntakeRecord]:
        return list(store.inspect().records)

    if step == "hang":
        wait_until("hang", hanging.is_set)
        say("hanging")
        if os.environ.get("HELPER_KILL_WHEN_HUNG"):
            die("while the step hangs")
    else:
        if step == "fail":
            wait_until("first attempts", lambda: all(
                r.state == "resolved" or r.attempts >= 1 for r in records()))
            say("failed-once")
            if arm == "retry":
                arm_now()
            clock.offset += timedelta(minutes=5)  # past the first backoff (60 s)
            store.background.kick()
        wait_until("resolution", lambda: all(r.state == "resolved" for r in records()))
        say("processed")
    store.close()
    say("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
