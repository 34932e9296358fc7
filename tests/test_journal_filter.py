"""An operator's journal filter (status, type, session, currentness): applied before the
snapshot is cut, so every page holds only matching memories and a later page of a filtered
range continues through its cursor in any handle (I6: the cursor carries the filter under its
MAC, a continuation that names one again is refused). Through the Python API, the CLI and the
web inspector's timeline."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from helpers_capture import Clock, open_capture
from helpers_web import serve
from memory_es import JournalFilter, MemoryRoot
from memory_es.cli import main
from memory_es.errors import MemoryEsError

DAY = "2026-05-04"
RANGE = {"fromDate": DAY, "throughDate": DAY, "timeZone": "UTC", "limit": 25}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BuJo root: 40 lines from session alpha, then 30 from beta, a minute apart; then one
    line marked done, one whose validity ended, one superseded by another."""
    path = tmp_path_factory.mktemp("filter") / "root"
    clock = Clock()
    store, _ = open_capture(path, [], clock=clock)
    with store:
        for i in range(70):
            session = "alpha" if i < 40 else "beta"
            assert store.remember(f"{session} turn {i:02d}", session=session).status == \
                "remembered"
            clock.advance(minutes=1)
        done = store.remember("Ship the quarterly report")
        store.set_status(done.memory_id, "done")  # type: ignore[arg-type]
        clock.advance(minutes=1)
        store.remember("The office is closed for repairs", valid_to="2026-05-03")
        clock.advance(minutes=1)
        old = store.remember("Dana's desk is on floor two", replaceable=True)
        clock.advance(minutes=1)
        store.remember("Dana's desk is on floor five", supersedes=old.memory_id)
    return path


def entries(page: dict[str, object]) -> list[dict[str, str]]:
    listed = page["entries"]
    assert isinstance(listed, list)
    return listed


def test_a_filter_narrows_the_snapshot_before_it_is_paged(root: Path) -> None:
    """Session beta's 30 turns come after 40 of alpha: the filtered range's first page holds 25
    of beta (a filter over the unfiltered page would show none), the cursor's page the other 5,
    also from a second handle; the page echoes the filter."""
    handle = MemoryRoot.open(root)
    first = handle.journal(RANGE, filters=JournalFilter(session="beta")).to_json()
    assert [e["text"] for e in entries(first)] == [f"beta turn {i:02d}" for i in range(40, 65)]
    assert first["filter"] == {"session": "beta"} and first["coverage"]["entries"] == 30
    assert first["cursor"]
    second = MemoryRoot.open(root).journal({"cursor": first["cursor"]}).to_json()
    assert [e["text"] for e in entries(second)] == [f"beta turn {i:02d}" for i in range(65, 70)]
    assert second["filter"] == {"session": "beta"}
    unfiltered = handle.journal(RANGE).to_json()
    assert "filter" not in unfiltered and entries(unfiltered)[0]["text"] == "alpha turn 00"
    assert "session" not in json.dumps(unfiltered)  # I14: the filter matches, never returns


@pytest.mark.parametrize("chosen,expected", [
    (JournalFilter(status="done"), ["Ship the quarterly report"]),
    (JournalFilter(currentness="ended"), ["The office is closed for repairs"]),
    (JournalFilter(currentness="superseded"), ["Dana's desk is on floor two"]),
    (JournalFilter(status="superseded"), ["Dana's desk is on floor two"]),
    (JournalFilter(session="alpha", currentness="current"),
     [f"alpha turn {i:02d}" for i in range(25)]),
])
def test_each_field_keeps_only_what_matches(root: Path, chosen: JournalFilter,
                                            expected: list[str]) -> None:
    page = MemoryRoot.open(root).journal(RANGE, filters=chosen).to_json()
    assert [e["text"] for e in entries(page)] == expected


def test_the_type_filter_reads_the_stored_kind(root: Path) -> None:
    every = entries(MemoryRoot.open(root).journal(RANGE).to_json())
    kind = every[0]["type"]
    page = MemoryRoot.open(root).journal(RANGE, filters=JournalFilter(type=kind)).to_json()
    assert entries(page) and all(e["type"] == kind for e in entries(page))
    other = MemoryRoot.open(root).journal(RANGE, filters=JournalFilter(
        type="zz-none")).to_json()
    assert other["noData"] and not entries(other)


@pytest.mark.parametrize("fields,named", [
    ({"status": "dropped"}, "status must be one of"), ({"currentness": "now"}, "currentness"),
    ({"type": "Bad Kind"}, "type must be"), ({"session": ""}, "session must be"),
    ({"session": "a\x00b"}, "session must be"), ({"session": "\udcff"}, "session must be")])
def test_a_bad_filter_is_one_line_naming_the_field(fields: dict[str, str], named: str) -> None:
    with pytest.raises(MemoryEsError) as e:
        JournalFilter(**fields)
    assert e.value.code == "journal_invalid_filter" and named in str(e.value)
    assert "\n" not in str(e.value)


