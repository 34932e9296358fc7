"""Crash matrix for BuJo capture: SIGKILL after each retained stage and mid-commit, then resume
(SPEC E17, E38, L3, F5; DESIGN 12).

Each case runs tests/helpers_crash_capture.py in a subprocess on a fresh root: three turns, each
admitted and drained in turn (a seed fact naming Morgan, a correction the classifier makes a
SUPERSEDE of the seed line, a clearly novel fact), with a scripted model whose every call is
fsynced to a call log before its reply returns. The child dies by SIGKILL at the n-th hit of a
named crash point (the capture stages' ``capture.after_*``, the worker's ``worker.*``, the
journal's own ``journal.*``/``catalog.*`` inside the commit) or inside a projection file write
(before or after the rename of ``daily/``, ``audit/``, ``graph.jsonl`` or the sidecar). The
journal is read as the kill left it, the child runs again without a kill to completion, and the
final root must match a no-crash baseline run:

- every admitted run is resolved exactly once (E38), and each stage is retained at most once;
- no duplicate memory: ids unique, no two live lines with the same text, and the lines and their
  statuses (seed superseded, replacement and novel fact open) equal the baseline's;
- no stage is asked twice once retained (E17): per (stage, turn), the calls of both runs add up
  to the baseline's, except the one stage whose reply was in flight (called, its retained event
  not committed) when the kill came, which is asked once more. What was retained, and what was
  in flight, is read from the crashed journal, not hard-coded;
- health is clean (F5), and with run-derived ids (L3) on a constant clock the journal export,
  ``graph.jsonl``, the sidecar and the Markdown are byte-identical to the baseline's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ceilings import HANG_S
from helpers_crash_capture import DAY, FINAL_LINES, TURNS, write_script
from helpers_index import index_rows
from memory_es.events import Intake, Memory
from memory_es.history import iter_events, open_reader
from memory_es.ids import intake_uuid, run_hash
from memory_es.intake import RETAINED_STAGE
from memory_es.root import MemoryRoot
from projections.graph import GRAPH_FILE, SIDECAR_FILE

HELPER = Path(__file__).with_name("helpers_crash_capture.py")
SEED, FIX, NOVEL = (run_hash(t[0]) for t in TURNS)
DAILY = f"daily/{DAY}.md"
AUDIT = f"audit/{DAY}.md"
COMPARED_FILES = (GRAPH_FILE, SIDECAR_FILE, DAILY, AUDIT)

Key = tuple[str, str]  # (stage, intake id)


@dataclass(frozen=True)
class Case:
    """One kill: the ``nth`` hit of crash point ``point``, or the ``nth`` atomic write of the
    root-relative file ``write`` (``before_rename`` or ``after_rename``)."""

    id: str
    point: str | None = None
    nth: int = 1
    write: str | None = None
    stage: str = "before_rename"


# Hits of each point in the no-crash run (the baseline's trace pins them, see test_trace):
# turn 1 (seed): journal commits 1 admission, 2 extract retained, 3 review retained, 4 attempt;
# turn 2 (fix): 5 admission, 6 extract, 7 review, 8 reconcile, 9 attempt;
# turn 3 (novel): 10 admission, 11 extract, 12 review, 13 attempt.
CASES = [
    # After each retained stage of each turn (E17, E23).
    Case("seed-after_extract", "capture.after_extract", 1),
    Case("seed-after_review", "capture.after_review", 1),
    Case("fix-after_extract", "capture.after_extract", 2),
    Case("fix-after_review", "capture.after_review", 2),
    Case("fix-after_reconcile", "capture.after_reconcile", 1),
    Case("novel-after_extract", "capture.after_extract", 3),
    Case("novel-after_review", "capture.after_review", 3),
    # The worker around the attempt: before the step, all stages retained but the capture
    # not committed, committed but not projected.
    Case("seed-worker.before_step", "worker.before_step", 1),
    Case("fix-worker.before_step", "worker.before_step", 2),
    Case("fix-worker.before_commit", "worker.before_commit", 2),
    Case("novel-worker.before_commit", "worker.before_commit", 3),
    Case("fix-worker.after_commit", "worker.after_commit", 2),
    # Mid-commit, inside the journal transaction: a retained stage's reply in flight (the model
    # was asked, its event never committed), the admission, the final capture transaction.
    Case("fix-admission-journal.before_commit", "journal.before_commit", 5),
    Case("fix-extract-journal.before_commit", "journal.before_commit", 6),
    Case("fix-review-journal.before_commit", "journal.before_commit", 7),
    Case("fix-reconcile-journal.before_commit", "journal.before_commit", 8),
    Case("fix-capture-journal.before_commit", "journal.before_commit", 9),
    Case("novel-review-journal.before_commit", "journal.before_commit", 12),
    # Committed, the integrity catalog not (yet, or only half) written.
    Case("fix-reconcile-journal.after_commit", "journal.after_commit", 8),
    Case("fix-capture-journal.after_commit", "journal.after_commit", 9),
    Case("fix-reconcile-catalog.torn_write", "catalog.torn_write", 8),
    Case("fix-capture-catalog.torn_write", "catalog.torn_write", 9),
    Case("seed-capture-catalog.after_write", "catalog.after_write", 4),
    # Projection writes after the capture committed (temp written, not renamed / renamed, the
    # directory not fsynced): daily Markdown, graph, sidecar, audit.
    Case("fix-daily-before_rename", write=f"{DAILY}:2"),
    Case("fix-daily-after_rename", write=f"{DAILY}:2", stage="after_rename"),
    Case("seed-graph-before_rename", write=f"{GRAPH_FILE}:1"),
    # The graph only grows at its end: later turns append, and a kill after the append but
    # before the index commit leaves the file longer than the index records (cut back).
    Case("fix-graph.before_fsync", "graph.before_fsync", 1),
    # files rewritten, the index position not yet committed (issue 14 added the point)
    Case("fix-projection.before_index_commit", "projection.before_index_commit", 2),
    Case("fix-sidecar-before_rename", write=f"{SIDECAR_FILE}:1"),
    Case("fix-sidecar-after_rename", write=f"{SIDECAR_FILE}:1", stage="after_rename"),
    Case("novel-audit-before_rename", write=f"{AUDIT}:2"),
    # A day's file that only gained lines at its end grows in place: appended, not fsynced,
    # the index not committed (the fix's audit line).
    Case("fix-audit-markdown.before_fsync", "markdown.before_fsync", 1),
]


@dataclass
class Run:
    proc: subprocess.CompletedProcess[str]
    calls: Counter[Key]

    @property
    def where(self) -> tuple[int, str, str]:
        return self.proc.returncode, self.proc.stdout, self.proc.stderr


@dataclass
class JournalState:
    admitted: Counter[str] = field(default_factory=Counter)
    resolved: Counter[str] = field(default_factory=Counter)
    retained: Counter[Key] = field(default_factory=Counter)
    outcomes: dict[str, str] = field(default_factory=dict)
    memory_ids: list[str] = field(default_factory=list)


@dataclass
class Baseline:
    calls: Counter[Key]
    hits: Counter[str]
    writes: Counter[str]
    lines: list[tuple[str, str]]
    export: bytes
    files: dict[str, bytes | None]


def run_child(root: Path, script: Path, calls: Path, case: Case | None = None, *,
              trace: bool = False) -> Run:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMORY_ES_CRASH_AT", "HELPER_"))}
    if case is not None and case.point is not None:
        env["MEMORY_ES_CRASH_AT"] = case.point
        env["HELPER_CRASH_NTH"] = str(case.nth)
    if case is not None and case.write is not None:
        env["HELPER_KILL_IN_ATOMIC_WRITE"] = case.write
        env["HELPER_ATOMIC_WRITE_STAGE"] = case.stage
    if trace:
        env["HELPER_TRACE"] = "1"
    proc = subprocess.run([sys.executable, str(HELPER), str(root), str(script), str(calls)],
                          env=env, capture_output=True, text=True, timeout=HANG_S, check=False)
    logged: Counter[Key] = Counter()
    if calls.exists():
        for line in calls.read_text("utf-8").splitlines():
            stage, intake = json.loads(line)
            logged[(stage, intake)] += 1
    return Run(proc, logged)


def journal_state(root: Path) -> JournalState:
    """Intake and memory facts of the journal, through a verified read-only open."""
    state = JournalState()
    by_uuid = {intake_uuid(h): h for h in (SEED, FIX, NOVEL)}
    with open_reader(root) as opened:
        for _position, event in iter_events(opened):
            if isinstance(event, Intake.Admitted):
                state.admitted[event.run_hash] += 1
            elif isinstance(event, Intake.Resolved):
                intake = by_uuid[event.originator_id]
                state.resolved[intake] += 1
                state.outcomes[intake] = event.outcome
            elif type(event) in RETAINED_STAGE:
                state.retained[(RETAINED_STAGE[type(event)], by_uuid[event.originator_id])] += 1
            elif isinstance(event, Memory.Captured | Memory.Recorded):
                state.memory_ids.append(event.memory_id)
    return state


def index_lines(root: Path) -> list[tuple[str, str]]:
    """(text, status) of every memory line in the active index, in rowid order."""
    return [(text, status) for text, status in
            index_rows(root, "SELECT text, status FROM memories ORDER BY rowid")]


def export(root: Path, out: Path) -> bytes:
    MemoryRoot.open(root).export_to(out)
    return out.read_bytes()


def managed(root: Path) -> dict[str, bytes | None]:
    return {rel: (root / rel).read_bytes() if (root / rel).exists() else None
            for rel in COMPARED_FILES}


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("script") / "script.jsonl"
    write_script(path)
    return path


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, script: Path) -> Baseline:
    """The no-crash run, traced: its calls, crash-point hits, writes and resulting root."""
    tmp = tmp_path_factory.mktemp("baseline")
    root = tmp / "root"
    run = run_child(root, script, tmp / "calls.jsonl", trace=True)
    assert run.proc.returncode == 0, run.where
    hits: Counter[str] = Counter()
    writes: Counter[str] = Counter()
    for line in run.proc.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "hit":
            hits[rest.split()[0]] += 1
        elif word == "write":
            writes[rest.split()[0]] += 1
    return Baseline(calls=run.calls, hits=hits, writes=writes, lines=index_lines(root),
                    export=export(root, tmp / "export.jsonl"), files=managed(root))


def test_baseline_is_the_scenario(baseline: Baseline) -> None:
    """The no-crash run asks each stage once (E5: no classifier call for the novel fact),
    supersedes the seed line (E13) and writes the files the matrix kills inside."""
    assert baseline.calls == Counter({
        ("extract", SEED): 1, ("review", SEED): 1,
        ("extract", FIX): 1, ("review", FIX): 1, ("reconcile", FIX): 1,
        ("extract", NOVEL): 1, ("review", NOVEL): 1})
    assert dict(baseline.lines) == FINAL_LINES
    assert all(baseline.files[rel] is not None for rel in COMPARED_FILES)
    assert baseline.hits["capture.after_extract"] == baseline.hits["capture.after_review"] == 3
    assert baseline.hits["capture.after_reconcile"] == 1
    assert baseline.hits["journal.before_commit"] == 13  # the numbering CASES relies on


def test_matrix_covers_every_capture_crash_point(baseline: Baseline) -> None:
    """Every named point a capture run reaches, and each projection file, has a case."""
    covered = {c.point for c in CASES if c.point} | {c.write.rpartition(":")[0]
                                                     for c in CASES if c.write}
    assert set(baseline.hits) | set(COMPARED_FILES) <= covered
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({(c.point, c.nth, c.write, c.stage) for c in CASES}) == len(CASES)


def check_calls(case: Case, baseline: Baseline, crashed: JournalState, first: Run,
                second: Run) -> None:
    """E17: a retained stage is never asked again; only the reply in flight is asked twice."""
    assert all(n == 1 for n in first.calls.values()), first.calls
    assert all(n == 1 for n in second.calls.values()), second.calls
    # What the crashed journal holds as answered: retained stages, and every stage of a
    # resolved intake (its final transaction may hold the last stage's output).
    answered = set(crashed.retained) | {k for k in baseline.calls if k[1] in crashed.resolved}
    for key in answered:
        assert first.calls[key] == 1, (key, "answered before the kill without a call")
        assert second.calls[key] == 0, (key, "asked again although retained")
    in_flight = Counter({k: n for k, n in first.calls.items() if k not in answered})
    assert len(in_flight) <= 1, in_flight
    assert first.calls + second.calls == baseline.calls + in_flight
    if case.point == "journal.before_commit" and case.nth in (6, 7, 8, 12):
        assert len(in_flight) == 1, "the retain transaction was killed, its reply was asked"
    elif case.point in ("capture.after_extract", "capture.after_review",
                        "capture.after_reconcile", "worker.before_commit"):
        assert not in_flight


@pytest.mark.slow
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_kill_then_resume(tmp_path: Path, script: Path, baseline: Baseline, case: Case) -> None:
    if case.point is not None:
        assert case.nth <= baseline.hits[case.point], "kill point not reached by the scenario"
    else:
        assert case.write is not None
        rel, _, k = case.write.rpartition(":")
        assert int(k) <= baseline.writes[rel], "file write not reached by the scenario"
    root = tmp_path / "root"

    first = run_child(root, script, tmp_path / "calls-1.jsonl", case)
    assert first.proc.returncode == -signal.SIGKILL, first.where
    out = first.proc.stdout.splitlines()
    assert any(line.startswith("kill ") for line in out), first.where
    assert "closed" not in out, first.where
    crashed = journal_state(root)
    assert all(n == 1 for n in crashed.admitted.values()), crashed.admitted
    assert all(n == 1 for n in crashed.retained.values()), crashed.retained
    assert all(n == 1 for n in crashed.resolved.values()), crashed.resolved

    second = run_child(root, script, tmp_path / "calls-2.jsonl")
    assert second.proc.returncode == 0, second.where
    assert second.proc.stdout.splitlines()[-1] == "closed", second.where
    final = journal_state(root)

    # (1) E38: every admitted run resolved exactly once, as a capture.
    assert final.admitted == Counter({SEED: 1, FIX: 1, NOVEL: 1}), final.admitted
    assert final.resolved == Counter({SEED: 1, FIX: 1, NOVEL: 1}), final.resolved
    assert set(final.outcomes.values()) == {"captured"}, final.outcomes
    assert all(n == 1 for n in final.retained.values()), final.retained
    # (2) No duplicate memory, the same lines and statuses as without a crash.
    assert len(final.memory_ids) == len(set(final.memory_ids)) == len(FINAL_LINES)
    lines = index_lines(root)
    live = [text for text, status in lines if status == "open"]
    assert len(live) == len(set(live)), lines
    assert lines == baseline.lines
    # (3) E17: no stage asked twice once retained.
    check_calls(case, baseline, crashed, first, second)
    # (4) F5: health clean.
    report = MemoryRoot.open(root).health()
    assert report.status == "clean", report.to_json()
    # (5) L3: run-derived ids on a constant clock, so the same bytes as the baseline.
    assert managed(root) == baseline.files
    assert export(root, tmp_path / "export.jsonl") == baseline.export
