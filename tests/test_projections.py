"""Tier projections, Markdown format and replay determinism (SPEC D2, D3, D5, D7, D8, D10, D12,
A13, K2, K6, K7, K10, K11, K12, N11; DESIGN 7).

Roots are built with an injected clock so days are deterministic. The Markdown is checked
against the index row for row; that the live root equals a replay of its exported journal, per
tier, is tests/test_projection_contract.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S
from helpers_index import index_rows, journal_bytes
from memory_es.capture.scripted import ScriptedChat
from memory_es.config import MemoryConfig, parse_config
from memory_es.errors import IntegrityError
from memory_es.history import iter_events, open_reader
from memory_es.ids import run_memory_id
from memory_es.intake import CompletedTurn
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export
from projections.index_schema import DUMP_ORDER, DUMP_TABLES
from projections.projector import Projector
from projections.sqlite_index import IndexProjection

LITE: dict[str, Any] = {}
JOURNAL: dict[str, Any] = {"mode": "journal", "embeddings": {"dim": 384}}
BUJO: dict[str, Any] = {"mode": "bujo", "embeddings": {"dim": 384},
                        "llm": {"provider": "ollama", "model": "m"}}
BUJO_CAPTURE: dict[str, Any] = {**BUJO, "writeMode": "capture"}

BULLET = re.compile(r"\n- (?P<text>[^\n]*)\n  <!--(?P<tag>mem|audit) (?P<body>[^\n]*?)-->\n")
C0_BIDI = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class Clock:
    """A settable UTC clock; ``tick`` is added before each reading so instants stay distinct."""

    def __init__(self, start: datetime, tick: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.tick = tick

    def __call__(self) -> datetime:
        self.now += self.tick
        return self.now


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, second, tzinfo=UTC)


def iso(ts: datetime) -> str:
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def config(block: dict[str, Any]) -> MemoryConfig:
    return parse_config(block)


def turn(run_id: str, answer: str, session: str | None = None, **kw: Any) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer, session=session, **kw)


def admit(store: MemoryStore, run_id: str, answer: str, session: str | None = None,
          **kw: Any) -> None:
    result = store.persist_completed_turn(turn(run_id, answer, session, **kw))
    assert result.status == "admitted", result


def parse_md(data: bytes, day: str, tag: str = "mem") -> list[tuple[str, dict[str, str]]]:
    """The bullets of one daily/audit file: (display text, decoded metadata), strictly parsed.

    The whole file must be the header followed by two-line bullets and nothing else (K2, K11).
    """
    text = data.decode("utf-8")
    header = f"# {day}\n" if tag == "mem" else f"# {day} (audit: outside recall)\n"
    assert text.startswith(header)
    bullets: list[tuple[str, dict[str, str]]] = []
    pos = len(header)
    while pos < len(text):
        m = BULLET.match(text, pos)
        assert m is not None, f"not a two-line bullet at offset {pos}: {text[pos:pos + 80]!r}"
        assert m.group("tag") == tag
        fields: dict[str, str] = {}
        for item in m.group("body").split(" "):
            key, sep, value = item.partition("=")
            assert sep and key not in fields, item
            fields[key] = urllib.parse.unquote(value)
        bullets.append((m.group("text"), fields))
        pos = m.end()
    return bullets


def dump_index(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {table: index_rows(root, f"SELECT {', '.join(cols)} FROM {table} "
                                    f"ORDER BY {DUMP_ORDER.get(table, 'rowid')}")
            for table, cols in DUMP_TABLES.items()}


def tree(root: Path) -> dict[str, bytes]:
    """Every Markdown projection file, by root-relative path."""
    return {str(p.relative_to(root)): p.read_bytes()
            for kind in ("daily", "audit") if (root / kind).is_dir()
            for p in sorted((root / kind).iterdir())}


def daily_files(root: Path) -> list[str]:
    return sorted(os.listdir(root / "daily")) if (root / "daily").is_dir() else []


# -- D2 / D12: Lite ------------------------------------------------------------------------------


def test_d2_d12_lite_daily_bullets_match_index_and_day_comes_from_admission(tmp_path: Path) -> None:
    """D2/D12/K2: each drained turn is one two-line bullet in daily/<admission day>.md whose
    fields equal its index row; FTS finds it; the drain instant does not pick the day."""
    root = tmp_path / "root"
    clock = Clock(at(1, 23, 58))
    admissions: dict[str, datetime] = {}
    answers = {"r1": "Alpaca grazing near the fence", "r2": "Bramble jam recipe saved",
               "r3": "Comet visible after midnight"}
    sessions = {"r1": "web:t1", "r2": "web:t2", "r3": "web:t1"}
    with MemoryStore.open(root, clock=clock, background=False) as store:
        for run_id in ("r1", "r2"):
            admit(store, run_id, answers[run_id], sessions[run_id])
            admissions[run_id] = clock.now
        clock.now = at(2, 0, 0, 30)  # across midnight UTC
        admit(store, "r3", answers["r3"], sessions["r3"])
        admissions["r3"] = clock.now
        clock.now = at(2, 6)  # drained hours later, on day 2
        assert store.drain() == 3
        assert store.drain() == 0
        # Re-admitting the same bytes is a duplicate and adds no line.
        assert store.persist_completed_turn(turn("r1", answers["r1"], "web:t1")).status \
            == "duplicate"
        assert store.drain() == 0
        for run_id, answer in answers.items():
            hits = store.lexical_search(answer.split()[0])
            assert [h.text for h in hits] == [answer]
            assert hits[0].id == run_memory_id(hashlib.sha256(run_id.encode()).hexdigest(), 0)

    assert daily_files(root) == ["2026-03-01.md", "2026-03-02.md"]
    assert not (root / "audit").exists()
    md: dict[str, tuple[str, dict[str, str], str]] = {}
    for day in ("2026-03-01", "2026-03-02"):
        for text, fields in parse_md((root / "daily" / f"{day}.md").read_bytes(), day):
            assert list(fields) == ["id", "type", "status", "recorded", "source_session"]
            assert (fields["type"], fields["status"]) == ("observation", "open")
            assert fields["id"] not in md
            md[fields["id"]] = (text, fields, day)
    assert sorted(t for t, _, _ in md.values()) == sorted(answers.values())
    for run_id, answer in answers.items():
        memory_id = run_memory_id(hashlib.sha256(run_id.encode()).hexdigest(), 0)
        text, fields, day = md[memory_id]
        assert text == answer
        assert fields["recorded"] == iso(admissions[run_id])
        assert day == admissions[run_id].date().isoformat()
        assert fields["source_session"] == sessions[run_id]

    rows = index_rows(root, "SELECT id, kind, text, day, recorded_at, status, source_session, "
                            "tier, source FROM memories")
    assert len(rows) == 3
    for memory_id, kind, text, day, recorded, status, session, tier, source in rows:
        md_text, fields, md_day = md[memory_id]
        assert (text, day, recorded, kind, status, session) == (
            md_text, md_day, fields["recorded"], fields["type"], fields["status"],
            fields["source_session"])
        assert (tier, source) == ("lite", "host-summary")
    assert index_rows(root, "SELECT COUNT(*) FROM vectors") == [(0,)]  # D2: Lite never embeds
    assert MemoryRoot.open(root).health().status == "clean"


def test_d2_lite_normalises_whitespace_but_keeps_each_run(tmp_path: Path) -> None:
    """D2: Lite collapses whitespace; identical text from two runs stays two memories."""
    root = tmp_path / "root"
    with MemoryStore.open(root, clock=Clock(at(1, 9)), background=False) as store:
        admit(store, "a", "  Gecko\n\tclimbs   walls  ")
        admit(store, "b", "Gecko climbs walls")
        assert store.drain() == 2
    bullets = parse_md((root / "daily" / "2026-03-01.md").read_bytes(), "2026-03-01")
    assert [t for t, _ in bullets] == ["Gecko climbs walls", "Gecko climbs walls"]
    assert index_rows(root, "SELECT COUNT(*) FROM memories") == [(2,)]


def test_k6_k7_k12_d12_session_limit_and_absent_session(tmp_path: Path) -> None:
    """K6/K7/K12/D12: a session of exactly 512 UTF-8 bytes is kept; 513 bytes is 'unknown' in
    Markdown and index alike; no session means no source_session key (and NULL in the index)."""
    root = tmp_path / "root"
    exact = "é" * 256  # 512 UTF-8 bytes
    over = "é" * 256 + "x"  # 513 bytes, 257 characters
    over_ascii = "s" * 513
    cases = {"exact": exact, "over": over, "over_ascii": over_ascii, "none": None}
    expected = {"exact": exact, "over": "unknown", "over_ascii": "unknown", "none": None}
    assert len(exact.encode()) == 512 and len(over.encode()) == 513
    with MemoryStore.open(root, clock=Clock(at(1, 9)), background=False) as store:
        for run_id, session in cases.items():
            admit(store, run_id, f"Session case {run_id} marker", session)
        assert store.drain() == 4
    bullets = parse_md((root / "daily" / "2026-03-01.md").read_bytes(), "2026-03-01")
    by_case = {text.split()[2]: fields for text, fields in bullets}
    indexed = dict(index_rows(root, "SELECT text, source_session FROM memories"))
    for run_id, want in expected.items():
        fields = by_case[run_id]
        if want is None:
            assert "source_session" not in fields
            assert list(fields) == ["id", "type", "status", "recorded"]
        else:
            assert fields["source_session"] == want
            assert list(fields)[-1] == "source_session"  # K2: at the end of the comment
        assert indexed[f"Session case {run_id} marker"] == want
    assert MemoryRoot.open(root).health().status == "clean"


# -- D3 / D5: Journal ------------------------------------------------------------------------------


def test_d3_d5_journal_repeated_content_converges_case_preserved(tmp_path: Path) -> None:
    """D3/D5: same text, whitespace variants and NFKC-equivalent forms (full-width letters)
    converge on one line and one row, across drains; a different case is a different memory."""
    root = tmp_path / "root"
    canonical = "Buy oat milk today"
    with MemoryStore.open(root, config(JOURNAL), clock=Clock(at(1, 9)), background=False) as store:
        admit(store, "j1", canonical, "web:a")
        admit(store, "j2", canonical, "web:b")
        admit(store, "j3", "  Buy\toat\n\nmilk   today ")
        assert store.drain() == 3
        first = (root / "daily" / "2026-03-01.md").read_bytes()
        admit(store, "j4", "Ｂｕｙ ｏａｔ ｍｉｌｋ ｔｏｄａｙ")  # full-width: NFKC -> canonical
        admit(store, "j5", "Buy oat milk\u3000today")  # ideographic space
        admit(store, "j6", "buy oat milk today")  # case differs: not merged
        assert store.drain() == 3
        assert len(store.lexical_search("oat", limit=10)) == 2
    bullets = parse_md((root / "daily" / "2026-03-01.md").read_bytes(), "2026-03-01")
    assert sorted(t for t, _ in bullets) == sorted([canonical, "buy oat milk today"])
    ids = {t: f["id"] for t, f in bullets}
    # the id comes from the first run that said it, never from the text (a forget must leave
    # no digest of it); the content identity is the text's normal form in the index
    assert ids[canonical] == run_memory_id(hashlib.sha256(b"j1").hexdigest(), 0)
    assert ids["buy oat milk today"] == run_memory_id(hashlib.sha256(b"j6").hexdigest(), 0)
    assert hashlib.sha256(canonical.encode()).hexdigest().encode() not in journal_bytes(root)
    # The first line keeps its first recorded provenance; later repeats do not rewrite it.
    assert dict(bullets)[canonical]["source_session"] == "web:a"
    assert (root / "daily" / "2026-03-01.md").read_bytes().startswith(first)  # appended only
    rows = index_rows(root, "SELECT id, text, tier FROM memories ORDER BY rowid")
    assert [(r[0], r[1]) for r in rows] == [(ids[canonical], canonical),
                                           (ids["buy oat milk today"], "buy oat milk today")]
    assert {r[2] for r in rows} == {"journal"}
    assert index_rows(root, "SELECT COUNT(*) FROM memories_fts") == [(2,)]
    assert MemoryRoot.open(root).health().status == "clean"


# -- D7 / D8 / A13: BuJo -------------------------------------------------------------------------


def test_d7_d8_bujo_append_host_summary_is_audit_only(tmp_path: Path) -> None:
    """D7/D8: BuJo append-host-summary writes audit/<day>.md lines only: no daily file, no
    memory rows, nothing recallable."""
    root = tmp_path / "root"
    clock = Clock(at(1, 23, 59))
    model = ScriptedChat([])  # D8: append-host-summary never asks the memory model
    with MemoryStore.open(root, config(BUJO), clock=clock, background=False,
                          chat_model=model) as store:
        admit(store, "b1", "Kestrel hovering\nover the field", "web:k")
        admission1 = clock.now
        clock.now = at(2, 8)
        admit(store, "b2", "Cron checked the kestrel feed", trigger="cron",
              speaker_kind="trigger")
        admission2 = clock.now
        assert store.drain() == 2
        assert store.lexical_search("kestrel") == []
        assert store.lexical_search("Kestrel hovering") == []
    assert model.calls == []
    assert not (root / "daily").exists()
    assert sorted(os.listdir(root / "audit")) == ["2026-03-01.md", "2026-03-02.md"]
    (b1,) = parse_md((root / "audit" / "2026-03-01.md").read_bytes(), "2026-03-01", "audit")
    assert b1[0] == "Kestrel hovering over the field"
    assert b1[1] == {"intake": hashlib.sha256(b"b1").hexdigest(), "recorded": iso(admission1),
                     "trigger": "human", "speaker": "unknown", "source": "User",
                     "source_session": "web:k"}
    (b2,) = parse_md((root / "audit" / "2026-03-02.md").read_bytes(), "2026-03-02", "audit")
    assert b2[0] == "Cron checked the kestrel feed"
    assert b2[1]["recorded"] == iso(admission2)
    assert (b2[1]["trigger"], b2[1]["speaker"], b2[1]["source"]) == (
        "cron", "trigger", "scheduled-task")
    assert "source_session" not in b2[1]
    assert index_rows(root, "SELECT COUNT(*) FROM memories") == [(0,)]
    assert index_rows(root, "SELECT COUNT(*) FROM memories_fts") == [(0,)]
    assert index_rows(root, "SELECT COUNT(*) FROM audit") == [(2,)]
    assert MemoryRoot.open(root).health().status == "clean"


def test_bujo_capture_cron_disabled_gets_no_audit_line(tmp_path: Path) -> None:
    """A13/A12: with capture.cron false a cron turn is skipped and leaves no audit line."""
    root = tmp_path / "root"
    block = {**BUJO_CAPTURE, "capture": {"cron": False}}
    with MemoryStore.open(root, config(block), clock=Clock(at(1, 9)), background=False) as store:
        admit(store, "h1", "Osprey seen by a human", capture_text="Osprey seen by a human")
        result = store.persist_completed_turn(turn(
            "c1", "Osprey cron report", trigger="cron", speaker_kind="trigger",
            capture_text="Osprey cron report"))
        assert (result.status, result.code) == ("skipped", "cron_capture_disabled")
        store.drain()
    assert not (root / "daily").exists()
    bullets = parse_md((root / "audit" / "2026-03-01.md").read_bytes(), "2026-03-01", "audit")
    assert [t for t, _ in bullets] == ["Osprey seen by a human"]
    assert b"cron" not in (root / "audit" / "2026-03-01.md").read_bytes()
    assert index_rows(root, "SELECT COUNT(*) FROM audit") == [(1,)]


# -- K: escaping and metadata encoding -------------------------------------------------------------

HOSTILE = [
    "close --> early <!-- open a comment",
    "fake <!--mem id=deadbeef type=observation status=open--> forged",
    "Tom & Jerry &amp; <b>bold</b>",
    "line one\nline two\r\nline three",
    "bell\x07 escape\x1b[31m null\x00 del\x7f c1\x9b end",
    "bidi \u202eevil\u202c isolate \u2067x\u2069 embed \u202a",
    "Hebrew שלום עולם and Arabic مرحبا بالعالم",
    "emoji 🦊🚀👩‍💻 flags 🇯🇵",
    "CJK 漢字かなカナ 한국어",
]


def test_k_hostile_text_cannot_break_the_markdown(tmp_path: Path) -> None:
    """K2/DESIGN 9.11: comment delimiters are escaped, control and bidi characters removed,
    every bullet has exactly one metadata comment at line start, and RTL/emoji/CJK survive."""
    root = tmp_path / "root"
    with MemoryStore.open(root, clock=Clock(at(1, 9)), background=False) as store:
        for i, answer in enumerate(HOSTILE):
            admit(store, f"h{i}", answer, f"web:{i}")
        assert store.drain() == len(HOSTILE)
    data = (root / "daily" / "2026-03-01.md").read_bytes()
    text = data.decode("utf-8")
    bullets = parse_md(data, "2026-03-01")
    assert len(bullets) == len(HOSTILE)
    assert text.count("<!--") == len(HOSTILE)
    assert text.count("-->") == len(HOSTILE)
    for line in text.split("\n"):
        if "<!--" in line:
            assert line.startswith("  <!--mem ") and line.endswith("-->")
            assert line.count("<!--") == 1
    assert C0_BIDI.search(text) is None
    assert "\r" not in text
    for word in ("שלום עולם", "مرحبا بالعالم", "🦊🚀👩‍💻", "🇯🇵", "漢字かなカナ 한국어",
                 "Tom &amp; Jerry &amp;amp;", "&lt;b&gt;bold&lt;/b&gt;",
                 "line one line two line three"):
        assert word in text
    # The index keeps the (whitespace-normalised) text itself; FTS finds non-Latin scripts.
    with MemoryStore.open(root, background=False) as store:
        assert [h.text for h in store.lexical_search("שלום")] == [" ".join(HOSTILE[6].split())]
    assert MemoryRoot.open(root).health().status == "clean"


def test_k2_metadata_values_are_percent_encoded(tmp_path: Path) -> None:
    """K2/K6: a session with spaces, '-->', '=', quotes, '<' and non-ASCII stays inside one
    comment, round-trips exactly, and health reads the same provenance as the index (N4)."""
    root = tmp_path / "root"
    session = 'web:a b-->c=d "q" <x> é 会話 \u202e'
    with MemoryStore.open(root, clock=Clock(at(1, 9)), background=False) as store:
        admit(store, "s1", "Provenance survives hostile ids", session)
        admit(store, "s2", "Second line keeps its own", "web:plain")
        assert store.drain() == 2
    data = (root / "daily" / "2026-03-01.md").read_bytes()
    text = data.decode("utf-8")
    assert text.count("-->") == 2
    assert text.count("=") == 2 * 5  # id, type, status, recorded, source_session per bullet
    assert C0_BIDI.search(text) is None
    bullets = parse_md(data, "2026-03-01")
    assert [f["source_session"] for _, f in bullets] == [session, "web:plain"]
    comment = text.split("\n")[3]
    raw = comment[comment.index("source_session=") + len("source_session="):-3]
    assert re.fullmatch(r"[A-Za-z0-9%._~:@-]+", raw)
    assert index_rows(root, "SELECT source_session FROM memories ORDER BY rowid") == [
        (session,), ("web:plain",)]
    assert MemoryRoot.open(root).health().status == "clean"


# -- K10: untouched days are not rewritten ---------------------------------------------------------


def test_k10_new_day_does_not_rewrite_earlier_day(tmp_path: Path) -> None:
    """K10: draining a turn for day 2 leaves day 1's file byte-identical, same inode and
    mtime_ns; a further turn on day 2 changes day 2 only."""
    root = tmp_path / "root"
    clock = Clock(at(1, 9))
    with MemoryStore.open(root, clock=clock, background=False) as store:
        admit(store, "d1", "Day one entry")
        store.drain()
        day1 = root / "daily" / "2026-03-01.md"
        before, st1 = day1.read_bytes(), os.stat(day1)
        clock.now = at(2, 9)
        admit(store, "d2", "Day two entry")
        store.drain()
        day2 = root / "daily" / "2026-03-02.md"
        st2 = os.stat(day2)
        admit(store, "d3", "Day two second entry")
        store.drain()
        after = os.stat(day1)
        assert day1.read_bytes() == before
        assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
            st1.st_ino, st1.st_mtime_ns, st1.st_size)
        assert [t for t, _ in parse_md(day2.read_bytes(), "2026-03-02")] == [
            "Day two entry", "Day two second entry"]
        grown = os.stat(day2)  # day 2 itself changed: its new line appended in place
        assert (grown.st_ino, grown.st_size > st2.st_size) == (st2.st_ino, True)
    # Reopening (catch-up on open) and closing rewrites nothing either.
    with MemoryStore.open(root, background=False):
        pass
    assert os.stat(day1).st_mtime_ns == st1.st_mtime_ns


# -- replay of an export (live root == replay: tests/test_projection_contract.py) -----------------


def build_mixed_root(root: Path, block: dict[str, Any]) -> None:
    """Several drains over two days with sessions, repeats and an empty-after-collapse answer."""
    clock = Clock(at(1, 22, 30), tick=timedelta(minutes=11))
    with MemoryStore.open(root, config(block), clock=clock, background=False) as store:
        admit(store, "m1", "Lantern festival on Friday", "web:x")
        admit(store, "m2", "Harbour tides  at dawn", "web:y")
        store.drain()
        admit(store, "m3", "Lantern festival on Friday", "web:z")
        admit(store, "m4", "Ｑｕｉｎｃｅ jelly recipe")
        store.drain()
        admit(store, "m5", "Orchard pruning <!-- late --> & more", "é" * 300)
        admit(store, "m6", "Cron: feeds fine", trigger="cron", speaker_kind="trigger")
        store.drain()
        admit(store, "m7", "Undrained at export time", "web:q")


def test_tampered_export_is_refused(tmp_path: Path) -> None:
    """B15/C5: an export whose event state was edited fails the chain; no root is created."""
    live = tmp_path / "live"
    build_mixed_root(live, LITE)
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(live).export_to(export)
    lines = export.read_bytes().splitlines(keepends=True)
    assert b"Harbour tides" in lines[2]  # line 1 is the root's recorded configuration
    lines[2] = lines[2].replace(b"Harbour tides", b"Harbour tidez")
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"".join(lines))
    target = tmp_path / "target"
    with pytest.raises(IntegrityError) as info:
        replay_export(tampered, target)
    assert info.value.code == "chain_broken"
    assert not os.path.lexists(target)


# -- crash convergence -----------------------------------------------------------------------------

DRAINER = """
import sys
from memory_es.store import MemoryStore
store = MemoryStore.open(sys.argv[1], background=False)
store.drain()
print("survived", flush=True)
"""


def count_bullets(root: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in daily_files(root):
        for text, _ in parse_md((root / "daily" / name).read_bytes(), name[:-3]):
            counts[text] = counts.get(text, 0) + 1
    return counts


def test_crash_after_journal_commit_during_drain_converges(tmp_path: Path) -> None:
    """DESIGN 12/B14/N11: SIGKILL right after the drain's journal commit (before projections);
    reopening catches the projections up, health is clean, each memory appears exactly once."""
    root = tmp_path / "root"
    answers = [f"Crash survivor number {i} kiwi" for i in range(4)]
    with MemoryStore.open(root, clock=Clock(at(1, 9)), background=False) as store:
        admit(store, "pre", "Drained before the crash kiwi")
        store.drain()
        for i, answer in enumerate(answers):
            admit(store, f"c{i}", answer)
    env = dict(os.environ, MEMORY_ES_CRASH_AT="journal.after_commit")
    proc = subprocess.run([sys.executable, "-c", DRAINER, str(root)], env=env,
                          capture_output=True, text=True, timeout=HANG_S, check=False)
    assert proc.returncode == -9, (proc.returncode, proc.stdout, proc.stderr)
    assert "survived" not in proc.stdout
    assert count_bullets(root) == {"Drained before the crash kiwi": 1}  # projections behind

    with MemoryStore.open(root, background=False) as store:
        assert store.inspect().counts.pending == 0  # the crashed drain committed
        assert store.drain() == 0
        assert len(store.lexical_search("kiwi", limit=20)) == 5
    assert count_bullets(root) == {"Drained before the crash kiwi": 1,
                                   **{a: 1 for a in answers}}
    assert index_rows(root, "SELECT COUNT(*), COUNT(DISTINCT text) FROM memories") == [(5, 5)]
    report = MemoryRoot.open(root).health()
    assert (report.status, report.findings) == ("clean", ())


def test_failed_index_commit_after_markdown_write_converges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DESIGN 7: if the index commit fails after Markdown was written, the next catch-up
    re-applies the events without duplicating lines or rewriting the already-correct file."""
    root = tmp_path / "root"
    with MemoryStore.open(root, clock=Clock(at(1, 9)), background=False) as store:
        admit(store, "x0", "Before the failure walnut")
        store.drain()
        admit(store, "x1", "During the failure walnut")
        real_flush = IndexProjection.flush

        def failing_flush(self: IndexProjection) -> None:
            raise OSError("simulated failure before the index commit")

        monkeypatch.setattr(IndexProjection, "flush", failing_flush)
        with pytest.raises(OSError):
            store.drain()
        monkeypatch.setattr(IndexProjection, "flush", real_flush)
    day = root / "daily" / "2026-03-01.md"
    written = day.read_bytes()
    st = os.stat(day)
    assert count_bullets(root) == {"Before the failure walnut": 1, "During the failure walnut": 1}
    assert index_rows(root, "SELECT COUNT(*) FROM memories") == [(1,)]  # rolled back
    # The daily file ran ahead of the index commit: crash residue the next open repairs, not
    # drift (issue 13 item 9): recoverable, exit 0.
    report = MemoryRoot.open(root).health()
    assert (report.status, report.exit_code) == ("recoverable", 0)
    assert {(f.code, f.path) for f in report.findings} == {
        ("crash_residue", "daily/2026-03-01.md"), ("projection_behind", "index")}

    with MemoryStore.open(root, background=False) as store:
        assert len(store.lexical_search("walnut")) == 2
    assert day.read_bytes() == written
    assert os.stat(day).st_ino == st.st_ino
    assert index_rows(root, "SELECT COUNT(*) FROM memories") == [(2,)]
    assert MemoryRoot.open(root).health().status == "clean"


