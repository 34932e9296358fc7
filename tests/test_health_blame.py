"""Health blames the file that is damaged (N1, N2, N12; issue 13 item 10): a damaged index
generation on a root that has forgotten something is ``index_unreadable`` naming the
generation's file and the fix (``memory-es rebuild``), never ``journal_corrupt`` or exit 3 (an
operator who believed it would restore the journal from a backup and bring forgotten text
back)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_attack import open_store, three_lines
from helpers_index import active_index_path
from memory_es.cli import main

MARKER = "xqzvkptwq"


def forgot_one(root: Path) -> None:
    with open_store(root, "lite", background=False) as store:
        three_lines(store, MARKER)
        assert store.forget(store.lexical_search(MARKER)[0].id,
                            reason="test").status == "forgotten"


def damage(db: Path, how: str) -> None:
    data = bytearray(db.read_bytes())
    if how == "garbage":
        db.write_bytes(b"garbage!" * 2048)
    elif how == "truncated":
        db.write_bytes(bytes(data[:len(data) // 2]))
    else:  # one page overwritten in place
        data[2 * 4096:2 * 4096 + 2000] = b"\xff" * 2000
        db.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["garbage", "truncated", "page"])
def test_a_damaged_index_is_named_not_the_journal(tmp_path: Path, how: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    forgot_one(root)
    db = active_index_path(root)
    rel = str(db.relative_to(root))
    damage(db, how)
    capsys.readouterr()
    assert main(["--root", str(root), "--json", "health"]) == 1
    report = json.loads(capsys.readouterr().out)
    found = {(f["code"], f["path"]) for f in report["findings"]}
    assert found == {("index_unreadable", rel)}, found
    assert all("memory-es rebuild" in f["detail"] for f in report["findings"])
    assert MARKER not in json.dumps(report)
    assert main(["--root", str(root), "rebuild"]) == 0
    capsys.readouterr()
    assert main(["--root", str(root), "--json", "health"]) == 0, capsys.readouterr()
