"""The strict health auditor's tamper matrix (SPEC N3, N4, N7, N11, N12; B15-B17; D10; K10).

A root is built from a handful of turns over two days (fake clock), drained and closed. Each test
then tampers with exactly one thing and asserts the exact finding code(s), the root-relative
path and the exit code: 0 clean (or in progress), 1 findings, 2 cannot audit. Health output must
never contain memory text (N12), and ``memory-es rebuild`` heals projection tampering while
leaving untouched daily files byte- and mtime-identical (K10).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from helpers_capture import extraction, memory, review, script
from helpers_index import active_index_path, index_rows
from helpers_lock import LockHolder, hold_writer_lock
from memory_es.capture.scripted import ScriptedChat
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.testing import WordBagEmbedder

DAY1, DAY2 = "2026-03-01", "2026-03-02"
# Distinctive memory text: health output must never contain any of it (N12).
ANSWERS = {
    DAY1: ["Quetzal-7431 prefers oolong tea", "Marzipan-5519 dentist on Tuesday",
           "Zeppelin-2086 parks by the river"],
    DAY2: ["Obsidian-9902 renews the passport", "Kumquat-3317 plays the cello",
           "Nebula-6648 waters the ferns"],
}
ALL_TEXT = [a for answers in ANSWERS.values() for a in answers]
SESSIONS = {DAY1: "web:thread-one", DAY2: "web:thread-two"}
BUJO_CAPTURE = {
    "mode": "bujo",
    "writeMode": "capture",
    "embeddings": {"dim": 384},
    "llm": {"provider": "ollama", "model": "m"},
}


class Clock:
    """A settable UTC clock; every reading advances one second so instants stay distinct."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def turn(run_id: str, answer: str, session: str | None = None, **kw: Any) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer, session=session, **kw)


def build_root(root: Path) -> Path:
    """Three turns on DAY1 and three on DAY2, drained after each day, then closed."""
    clock = Clock(datetime(2026, 3, 1, 10, 0, tzinfo=UTC))
    with MemoryStore.open(root, clock=clock, background=False) as store:
        for day, start in ((DAY1, datetime(2026, 3, 1, 10, 0, tzinfo=UTC)),
                           (DAY2, datetime(2026, 3, 2, 9, 0, tzinfo=UTC))):
            clock.now = start
            for i, answer in enumerate(ANSWERS[day]):
                result = store.persist_completed_turn(turn(f"{day}-{i}", answer, SESSIONS[day]))
                assert result.status == "admitted"
            assert store.drain() == 3
    return root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return build_root(tmp_path / "root")


def index_rel(root: Path) -> str:
    return str(active_index_path(root).relative_to(root))


def daily(root: Path, day: str) -> Path:
    return root / "daily" / f"{day}.md"


