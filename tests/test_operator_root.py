"""Operator and read commands never create a root (issue 12, item 2): a mistyped ``--root``
is a one-line "no memory root here" error (exit 2) and nothing is written there. Only
admission (``memory-es admit``, ``MemoryStore.open``) starts a new root; ``remember`` and
``serve-mcp`` are writers too, and refuse a path that holds no root like the others (C*)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_es import CompletedTurn, MemoryRoot, MemoryStore, NotARootError
from memory_es.cli import main
from memory_es.transfer import rebuild_root

RUN = "a" * 64

COMMANDS = [
    ["drain"], ["retry"], ["resolve", RUN, "typo"], ["rebuild"], ["inspect"],
    ["search", "dentist"], ["export", "--journal", "-"],
    ["journal", "--from", "2026-12-01", "--through", "2026-12-01", "--tz", "UTC"],
    ["remember", "The garage door code changes every March."],
    ["remember", "A line.", "--valid-to", "2027-01-01"],
    ["serve-mcp"], ["serve-mcp", "--transport", "http", "--port", "1"],
    ["set-status", RUN, "done"], ["mark", RUN, "--insight"], ["consolidate"],
    ["forget", RUN, "--reason", "typo"], ["list"], ["show", RUN], ["profile"], ["anchor"],
    ["migrate-journal", "--to", "sqlite"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: "-".join(a[:3]))
def test_a_mistyped_root_is_refused_and_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    typo = tmp_path / "mmeory"
    assert main(["--root", str(typo), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no memory root here" in err and "Traceback" not in err
    assert str(typo) in err  # the message names the path it looked at
    assert not typo.exists()


def test_remember_into_an_existing_root_still_writes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    assert main(["--root", str(root), "admit", "--run-id", "r1", "--answer", "Booked."]) == 0
    assert main(["--root", str(root), "remember", "The garage code changes in March."]) == 0
    assert '"remembered"' in capsys.readouterr().out


def test_the_api_still_creates_a_root_for_a_host(tmp_path: Path) -> None:
    """``MemoryStore.open`` creates by design (README: the host's writer); the CLI checks."""
    with MemoryStore.open(tmp_path / "new", background=False) as store:
        assert store.remember("A first fact.").status == "remembered"


def test_health_of_a_mistyped_root_cannot_audit_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    typo = tmp_path / "mmeory"
    assert main(["--root", str(typo), "health"]) == 2  # N*: 2 = no root here, a usage error
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "not_a_root" in err
    assert not typo.exists()


def test_an_empty_directory_is_not_turned_into_a_root(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    assert main(["--root", str(empty), "drain"]) == 2
    assert list(empty.iterdir()) == []
    with pytest.raises(NotARootError):
        rebuild_root(empty)
    with pytest.raises(NotARootError):
        MemoryStore.open(empty, create=False)
    assert list(empty.iterdir()) == []


def test_admission_still_starts_a_root_and_operators_then_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    assert main(["--root", str(root), "admit", "--run-id", "r1", "--answer", "Booked."]) == 0
    assert main(["--root", str(root), "drain"]) == 0
    assert "ran 1 attempt;" in capsys.readouterr().out
    assert main(["--root", str(root), "rebuild"]) == 0


def test_an_export_never_lands_in_a_file_someone_else_created(tmp_path: Path) -> None:
    """Issue 13 item 8: ``export_to`` writes through a temp file created with O_EXCL under an
    unpredictable name and fchmod 0600, so a pre-created, world-readable temp file at the old
    predictable name is never written, and the export is owner-only under any umask."""
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer="Secret-5150 lives here"))
    out_dir = tmp_path / "shared"
    out_dir.mkdir(mode=0o777)
    target = out_dir / "journal.jsonl"
    trap = out_dir / f".{target.name}.tmp-{os.getpid()}"
    trap.write_bytes(b"planted")
    os.chmod(trap, 0o666)
    old = os.umask(0)
    try:
        assert MemoryRoot.open(root).export_to(target) > 0
    finally:
        os.umask(old)
    assert trap.read_bytes() == b"planted"
    assert os.lstat(target).st_mode & 0o777 == 0o600
    assert b"Secret-5150" in target.read_bytes()
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([target.name, trap.name])
