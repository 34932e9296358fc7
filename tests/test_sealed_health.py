"""Every live sealed record opens, or health says so and export refuses before it writes a
byte (N1, N12, issue 14 sealing). A record key in the key store's ``records.db`` that is
damaged (other bytes) or gone is a finding naming the key store and the fix; the replay alone
never sees it for topics the index passes over (a turn's summary), and export would otherwise
fail halfway."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from helpers_attack import open_store, three_lines
from memory_es import MemoryRoot
from memory_es.cli import main
from memory_es.errors import IntegrityError
from memory_es.history import open_reader
from memory_es.journal.sealing import state_key_ids

MARKER = "xqzvkptwq"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    with open_store(path, "lite", background=False) as store:
        three_lines(store, MARKER)
    return path


def damage_a_turn_key(root: Path, how: str) -> None:
    """The record key of the last turn's sealed summary (a topic the index passes over)."""
    with open_reader(root) as opened:
        keys = opened.recorder.sealer.keys
        assert keys is not None
        location = keys.location
        key_id = max(k for *_, topic, state, _c in opened.recorder.rows()
                     if topic == "memory_es/Intake.Admitted" for k in state_key_ids(state))
    conn = apsw.Connection(str(location))
    with conn:
        if how == "damaged":
            conn.execute("UPDATE keys SET key = ? WHERE id = ?", (b"\x07" * 32, key_id))
        else:
            conn.execute("DELETE FROM keys WHERE id = ?", (key_id,))
    conn.close()


@pytest.mark.parametrize(("how", "code"), [("damaged", "record_seal_invalid"),
                                           ("deleted", "record_key_missing")])
def test_health_finds_a_sealed_record_that_does_not_open(
        root: Path, how: str, code: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert MemoryRoot.open(root).health().status == "clean"
    damage_a_turn_key(root, how)
    report = MemoryRoot.open(root).health(deep=True)
    assert (report.status, report.exit_code) == ("findings", 1), report.to_json()
    assert {(f.code, f.path) for f in report.findings} == {(code, "journal.db")}
    assert "records.db" in report.findings[0].detail
    assert MARKER not in json.dumps(report.to_json())
    assert main(["--root", str(root), "health", "--deep"]) == 1
    assert code in capsys.readouterr().out
    # without --deep, a deleted key is found still (no decryption needed); a key whose
    # bytes changed takes the decryption only --deep pays for
    shallow = MemoryRoot.open(root).health()
    assert {f.code for f in shallow.findings} == ({code} if how == "deleted" else set())


@pytest.mark.parametrize("how", ["damaged", "deleted"])
def test_export_refuses_before_writing_a_byte(root: Path, tmp_path: Path, how: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    damage_a_turn_key(root, how)
    target = tmp_path / "out" / "export.jsonl"
    target.parent.mkdir()
    with pytest.raises(IntegrityError):
        MemoryRoot.open(root).export_to(target)
    assert list(target.parent.iterdir()) == []  # no file, no temp file
    capsys.readouterr()
    assert main(["--root", str(root), "export", "--journal", "-"]) == 3  # integrity: exit 3
    assert capsys.readouterr().out == ""  # not one line on stdout
