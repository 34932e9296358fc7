"""MemoryJournal (I*, DESIGN 9.12): civil-date ranges, bounds, snapshots, cursors, exclusions.

Index rows come from a real root: turns admitted through ``MemoryStore`` at chosen instants
(a settable clock), drained, then the active generation's ``memory.db`` is opened with apsw.
Tests that need a state the model-free Lite tier cannot produce (a dropped row, a 2 KiB+
unsafe text, an audit row) edit the index row in place.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import apsw
import pytest

from helpers_index import active_index_path, index_connection
from journal_backends import BACKENDS, use_backend
from memory_es.browse import journal as chronology
from memory_es.browse import journal_request
from memory_es.browse.journal import (
    PAGE_MAX_BYTES,
    SNAPSHOT_MAX_BYTES,
    SNAPSHOT_MAX_ENTRIES,
    TEXT_MAX_BYTES,
    TRUNCATION_MARKER,
    UNSAFE_ID_MARKER,
    UNSAFE_TEXT_MARKER,
    MemoryJournal,
    entry_bytes,
)
from memory_es.browse.journal_page import JournalPage
from memory_es.cli import main
from memory_es.errors import MemoryEsError
from memory_es.intake import CompletedTurn
from memory_es.store import MemoryStore


@pytest.fixture(autouse=True, params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on the root's own SQLite journal and on PostgreSQL (issue 18)."""
    return use_backend(request, monkeypatch)


BERLIN = "Europe/Berlin"


