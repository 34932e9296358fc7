"""MemoryJournal cursors across handles and processes (I6, SPEC C; issue 13 item 16).

A cursor carries its query (range and limit), the offset it continues at, the index position
and the SHA-256 content digest of the snapshot its first page was computed from; it is signed
with the root's own cursor key (``.runtime/journal-cursor.key``, owner-only, never in an export
or a projection). The issuing handle serves later pages from its frozen snapshot; any other
handle or process recomputes the snapshot and serves the page only when the digest matches,
else fails ``journal_cursor_stale``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ceilings import HANG_S
from memory_es.cli import main
from memory_es.errors import MemoryEsError
from memory_es.intake import CompletedTurn
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore

SRC = Path(__file__).resolve().parents[1] / "src"
RANGE = {"fromDate": "2026-04-10", "throughDate": "2026-04-10", "timeZone": "Europe/Berlin"}
CLI_RANGE = ("--from", "2026-04-10", "--through", "2026-04-10", "--tz", "Europe/Berlin")
KEY = Path(".runtime") / "journal-cursor.key"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 4, 10, 6, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def add(root: Path, texts: list[tuple[datetime, str]], prefix: str) -> None:
    clock = Clock()
    with MemoryStore.open(root, clock=clock, background=False) as store:
        for i, (instant, text) in enumerate(texts):
            clock.now = instant
            result = store.persist_completed_turn(CompletedTurn(
                run_id=f"{prefix}-{i}", outcome="success", answer=text))
            assert result.status == "admitted"
        store.drain()


def thirty(root: Path) -> Path:
    add(root, [(datetime(2026, 4, 10, 8, i, tzinfo=UTC), f"entry {i:02d}") for i in range(30)],
        "run")
    return root


def cli(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``memory-es`` in its own process: nothing shared with the test or another call."""
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "memory_es.cli", "--root", str(root),
                           "journal", *argv], capture_output=True, text=True, env=env,
                          timeout=HANG_S)


def texts(page: dict[str, object]) -> list[str]:
    entries = page["entries"]
    assert isinstance(entries, list)
    return [e["text"] for e in entries]


def code(call: object) -> str:
    with pytest.raises(MemoryEsError) as e:
        call()  # type: ignore[operator]
    return e.value.code


def test_cli_cursor_continues_in_a_later_process(tmp_path: Path) -> None:
    root = thirty(tmp_path / "root")
    first = cli(root, *CLI_RANGE, "--limit", "12", "--json")
    assert first.returncode == 0, first.stderr
    page1 = json.loads(first.stdout)
    assert texts(page1) == [f"entry {i:02d}" for i in range(12)] and page1["cursor"]
    second = cli(root, "--cursor", page1["cursor"], "--json")
    assert second.returncode == 0, second.stderr
    page2 = json.loads(second.stdout)
    assert page2["offset"] == 12 and texts(page2) == [f"entry {i:02d}" for i in range(12, 24)]
    assert page2["range"] == page1["range"] and page2["limit"] == 12
    third = cli(root, "--cursor", page2["cursor"])  # the human form, a third process
    assert third.returncode == 0, third.stderr
    assert third.stdout.splitlines() == [f"2026-04-10 10:{i:02d} entry {i:02d}"
                                         for i in range(24, 30)]
    # The human form prints the cursor to continue with, not only --page.
    human = cli(root, *CLI_RANGE, "--limit", "12")
    assert f"more: --cursor {page1['cursor']}" in human.stderr
    # The same cursor again gives the same page (it names an exact offset).
    again = cli(root, "--cursor", page1["cursor"], "--json")
    assert json.loads(again.stdout) == page2


