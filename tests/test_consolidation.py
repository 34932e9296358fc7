"""Consolidation and the living ``index.md`` (L6-L9, D13, K1): a projection refreshed by the
flush, by the worker's passes and on demand, bounded, reproduced by rebuild, audited by
health."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ceilings import HANG_S
from helpers_capture import CAPTURE, BagEmbedder, Clock, entity, extraction, memory, script, turn
from helpers_replay import FIXTURES, regen
from memory_es.capture.scripted import ScriptedChat
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export
from projections.consolidation import (
    INDEX_FILE,
    MAX_GROUPS,
    MAX_SCAN_ROWS,
    is_time_node,
    preview,
    render_index,
)
from projections.sqlite_index import IndexProjection

FIXTURE = FIXTURES / "consolidation"


def _replayed(tmp_path: Path, name: str = "consolidation") -> Path:
    root = tmp_path / name
    replay_export(FIXTURES / name / "journal.jsonl", root)
    return root


def _synthetic(tmp_path: Path) -> IndexProjection:
    """An empty BuJo index to fill with rows directly (no journal: the preview reads rows)."""
    return IndexProjection(tmp_path / "memory.db", create=True)


def _memories(index: IndexProjection, texts: list[str], status: str = "open") -> list[str]:
    ids = []
    base = index.conn.execute("SELECT count(*) FROM memories").fetchone()[0]  # type: ignore[index]
    for n, text in enumerate(texts, start=base + 1):
        memory_id = f"m{n}"
        index.conn.execute(
            "INSERT INTO memories VALUES (?, ?, 'note', ?, '2026-07-06', "
            "'2026-07-06T12:00:00.000Z', ?, 'capture', NULL, NULL, 'bujo')",
            (n, memory_id, text, status))
        ids.append(memory_id)
    return ids


def _entities(index: IndexProjection, rows: list[tuple[str, str, list[str]]]) -> None:
    """(name, type, memory ids naming it), appended in rowid order."""
    base = index.conn.execute("SELECT count(*) FROM entities").fetchone()[0]  # type: ignore[index]
    for n, (name, type_, memories) in enumerate(rows, start=base + 1):
        index.conn.execute("INSERT INTO entities VALUES (?, ?, ?, ?)",
                           (n, f"e{n}", name, type_))
        for ord_, memory_id in enumerate(memories):
            index.conn.execute("INSERT INTO memory_entities VALUES (?, ?, ?)",
                               (memory_id, f"e{n}", ord_))


def _top_lines(data: bytes) -> list[str]:
    text = data.decode("utf-8")
    section = text.split("## Top entities\n\n", 1)[1].split("\n\n", 1)[0]
    return section.splitlines()


# -- L6: the living index.md, refreshed by the projection passes -------------------------------


def test_l6_index_md_replays_byte_exact_from_the_golden_fixture(tmp_path: Path) -> None:
    root = _replayed(tmp_path)
    want = (FIXTURE / "expected" / INDEX_FILE).read_bytes()
    assert (root / INDEX_FILE).read_bytes() == want
    assert b"- MORGAN (organization, project): 2 memories, 2 names" in want


def test_l6_a_write_refreshes_index_md_in_the_same_pass(tmp_path: Path) -> None:
    root = _replayed(tmp_path)
    before = (root / INDEX_FILE).read_bytes()
    config = parse_config(CAPTURE)
    with MemoryStore.open(root, config, background=False, embedder=BagEmbedder()) as store:
        store.remember("Tea with Morgan at noon!")
        store.remember("TEA with morgan at noon!")
    after = (root / INDEX_FILE).read_bytes()
    assert b"- live lines: 5\n- duplicate groups: 1" in before
    assert b"- live lines: 7\n- duplicate groups: 2" in after


def test_l6_the_background_worker_refreshes_index_md(tmp_path: Path) -> None:
    """Scheduled: no consolidate call; the worker's capture pass renders the file."""
    root = tmp_path / "root"
    records = script(("extract", "w1", extraction(
        [memory("Robin runs the Oslo office", source="document", entities=["r"])],
        [entity("r", "Robin")])))
    with MemoryStore.open(root, parse_config(CAPTURE), clock=Clock(), background=True,
                          embedder=BagEmbedder(), chat_model=ScriptedChat(records)) as store:
        store.persist_completed_turn(turn("w1", "Robin runs the Oslo office."))
        deadline = time.monotonic() + HANG_S
        while b"Robin" not in _read(root / INDEX_FILE) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert b"- Robin (person): 1 memory" in (root / INDEX_FILE).read_bytes()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def test_l6_consolidate_restores_a_deleted_index_md_on_demand(tmp_path: Path) -> None:
    root = _replayed(tmp_path)
    want = (root / INDEX_FILE).read_bytes()
    os.unlink(root / INDEX_FILE)
    with MemoryStore.open(root, parse_config(CAPTURE), background=False,
                          embedder=BagEmbedder()) as store:
        first = store.consolidate()  # the writer's open refreshed it (due): reported here
        assert first.changed and (root / INDEX_FILE).read_bytes() == want
        assert not store.consolidate().changed
        os.unlink(root / INDEX_FILE)
        second = store.consolidate()
    assert second.changed and (root / INDEX_FILE).read_bytes() == want
    assert (second.entities_scanned, second.groups_rendered, second.duplicate_groups) == (7, 2, 1)