def test_a_continuation_takes_no_filter_of_its_own(root: Path) -> None:
    handle = MemoryRoot.open(root)
    cursor = handle.journal(RANGE, filters=JournalFilter(session="beta")).cursor
    assert cursor is not None
    with pytest.raises(MemoryEsError) as e:
        handle.journal({"cursor": cursor}, filters=JournalFilter(session="alpha"))
    assert e.value.code == "journal_invalid_request" and "filter" in str(e.value)


def test_the_cli_filters_and_refuses_bad_values(root: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--root", str(root), "journal", "--from", DAY, "--through", DAY, "--tz", "UTC"]
    assert main([*base, "--session", "beta", "--limit", "25", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert len(entries(page)) == 25 and page["filter"] == {"session": "beta"}
    assert main(["--root", str(root), "journal", "--cursor", page["cursor"], "--json"]) == 0
    assert len(entries(json.loads(capsys.readouterr().out))) == 5
    assert main([*base, "--status", "done"]) == 0
    assert capsys.readouterr().out.splitlines() == ["2026-05-04 10:10 Ship the quarterly report"]
    assert main([*base, "--type", "note", "--session", ""]) == 2  # the option at fault named
    err = capsys.readouterr().err
    assert "argument --session" in err and "session must be" in err and "Traceback" not in err
    assert main(["--root", str(root), "journal", "--cursor", page["cursor"],
                 "--status", "done"]) == 2
    assert "--cursor carries its query's filter" in capsys.readouterr().err


def test_the_timeline_filters_every_page(root: Path) -> None:
    """The web timeline sends its form as the filter: beta's first 25 turns, then the next
    page's link carries only the cursor and shows the other 5 with the form still filled."""
    served = serve(root)
    try:
        status, _, body = served.get(f"/?from={DAY}&through={DAY}&tz=UTC&session=beta")
        assert status == 200
        shown = [unescape(t) for t in re.findall(r'class="text">([^<]*)</a>', body)]
        assert shown == [f"beta turn {i:02d}" for i in range(40, 65)]
        link = re.search(r'rel="next" href="([^"]+)"', body)
        assert link is not None and "session" not in link.group(1)
        body = served.get(unescape(link.group(1)))[2]
        shown = [unescape(t) for t in re.findall(r'class="text">([^<]*)</a>', body)]
        assert shown == [f"beta turn {i:02d}" for i in range(65, 70)]
        assert 'name="session" value="beta"' in body
        status, _, body = served.get(f"/?from={DAY}&through={DAY}&tz=UTC&status=dropped")
        assert status == 400 and "journal_invalid_filter" in body
    finally:
        assert "Traceback" not in served.stop()


def test_a_long_session_id_still_pages(tmp_path: Path) -> None:
    """A 256-character session id that JSON escapes six-fold still fits its cursor: the next
    page continues in another handle."""
    session = "é" * 256
    clock = Clock()
    store, _ = open_capture(tmp_path / "root", [], clock=clock)
    with store:
        for i in range(12):
            store.remember(f"long session line {i:02d}", session=session)
            clock.advance(minutes=1)
    first = MemoryRoot.open(tmp_path / "root").journal(
        {**RANGE, "limit": 10}, filters=JournalFilter(session=session))
    assert first.cursor is not None and len(first.entries) == 10
    rest = MemoryRoot.open(tmp_path / "root").journal({"cursor": first.cursor})
    assert [e.text for e in rest.entries] == ["long session line 10", "long session line 11"]


def test_the_agents_tool_never_continues_a_filtered_cursor(root: Path) -> None:
    """I14: an operator's cursor may carry a session id; the MCP journal tool refuses it
    (and still continues an unfiltered one)."""
    from memory_es.serve.tools import MemoryTools, ToolRefusal
    from memory_es.store import MemoryStore

    handle = MemoryRoot.open(root)
    filtered = handle.journal(RANGE, filters=JournalFilter(session="beta")).cursor
    plain = handle.journal(RANGE).cursor
    assert filtered is not None and plain is not None
    with MemoryStore.open(root, background=False) as store:
        tools = MemoryTools(store)
        with pytest.raises(ToolRefusal) as e:
            tools.journal(cursor=filtered)
        assert e.value.code == "journal_cursor_invalid" and "beta" not in str(e.value)
        assert tools.journal(cursor=plain)["entries"]


def test_status_history_of_a_migrated_line() -> None:
    """A line migrate replaced ends invalidated (as the index has it), by its first note."""
    from datetime import UTC, datetime

    from memory_es.browse.inventory import status_steps

    at = datetime(2026, 5, 4, tzinfo=UTC)
    recorded = type("Recorded", (), {"timestamp": at, "status": "open"})()
    migrated = type("MigrationForgotten", (), {"timestamp": at, "into": ["n1", "n2"]})()
    steps = [s.to_json() for s in status_steps([(1, recorded), (2, migrated)])]
    assert [(s["from"], s["to"], s["by"]) for s in steps] == [
        (None, "open", None), ("open", "invalidated", "n1")]