class Clock:
    """A settable UTC clock: each admission is stamped with exactly ``now``."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def utc(month: int, day: int, hour: int = 12, minute: int = 0, second: int = 0,
        ms: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, second, ms * 1000, tzinfo=UTC)


def turn(run_id: str, answer: str, session: str | None = None) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer, session=session)


def admit_all(store: MemoryStore, clock: Clock, items: Iterable[tuple[datetime, str]],
              prefix: str = "run", session: str | None = None) -> int:
    count = 0
    for i, (instant, text) in enumerate(items):
        clock.now = instant
        result = store.persist_completed_turn(turn(f"{prefix}-{i}", text, session))
        assert result.status == "admitted", result
        count += 1
    return count


def build_root(root: Path, items: Iterable[tuple[datetime, str]],
               session: str | None = None) -> Path:
    clock = Clock()
    with MemoryStore.open(root, clock=clock, background=False) as store:
        count = admit_all(store, clock, items, session=session)
        assert store.drain() == count
    return root


def index(root: Path, *, writable: bool = False) -> apsw.Connection:
    """The active index: read-only, or read-write to tamper with it."""
    if writable:
        return apsw.Connection(str(active_index_path(root)), flags=apsw.SQLITE_OPEN_READWRITE)
    return index_connection(root)


def code_of(excinfo: pytest.ExceptionInfo[MemoryEsError]) -> str:
    return excinfo.value.code


def all_pages(journal: MemoryJournal, conn: apsw.Connection, first: JournalPage
              ) -> Iterator[JournalPage]:
    page = first
    yield page
    while page.cursor is not None:
        page = journal.continue_(conn, page.cursor)
        yield page


def texts(page: JournalPage) -> list[str]:
    return [e.text for e in page.entries]


# -- a small shared root: March 2026 around the Berlin DST change -------------------------------

SMALL = [
    (utc(3, 1, 22, 59, 59, 999), "before Berlin March 2"),  # 23:59:59.999 Berlin, 1 March
    (utc(3, 1, 23, 0), "first instant of Berlin March 2"),  # 00:00 Berlin, 2 March
    (utc(3, 2, 9, 30), "morning of March 2"),
    (utc(3, 2, 22, 59, 59, 999), "last instant of Berlin March 2"),
    (utc(3, 2, 23, 0), "first instant of Berlin March 3"),
    (utc(3, 28, 22, 59), "Berlin March 28, late"),
    (utc(3, 28, 23, 0), "Berlin March 29, midnight CET"),
    (utc(3, 29, 1, 30), "Berlin March 29, 03:30 CEST"),
    (utc(3, 29, 21, 59), "Berlin March 29, 23:59 CEST"),
    (utc(3, 29, 22, 0), "Berlin March 30, midnight CEST"),
]


@pytest.fixture(scope="module")
def small_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_root(tmp_path_factory.mktemp("small") / "root", SMALL, session="web:secret-thread")


@pytest.fixture
def small(small_root: Path) -> Iterator[apsw.Connection]:
    conn = index(small_root)
    yield conn
    conn.close()


# -- I3: inclusive civil dates, half-open UTC interval ----------------------------------------


def test_i3_i10_i13_half_open_utc_interval_echo_and_boundaries(small: apsw.Connection) -> None:
    """I3: the range echo carries the civil dates, the zone and [fromUtc, toUtc) between
    local midnights; an entry at fromUtc is in, one at toUtc is out."""
    page = MemoryJournal().query(small, "2026-03-02", "2026-03-02", BERLIN)
    assert page.range.to_json() == {
        "fromDate": "2026-03-02", "throughDate": "2026-03-02", "timeZone": BERLIN, "days": 1,
        "fromUtc": "2026-03-01T23:00:00.000Z", "toUtc": "2026-03-02T23:00:00.000Z",
        "interval": "half-open [fromUtc, toUtc)",
    }
    assert texts(page) == ["first instant of Berlin March 2", "morning of March 2",
                           "last instant of Berlin March 2"]
    first = page.entries[0]
    assert first.recorded_at == "2026-03-01T23:00:00.000Z"
    assert (first.day, first.time) == ("2026-03-02", "00:00")  # civil day in the zone
    assert first.source == "daily/2026-03-01.md"  # canonical daily ref (UTC admission day)
    assert first.type == "observation" and first.status == "open"
    assert page.no_data is False and page.cursor is None
    assert page.coverage.to_json() == {
        "complete": True, "stoppedBy": "range_end", "entries": 3,
        "bytes": sum(entry_bytes(e) for e in page.entries)}


def test_i3_i4_same_dates_in_another_zone_shift_the_interval(small: apsw.Connection) -> None:
    """I3/I4: the zone is taken literally; explicit UTC is a zone like any other."""
    page = MemoryJournal().query(small, "2026-03-02", "2026-03-02", "UTC")
    assert (page.range.to_json()["fromUtc"], page.range.to_json()["toUtc"]) == (
        "2026-03-02T00:00:00.000Z", "2026-03-03T00:00:00.000Z")
    assert texts(page) == ["morning of March 2", "last instant of Berlin March 2",
                           "first instant of Berlin March 3"]
    tokyo = MemoryJournal().query(small, "2026-03-02", "2026-03-02", "Asia/Tokyo")
    assert tokyo.range.to_json()["fromUtc"] == "2026-03-01T15:00:00.000Z"


def test_i3_dst_spring_forward_day_has_23_hours(small: apsw.Connection) -> None:
    """2026-03-29 in Berlin: CET midnight to CEST midnight, 23 hours."""
    page = MemoryJournal().query(small, "2026-03-29", "2026-03-29", BERLIN)
    start = datetime.fromisoformat(page.range.to_json()["fromUtc"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(page.range.to_json()["toUtc"].replace("Z", "+00:00"))
    assert page.range.to_json()["fromUtc"] == "2026-03-28T23:00:00.000Z"
    assert page.range.to_json()["toUtc"] == "2026-03-29T22:00:00.000Z"
    assert end - start == timedelta(hours=23)
    assert texts(page) == ["Berlin March 29, midnight CET", "Berlin March 29, 03:30 CEST",
                           "Berlin March 29, 23:59 CEST"]
    assert [e.time for e in page.entries] == ["00:00", "03:30", "23:59"]


def test_i3_dst_fall_back_day_has_25_hours(small: apsw.Connection) -> None:
    page = MemoryJournal().query(small, "2026-10-25", "2026-10-25", BERLIN)
    assert page.range.to_json()["fromUtc"] == "2026-10-24T22:00:00.000Z"
    assert page.range.to_json()["toUtc"] == "2026-10-25T23:00:00.000Z"


# -- I4: rejected ranges, dates and zones --------------------------------------------------------


def test_i4_31_civil_days_inclusive_ok_32_rejected(small: apsw.Connection) -> None:
    journal = MemoryJournal()
    page = journal.query(small, "2026-03-01", "2026-03-31", BERLIN)
    assert page.range.to_json()["days"] == 31
    assert len(page.entries) == 10  # all ten SMALL rows fall in 1-31 March Berlin
    with pytest.raises(MemoryEsError) as e:
        journal.query(small, "2026-03-01", "2026-04-01", BERLIN)
    assert code_of(e) == "journal_range_too_long"
    with pytest.raises(MemoryEsError) as e:
        journal.query(small, "2026-02-28", "2026-03-31", BERLIN)
    assert code_of(e) == "journal_range_too_long"
    # Across the DST change, 31 civil days are still allowed though not 31 * 24 hours.
    assert journal.query(small, "2026-03-15", "2026-04-14", BERLIN).range.to_json()["days"] == 31


def test_from_after_through_rejected(small: apsw.Connection) -> None:
    with pytest.raises(MemoryEsError) as e:
        MemoryJournal().query(small, "2026-03-03", "2026-03-02", BERLIN)
    assert code_of(e) == "journal_invalid_range"


@pytest.mark.parametrize("bad", ["2026-02-30", "2026-13-01", "2026-3-01", "20260301",
                                 "2026-03-01T00:00", "", "2026-02-29"])
def test_i4_nonexistent_or_malformed_dates_rejected(small: apsw.Connection, bad: str) -> None:
    for args in ((bad, "2026-03-05"), ("2026-02-01", bad)):
        with pytest.raises(MemoryEsError) as e:
            MemoryJournal().query(small, *args, BERLIN)
        assert code_of(e) == "journal_invalid_date"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "localtime", "posixrules", "", "utc+1",
                                  "../etc/passwd", "/usr/share/zoneinfo/UTC", 3])
def test_i4_unknown_zones_rejected(small: apsw.Connection, zone: Any) -> None:
    with pytest.raises(MemoryEsError) as e:
        MemoryJournal().query(small, "2026-03-02", "2026-03-02", zone)
    assert code_of(e) == "journal_invalid_zone"


def test_i2_i4_no_default_zone(small: apsw.Connection) -> None:
    """I2/I4: a missing zone is an error, never the host zone or UTC."""
    journal = MemoryJournal()
    with pytest.raises(MemoryEsError) as e:
        journal.query(small, "2026-03-02", "2026-03-02", None)
    assert code_of(e) == "journal_missing_range"
    for missing in ("fromDate", "throughDate", "timeZone"):
        request = {"fromDate": "2026-03-02", "throughDate": "2026-03-02", "timeZone": BERLIN}
        del request[missing]
        with pytest.raises(MemoryEsError) as e:
            journal.call(small, request)
        assert code_of(e) == "journal_missing_range"
    assert journal.snapshot_count == 0


# -- I5: limit -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def thirty_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    items = [(utc(4, 10, 8, i), f"entry {i:02d}") for i in range(30)]
    return build_root(tmp_path_factory.mktemp("thirty") / "root", items)


@pytest.fixture
def thirty(thirty_root: Path) -> Iterator[apsw.Connection]:
    conn = index(thirty_root)
    yield conn
    conn.close()


def test_i5_limit_defaults_to_10(thirty: apsw.Connection) -> None:
    journal = MemoryJournal()
    page = journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN)
    assert page.limit == 10
    assert texts(page) == [f"entry {i:02d}" for i in range(10)]
    assert page.cursor is not None
    via_call = journal.call(thirty, {"fromDate": "2026-04-10", "throughDate": "2026-04-10",
                                     "timeZone": BERLIN})
    assert len(via_call.entries) == 10


def test_i5_limit_25_ok_and_pages_follow(thirty: apsw.Connection) -> None:
    journal = MemoryJournal()
    pages = list(all_pages(journal, thirty,
                           journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN, 25)))
    assert [len(p.entries) for p in pages] == [25, 5]
    assert [p.offset for p in pages] == [0, 25]
    assert [t for p in pages for t in texts(p)] == [f"entry {i:02d}" for i in range(30)]
    assert pages[-1].cursor is None


def test_i9_page_never_exceeds_25_entries(thirty: apsw.Connection) -> None:
    """I9 holds even for a snapshot whose limit bypassed validation."""
    journal = MemoryJournal()
    first = journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN, 1)
    next(iter(journal._snapshots.values())).limit = 30
    page = journal.continue_(thirty, first.cursor)
    assert len(page.entries) == 25 and page.offset == 1


@pytest.mark.parametrize("limit", [26, 0, -1, 100, True, "10", 2.5])
def test_i5_bad_limits_rejected_never_clamped(thirty: apsw.Connection, limit: Any) -> None:
    with pytest.raises(MemoryEsError) as e:
        MemoryJournal().query(thirty, "2026-04-10", "2026-04-10", BERLIN, limit)
    assert code_of(e) == "journal_invalid_limit"


def test_limit_is_kept_on_continuation(thirty: apsw.Connection) -> None:
    journal = MemoryJournal()
    pages = list(all_pages(journal, thirty,
                           journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN, 7)))
    assert [len(p.entries) for p in pages] == [7, 7, 7, 7, 2]


# -- I11: noData ---------------------------------------------------------------------------------


def test_i11_complete_empty_range_is_no_data(small: apsw.Connection) -> None:
    page = MemoryJournal().query(small, "2026-05-01", "2026-05-31", BERLIN)
    assert page.no_data is True
    assert page.entries == () and page.cursor is None
    assert page.coverage.complete is True
    # A day whose only neighbour lies just outside the half-open interval is empty too.
    assert MemoryJournal().query(small, "2026-03-01", "2026-03-01", "Asia/Tokyo").no_data


def test_i11_backend_failure_is_generic_journal_unavailable(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "empty.db"))
    with pytest.raises(MemoryEsError) as e:
        MemoryJournal().query(conn, "2026-03-01", "2026-03-01", BERLIN)
    assert code_of(e) == "journal_unavailable"
    assert "no such table" not in str(e.value) and "memories" not in str(e.value)


# -- I9: pages and text cap ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    items = [(utc(5, 4, 9, i), f"{i:02d} " + "x" * 1500) for i in range(20)]
    items.append((utc(5, 5, 9), "y" * 5000))
    items.append((utc(5, 5, 10), "é" * 3000))
    items.append((utc(5, 5, 11), "z" * TEXT_MAX_BYTES))
    items.append((utc(5, 5, 12), "w" * (TEXT_MAX_BYTES + 1)))
    return build_root(tmp_path_factory.mktemp("long") / "root", items)


def test_i9_page_capped_at_8_kib(long_root: Path) -> None:
    conn = index(long_root)
    journal = MemoryJournal()
    pages = list(all_pages(journal, conn,
                           journal.query(conn, "2026-05-04", "2026-05-04", "UTC", 25)))
    sizes = [[entry_bytes(e) for e in p.entries] for p in pages]
    assert all(sum(s) <= PAGE_MAX_BYTES for s in sizes)
    # Each page is full: the next entry would have crossed 8 KiB.
    for page_sizes, following in pairwise(sizes):
        assert sum(page_sizes) + following[0] > PAGE_MAX_BYTES
    assert len(pages) > 1 and max(len(s) for s in sizes) < 25
    assert [t[:2] for p in pages for t in texts(p)] == [f"{i:02d}" for i in range(20)]
    conn.close()


def test_i9_text_capped_at_2_kib_with_marker(long_root: Path) -> None:
    conn = index(long_root)
    journal = MemoryJournal()
    pages = list(all_pages(journal, conn,
                           journal.query(conn, "2026-05-05", "2026-05-05", "UTC", 25)))
    conn.close()
    assert [len(p.entries) for p in pages] == [3, 1]  # four ~2.3 KiB entries > 8 KiB
    by_char = {e.text[0]: e for p in pages for e in p.entries}
    for char in "yéw":
        entry = by_char[char]
        assert entry.truncated is True
        assert entry.text.endswith(TRUNCATION_MARKER)
        size = len(entry.text.encode("utf-8"))
        assert TEXT_MAX_BYTES - 4 < size <= TEXT_MAX_BYTES
    # Whole characters only.
    assert by_char["é"].text.removesuffix(TRUNCATION_MARKER).strip("é") == ""
    exact = by_char["z"]
    assert exact.truncated is False and exact.text == "z" * TEXT_MAX_BYTES


# -- I8: snapshot caps ---------------------------------------------------------------------------


def test_i8_i10_snapshot_capped_at_1000_entries(tmp_path: Path) -> None:
    items = [(utc(6, 1, 0) + timedelta(seconds=i), f"n{i}") for i in range(1001)]
    root = build_root(tmp_path / "root", items)
    conn = index(root)
    journal = MemoryJournal()
    pages = list(all_pages(journal, conn,
                           journal.query(conn, "2026-06-01", "2026-06-01", "UTC", 25)))
    conn.close()
    seen = [t for p in pages for t in texts(p)]
    assert seen == [f"n{i}" for i in range(SNAPSHOT_MAX_ENTRIES)]
    coverage = pages[0].coverage
    assert coverage.complete is False and coverage.stopped_by == "entry_cap"
    assert coverage.entries == 1000
    assert pages[0].no_data is False


def test_i8_i10_snapshot_capped_at_2_mib(tmp_path: Path) -> None:
    items = [(utc(6, 2, 0) + timedelta(seconds=i), f"{i:04d} " + "b" * 3000)
             for i in range(950)]
    root = build_root(tmp_path / "root", items)
    conn = index(root)
    journal = MemoryJournal()
    pages = list(all_pages(journal, conn,
                           journal.query(conn, "2026-06-02", "2026-06-02", "UTC", 25)))
    conn.close()
    entries = [e for p in pages for e in p.entries]
    total = sum(entry_bytes(e) for e in entries)
    coverage = pages[0].coverage
    assert coverage.stopped_by == "byte_cap" and coverage.complete is False
    assert coverage.bytes == total <= SNAPSHOT_MAX_BYTES
    assert total + entry_bytes(entries[-1]) > SNAPSHOT_MAX_BYTES  # the next would not fit
    assert 800 < len(entries) < 950
    assert [e.text[:4] for e in entries] == [f"{i:04d}" for i in range(len(entries))]


# -- I6/I7: cursors and snapshots ----------------------------------------------------------------


def test_i7_fifth_snapshot_evicts_the_oldest(thirty: apsw.Connection) -> None:
    """A handle holds 4 snapshots (I7); an evicted one's cursor reads the range again and is
    served only because its content digest still matches (issue 13 item 16)."""
    journal = MemoryJournal()
    firsts = [journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN, 5 + i)
              for i in range(4)]
    assert journal.snapshot_count == 4
    fifth = journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN, 9)
    assert journal.snapshot_count == 4
    for i, page in enumerate((*firsts, fifth)):
        assert texts(journal.continue_(thirty, page.cursor)) == \
            [f"entry {n:02d}" for n in range(5 + i, 10 + 2 * i)]
    assert journal.snapshot_count == 4
    with pytest.raises(MemoryEsError) as e:  # an evicted snapshot needs the backend
        MemoryJournal(journal._key(False)).continue_(None, firsts[0].cursor)
    assert code_of(e) == "journal_unavailable"


def test_i6_tampered_cursor_rejected(thirty: apsw.Connection) -> None:
    journal = MemoryJournal()
    cursor = journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN).cursor
    assert isinstance(cursor, str)
    alphabet = string.ascii_letters + string.digits + "-_."
    for i, char in enumerate(cursor):  # every one-character change, padding bits included
        for flipped in alphabet.replace(char, ""):
            tampered = cursor[:i] + flipped + cursor[i + 1:]
            with pytest.raises(MemoryEsError) as e:
                journal.continue_(thirty, tampered)
            assert code_of(e) == "journal_cursor_invalid", (i, tampered)
    for junk in ("", ".", "abc", cursor + "A", cursor + ".x", None, 7):
        with pytest.raises(MemoryEsError) as e:
            journal.continue_(thirty, junk)
        assert code_of(e) == "journal_cursor_invalid"
    assert len(journal.continue_(thirty, cursor).entries) == 10  # the original still works


def test_i6_cursor_from_another_key_rejected(thirty: apsw.Connection) -> None:
    """Handles share cursors only through their root's key; two random keys never agree."""
    one, other = MemoryJournal(), MemoryJournal()
    cursor = one.query(thirty, "2026-04-10", "2026-04-10", BERLIN).cursor
    other.query(thirty, "2026-04-10", "2026-04-10", BERLIN)
    with pytest.raises(MemoryEsError) as e:
        other.continue_(thirty, cursor)
    assert code_of(e) == "journal_cursor_invalid"
    key = one._key(False)
    assert key is not None and key != other._key(False) and len(key) == 32
    # The same key (the root's, in production) continues it in a fresh handle.
    assert texts(MemoryJournal(key).continue_(thirty, cursor)) == \
        [f"entry {i:02d}" for i in range(10, 20)]


