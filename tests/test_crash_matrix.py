"""Crash matrix: kill a real worker process at every boundary, reopen, drain, verify (DESIGN 12).

Each case runs tests/helpers_worker.py in a subprocess: a background-worker store whose step
succeeds, fails once or hangs, admitting a few turns into a root that already holds one
resolved turn. The process dies by SIGKILL at a named boundary (``MEMORY_ES_CRASH_AT``), inside
a projection file write (``atomic_write`` before/after its rename) or while a step hangs.

The test process then checks the journal exactly as the crash left it (read-only):

- every turn the helper saw ``admitted`` is in the journal (B1);
- an attempt's events are all-or-nothing: each ``Memory.Recorded`` is accompanied by its
  intake's ``Resolved``, and each ``Resolved`` naming a memory has that memory (one transaction);
- the worker's events from the killed run match the boundary (none before the attempt commit,
  some after it),

reopens the root as a writer with the model-free step and a clock two days ahead, drains,
re-admits every planned turn (``duplicate`` when it survived, ``admitted`` when the kill came
first, never a conflict), drains again, closes, and asserts on the exported journal: every
admitted run id has exactly one ``Intake.Admitted`` and exactly one ``Intake.Resolved``, which
is its last event; the ``Memory.Recorded`` events have distinct ids and match one per turn
(Lite), one per distinct normalised text (Journal, which converges) or none (BuJo); health is
clean; the journal verifies on a fresh read-only open; and nothing is left pending or dead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S
from helpers_worker import CONFIGS, SEED, SESSION, plan
from memory_es.config import MemoryConfig, parse_config
from memory_es.events import ADMITTED_TOPIC, RECORDED_TOPIC, RESOLVED_TOPIC
from memory_es.ids import intake_uuid, run_hash, run_memory_id
from memory_es.intake import CompletedTurn, utc_now
from memory_es.journal import MARKER_FILE, open_journal
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.text import journal_text

HELPER = Path(__file__).with_name("helpers_worker.py")
N = 4
FAILED_TOPIC = "memory_es/Intake.AttemptFailed"
DEAD_TOPIC = "memory_es/Intake.DeadLettered"
WORKER_TOPICS = {"Resolved": RESOLVED_TOPIC, "AttemptFailed": FAILED_TOPIC,
                 "Recorded": RECORDED_TOPIC}


@dataclass(frozen=True)
class Case:
    """One kill point. ``expect`` maps a worker topic (Resolved, AttemptFailed, Recorded) to
    "none" or "some": what the killed run's worker must have committed for this run's intakes.
    ``stdout`` lists progress lines the helper must have printed (where it died)."""

    id: str
    crash_at: str | None = None
    mode: str = "lite"
    step: str = "ok"
    arm: str = "import"
    atomic: str | None = None  # "k" or "k:after_rename"
    kill_when_hung: bool = False
    fresh: bool = False
    killed: bool = True
    expect: dict[str, str] = field(default_factory=dict)
    stdout: tuple[str, ...] = ()
    admitted_before_kill: int | None = None  # admissions the helper saw return


NONE_YET = {"Resolved": "none", "AttemptFailed": "none", "Recorded": "none"}
RESOLVED = {"Resolved": "some"}

CASES = [
    # Lite, armed from import: admission and worker interleave as in production.
    # The first admission's transaction: before it commits, after it, torn/written catalog.
    Case("lite-ok-admission-journal.before_commit", "journal.before_commit",
         expect=NONE_YET, admitted_before_kill=0),
    Case("lite-ok-admission-journal.after_commit", "journal.after_commit",
         expect=NONE_YET, admitted_before_kill=0),
    Case("lite-ok-admission-catalog.torn_write", "catalog.torn_write",
         expect=NONE_YET, admitted_before_kill=0),
    Case("lite-ok-admission-catalog.after_write", "catalog.after_write",
         expect=NONE_YET, admitted_before_kill=0),
    # Mid-attempt (step about to run), events built but not committed, events committed.
    Case("lite-ok-worker.before_step", "worker.before_step", expect=NONE_YET),
    Case("lite-ok-worker.before_commit", "worker.before_commit", expect=NONE_YET),
    Case("lite-ok-worker.after_commit", "worker.after_commit", expect=RESOLVED),
    Case("lite-ok-snapshot.before_rename", "snapshot.before_rename"),
    Case("lite-fail-worker.before_step", "worker.before_step", step="fail", expect=NONE_YET),
    Case("lite-fail-worker.before_commit", "worker.before_commit", step="fail",
         expect=NONE_YET),
    Case("lite-fail-worker.after_commit", "worker.after_commit", step="fail",
         expect={"AttemptFailed": "some", "Resolved": "none"}),
    # Lite, armed after every admission returned: the boundary is hit in the worker's first
    # attempt transaction (journal commit / catalog) or its snapshot publish.
    Case("lite-ok-attempt-journal.before_commit", "journal.before_commit", arm="admitted",
         expect=NONE_YET, stdout=("armed",)),
    Case("lite-ok-attempt-journal.after_commit", "journal.after_commit", arm="admitted",
         expect=RESOLVED, stdout=("armed",)),
    Case("lite-ok-attempt-catalog.torn_write", "catalog.torn_write", arm="admitted",
         expect=RESOLVED, stdout=("armed",)),
    Case("lite-ok-attempt-catalog.after_write", "catalog.after_write", arm="admitted",
         expect=RESOLVED, stdout=("armed",)),
    Case("lite-ok-attempt-snapshot.before_rename", "snapshot.before_rename", arm="admitted",
         stdout=("armed",)),
    Case("lite-fail-attempt-journal.after_commit", "journal.after_commit", step="fail",
         arm="admitted", expect={"AttemptFailed": "some", "Resolved": "none"},
         stdout=("armed",)),
    Case("lite-fail-attempt-snapshot.before_rename", "snapshot.before_rename", step="fail",
         arm="admitted", stdout=("armed",)),
    # Lite, fail step, armed once every intake failed once: the kill hits the retry.
    Case("lite-fail-retry-journal.before_commit", "journal.before_commit", step="fail",
         arm="retry", expect={"AttemptFailed": "some", "Resolved": "none"},
         stdout=("failed-once", "armed")),
    Case("lite-fail-retry-catalog.torn_write", "catalog.torn_write", step="fail", arm="retry",
         expect={"AttemptFailed": "some", "Resolved": "some"}, stdout=("failed-once", "armed")),
    Case("lite-fail-retry-worker.after_commit", "worker.after_commit", step="fail",
         arm="retry", expect={"AttemptFailed": "some", "Resolved": "some"},
         stdout=("failed-once", "armed")),
    # Projection file writes: a seeded day's file grows in place, and the kill lands after the
    # append, before its fsync and the index commit; events are committed. (A day's first,
    # whole write, killed before or after its rename: tests/test_crash_residue.py.)
    Case("lite-ok-markdown-appended", "markdown.before_fsync", arm="admitted",
         expect=RESOLVED),
    Case("lite-fail-retry-markdown-appended", "markdown.before_fsync", step="fail",
         arm="retry", expect={"AttemptFailed": "some", "Resolved": "some"},
         stdout=("failed-once",)),
    Case("journal-ok-markdown-appended", "markdown.before_fsync", mode="journal",
         arm="admitted", expect=RESOLVED),
    Case("bujo-ok-audit-appended", "markdown.before_fsync", mode="bujo", arm="admitted"),
    # A brand-new root: the schema marker, then the index pointer (index/CURRENT).
    Case("fresh-lite-marker-before_rename", atomic="1", fresh=True, expect=NONE_YET,
         stdout=(f"kill atomic_write before_rename {MARKER_FILE}",), admitted_before_kill=0),
    Case("fresh-lite-index-pointer-before_rename", atomic="2", fresh=True, expect=NONE_YET,
         stdout=("kill atomic_write before_rename index/CURRENT",), admitted_before_kill=0),
    # Journal mode (repeated content converges on one memory).
    Case("journal-ok-admission-journal.after_commit", "journal.after_commit", mode="journal",
         expect=NONE_YET, admitted_before_kill=0),
    Case("journal-ok-worker.before_commit", "worker.before_commit", mode="journal",
         expect=NONE_YET),
    Case("journal-ok-worker.after_commit", "worker.after_commit", mode="journal",
         expect=RESOLVED),
    Case("journal-ok-attempt-catalog.after_write", "catalog.after_write", mode="journal",
         arm="admitted", expect=RESOLVED, stdout=("armed",)),
    Case("journal-fail-retry-journal.after_commit", "journal.after_commit", mode="journal",
         step="fail", arm="retry", expect={"AttemptFailed": "some", "Resolved": "some"},
         stdout=("failed-once", "armed")),
    # BuJo append-host-summary: resolution projects the audit line, no memory.
    Case("bujo-ok-admission-catalog.torn_write", "catalog.torn_write", mode="bujo",
         expect=NONE_YET, admitted_before_kill=0),
    Case("bujo-ok-worker.after_commit", "worker.after_commit", mode="bujo", expect=RESOLVED),
    Case("bujo-ok-attempt-journal.after_commit", "journal.after_commit", mode="bujo",
         arm="admitted", expect=RESOLVED, stdout=("armed",)),
    # Hanging step: killed as the attempt starts, while it hangs, or while shutdown publishes
    # the snapshot after cancelling it.
    Case("lite-hang-worker.before_step", "worker.before_step", step="hang", expect=NONE_YET),
    Case("lite-hang-killed-while-hung", step="hang", kill_when_hung=True, expect=NONE_YET,
         stdout=("hanging", "kill while the step hangs")),
    Case("journal-hang-killed-while-hung", mode="journal", step="hang", kill_when_hung=True,
         expect=NONE_YET, stdout=("hanging", "kill while the step hangs")),
    Case("lite-hang-shutdown-snapshot.before_rename", "snapshot.before_rename", step="hang",
         arm="admitted", expect=NONE_YET, stdout=("armed",)),
]

# Controls: the same runs with no reachable kill point complete and leave the same contract.
CONTROLS = [
    # B22: a cancelled attempt is never committed, so worker.before_commit is never reached.
    Case("lite-hang-worker.before_commit-unreachable", "worker.before_commit", step="hang",
         killed=False, expect=NONE_YET, stdout=("hanging", "closed")),
    Case("lite-fail-no-crash", step="fail", killed=False,
         expect={"AttemptFailed": "some", "Resolved": "some"},
         stdout=("failed-once", "processed", "closed")),
    Case("journal-ok-no-crash", mode="journal", killed=False, expect=RESOLVED,
         stdout=("processed", "closed")),
    Case("bujo-fail-no-crash", mode="bujo", step="fail", killed=False,
         expect={"AttemptFailed": "some", "Resolved": "some"},
         stdout=("failed-once", "processed", "closed")),
]


def turn(run_id: str, answer: str) -> CompletedTurn:
    """The exact turn the helper admits for ``run_id`` (same bytes: re-admission is a dup)."""
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer, session=SESSION,
                         speaker_kind="human-turn")


def later() -> Any:
    """A clock two days ahead: every backoff the killed run scheduled is due."""
    return utc_now() + timedelta(days=2)


def seed_root(root: Path, config: MemoryConfig) -> None:
    """A root that already holds one resolved turn (and its projections)."""
    with MemoryStore.open(root, config, background=False) as store:
        assert store.persist_completed_turn(turn(*SEED)).status == "admitted"
        assert store.drain() == 1


def run_helper(root: Path, case: Case) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMORY_ES_CRASH_AT", "HELPER_"))}
    if case.crash_at is not None:
        env["MEMORY_ES_CRASH_AT"] = case.crash_at
    env["HELPER_ARM"] = case.arm
    if case.atomic is not None:
        k, _, stage = case.atomic.partition(":")
        env["HELPER_KILL_IN_ATOMIC_WRITE"] = k
        env["HELPER_ATOMIC_WRITE_STAGE"] = stage or "before_rename"
    if case.kill_when_hung:
        env["HELPER_KILL_WHEN_HUNG"] = "1"
    return subprocess.run(
        [sys.executable, str(HELPER), str(root), case.mode, case.step, str(N)],
        env=env, capture_output=True, text=True, timeout=HANG_S, check=False,
    )


def read_rows(root: Path, out: Path) -> list[dict[str, Any]]:
    """The journal through its canonical export (a verified read-only open)."""
    count = MemoryRoot.open(root).export_to(out)
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(rows) == count
    return rows


def by_topic(rows: list[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["topic"] == topic]


def admitted_hashes(rows: list[dict[str, Any]]) -> list[str]:
    return [r["state"]["run_hash"] for r in by_topic(rows, ADMITTED_TOPIC)]


def check_crash_state(rows: list[dict[str, Any]], case: Case, helper_admitted: set[str],
                      seeded: set[str]) -> None:
    """The journal as the kill left it, before any writer reopened the root."""
    admitted = admitted_hashes(rows)
    assert len(admitted) == len(set(admitted)), "a run id was admitted twice"
    # B1: an ``admitted`` the helper saw returned is durable.
    assert helper_admitted <= set(admitted), "an admission that returned was lost"
    resolved = {r["originator_id"]: r["state"] for r in by_topic(rows, RESOLVED_TOPIC)}
    recorded = {r["state"]["memory_id"]: r["state"] for r in by_topic(rows, RECORDED_TOPIC)}
    # One attempt, one transaction: never a memory without its resolution or the reverse.
    for memory_id, state in recorded.items():
        res = resolved.get(str(intake_uuid(state["run_hash"])))
        assert res is not None, f"memory {memory_id[:12]} committed without its Resolved"
        assert res["memory_id"] == memory_id
    for res in resolved.values():
        if res["memory_id"] is not None:
            assert res["memory_id"] in recorded, "Resolved committed without its memory"
    # What the killed run's worker committed for this run's intakes.
    mine = {str(intake_uuid(h)) for h in admitted} - {str(intake_uuid(h)) for h in seeded}
    for name, want in case.expect.items():
        topic = WORKER_TOPICS[name]
        if name == "Recorded":
            got = sum(r["state"]["run_hash"] not in seeded for r in by_topic(rows, topic))
        else:
            got = sum(r["originator_id"] in mine for r in by_topic(rows, topic))
        assert (got > 0) == (want == "some"), (name, want, got)


def check_recovered(rows: list[dict[str, Any]], mode: str) -> None:
    """Exactly-once resolution and no duplicate memory, on the final journal."""
    admitted = by_topic(rows, ADMITTED_TOPIC)
    counts = Counter(r["state"]["run_hash"] for r in admitted)
    assert all(c == 1 for c in counts.values()), counts
    per_intake: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["topic"].startswith("memory_es/Intake."):
            per_intake.setdefault(r["originator_id"], []).append(r)
    answers = {r["state"]["run_hash"]: r["state"]["summary"] for r in admitted}
    resolutions: dict[str, str | None] = {}
    for h in counts:
        events = per_intake[str(intake_uuid(h))]
        topics = [e["topic"] for e in events]
        assert topics.count(RESOLVED_TOPIC) == 1, (h[:12], topics)
        assert topics[-1] == RESOLVED_TOPIC, f"intake {h[:12]} re-ran after resolving: {topics}"
        assert DEAD_TOPIC not in topics
        assert [e["originator_version"] for e in events] == list(range(1, len(events) + 1))
        final = events[-1]["state"]
        assert final["outcome"] == "projected", final
        resolutions[h] = final["memory_id"]
    assert len(per_intake) == len(counts), "events for an intake that was never admitted"

    recorded = [r["state"] for r in by_topic(rows, RECORDED_TOPIC)]
    ids = [m["memory_id"] for m in recorded]
    assert len(ids) == len(set(ids)), "duplicate memory"
    if mode == "bujo":
        assert ids == []
        assert set(resolutions.values()) == {None}
        return
    assert set(resolutions.values()) == set(ids), "every memory belongs to a resolution"
    if mode == "lite":
        assert sorted(ids) == sorted(run_memory_id(h, 0) for h in counts)
        assert all(resolutions[h] == run_memory_id(h, 0) for h in counts)
    else:  # journal: one memory per distinct normalised text, whichever run wrote it first
        assert len(ids) == len({journal_text(a) for a in answers.values()})
        texts = {m["memory_id"]: m["text"] for m in recorded}
        assert all(texts[resolutions[h]] == journal_text(a) for h, a in answers.items())


def all_cases() -> list[Any]:
    return [pytest.param(c, id=c.id) for c in [*CASES, *CONTROLS]]


def test_matrix_has_at_least_twenty_distinct_kill_points() -> None:
    points = {(c.crash_at, c.mode, c.step, c.arm, c.atomic, c.kill_when_hung, c.fresh)
              for c in CASES if c.killed}
    assert len(points) == len(CASES) >= 20
    assert len({c.id for c in [*CASES, *CONTROLS]}) == len(CASES) + len(CONTROLS)


@pytest.mark.slow
@pytest.mark.parametrize("case", all_cases())
def test_kill_reopen_drain(tmp_path: Path, case: Case) -> None:
    config = parse_config(CONFIGS[case.mode])
    root = tmp_path / "root"
    seeded: set[str] = set()
    if not case.fresh:
        seed_root(root, config)
        seeded = {run_hash(SEED[0])}

    proc = run_helper(root, case)
    where = (proc.returncode, proc.stdout, proc.stderr)
    if case.killed:
        assert proc.returncode == -9, where
        assert "closed" not in proc.stdout.split("\n"), where
    else:
        assert proc.returncode == 0, where
    lines = proc.stdout.splitlines()
    for expected in case.stdout:
        assert any(line.startswith(expected) for line in lines), (expected, where)
    helper_admitted = {run_hash(line.split()[1]) for line in lines
                       if line.startswith("admitted ")}
    if case.admitted_before_kill is not None:
        assert len(helper_admitted) == case.admitted_before_kill, where
    if case.arm != "import" or case.kill_when_hung or not case.killed:
        assert len(helper_admitted) == N, where  # every admission returned before the kill

    planned = plan(N)
    if (root / MARKER_FILE).exists():
        before = read_rows(root, tmp_path / "crash.jsonl")
        check_crash_state(before, case, helper_admitted, seeded)
        present = set(admitted_hashes(before))
    else:  # killed while initialising a fresh root: nothing can have been admitted
        assert not helper_admitted
        present = set()

    with MemoryStore.open(root, config, clock=later, background=False,
                          lock_timeout=1.0) as store:
        store.drain()
        for run_id, answer in planned:
            result = store.persist_completed_turn(turn(run_id, answer))
            want = "duplicate" if run_hash(run_id) in present else "admitted"
            assert result.status == want, (run_id, result)
        store.drain()
        counts = store.inspect().counts
    assert counts.pending == counts.dead == 0, counts
    assert counts.resolved == N + len(seeded), counts

    rows = read_rows(root, tmp_path / "after.jsonl")
    assert set(admitted_hashes(rows)) == {run_hash(r) for r, _ in planned} | seeded
    check_recovered(rows, case.mode)

    fresh = open_journal(root, writable=False)
    try:
        assert fresh.recorder.verify()[0] == len(rows)
    finally:
        fresh.close()
    assert MemoryRoot.open(root).inspect().counts.resolved == N + len(seeded)
    report = MemoryRoot.open(root).health()
    assert report.status == "clean", report.to_json()