def sql(path: Path, statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Run one statement on a SQLite file behind the library's back."""
    conn = apsw.Connection(str(path))
    try:
        with conn:
            return list(conn.execute(statement, params))
    finally:
        conn.close()


def memory_row(root: Path, text: str) -> tuple[int, str]:
    """(rowid, id) of the index row holding ``text``."""
    rows = index_rows(root, "SELECT rowid, id FROM memories WHERE text = ?", (text,))
    assert len(rows) == 1
    return rows[0][0], rows[0][1]


def codes(report: Any) -> set[tuple[str, str]]:
    return {(f.code, f.path) for f in report.findings}


def write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def assert_findings(root: Path, expected: set[tuple[str, str]]) -> None:
    """Library report: exactly ``expected``, status findings, exit 1."""
    report = MemoryRoot.open(root).health()
    assert report.status == "findings"
    assert report.exit_code == 1
    assert codes(report) == expected, report.findings


# -- clean -------------------------------------------------------------------------------------


def test_clean_root_library(root: Path) -> None:
    """N*: a root whose projections equal a replay of its journal has no findings, exit 0."""
    report = MemoryRoot.open(root).health()
    assert report.status == "clean"
    assert report.findings == ()
    assert report.exit_code == 0
    assert report.journal_position == report.projection_position > 0


def test_clean_root_cli(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """C/N: ``memory-es health`` and ``health --json`` on a clean root exit 0, no findings."""
    code, out = run_cli(capsys, "--root", str(root), "health")
    assert code == 0
    assert out.startswith("clean:")
    assert "0 findings" in out
    code, out = run_cli(capsys, "--root", str(root), "health", "--json")
    assert code == 0
    obj = json.loads(out)
    assert obj["status"] == "clean"
    assert obj["findings"] == []


# -- Markdown tampering ------------------------------------------------------------------------


def test_edited_daily_line_is_file_mismatch(root: Path) -> None:
    """N11/K10: a daily file whose bytes differ from replay is file_mismatch for that file."""
    path = daily(root, DAY1)
    path.write_bytes(path.read_bytes().replace(b"oolong", b"jasmine"))
    assert_findings(root, {("file_mismatch", f"daily/{DAY1}.md")})


def test_deleted_daily_file_is_file_missing(root: Path) -> None:
    """N11: replay writes a daily file that is absent."""
    daily(root, DAY2).unlink()
    assert_findings(root, {("file_missing", f"daily/{DAY2}.md")})


@pytest.mark.parametrize("rel", ["stray.txt", "daily/notes.md", "index/junk.db", "audit/x.md"])
def test_stray_file_is_file_extra(root: Path, rel: str) -> None:
    """K1/N*: a file memory_es does not manage (or no event implies) is file_extra."""
    (root / rel).parent.mkdir(mode=0o700, exist_ok=True)
    write_private(root / rel, b"hello\n")
    assert_findings(root, {("file_extra", rel)})


# -- index tampering ---------------------------------------------------------------------------


def test_changed_index_row_names_table_and_column(root: Path) -> None:
    """D10/N1: an index cell that differs from replay is index_row_changed, naming the column."""
    rowid, _ = memory_row(root, ANSWERS[DAY1][0])
    sql(active_index_path(root), "UPDATE memories SET text = 'forged' WHERE rowid = ?", (rowid,))
    report = MemoryRoot.open(root).health()
    assert codes(report) == {("index_row_changed", index_rel(root))}
    (finding,) = report.findings
    assert "memories" in finding.detail
    assert f"rowid {rowid}" in finding.detail
    assert finding.detail.endswith("columns text")
    assert report.exit_code == 1


def test_deleted_fts_row_is_fts_out_of_sync(root: Path) -> None:
    """D2: the FTS table must hold exactly the replayed rows."""
    rowid, _ = memory_row(root, ANSWERS[DAY2][1])
    sql(active_index_path(root), "DELETE FROM memories_fts WHERE rowid = ?", (rowid,))
    assert_findings(root, {("fts_out_of_sync", index_rel(root))})


def test_inserted_index_row_is_index_row_extra(root: Path) -> None:
    """N2: a plausible row written straight into SQLite (no event) is reported."""
    sql(active_index_path(root),
        "INSERT INTO memories VALUES (9999, 'f00d', 'observation', 'forged', ?, "
        "'2026-03-01T12:00:00.000Z', 'open', 'host-summary', NULL, NULL, 'lite')", (DAY1,))
    assert_findings(root, {("index_row_extra", index_rel(root))})


def test_deleted_index_row_is_index_row_missing(root: Path) -> None:
    """N11: an event-implied row absent from the index is index_row_missing."""
    rowid, _ = memory_row(root, ANSWERS[DAY1][2])
    sql(active_index_path(root), "DELETE FROM memories WHERE rowid = ?", (rowid,))
    report = MemoryRoot.open(root).health()
    assert codes(report) == {("index_row_missing", index_rel(root))}
    assert f"rowid {rowid}" in report.findings[0].detail


def test_index_source_session_change_is_reported_n4(root: Path) -> None:
    """N4/K6: an index source_session that disagrees with the Markdown provenance."""
    rowid, memory_id = memory_row(root, ANSWERS[DAY2][0])
    sql(active_index_path(root), "UPDATE memories SET source_session = 'web:other' WHERE rowid = ?",
        (rowid,))
    report = MemoryRoot.open(root).health()
    assert codes(report) == {("index_row_changed", index_rel(root)),
                             ("source_session_mismatch", f"daily/{DAY2}.md")}
    changed = next(f for f in report.findings if f.code == "index_row_changed")
    assert changed.detail.endswith("columns source_session")
    mismatch = next(f for f in report.findings if f.code == "source_session_mismatch")
    assert memory_id[:12] in mismatch.detail
    assert report.exit_code == 1


def test_markdown_source_session_change_is_reported_n4(root: Path) -> None:
    """N4/K2: editing source_session in the Markdown comment is file_mismatch + N4 mismatch."""
    path = daily(root, DAY1)
    data = path.read_bytes()
    assert data.count(b"source_session=web:thread-one-->") == 3
    path.write_bytes(data.replace(b"source_session=web:thread-one-->",
                                  b"source_session=web:forged-->", 1))
    assert_findings(root, {("file_mismatch", f"daily/{DAY1}.md"),
                           ("source_session_mismatch", f"daily/{DAY1}.md")})


# -- journal tampering (fails closed) ----------------------------------------------------------


def test_n5_truncated_journal(root: Path) -> None:
    """B14/N5: fewer events than the catalog records is journal_truncated."""
    sql(root / "journal.db",
        "DELETE FROM events WHERE position > (SELECT MAX(position) - 2 FROM events)")
    assert_findings(root, {("journal_truncated", "journal.db")})


def test_n5_replaced_event_state_breaks_the_chain(root: Path) -> None:
    """B15/N5: an edited event no longer verifies against the hash chain."""
    sql(root / "journal.db", "UPDATE events SET state = CAST(? AS BLOB) WHERE position = 1",
        (b"{}",))
    assert_findings(root, {("chain_broken", "journal.db")})


def test_n6_deleted_catalog(root: Path) -> None:
    """N6/B15: a schema marker with no catalog fails closed, never a fresh root."""
    (root / "journal.catalog").unlink()
    assert_findings(root, {("catalog_missing", "journal.catalog")})


# -- hygiene (N7, B16, B17) --------------------------------------------------------------------


def test_group_readable_file_is_unsafe_mode(root: Path) -> None:
    """N7: files must be 0600."""
    os.chmod(daily(root, DAY1), 0o644)
    assert_findings(root, {("unsafe_mode", f"daily/{DAY1}.md")})


def test_symlinked_daily_file(root: Path, tmp_path: Path) -> None:
    """N7/B16: a daily file replaced by a symlink (even to identical bytes) is reported."""
    path = daily(root, DAY2)
    outside = tmp_path / "outside.md"
    write_private(outside, path.read_bytes())
    path.unlink()
    os.symlink(outside, path)
    assert_findings(root, {("symlink", f"daily/{DAY2}.md")})


def test_hard_linked_index(root: Path, tmp_path: Path) -> None:
    """N8/B17: a managed file with a second link outside the root is reported."""
    os.link(active_index_path(root), tmp_path / "copy.db")
    assert_findings(root, {("hard_link", index_rel(root))})


UNSAFE_KINDS = ["mode_0644", "hard_link", "symlink"] + (["foreign_owner"] if os.geteuid() == 0
                                                         else [])


@pytest.mark.parametrize("kind", UNSAFE_KINDS)
def test_rebuild_repairs_unsafe_files_with_unchanged_bytes(
        root: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 13 item 7 (B16, B17, N7, N8): a projection file with the right bytes but unsafe
    (0644, a second hard link, a symlink to an identical copy, another owner) is rewritten by
    rebuild as our own private single-link file; health is clean afterwards and the outside
    copy is never touched."""
    path = daily(root, DAY1)
    original = path.read_bytes()
    outside = tmp_path / "outside.md"
    if kind == "mode_0644":
        os.chmod(path, 0o644)
    elif kind == "hard_link":
        os.link(path, outside)
    elif kind == "symlink":
        write_private(outside, original)
        path.unlink()
        os.symlink(outside, path)
    else:
        os.chown(path, 4242, 4242)
    assert MemoryRoot.open(root).health().status == "findings"
    assert run_cli(capsys, "--root", str(root), "rebuild")[0] == 0
    st = os.lstat(path)
    assert (st.st_mode & 0o777, st.st_nlink, st.st_uid) == (0o600, 1, os.geteuid())
    assert path.read_bytes() == original
    assert MemoryRoot.open(root).health().status == "clean"
    if kind in ("hard_link", "symlink"):
        assert outside.read_bytes() == original


# -- projections behind the journal (N3) -------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncated", "zeroed", "wal_symlink", "shm_symlink"])
def test_a_broken_index_never_blocks_admission(
        root: Path, tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 13 item 2: with the active index truncated, emptied, or its ``-wal`` / ``-shm``
    replaced by a symlink, the store still opens and admits (API and ``memory-es admit``),
    warns ``memory_degraded``, answers recall degraded (``index_unreadable``, no hits) and
    health reports ``index_unreadable``; ``memory-es rebuild`` brings every turn back."""
    db = active_index_path(root)
    if damage == "truncated":
        with open(db, "r+b") as f:
            f.truncate(100)
    elif damage == "zeroed":
        with open(db, "r+b") as f:
            f.truncate(0)
    else:
        side = db.with_name(db.name + ("-wal" if damage == "wal_symlink" else "-shm"))
        if side.exists():
            side.unlink()
        target = tmp_path / "elsewhere"
        target.write_bytes(b"")
        side.symlink_to(target)
    with caplog.at_level(logging.WARNING, logger="memory_es"), \
            MemoryStore.open(root, background=False) as store:
        assert store.persist_completed_turn(turn("after-1", "Walrus-3141 after damage")
                                            ).status == "admitted"
        got = store.recall("Walrus-3141")
        assert (got.degraded, got.reason, got.recall.hits) == (True, "index_unreadable", ())
    assert any("memory_degraded" in r.getMessage() and "index_unreadable" in r.getMessage()
               for r in caplog.records)
    code, out = run_cli(capsys, "--root", str(root), "admit", "--run-id", "after-2",
                        "--answer", "Walrus-2718 via the CLI")
    assert code == 0 and json.loads(out)["status"] == "admitted"
    assert MemoryRoot.open(root).recall("Walrus").reason == "index_unreadable"
    report = MemoryRoot.open(root).health()
    assert ("index_unreadable", index_rel(root)) in codes(report) and report.exit_code == 1
    assert run_cli(capsys, "--root", str(root), "rebuild")[0] == 0
    with MemoryStore.open(root, background=False) as store:
        store.drain()
        found = {h.text for h in store.recall("Walrus", limit=10).recall.hits}
    assert found == {"Walrus-3141 after damage", "Walrus-2718 via the CLI"}
    assert MemoryRoot.open(root).health().status == "clean"


def admit_more(root: Path, *answers: str) -> None:
    with MemoryStore.open(root, background=False) as store:
        for i, answer in enumerate(answers):
            assert store.persist_completed_turn(turn(f"late-{i}", answer)).status == "admitted"


def test_projection_behind_without_writer(root: Path) -> None:
    """N3: admitted but not projected, and no writer alive, is projection_behind: not drift
    (``memory-es admit`` leaves a root so), the next writer open catches up; status
    ``recoverable``, exit 0 (issue 13 item 9)."""
    admit_more(root, "Walrus-1180 late admission")
    report = MemoryRoot.open(root).health()
    assert codes(report) == {("projection_behind", "index")}
    assert report.journal_position > report.projection_position
    assert (report.status, report.exit_code) == ("recoverable", 0)


@pytest.fixture
def holder(root: Path) -> Iterator[LockHolder]:
    """A live writer process that admitted two turns without draining them."""
    with hold_writer_lock(root, [("held-0", "Walrus-1180 held"),
                                 ("held-1", "Gannet-2291 held")]) as h:
        yield h


def test_in_progress_while_writer_alive(
    root: Path, holder: LockHolder, capsys: pytest.CaptureFixture[str]
) -> None:
    """N3: newly accepted intake work with the writer alive is in_progress, exit 0."""
    report = MemoryRoot.open(root).health()
    assert report.status == "in_progress"
    assert report.findings == ()
    assert report.exit_code == 0
    assert report.journal_position > report.projection_position
    code, out = run_cli(capsys, "--root", str(root), "health", "--json")
    assert code == 0
    assert json.loads(out)["status"] == "in_progress"
    # Releasing the writer without draining leaves the projections behind: now reported,
    # recoverable (the next writer open catches up), exit 0.
    assert holder.release() == (0, "closed\n"), holder.stderr
    report = MemoryRoot.open(root).health()
    assert codes(report) == {("projection_behind", "index")}
    assert (report.status, report.exit_code) == ("recoverable", 0)


# -- rebuild heals (C8, D10, K10) ----------------------------------------------------------------


def test_rebuild_heals_markdown_and_index_tampering(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """C8/D10/K10: rebuild restores replay's projections; untouched files keep bytes and mtime."""
    untouched = daily(root, DAY2)
    before = untouched.read_bytes()
    st = os.stat(untouched)
    original_day1 = daily(root, DAY1).read_bytes()
    path = daily(root, DAY1)
    path.write_bytes(path.read_bytes().replace(b"oolong", b"jasmine"))
    rowid, _ = memory_row(root, ANSWERS[DAY2][2])
    sql(active_index_path(root), "UPDATE memories SET text = 'forged' WHERE rowid = ?", (rowid,))
    sql(active_index_path(root), "DELETE FROM memories_fts WHERE rowid = ?", (rowid,))
    write_private(root / "daily" / "notes.md", b"stray\n")
    assert MemoryRoot.open(root).health().exit_code == 1

    code, _out = run_cli(capsys, "--root", str(root), "rebuild")
    assert code == 0
    code, out = run_cli(capsys, "--root", str(root), "health", "--json")
    assert code == 0, out
    obj = json.loads(out)
    assert (obj["status"], obj["findings"]) == ("clean", [])
    assert daily(root, DAY1).read_bytes() == original_day1
    assert not (root / "daily" / "notes.md").exists()
    after = os.stat(untouched)
    assert untouched.read_bytes() == before
    assert (after.st_mtime_ns, after.st_ino) == (st.st_mtime_ns, st.st_ino)


def test_rebuild_heals_deleted_daily_file(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """C8/N11: a missing daily file is completed by rebuild."""
    original = daily(root, DAY1).read_bytes()
    daily(root, DAY1).unlink()
    assert run_cli(capsys, "--root", str(root), "rebuild")[0] == 0
    assert daily(root, DAY1).read_bytes() == original
    assert MemoryRoot.open(root).health().status == "clean"


# -- content-free output (N12) -------------------------------------------------------------------


def _tamper_text(root: Path) -> None:
    path = daily(root, DAY1)
    path.write_bytes(path.read_bytes().replace(b"Marzipan-5519", b"Forgery-0001 Marzipan-5519"))
    rowid, _ = memory_row(root, ANSWERS[DAY2][0])
    sql(active_index_path(root), "UPDATE memories SET text = 'Forgery-0002' WHERE rowid = ?",
        (rowid,))


def _tamper_session(root: Path) -> None:
    rowid, _ = memory_row(root, ANSWERS[DAY2][1])
    sql(active_index_path(root),
        "UPDATE memories SET source_session = 'Forgery-0003' WHERE rowid = ?", (rowid,))


def _tamper_extra_row(root: Path) -> None:
    sql(active_index_path(root),
        "INSERT INTO memories VALUES (9999, 'f00d', 'observation', 'Forgery-0004', ?, "
        "'2026-03-01T12:00:00.000Z', 'open', 'host-summary', NULL, NULL, 'lite')", (DAY1,))
    sql(active_index_path(root),
        "INSERT INTO memories_fts (rowid, text) VALUES (9999, 'Forgery-0004')")


def _tamper_chain(root: Path) -> None:
    sql(root / "journal.db", "UPDATE events SET state = CAST(? AS BLOB) WHERE position = 1",
        (b'{"summary": "Forgery-0005"}',))


@pytest.mark.parametrize("tamper", [None, _tamper_text, _tamper_session, _tamper_extra_row,
                                    _tamper_chain])
def test_n12_health_output_is_content_free(
    root: Path, capsys: pytest.CaptureFixture[str], tamper: Any
) -> None:
    """N12: neither the text nor the JSON report contains memory text, original or forged."""
    if tamper is not None:
        tamper(root)
    outputs = [run_cli(capsys, "--root", str(root), "health"),
               run_cli(capsys, "--root", str(root), "health", "--json")]
    report = MemoryRoot.open(root).health()
    assert {code for code, _ in outputs} == {report.exit_code}
    assert report.exit_code == (0 if tamper is None else 1)
    blob = "\n".join(out for _, out in outputs) + json.dumps(report.to_json())
    for text in [*ALL_TEXT, "Forgery-"]:
        assert text not in blob
    for word in ("Quetzal", "Marzipan", "Obsidian", "Kumquat", "oolong", "passport"):
        assert word not in blob


# -- cannot audit --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["empty_dir", "absent"])
def test_not_a_root_cannot_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """N*/C: a path holding no memory root cannot be audited: exit 2."""
    path = tmp_path / "nothing"
    if kind == "empty_dir":
        path.mkdir(mode=0o700)
    report = MemoryRoot.open(path).health()
    assert report.status == "cannot_audit"
    assert report.exit_code == 2
    code, out = run_cli(capsys, "--root", str(path), "health", "--json")
    assert code == 2
    assert json.loads(out)["status"] == "cannot_audit"
    assert run_cli(capsys, "--root", str(path), "health")[0] == 2
    assert not (path / "journal.db").exists()


# -- payloads (B5, B9) ---------------------------------------------------------------------------


@pytest.fixture
def capture_root(tmp_path: Path) -> tuple[Path, str]:
    """A BuJo capture root with one pending intake that carries capture text."""
    root = tmp_path / "capture"
    config = parse_config(BUJO_CAPTURE)
    clock = Clock(datetime(2026, 3, 1, 10, 0, tzinfo=UTC))
    with MemoryStore.open(root, config, clock=clock, background=False) as store:
        result = store.persist_completed_turn(turn(
            "cap-1", "Heron-4410 summary", "web:cap", capture_text="Heron-4410 capture text"))
        assert result.status == "admitted"
        store.drain()  # resolves nothing (no capture pipeline yet); projects the audit line
        assert store.inspect().counts.pending == 1
    assert MemoryRoot.open(root).health().status == "clean"
    return root, run_hash("cap-1")


def test_deleted_payload_is_payload_missing(capture_root: tuple[Path, str]) -> None:
    """B5/B9: an unresolved capture intake whose payload row is gone."""
    root, intake_id = capture_root
    sql(root / "journal.db", "DELETE FROM payloads WHERE intake_id = ?", (intake_id,))
    report = MemoryRoot.open(root).health()
    assert codes(report) == {("payload_missing", "journal.db")}
    assert intake_id in report.findings[0].detail
    assert report.exit_code == 1


@pytest.mark.parametrize("tamper", ["altered", "deleted", "truncated"])
def test_a_tampered_payload_is_never_captured(capture_root: tuple[Path, str],
                                              tamper: str) -> None:
    """Issue 13 item 1 (B5): the worker checks the stored capture text against the SHA-256 and
    length in ``Intake.Admitted`` before every step; on a mismatch the intake is dead-lettered
    (category ``integrity``), the model is never asked, nothing is captured, and health keeps
    reporting it."""
    root, intake_id = capture_root
    journal = root / "journal.db"
    if tamper == "altered":  # same length, other bytes
        sql(journal, "UPDATE payloads SET bytes = CAST(? AS BLOB) WHERE intake_id = ?",
            (b"Forged-0000 capture text", intake_id))
    elif tamper == "deleted":
        sql(journal, "DELETE FROM payloads WHERE intake_id = ?", (intake_id,))
    else:
        sql(journal, "UPDATE payloads SET bytes = substr(bytes, 1, 10) WHERE intake_id = ?",
            (intake_id,))
    forged = extraction([memory("Forged-0000 is a captured fact")])
    model = ScriptedChat(script(("extract", "cap-1", forged),
                                ("review", "cap-1", review("keep"))))
    later = datetime(2026, 3, 9, tzinfo=UTC)  # past any backoff of the failed first attempt
    with MemoryStore.open(root, parse_config(BUJO_CAPTURE), clock=lambda: later,
                          background=False, chat_model=model,
                          embedder=WordBagEmbedder()) as store:
        store.drain()
        [record] = [r for r in store.inspect().records if r.id == intake_id]
        assert (record.state, record.category) == ("dead", "integrity")
    assert model.remaining() == {("extract", intake_id): 1, ("review", intake_id): 1}
    assert index_rows(root, "SELECT text FROM memories WHERE text LIKE '%Forged%'") == []
    problem = "payload_missing" if tamper == "deleted" else "payload_mismatch"
    assert (problem, "journal.db") in codes(MemoryRoot.open(root).health())


def test_altered_payload_is_payload_mismatch(capture_root: tuple[Path, str]) -> None:
    """B5/B9: an unresolved capture intake whose payload bytes no longer hash to the event's."""
    root, intake_id = capture_root
    sql(root / "journal.db", "UPDATE payloads SET bytes = CAST(? AS BLOB) WHERE intake_id = ?",
        (b"Heron-4410 capture tex!", intake_id))
    report = MemoryRoot.open(root).health()
    assert codes(report) == {("payload_mismatch", "journal.db")}
    assert "Heron" not in json.dumps(report.to_json())
    assert report.exit_code == 1