def test_i6_cursor_accepts_only_its_exact_issued_offset(thirty: apsw.Connection) -> None:
    journal = MemoryJournal()
    first = journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN)
    snapshot = next(iter(journal._snapshots.values()))
    for offset in (0, 5, 11, 30, 31, -1):  # correctly signed, not where a page starts
        forged = chronology.Cursor("2026-04-10", "2026-04-10", BERLIN, 10, offset,
                                   snapshot.position, snapshot.digest)
        with pytest.raises(MemoryEsError) as e:
            journal.continue_(thirty, journal._sign(forged))
        assert code_of(e) == "journal_cursor_invalid"
    second = journal.continue_(thirty, first.cursor)
    assert second.offset == 10
    assert journal.continue_(thirty, first.cursor) == second  # the same offset, same page


def test_i6_continuation_rejects_range_or_limit_overrides(thirty: apsw.Connection) -> None:
    journal = MemoryJournal()
    cursor = journal.query(thirty, "2026-04-10", "2026-04-10", BERLIN).cursor
    for extra in ({"limit": 25}, {"fromDate": "2026-04-01"}, {"timeZone": "UTC"},
                  {"throughDate": "2026-04-11"}):
        with pytest.raises(MemoryEsError) as e:
            journal.call(thirty, {"cursor": cursor, **extra})
        assert code_of(e) == "journal_invalid_request"
    page = journal.call(None, {"cursor": cursor})
    assert page.offset == 10 and page.limit == 10
    assert page.range.to_json()["fromDate"] == "2026-04-10"