# -- L7: bounded scan and bounded rendering ---------------------------------------------------


def test_l7_the_scan_stops_at_the_10000_row_ceiling(tmp_path: Path) -> None:
    index = _synthetic(tmp_path)
    ids = _memories(index, ["one", "two", "three"])
    _entities(index, [(f"name {n}", "concept", [ids[0]]) for n in range(MAX_SCAN_ROWS)])
    found = preview(index.conn)
    assert (found.summary.entities_scanned, found.summary.scan_complete) == (10_000, True)
    # row 10,001 would top the preview (3 mentions), but the ceiling is hit before it
    _entities(index, [("Late Comer", "person", ids)])
    found = preview(index.conn)
    assert (found.summary.entities_scanned, found.summary.scan_complete) == (10_000, False)
    data = render_index(index.conn)
    assert data is not None and b"Late Comer" not in data
    assert b"Scanned the first 10000 entity rows" in data
    index.close()


def test_l7_at_most_50_groups_are_rendered_best_first(tmp_path: Path) -> None:
    index = _synthetic(tmp_path)
    ids = _memories(index, [f"line {n}" for n in range(60)])
    _entities(index, [(f"topic {n}", "concept", ids[:n + 1]) for n in range(60)])
    found = preview(index.conn)
    assert (found.summary.groups, found.summary.groups_rendered) == (60, MAX_GROUPS)
    data = render_index(index.conn)
    assert data is not None
    lines = _top_lines(data)
    assert len(lines) == 50
    assert lines[0] == "- topic 59 (concept): 60 memories"
    assert lines[-1] == "- topic 10 (concept): 11 memories"
    assert b"showing 50 of 60 name groups" in data
    index.close()


# -- L8: time nodes left out, equivalent names collapsed, the graph untouched -----------------


@pytest.mark.parametrize(("name", "type_"), [
    ("Friday", "concept"), ("2026-07-10", "event"), ("next week", "event"),
    ("July 4th, 2026", "holiday"), ("10:30", "concept"), ("3pm", "thing"),
    ("Q3 2026", "concept"), ("Tomorrow", "concept"), ("the launch", "date"),
    ("2026-07-10T09:00:00Z", "event")])
def test_l8_calendar_and_time_nodes_are_recognised(name: str, type_: str) -> None:
    assert is_time_node(name, type_)


@pytest.mark.parametrize(("name", "type_"), [
    ("Morgan", "person"), ("April", "person"), ("May Chen", "person"), ("Atlas", "project"),
    ("Friday Club", "organization"), ("2026 roadmap", "concept")])
def test_l8_named_nodes_are_not_time_nodes(name: str, type_: str) -> None:
    assert not is_time_node(name, type_)


def test_l8_equivalent_names_collapse_without_touching_the_graph(tmp_path: Path) -> None:
    index = _synthetic(tmp_path)
    ids = _memories(index, ["a", "b", "c", "d"])
    _entities(index, [("Morgan", "person", [ids[0]]), ("MORGAN", "organization", [ids[1]]),
                      ("\uff2d\uff4f\uff52\uff47\uff41\uff4e", "project", [ids[2]]),
                      ("  morgan\t", "concept", [ids[3]]), ("Friday", "concept", ids),
                      ("Atlas", "project", [ids[0]])])
    graph_before = list(index.conn.execute("SELECT * FROM entities ORDER BY rowid"))
    data = render_index(index.conn)
    assert data is not None
    assert _top_lines(data) == ["- Morgan (concept, organization, person, project): 4 memories, "
                                "4 names", "- Atlas (project): 1 memory"]
    found = preview(index.conn)
    assert (found.summary.time_nodes, found.summary.collapsed_names) == (1, 3)
    assert list(index.conn.execute("SELECT * FROM entities ORDER BY rowid")) == graph_before
    index.close()


