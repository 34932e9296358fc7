"""Damaged and unreadable storage (issue 13 item 10; SPEC N5, C, B16).

Real damaged files, never mocks: a journal whose SQLite header is overwritten, a truncated or
emptied journal, a garbage integrity catalog, an index generation that is not a database, and
a root on a read-only bind mount or with its files chmod'ed read-only (in a subprocess that
drops ``CAP_DAC_OVERRIDE``, since the tests run as root). Every SQLite error any read command
(health, inspect, search, export, journal) or maintenance command (rebuild, replay, drain)
meets maps to one stable code and the documented exit code: never a traceback, never "internal
error", never a misleading answer (a corrupt journal is not an "unreadable index").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest

from helpers_index import active_index_path
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.cli import main

ANSWERS = ["Quokka-4471 feeds the heron", "Lantern-8812 visits the lighthouse"]
JOURNAL_RANGE = ["--from", "2020-01-01", "--through", "2020-01-05", "--tz", "UTC"]
READERS: list[list[str]] = [["inspect"], ["search", "heron"], ["export", "--journal", "-"],
                            ["journal", *JOURNAL_RANGE]]
WRITERS: list[list[str]] = [["rebuild"], ["drain"]]


@pytest.fixture
def live_root(tmp_path: Path) -> Path:
    """A root as a closed store leaves it (the journal's WAL beside it)."""
    path = tmp_path / "root"
    with MemoryStore.open(path, background=False) as store:
        for i, answer in enumerate(ANSWERS):
            store.persist_completed_turn(CompletedTurn(run_id=f"r{i}", outcome="success",
                                                       answer=answer))
        store.drain()
    return path


@pytest.fixture
def root(live_root: Path) -> Path:
    """The same with the WAL folded in, so damage to journal.db is what SQLite reads."""
    checkpoint(live_root / "journal.db")
    return live_root


def checkpoint(db: Path) -> None:
    """Fold the WAL into the database file, so damage to the file is what SQLite reads."""
    conn = apsw.Connection(str(db))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()
    for side in ("-wal", "-shm"):
        Path(str(db) + side).unlink(missing_ok=True)


def damage(root: Path, kind: str) -> None:
    journal = root / "journal.db"
    if kind == "journal_header":  # "SQLite format 3" and the page size gone
        with open(journal, "r+b") as f:
            f.write(b"\xff" * 100)
    elif kind == "journal_truncated":
        os.truncate(journal, 5000)
    elif kind == "journal_empty":
        os.truncate(journal, 0)
    elif kind == "catalog_garbage":
        (root / "journal.catalog").write_bytes(bytes(range(128)))
    elif kind == "index_not_a_db":
        active_index_path(root).write_bytes(b"this is not a database\n" * 200)
    else:
        raise AssertionError(kind)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in out + err, (argv, out, err)
    try:
        return code, json.loads(out), err
    except ValueError:
        return code, out, err


JOURNAL_DAMAGE = ["journal_header", "journal_truncated", "journal_empty"]


@pytest.mark.parametrize("kind", JOURNAL_DAMAGE)
def test_a_corrupt_journal_is_a_finding_and_every_command_names_it(
        root: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Health reports ``journal_corrupt`` on journal.db (status findings, exit 1); every other
    command exits 3 with the error code ``journal_corrupt``; search never answers "degraded:
    index_unreadable" from a journal it could not verify."""
    damage(root, kind)
    report = MemoryRoot.open(root).health()
    assert (report.status, report.exit_code) == ("findings", 1), report.to_json()
    assert {(f.code, f.path) for f in report.findings} == {("journal_corrupt", "journal.db")}
    code, out, _ = cli(capsys, "--root", str(root), "health", "--json")
    assert code == 1 and out["findings"][0]["code"] == "journal_corrupt"
    for argv in [*READERS, *WRITERS]:
        code, out, err = cli(capsys, "--root", str(root), *argv, "--json")
        # A writer (rebuild, drain) that finds no events at all compares with the catalog
        # first: an emptied journal is then the more exact journal_truncated.
        want = {"journal_corrupt", "journal_truncated"} if (
            kind == "journal_empty" and argv in WRITERS) else {"journal_corrupt"}
        assert code == 3 and out["error"]["code"] in want, (argv, out, err)
        assert out["error"]["message"].startswith(str(root / "journal.db")), out


def test_a_garbage_catalog_is_a_finding_and_every_command_names_it(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    damage(root, "catalog_garbage")
    code, out, _ = cli(capsys, "--root", str(root), "health", "--json")
    assert code == 1
    assert [(f["code"], f["path"]) for f in out["findings"]] == [
        ("catalog_corrupt", "journal.catalog")]
    for argv in [*READERS, *WRITERS]:
        code, out, err = cli(capsys, "--root", str(root), *argv, "--json")
        assert (code, out["error"]["code"]) == (3, "catalog_corrupt"), (argv, out, err)


def test_an_index_generation_that_is_not_a_database(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The journal is whole: inspect and export answer, search answers degraded, ``journal``
    (MemoryJournal reads the index) exits 3 ``index_unreadable``, health reports it (exit 1)
    and rebuild repairs it."""
    damage(root, "index_not_a_db")
    rel = str(active_index_path(root).relative_to(root))
    code, out, _ = cli(capsys, "--root", str(root), "health", "--json")
    assert code == 1 and [(f["code"], f["path"]) for f in out["findings"]] == [
        ("index_unreadable", rel)]
    assert cli(capsys, "--root", str(root), "inspect", "--json")[0] == 0
    assert cli(capsys, "--root", str(root), "export", "--journal", "-")[0] == 0
    code, out, _ = cli(capsys, "--root", str(root), "search", "heron", "--json")
    assert (code, out["degraded"], out["reason"]) == (0, True, "index_unreadable")
    code, out, _ = cli(capsys, "--root", str(root), "journal", *JOURNAL_RANGE, "--json")
    assert (code, out["error"]["code"]) == (3, "index_unreadable"), out
    assert cli(capsys, "--root", str(root), "rebuild")[0] == 0
    assert MemoryRoot.open(root).health().status == "clean"


# -- a root that cannot be written or read ------------------------------------------------------

RUNNER = """
import json, subprocess, sys
cli = [sys.executable, "-m", "memory_es.cli"]
results = []
for argv in json.loads(sys.argv[1]):
    done = subprocess.run(cli + argv, capture_output=True, text=True, timeout=600)
    results.append([argv, done.returncode, done.stdout, done.stderr])
print(json.dumps(results))
"""


def run_confined(prefix: list[str], setup: str, commands: list[list[str]],
                 tmp_path: Path) -> list[tuple[list[str], int, Any, str]]:
    """Run each CLI command in a subprocess under ``prefix`` after the shell ``setup``."""
    script = tmp_path / "runner.py"
    script.write_text(RUNNER, "utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    shell = f"{setup}exec {sys.executable} {script} '{json.dumps(commands)}'"
    done = subprocess.run([*prefix, "sh", "-c", shell], capture_output=True, text=True,
                          timeout=600, env=env)
    if done.returncode != 0 and ("mount" in done.stderr or "setpriv" in done.stderr):
        pytest.skip(f"cannot confine here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    results = []
    for argv, code, out, err in json.loads(done.stdout):
        assert "Traceback" not in out + err and "internal error" not in out + err, (argv, err)
        try:
            results.append((argv, code, json.loads(out), err))
        except ValueError:
            results.append((argv, code, out, err))
    return results


def confined_commands(root: Path, export: Path, new_root: Path) -> list[list[str]]:
    base = ["--root", str(root), "--json"]
    return [[*base, "health"], *([*base, *argv] for argv in [*READERS, *WRITERS]),
            ["--root", str(new_root), "--json", "replay", str(export)],
            [*base, "admit", "--run-id", "late", "--answer", "Lantern-0001"]]


def check_unreadable(results: list[tuple[list[str], int, Any, str]]) -> None:
    """Health could not run (status cannot_audit, one ``io_error`` finding, exit 3); inspect
    and export, which need only the journal, answer; search and journal (the index needs a
    writable -shm), the writers and replay exit 3 with ``io_error``, admit included
    (the writer lock cannot be taken)."""
    (_, code, health, _), *rest = results
    assert code == 3, health
    assert health["status"] == "cannot_audit"
    [finding] = health["findings"]
    # SQLite opens a WAL journal read-only while its -shm is there; the index then fails
    assert finding["code"] == "io_error", health
    assert finding["path"] in ("journal.db", "index/gen-1/memory.db"), health
    assert health["error"]["code"] == "io_error"
    for argv, code, out, err in rest:
        if argv[3] in ("inspect", "export"):  # the journal alone: read through its -shm
            assert code == 0, (argv, out, err)
            continue
        assert (code, out["error"]["code"]) == (3, "io_error"), (argv, out, err)


def test_a_read_only_bind_mount(live_root: Path, tmp_path: Path) -> None:
    """A root on a read-only filesystem (a private mount namespace, nothing outlives the test):
    the readers cannot open the WAL journal, the writers cannot take the lock."""
    root = live_root
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and util-linux unshare for a private read-only bind mount")
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    new_root = root / "copy"
    setup = f"mount --bind {root} {root} && mount -o remount,bind,ro {root} && "
    results = run_confined(["unshare", "--mount", "--propagation", "private"], setup,
                           confined_commands(root, export, new_root), tmp_path)
    check_unreadable(results)
    assert MemoryRoot.open(root).health().status == "clean"  # nothing was changed


def test_files_chmod_read_only(live_root: Path, tmp_path: Path) -> None:
    """Every file 0400 and every directory 0500, for a process without CAP_DAC_OVERRIDE."""
    root = live_root
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and util-linux setpriv to drop CAP_DAC_OVERRIDE")
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    new_root = root / "copy"
    paths = sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True)
    for path in [*paths, root]:
        os.chmod(path, 0o500 if path.is_dir() else 0o400)
    try:
        results = run_confined(
            ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"], "",
            confined_commands(root, export, new_root), tmp_path)
    finally:
        for path in [root, *paths]:
            os.chmod(path, 0o700 if path.is_dir() else 0o600)
    check_unreadable(results)
    assert MemoryRoot.open(root).health().status == "clean"


APSW_ERRORS = sorted((c for c in vars(apsw).values()
                      if isinstance(c, type) and issubclass(c, apsw.Error)),
                     key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", APSW_ERRORS, ids=lambda c: c.__name__)
def test_every_sqlite_error_class_has_a_stable_code(cls: type[apsw.Error]) -> None:
    """Whatever SQLite raises maps to one code of a closed set and exit 3; on a file a door
    names, to that file's code (journal_corrupt) or the shared io_error / busy."""
    from memory_es.cli.contract import classify
    from memory_es.errors import storage_error

    failure = classify(cls("boom"))
    assert failure.exit_code == 3
    assert failure.code in {"corrupt", "io_error", "busy", "sqlite_error"}, failure
    mapped = storage_error(cls("boom"), "/r/journal.db", what="journal",
                           corrupt_code="journal_corrupt")
    assert mapped is not None
    assert mapped.code in {"journal_corrupt", "io_error", "busy", "sqlite_error"}
    assert str(mapped).startswith("/r/journal.db: ") and "boom" not in str(mapped)