def test_i6_i13_continuation_is_frozen_against_later_writes(tmp_path: Path) -> None:
    """I6/I13: later admissions and status changes never shift or alter a snapshot's pages."""
    root = tmp_path / "root"
    clock = Clock()
    with MemoryStore.open(root, clock=clock, background=False) as store:
        admit_all(store, clock, [(utc(7, 1, 10, i), f"old {i:02d}") for i in range(12)])
        store.drain()
        conn = index(root)
        journal = MemoryJournal()
        first = journal.query(conn, "2026-07-01", "2026-07-01", "UTC", 5)
        # Earlier instants inside the range, admitted after the snapshot.
        admit_all(store, clock, [(utc(7, 1, 9, i), f"new {i:02d}") for i in range(6)],
                  prefix="later")
        assert store.drain() == 6
        writer = index(root, writable=True)
        writer.execute("UPDATE memories SET status = 'dropped' WHERE text = 'old 07'")
        writer.close()
        pages = list(all_pages(journal, conn, first))
        assert [t for p in pages for t in texts(p)] == [f"old {i:02d}" for i in range(12)]
        assert all(e.status == "open" for p in pages for e in p.entries)
        fresh = journal.query(conn, "2026-07-01", "2026-07-01", "UTC", 25)
        assert texts(fresh)[:6] == [f"new {i:02d}" for i in range(6)]
        assert "old 07" not in texts(fresh) and len(fresh.entries) == 17
        conn.close()