# -- projector idempotence -------------------------------------------------------------------------


@pytest.fixture
def drained_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "root"
    build_mixed_root(root, LITE)
    with MemoryStore.open(root, background=False) as store:
        store.drain()
    yield root


def test_projector_catch_up_twice_changes_nothing(drained_root: Path) -> None:
    """DESIGN 7: re-applying every event from position 0 to a current projector is a no-op:
    same position, no file written, same bytes/inodes/mtimes, same index rows."""
    root = drained_root
    files = tree(root)
    stats = {rel: (os.stat(root / rel).st_ino, os.stat(root / rel).st_mtime_ns) for rel in files}
    dump = dump_index(root)
    projector = Projector.open(root)
    try:
        position = projector.position
        assert position > 0
        with open_reader(root) as opened:
            assert projector.catch_up(iter_events(opened)) == position
            assert projector.catch_up(iter_events(opened, after=0)) == position
        assert projector.files_written == 0
    finally:
        projector.close()
    assert tree(root) == files
    assert {rel: (os.stat(root / rel).st_ino, os.stat(root / rel).st_mtime_ns)
            for rel in files} == stats
    assert dump_index(root) == dump
    assert MemoryRoot.open(root).health().status == "clean"


def test_index_apply_twice_in_fresh_generation_is_idempotent(
    drained_root: Path, tmp_path: Path
) -> None:
    """D10: folding the event sequence twice into one new index equals folding it once."""
    with open_reader(drained_root) as opened:
        events = list(iter_events(opened))
    once = IndexProjection(tmp_path / "once.db", create=True)
    twice = IndexProjection(tmp_path / "twice.db", create=True)
    try:
        for position, event in events:
            once.apply(position, event)
        once.flush()
        for position, event in [*events, *events]:
            twice.apply(position, event)
        twice.flush()
        for position, event in events:
            twice.apply(position, event)
        twice.flush()
        for table in DUMP_TABLES:
            assert list(twice.dump(table)) == list(once.dump(table))
        assert list(once.dump("memories")) == dump_index(drained_root)["memories"]
        assert twice.position == once.position == events[-1][0]
    finally:
        once.close()
        twice.close()


# -- packaging -------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["projections.replay", "projections.projector",
                                    "projections.health", "projections.sqlite_index",
                                    "projections.index_schema", "projections.markdown"])
def test_projection_modules_import_on_their_own(module: str) -> None:
    """DESIGN 7: the projections package is importable first, in a fresh interpreter (tools
    such as a health runner may import it before memory_es)."""
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=HANG_S, check=False)
    assert proc.returncode == 0, proc.stderr.strip().splitlines()[-1:]