def test_api_and_cli_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = thirty(tmp_path / "root")
    with MemoryStore.open(root, background=False) as store:
        first = store.journal(**{"from_date": "2026-04-10", "through_date": "2026-04-10",
                                 "time_zone": "Europe/Berlin"}, limit=10)
        assert first.cursor is not None
        from_store = store.journal_continue(first.cursor)
    # A read-only handle, a new store handle and the CLI all continue the store's cursor.
    from_root = MemoryRoot.open(root).journal({"cursor": first.cursor})
    assert from_root.to_json() == from_store.to_json()
    assert main(["--root", str(root), "journal", "--cursor", first.cursor, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == from_store.to_json()
    # ... and a cursor the read-only door issued continues on a store.
    root_page = MemoryRoot.open(root).journal({**RANGE, "limit": 7})
    assert root_page.cursor is not None
    with MemoryStore.open(root, background=False) as store:
        assert [e.text for e in store.journal_continue(root_page.cursor).entries] == \
            [f"entry {i:02d}" for i in range(7, 14)]


def test_i6_cursor_from_another_root_is_invalid(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Two roots with byte-identical memories still have their own keys."""
    one, other = thirty(tmp_path / "one"), thirty(tmp_path / "other")
    cursor = MemoryRoot.open(one).journal(RANGE).cursor
    assert cursor is not None
    MemoryRoot.open(other).journal(RANGE)  # the other root has a key of its own
    assert code(lambda: MemoryRoot.open(other).journal({"cursor": cursor})) == \
        "journal_cursor_invalid"
    assert main(["--root", str(other), "journal", "--cursor", cursor, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "journal_cursor_invalid"
    assert (one / KEY).read_bytes() != (other / KEY).read_bytes()


def test_i6_tampered_cursor_byte_exits_2(tmp_path: Path) -> None:
    root = thirty(tmp_path / "root")
    cursor = MemoryRoot.open(root).journal(RANGE).cursor
    assert cursor is not None
    for i in (0, len(cursor) // 3, cursor.index(".") + 1, len(cursor) - 1):
        flipped = "A" if cursor[i] != "A" else "B"
        done = cli(root, "--cursor", cursor[:i] + flipped + cursor[i + 1:])
        assert done.returncode == 2, (i, done.stderr)
        assert "journal_cursor_invalid" in done.stderr and "Traceback" not in done.stderr
    assert code(lambda: MemoryRoot.open(root).journal({"cursor": cursor + "x"})) == \
        "journal_cursor_invalid"


def test_i6_change_inside_the_range_makes_the_cursor_stale(tmp_path: Path) -> None:
    root = thirty(tmp_path / "root")
    handle = MemoryRoot.open(root)
    first = handle.journal(RANGE)
    assert first.cursor is not None
    add(root, [(datetime(2026, 4, 10, 7, tzinfo=UTC), "a later write inside the range")],
        "later")
    # The issuing handle still serves its frozen snapshot: the original pages (I6).
    assert [e.text for e in handle.journal({"cursor": first.cursor}).entries] == \
        [f"entry {i:02d}" for i in range(10, 20)]
    # Any other handle or process cannot rebuild that snapshot: stale, never shifted pages.
    assert code(lambda: MemoryRoot.open(root).journal({"cursor": first.cursor})) == \
        "journal_cursor_stale"
    done = cli(root, "--cursor", first.cursor)
    assert done.returncode == 1 and done.stdout == ""
    assert "journal_cursor_stale" in done.stderr and "repeat the first request" in done.stderr
    assert "Traceback" not in done.stderr


def test_change_outside_the_range_keeps_the_cursor(tmp_path: Path) -> None:
    root = thirty(tmp_path / "root")
    first = MemoryRoot.open(root).journal(RANGE)
    assert first.cursor is not None
    expected = MemoryRoot.open(root).journal({"cursor": first.cursor}).to_json()
    add(root, [(datetime(2026, 4, 12, 7, tzinfo=UTC), "another day")], "later")
    assert MemoryRoot.open(root).journal({"cursor": first.cursor}).to_json() == expected


def test_i7_an_evicted_snapshot_is_recomputed(tmp_path: Path) -> None:
    root = thirty(tmp_path / "root")
    handle = MemoryRoot.open(root)
    first = handle.journal({**RANGE, "limit": 5})
    for _ in range(5):  # a fifth snapshot evicts the oldest (I7)
        handle.journal({**RANGE, "limit": 6})
    assert first.cursor is not None
    assert [e.text for e in handle.journal({"cursor": first.cursor}).entries] == \
        [f"entry {i:02d}" for i in range(5, 10)]


def test_cursor_key_is_private_and_never_exported(tmp_path: Path) -> None:
    root = thirty(tmp_path / "root")
    assert not (root / KEY).exists()  # made only when a first cursor is needed
    handle = MemoryRoot.open(root)
    handle.journal({**RANGE, "limit": 25})
    key_path = root / KEY
    st = key_path.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.geteuid() and st.st_size == 32
    key = key_path.read_bytes()
    export = tmp_path / "journal.jsonl"
    handle.export_to(export)
    assert key not in export.read_bytes() and key.hex() not in export.read_text("utf-8")
    assert handle.health().findings == ()
    # A readable-by-others key is refused, never used.
    key_path.chmod(0o644)
    done = cli(root, *CLI_RANGE)
    assert done.returncode == 3 and "group/other permission bits" in done.stderr, done.stderr
    key_path.chmod(0o600)
    # A deleted key: cursors issued so far stop working (invalid), new ones work.
    cursor = MemoryRoot.open(root).journal(RANGE).cursor
    assert cursor is not None
    key_path.unlink()
    assert code(lambda: MemoryRoot.open(root).journal({"cursor": cursor})) == \
        "journal_cursor_invalid"
    fresh = MemoryRoot.open(root).journal(RANGE).cursor
    assert fresh is not None and MemoryRoot.open(root).journal({"cursor": fresh}).offset == 10
