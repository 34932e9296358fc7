"""SPEC I (MemoryJournal), K (Markdown format & provenance) and D (tier projections): the IDs
no older test was named after (issue 15 coverage).

Every test drives a real root: turns admitted or remembered through ``MemoryStore`` with a
settable clock, read back through ``MemoryStore``/``MemoryRoot`` and the ``memory-es`` CLI, and
checked against the active index generation and the Markdown on disk.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers_attack import EchoModel, tier_config
from helpers_capture import (
    CAPTURE,
    Clock,
    entity,
    extraction,
    memory,
    open_capture,
    reconcile,
    review,
    script,
    turn,
)
from helpers_index import index_rows
from memory_es import MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.intake import CompletedTurn
from memory_es.testing import WordBagEmbedder

DAY = "2026-05-04"  # helpers_capture.START's UTC day
RANGE = {"fromDate": DAY, "throughDate": DAY, "timeZone": "UTC"}


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes: the runtime directory, SQLite's shared-memory
    files (a reader maps them) and empty write-ahead logs (a reader may create one) aside."""
    files = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or ".runtime" in rel.parts or p.name.endswith("-shm"):
            continue
        data = p.read_bytes()
        if p.name.endswith("-wal") and not data:
            continue
        files[str(rel)] = data
    return files