# -- L9, D13: duplicate groups; never mutates canonical memory; no model call -------------------


def test_l9_duplicate_groups_count_folded_collisions_of_current_lines(tmp_path: Path) -> None:
    index = _synthetic(tmp_path)
    _memories(index, ["Tea at noon", "tea  at NOON", "\uff34ea at noon", "Other", "other",
                      "Unique"])
    _memories(index, ["unique", "UNIQUE"], status="superseded")  # history: not counted
    found = preview(index.conn)
    assert (found.summary.lines, found.summary.duplicate_groups) == (6, 2)
    index.close()


def test_l9_d13_consolidate_never_mutates_canonical_memory_nor_calls_a_model(
        tmp_path: Path) -> None:
    root = _replayed(tmp_path)
    os.unlink(root / INDEX_FILE)
    model = ScriptedChat([])  # any model call would raise: nothing is scripted
    with MemoryStore.open(root, parse_config(CAPTURE), background=False,
                          embedder=BagEmbedder(), chat_model=model) as store:
        events = list(store.events())
        dump = regen.index_dump(root)
        graph = (root / "graph.jsonl").read_bytes()
        summary = store.consolidate()
        assert list(store.events()) == events
        assert regen.index_dump(root) == dump
        assert (root / "graph.jsonl").read_bytes() == graph
    assert model.calls == []
    assert summary.duplicate_groups == 1


def test_l9_cli_consolidate_prints_a_content_free_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _replayed(tmp_path)
    (root / INDEX_FILE).write_bytes(b"edited\n")
    assert main(["--root", str(root), "consolidate", "--json"]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert summary["changed"] is True
    assert (summary["entities_scanned"], summary["groups_rendered"],
            summary["duplicate_groups"]) == (7, 2, 1)
    assert "morgan" not in out.casefold() and "atlas" not in out.casefold()
    assert main(["--root", str(root), "consolidate"]) == 0
    text = capsys.readouterr().out
    assert "index.md unchanged" in text and "duplicate_groups=1" in text
    assert summary["tier"] == "bujo"
    assert (root / INDEX_FILE).read_bytes() == (FIXTURE / "expected" / INDEX_FILE).read_bytes()


# -- K1, D14: index.md at the root of BuJo only ------------------------------------------------


@pytest.mark.parametrize("name", ["lite", "journal-repeats"])
def test_k1_lite_and_journal_roots_have_no_index_md(tmp_path: Path, name: str) -> None:
    root = _replayed(tmp_path, name)
    assert not (root / INDEX_FILE).exists()
    with MemoryStore.open(root, background=False, embedder=BagEmbedder()) as store:
        summary = store.consolidate()
    assert not summary.changed and summary.groups == 0
    assert summary.tier in ("lite", "journal")
    assert not (root / INDEX_FILE).exists()
    assert MemoryRoot.open(root).health().status == "clean"


@pytest.mark.parametrize("name", ["lite", "journal-repeats"])
def test_d14_cli_consolidate_says_it_does_nothing_without_an_index_md(
        tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On Lite and Journal, consolidate reports no scan of an index.md that tier does not
    have: it says there is nothing to do (and the JSON names the tier)."""
    import memory_es.store.vectors

    monkeypatch.setattr(memory_es.store.vectors, "make_embedder", lambda block: BagEmbedder())
    root = _replayed(tmp_path, name)
    assert main(["--root", str(root), "consolidate"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("nothing to consolidate: a ") and "keeps no index.md" in text
    assert "scanned" not in text and "index.md unchanged" not in text
    assert main(["--root", str(root), "consolidate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tier"] in ("lite", "journal")
    assert not (root / INDEX_FILE).exists()


# -- health and rebuild treat index.md like any managed file ----------------------------------


def test_l6_health_reports_a_tampered_index_md_and_rebuild_restores_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _replayed(tmp_path)
    want = (root / INDEX_FILE).read_bytes()
    with open(root / INDEX_FILE, "r+b") as f:  # a hand edit, the file's mode kept
        f.write(b"# Edited")
    report = MemoryRoot.open(root).health()
    assert report.status == "findings"
    assert [(f.code, f.path) for f in report.findings] == [("file_mismatch", INDEX_FILE)]
    os.unlink(root / INDEX_FILE)
    report = MemoryRoot.open(root).health()
    assert [(f.code, f.path) for f in report.findings] == [("file_missing", INDEX_FILE)]
    assert main(["--root", str(root), "rebuild", "--json"]) == 0
    capsys.readouterr()
    assert (root / INDEX_FILE).read_bytes() == want
    assert MemoryRoot.open(root).health().status == "clean"