# -- I14/I15: exclusions and markers -------------------------------------------------------------


def test_i14_terminal_statuses_excluded(tmp_path: Path) -> None:
    root = build_root(tmp_path / "root", [(utc(8, 1, 9, i), f"m{i}") for i in range(5)])
    writer = index(root, writable=True)
    writer.execute("UPDATE memories SET status = 'dropped' WHERE text = 'm1'")
    writer.execute("UPDATE memories SET status = 'invalidated' WHERE text = 'm3'")
    writer.execute("UPDATE memories SET status = 'done' WHERE text = 'm4'")
    writer.close()
    conn = index(root)
    page = MemoryJournal().query(conn, "2026-08-01", "2026-08-01", "UTC")
    assert [(e.text, e.status) for e in page.entries] == [
        ("m0", "open"), ("m2", "open"), ("m4", "done")]
    writer = index(root, writable=True)
    writer.execute("UPDATE memories SET status = 'dropped'")
    writer.close()
    empty = MemoryJournal().query(conn, "2026-08-01", "2026-08-01", "UTC")
    assert empty.no_data is True
    conn.close()


def test_i14_no_session_run_hash_paths_or_audit_rows(small_root: Path) -> None:
    writer = index(small_root, writable=True)
    writer.execute("INSERT INTO audit VALUES (999999, 'h', '2026-03-02', "
                   "'2026-03-02T10:00:00.000Z', 'raw audit observation', 'human', "
                   "'human-turn', 'user', 'web:secret-thread')")
    try:
        conn = index(small_root)
        page = MemoryJournal().query(conn, "2026-03-01", "2026-03-31", BERLIN, 25)
        run_hashes = [r[0] for r in conn.execute("SELECT run_hash FROM memories")]
        conn.close()
    finally:
        writer.execute("DELETE FROM audit WHERE rowid = 999999")
        writer.close()
    dumped = json.dumps(page.to_json())
    assert "raw audit observation" not in dumped
    assert "secret-thread" not in dumped
    assert str(small_root) not in dumped and "memory.db" not in dumped
    assert not any(h in dumped for h in run_hashes)
    assert all(set(e) == {"id", "recordedAt", "day", "time", "type", "status", "currentness",
                          "source", "text", "truncated"} for e in page.to_json()["entries"])
    assert len(page.entries) == 10 and page.to_json()["untrusted"] is True