def cli_json(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> dict[str, Any]:
    assert main(["--root", str(root), "journal", *argv, "--json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def open_tier(root: Path, tier: str, clock: Clock) -> MemoryStore:
    extra: dict[str, Any] = {}
    if tier != "lite":
        extra["embedder"] = WordBagEmbedder()
    if tier == "bujo_capture":
        extra["chat_model"] = EchoModel()
    return MemoryStore.open(root, tier_config(tier), clock=clock, background=False, **extra)


# -- I1: the curated local index, never a copy ---------------------------------------------------


def test_i1_journal_reads_the_curated_index_and_copies_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The journal's entries are exactly the curated ``memories`` rows of the range (ids,
    texts, instants, in order); reading it creates or changes no file, table or row: it is
    not another index and copies nothing."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 5, 4, 8, tzinfo=UTC))
    with MemoryStore.open(root, clock=clock, background=False) as store:
        for i, text in enumerate(["Heron on the pier", "Kettle descaled", "Tram 4 detoured"]):
            clock.now += timedelta(minutes=7)
            assert store.persist_completed_turn(CompletedTurn(
                run_id=f"r{i}", outcome="success", answer=text)).status == "admitted"
        clock.now = datetime(2026, 5, 5, 9, tzinfo=UTC)  # the next day: outside the range
        store.persist_completed_turn(CompletedTurn(run_id="late", outcome="success",
                                                   answer="Next day only"))
        assert store.drain() == 4
    before = tree(root)
    schema = index_rows(root, "SELECT type, name FROM sqlite_master ORDER BY name")
    page = cli_json(capsys, root, "--from", DAY, "--through", DAY, "--tz", "UTC")
    api = MemoryRoot.open(root).journal(RANGE).to_json()
    rows = index_rows(root, "SELECT id, text, recorded_at FROM memories "
                            "WHERE day = ? ORDER BY recorded_at, id", (DAY,))
    assert [(e["id"], e["text"], e["recordedAt"]) for e in page["entries"]] == rows
    assert len(rows) == 3 and api["entries"] == page["entries"]
    assert tree(root) == before
    assert index_rows(root, "SELECT type, name FROM sqlite_master ORDER BY name") == schema


# -- I12: every tier, read-only handles ----------------------------------------------------------


@pytest.mark.parametrize("tier", ["lite", "journal", "bujo_capture"])
def test_i12_every_tier_answers_through_a_read_only_handle(
        tmp_path: Path, tier: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Lite, Journal and BuJo roots all answer MemoryJournal, through the read-only
    ``MemoryRoot`` and the CLI, after the writer closed; neither changes a byte of the root."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 5, 4, 10, tzinfo=UTC))
    with open_tier(root, tier, clock) as store:
        written = store.remember("The boiler service is due in June.", session="web:a")
        assert written.status == "remembered"
        clock.now += timedelta(hours=1)
        second = store.remember("The spare key is with Dana next door.", session="web:a")
    before = tree(root)
    with MemoryRoot.open(root) as reader:
        page = reader.journal({**RANGE, "limit": 1})
        assert [e.id for e in page.entries] == [written.memory_id]
        assert page.entries[0].text == "The boiler service is due in June."
        assert page.cursor is not None
        rest = reader.journal({"cursor": page.cursor})
        assert [e.id for e in rest.entries] == [second.memory_id] and rest.cursor is None
    out = cli_json(capsys, root, "--from", DAY, "--through", DAY, "--tz", "UTC")
    assert [e["id"] for e in out["entries"]] == [written.memory_id, second.memory_id]
    assert all(e["source"] == f"daily/{DAY}.md" for e in out["entries"])
    assert tree(root) == before


# -- I13: canonical source and the supersession state at snapshot time ---------------------------


def test_i13_sources_and_supersession_state_are_those_of_the_snapshot(tmp_path: Path) -> None:
    """An entry names its canonical daily file (which holds the line); a supersession after
    the first page does not change the snapshot's later pages, while a new request shows the
    old line superseded and its replacement current."""
    root = tmp_path / "root"
    old, other, new = "Morgan lives in Berlin", "Kettle descaled", "Morgan lives in Madrid"
    morgan = [entity("m", "Morgan")]
    records = script(
        ("extract", "seed", extraction([memory(old, entities=["m"])], morgan)),
        ("review", "seed", review("keep")),
        ("extract", "kettle", extraction([memory(other)])),
        ("review", "kettle", review("keep")),
        ("extract", "fix", extraction([memory("Morgan moved to Madrid", entities=["m"])],
                                      morgan)),
        ("review", "fix", review("keep")),
        ("reconcile", "fix", reconcile({"action": "SUPERSEDE", "target": "m1", "text": new})))
    clock = Clock()
    store, _ = open_capture(root, records, clock=clock)
    with store:
        store.persist_completed_turn(turn("seed", old))
        store.persist_completed_turn(turn("kettle", other))
        store.drain()
        first = store.journal(DAY, DAY, "UTC", limit=1)
        assert first.cursor is not None
        clock.advance(hours=2)  # still the same day
        store.persist_completed_turn(turn("fix", "Morgan moved to Madrid", session="web:b"))
        store.drain()
        frozen = [*first.entries, *store.journal_continue(first.cursor).entries]
        fresh = store.journal(DAY, DAY, "UTC", limit=25)
    assert {e.text: (e.status, e.currentness) for e in frozen} == {
        old: ("open", "current"), other: ("open", "current")}
    assert {e.text: (e.status, e.currentness) for e in fresh.entries} == {
        old: ("superseded", "superseded"), other: ("open", "current"),
        new: ("open", "current")}
    daily = (root / "daily" / f"{DAY}.md").read_text("utf-8")
    for entry in fresh.entries:
        assert entry.source == f"daily/{DAY}.md"
        assert entry.text in daily and entry.id in daily


# -- I17: recency never touches chronology ---------------------------------------------------------


def test_i17_recency_and_access_never_reorder_the_journal(tmp_path: Path) -> None:
    """With ``recall.recency`` on (BuJo), after recalls that favour the newest line, the
    journal is still oldest-first by recording instant and identical to the recency-off view."""
    root = tmp_path / "root"
    texts = [f"Garden note {n}: planted {crop}" for n, crop in
             enumerate(["beans", "leeks", "garlic", "chard"])]
    clock = Clock(datetime(2026, 5, 4, 6, tzinfo=UTC))
    with_recency = parse_config({**CAPTURE, "recall": {"recency": True}})
    store = MemoryStore.open(root, with_recency, clock=clock, background=False,
                             embedder=WordBagEmbedder(), chat_model=EchoModel())
    with store:
        ids = []
        for text in texts:
            clock.advance(hours=3)
            ids.append(store.remember(text, session="web:g").memory_id)
        for _ in range(3):  # access telemetry for the newest line
            hits = store.recall("planted chard").recall.hits
            assert hits and hits[0].text == texts[-1]
    on = MemoryRoot.open(root, with_recency).journal({**RANGE, "limit": 25}).to_json()
    off = MemoryRoot.open(root, parse_config(CAPTURE)).journal(
        {**RANGE, "limit": 25}).to_json()
    assert [e["id"] for e in on["entries"]] == ids
    assert [e["recordedAt"] for e in on["entries"]] == sorted(e["recordedAt"]
                                                              for e in on["entries"])
    assert on["entries"] == off["entries"]
