"""Crash residue is not drift (issue 13 item 9; SPEC N*, C15, DESIGN 12).

A real subprocess is SIGKILLed at a named boundary by the existing crash harnesses
(tests/helpers_worker.py through test_crash_matrix, tests/helpers_crash_capture.py through
test_crash_capture, tests/helpers_crash.py for rebuild). Health, run before any writer reopens
the root, reports what the kill left behind and the next writer open repairs as
``crash_residue``: status ``recoverable``, exit 0. After one writer open and close the root is
clean. The same shapes made by hand with content no replay produces stay drift (exit 1).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from ceilings import HANG_S
from helpers_index import active_index_path
from helpers_worker import CONFIGS
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from projections.graph import SIDECAR_FILE
from test_crash_capture import DAILY, run_child, write_script
from test_crash_capture import Case as CaptureCase
from test_crash_matrix import Case, run_helper, seed_root

RECOVERABLE = {"crash_residue", "projection_behind"}
CRASH_HELPER = Path(__file__).with_name("helpers_crash.py")


def findings(root: Path) -> set[tuple[str, str]]:
    return {(f.code, f.path) for f in MemoryRoot.open(root).health().findings}


def assert_recoverable(root: Path, capsys: pytest.CaptureFixture[str]) -> set[str]:
    """Status recoverable, exit 0, only residue (and the projection behind); returns the
    residue paths. The CLI says the same."""
    report = MemoryRoot.open(root).health()
    assert (report.status, report.exit_code) == ("recoverable", 0), report.to_json()
    assert {f.code for f in report.findings} <= RECOVERABLE, report.to_json()
    residue = {f.path for f in report.findings if f.code == "crash_residue"}
    assert residue, report.to_json()
    code = main(["--root", str(root), "health", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert (code, out["status"]) == (0, "recoverable")
    return residue


def reopen(root: Path) -> None:
    """One writer open and close: what "the next writer open repairs" means."""
    with MemoryStore.open(root, background=False, lock_timeout=1.0):
        pass


def crash_worker(tmp_path: Path, case: Case) -> Path:
    root = tmp_path / "root"
    if not case.fresh:
        seed_root(root, parse_config(CONFIGS[case.mode]))
    proc = run_helper(root, case)
    assert proc.returncode == -9, (proc.stdout, proc.stderr)
    return root


# A day's first file is written whole (a temp renamed over it); later passes append to it in
# place (``markdown.before_fsync``: appended, neither fsynced nor committed in the index).
WORKER_CASES = [
    (Case("lite-markdown-before_rename", atomic="1", arm="admitted", fresh=True),
     r"daily/\..*\.md\.tmp-"),
    (Case("lite-markdown-after_rename", atomic="1:after_rename", arm="admitted", fresh=True),
     r"daily/\d{4}-\d\d-\d\d\.md$"),
    (Case("lite-markdown-appended", "markdown.before_fsync", arm="admitted"),
     r"daily/\d{4}-\d\d-\d\d\.md$"),
    (Case("bujo-audit-before_rename", atomic="1", mode="bujo", arm="admitted", fresh=True),
     r"audit/\..*\.md\.tmp-"),
    (Case("bujo-audit-after_rename", atomic="1:after_rename", mode="bujo", arm="admitted",
          fresh=True),
     r"audit/\d{4}-\d\d-\d\d\.md$"),
    (Case("bujo-audit-appended", "markdown.before_fsync", mode="bujo", arm="admitted"),
     r"audit/\d{4}-\d\d-\d\d\.md$"),
    (Case("fresh-index-pointer-before_rename", atomic="2", fresh=True),
     r"index/(\.CURRENT\.tmp-|gen-1/memory\.db)"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("case", "pattern"), WORKER_CASES, ids=[c.id for c, _ in WORKER_CASES])
def test_worker_crash_residue_is_recoverable(tmp_path: Path, case: Case, pattern: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import re

    root = crash_worker(tmp_path, case)
    residue = assert_recoverable(root, capsys)
    assert all(re.match(pattern, path) for path in residue), residue
    reopen(root)
    assert MemoryRoot.open(root).health().status == "clean"


CAPTURE_CASES = [
    CaptureCase("fix-graph.before_fsync", "graph.before_fsync", 1),
    CaptureCase("fix-sidecar-after_rename", write=f"{SIDECAR_FILE}:1", stage="after_rename"),
    CaptureCase("fix-sidecar-before_rename", write=f"{SIDECAR_FILE}:1"),
    CaptureCase("fix-daily-after_rename", write=f"{DAILY}:2", stage="after_rename"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CAPTURE_CASES, ids=[c.id for c in CAPTURE_CASES])
def test_capture_crash_residue_is_recoverable(tmp_path: Path, case: CaptureCase,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """BuJo capture: graph.jsonl grown in place, the sidecar renamed or its temp written
    ahead of the index (today ``canonical_mismatch`` / ``file_mismatch`` / ``file_extra``)."""
    script = tmp_path / "script.jsonl"
    write_script(script)
    root = tmp_path / "root"
    run = run_child(root, script, tmp_path / "calls.jsonl", case)
    assert run.proc.returncode == -9, run.where
    assert_recoverable(root, capsys)
    assert run_child(root, script, tmp_path / "calls.jsonl").proc.returncode == 0
    assert MemoryRoot.open(root).health().status == "clean"


def crash_rebuild(root: Path, point: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELPER_")}
    env["MEMORY_ES_CRASH_AT"] = point
    proc = subprocess.run([sys.executable, str(CRASH_HELPER), str(root), "rebuild"], env=env,
                          capture_output=True, text=True, timeout=HANG_S, check=False)
    assert proc.returncode == -9, (proc.stdout, proc.stderr)


@pytest.mark.parametrize(("point", "gen"), [("rebuild.before_activate", 2),
                                            ("rebuild.after_activate", 1)])
def test_rebuild_crash_leaves_a_recoverable_generation(
        tmp_path: Path, point: str, gen: int, capsys: pytest.CaptureFixture[str]) -> None:
    """A rebuild killed before it activates its new generation (or after, before it removes
    the old one) leaves an inactive generation that is exactly a replay: residue, removed by
    the next writer open."""
    root = tmp_path / "root"
    seed_root(root, parse_config(CONFIGS["lite"]))
    crash_rebuild(root, point)
    residue = assert_recoverable(root, capsys)
    assert residue and all(p.startswith(f"index/gen-{gen}/") for p in residue), residue
    reopen(root)
    assert not (root / "index" / f"gen-{gen}").exists()
    assert MemoryRoot.open(root).health().status == "clean"


@pytest.mark.parametrize("point", ["journal.after_commit", "catalog.torn_write"])
@pytest.mark.parametrize("mode", ["lite", "journal"])
def test_a_commit_killed_before_its_catalog_write_is_recoverable(
        tmp_path: Path, point: str, mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A real writer SIGKILLed between its journal commit and its catalog write (or inside
    the catalog write) leaves rows past the catalog whose keyed chain verifies: known crash
    residue the next writer open adopts, so ``recoverable`` (exit 0) with the one finding
    ``journal_ahead_of_catalog`` on journal.catalog, never drift (exit 1)."""
    root = tmp_path / "root"
    seed_root(root, parse_config(CONFIGS[mode]))
    done = run_helper(root, Case(f"{mode}-{point}", point, mode=mode))
    assert done.returncode == -9, (done.stdout, done.stderr)
    report = MemoryRoot.open(root).health()
    assert (report.status, report.exit_code) == ("recoverable", 0), report.to_json()
    assert {(f.code, f.path) for f in report.findings} == {
        ("journal_ahead_of_catalog", "journal.catalog")}, report.to_json()
    assert main(["--root", str(root), "health", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "recoverable"
    reopen(root)
    assert MemoryRoot.open(root).health().status in ("clean", "recoverable")


# -- look-alikes made by hand stay drift -------------------------------------------------------


def test_a_forged_temp_file_is_drift(tmp_path: Path) -> None:
    case, _ = WORKER_CASES[0]
    root = crash_worker(tmp_path, case)
    [temp] = [p for p in (root / "daily").iterdir() if ".tmp-" in p.name]
    temp.write_bytes(temp.read_bytes().replace(b"dark mode", b"light mode"))
    rel = str(temp.relative_to(root))
    report = MemoryRoot.open(root).health()
    assert ("file_extra", rel) in {(f.code, f.path) for f in report.findings}
    assert (report.status, report.exit_code) == ("findings", 1)


def test_a_temp_name_for_no_managed_file_is_drift(tmp_path: Path) -> None:
    root = tmp_path / "root"
    seed_root(root, parse_config(CONFIGS["lite"]))
    [day] = list((root / "daily").iterdir())
    for name in (f".{day.name}.tmp-1-abcdefgh", ".notes.md.tmp-1-abcdefgh"):
        fd = os.open(root / "daily" / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, day.read_bytes() if name.startswith(f".{day.name}") else b"x\n")
        os.close(fd)
    got = findings(root)
    # the first holds exactly the live day: a rewrite that changed nothing is never written,
    # but its bytes are replay's, so it is residue; the second names no managed file
    assert ("file_extra", "daily/.notes.md.tmp-1-abcdefgh") in got, got
    assert MemoryRoot.open(root).health().exit_code == 1


def test_a_daily_file_edited_after_a_crash_is_drift(tmp_path: Path) -> None:
    case, _ = WORKER_CASES[2]  # killed after an append, before its fsync
    root = crash_worker(tmp_path, case)
    [path] = [p for p in (root / "daily").iterdir() if not p.name.startswith(".")]
    path.write_bytes(path.read_bytes() + b"\n- Forged-0001 added by hand\n")
    got = findings(root)
    assert ("file_mismatch", str(path.relative_to(root))) in got, got
    assert MemoryRoot.open(root).health().status == "findings"


def test_a_stray_generation_that_is_no_replay_is_drift(tmp_path: Path) -> None:
    root = tmp_path / "root"
    seed_root(root, parse_config(CONFIGS["lite"]))
    live = active_index_path(root)
    stray = root / "index" / "gen-7"
    shutil.copytree(live.parent, stray)
    conn = apsw.Connection(str(stray / "memory.db"))
    with conn:
        conn.execute("UPDATE memories SET text = 'forged'")
    conn.close()
    got = findings(root)
    assert ("file_extra", "index/gen-7/memory.db") in got, got
    assert not any(code == "crash_residue" for code, _ in got), got
    assert MemoryRoot.open(root).health().exit_code == 1


def test_a_sidecar_that_matches_replay_beside_an_edited_index_is_drift(
        tmp_path: Path) -> None:
    """The sidecar disagrees with an index whose lifecycle was edited by hand: the sidecar
    is replay's own, so nothing ran ahead; both findings stay drift."""
    script = tmp_path / "script.jsonl"
    write_script(script)
    root = tmp_path / "root"
    assert run_child(root, script, tmp_path / "calls.jsonl").proc.returncode == 0
    conn = apsw.Connection(str(active_index_path(root)))
    with conn:
        conn.execute("DELETE FROM lifecycle")
    conn.close()
    got = findings(root)
    assert ("canonical_mismatch", SIDECAR_FILE) in got, got
    assert not any(code == "crash_residue" for code, _ in got), got
