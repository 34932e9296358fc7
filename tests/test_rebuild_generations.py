"""``memory-es rebuild`` leaves health clean (C15, N1, N7, B16): an old index generation that
is a symlink (the directory, or its database file) is unlinked, never followed, so no
hygiene finding outlives the rebuild and nothing outside the root is touched."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers_attack import open_store
from helpers_index import active_index_path
from memory_es import CompletedTurn
from memory_es.cli import main


def health(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, set[str]]:
    capsys.readouterr()
    code = main(["--root", str(root), "--json", "health"])
    report = json.loads(capsys.readouterr().out)
    return code, {f["code"] for f in report["findings"]}


@pytest.mark.parametrize("what", ["directory", "database"])
def test_rebuild_replaces_a_symlinked_generation(tmp_path: Path, what: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    with open_store(root, "lite", background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r1", outcome="success",
                                                   answer="The fern needs water weekly."))
        store.drain()
    db = active_index_path(root)
    outside = tmp_path / "elsewhere"
    outside.mkdir(mode=0o700)
    if what == "directory":  # index/gen-N -> a directory outside the root
        shutil.move(db.parent, outside / db.parent.name)
        os.symlink(outside / db.parent.name, db.parent)
        kept = outside / db.parent.name / db.name
    else:  # index/gen-N/memory.db -> a file outside the root
        shutil.move(db, outside / db.name)
        os.symlink(outside / db.name, db)
        kept = outside / db.name
    code, found = health(root, capsys)
    assert code == 1 and "symlink" in found
    assert main(["--root", str(root), "rebuild"]) == 0
    assert health(root, capsys) == (0, set())
    assert kept.is_file()  # unlinked, never followed
    assert not os.path.lexists(db.parent if what == "directory" else db)