def test_i15_unsafe_text_and_ids_become_markers(tmp_path: Path) -> None:
    root = build_root(tmp_path / "root", [(utc(8, 2, 9, i), f"t{i}") for i in range(5)])
    writer = index(root, writable=True)
    writer.execute("UPDATE memories SET text = 'ok \u202eevil' WHERE text = 't0'")
    writer.execute("UPDATE memories SET text = 'a <!-- hidden --> b' WHERE text = 't1'")
    writer.execute("UPDATE memories SET text = 'line\nbreak\x07' WHERE text = 't2'")
    writer.execute("UPDATE memories SET id = 'bad id/../x' WHERE text = 't3'")
    writer.close()
    conn = index(root)
    page = MemoryJournal().query(conn, "2026-08-02", "2026-08-02", "UTC")
    conn.close()
    assert texts(page) == [UNSAFE_TEXT_MARKER] * 3 + ["t3", "t4"]
    assert page.entries[3].id == UNSAFE_ID_MARKER
    assert page.entries[4].id != UNSAFE_ID_MARKER
    assert page.entries[0].id != UNSAFE_ID_MARKER  # a safe id stays with unsafe text


def test_order_is_recorded_at_then_id(tmp_path: Path) -> None:
    same = utc(8, 3, 9)
    root = build_root(tmp_path / "root", [(same, f"s{i}") for i in range(6)])
    conn = index(root)
    page = MemoryJournal().query(conn, "2026-08-03", "2026-08-03", "UTC")
    conn.close()
    ids = [e.id for e in page.entries]
    assert ids == sorted(ids) and len(ids) == 6


def test_zone_list_excludes_host_guesses() -> None:
    assert "localtime" not in journal_request._iana_zones()
    assert "Europe/Berlin" in journal_request._iana_zones()


# -- CLI -----------------------------------------------------------------------------------------


def run_cli(root: Path, *argv: str) -> int:
    return main(["--root", str(root), "journal", *argv])


def test_cli_human_output(small_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(small_root, "--from", "2026-03-29", "--through", "2026-03-29",
                   "--tz", BERLIN) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["2026-03-29 00:00 Berlin March 29, midnight CET",
                                "2026-03-29 03:30 Berlin March 29, 03:30 CEST",
                                "2026-03-29 23:59 Berlin March 29, 23:59 CEST"]
    assert "[2026-03-28T23:00:00.000Z, 2026-03-29T22:00:00.000Z)" in err


def test_cli_json_and_pages(thirty_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ("--from", "2026-04-10", "--through", "2026-04-10", "--tz", BERLIN, "--limit", "12")
    assert run_cli(thirty_root, *base, "--json") == 0
    first = json.loads(capsys.readouterr().out)
    assert first["limit"] == 12 and len(first["entries"]) == 12 and first["cursor"]
    assert run_cli(thirty_root, *base, "--page", "3", "--json") == 0
    third = json.loads(capsys.readouterr().out)
    assert third["offset"] == 24 and [e["text"] for e in third["entries"]] == [
        f"entry {i:02d}" for i in range(24, 30)]
    assert third["cursor"] is None
    assert run_cli(thirty_root, *base, "--page", "4") == 2
    assert "past the end" in capsys.readouterr().err
    # A cursor printed by an earlier call continues here: the root's key signed it.
    assert run_cli(thirty_root, "--cursor", first["cursor"], "--json") == 0
    second = json.loads(capsys.readouterr().out)
    assert second["offset"] == 12 and second["cursor"]
    tail = "AA" if first["cursor"][-2:] != "AA" else "EA"  # always a different signature
    assert run_cli(thirty_root, "--cursor", first["cursor"][:-2] + tail) == 2
    assert "journal_cursor_invalid" in capsys.readouterr().err


def test_cli_no_data_and_errors(small_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(small_root, "--from", "2026-05-01", "--through", "2026-05-01",
                   "--tz", BERLIN) == 0
    assert capsys.readouterr().out == "no memories in this range\n"
    cases = [
        (("--from", "2026-03-01", "--through", "2026-03-01"), "journal_missing_range"),
        (("--from", "2026-02-30", "--through", "2026-03-01", "--tz", BERLIN),
         "journal_invalid_date"),
        (("--from", "2026-03-01", "--through", "2026-03-01", "--tz", "Mars/Olympus"),
         "journal_invalid_zone"),
        (("--from", "2026-03-01", "--through", "2026-04-01", "--tz", BERLIN),
         "journal_range_too_long"),
        (("--from", "2026-03-01", "--through", "2026-03-01", "--tz", BERLIN, "--limit", "26"),
         "journal_invalid_limit"),
        (("--cursor", "x.y", "--limit", "5"), "journal_invalid_request"),
    ]
    for argv, code in cases:
        assert run_cli(small_root, *argv) == 2, argv
        assert code in capsys.readouterr().err, argv


def test_store_journal_pages_through_one_handle(tmp_path: Path) -> None:
    """I*: the store exposes MemoryJournal; its cursor continues on any later handle."""
    from datetime import UTC, datetime

    from memory_es import CompletedTurn, MemoryStore

    instants = iter(datetime(2026, 4, 10, 8, m, tzinfo=UTC) for m in range(40))
    clock_now = [datetime(2026, 4, 10, 7, tzinfo=UTC)]

    def clock() -> datetime:
        return clock_now[0]

    with MemoryStore.open(tmp_path / "root", background=False, clock=clock) as store:
        for i in range(12):
            clock_now[0] = next(instants)
            store.persist_completed_turn(CompletedTurn(run_id=f"j{i}", outcome="success",
                                                       answer=f"entry number {i}"))
        store.drain()
        first = store.journal("2026-04-10", "2026-04-10", "Europe/Berlin", limit=5)
        assert [e.text for e in first.entries] == [f"entry number {i}" for i in range(5)]
        second = store.journal_continue(first.cursor)
        assert [e.text for e in second.entries] == [f"entry number {i}" for i in range(5, 10)]
    with MemoryStore.open(tmp_path / "root", background=False, clock=clock) as other:
        assert other.journal_continue(first.cursor) == second
        with pytest.raises(MemoryEsError) as e:
            other.journal_continue(first.cursor + "A")
        assert code_of(e) == "journal_cursor_invalid"
