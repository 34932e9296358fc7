"""SPEC C (operator commands): the IDs no older test was named after (issue 15 coverage).

Every test runs ``memory-es`` in-process (``memory_es.cli.main``) on a real root written
through ``MemoryStore``, and checks exit codes and output against the library's own answer.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import pytest

from helpers_index import active_index_path, index_rows
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.config import parse_config

JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}
DENTIST = "Dentist appointment with Dr. Hale on Tuesday at nine."
TEXTS = [DENTIST, "The office printer is on the third floor.",
         "Buy oat milk and bread on the way home."]
PARAPHRASE = "when are my teeth getting checked"  # no word in common with DENTIST


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def clock() -> datetime:
    return datetime(2026, 5, 4, 9, tzinfo=UTC)


def make_root(root: Path, block: dict[str, Any], texts: list[str]) -> list[str]:
    """Admit and drain ``texts`` (one turn each) under ``block``; their memory ids."""
    with MemoryStore.open(root, parse_config(block), clock=clock, background=False) as store:
        for n, text in enumerate(texts):
            result = store.persist_completed_turn(CompletedTurn(
                run_id=f"run-{n}", outcome="success", answer=text, session="web:c"))
            assert result.status == "admitted"
        assert store.drain() == len(texts)
    ids = dict(index_rows(root, "SELECT text, id FROM memories"))
    return [ids[text] for text in texts]


# -- C9: search is recall -------------------------------------------------------------------------


def test_c9_search_runs_the_same_hybrid_scoring_as_recall_from_the_root(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``memory-es search`` with nothing but the agent folder reads the root's own recorded
    config, runs hybrid scoring (a paraphrase sharing no word is found through its vector)
    and returns exactly what the library's recall returns for the same query and limit."""
    root = tmp_path / "root"
    ids = make_root(root, JOURNAL, TEXTS)
    code, out, err = cli(capsys, "--root", str(root), "search", PARAPHRASE, "--limit", "3",
                         "--json")
    assert (code, err) == (0, "")
    searched = json.loads(out)
    assert searched["degraded"] is False and searched["results"][0]["id"] == ids[0]
    with MemoryStore.open(root, parse_config(JOURNAL), clock=clock, background=False) as store:
        recalled = store.recall(PARAPHRASE, 3).to_json()
    assert searched["results"] == recalled["results"]
    assert MemoryRoot.open(root).search(PARAPHRASE, 3).to_json()["results"] == \
        recalled["results"]
    # Config-aware: the same root read as Lite (no vectors) cannot find the paraphrase.
    lite = tmp_path / "lite.json"
    lite.write_text(json.dumps({"memory": {"mode": "lite"}}), "utf-8")
    code, out, _ = cli(capsys, "--root", str(root), "--config", str(lite), "search",
                       PARAPHRASE, "--json")
    assert code == 0
    assert ids[0] not in [hit["id"] for hit in json.loads(out)["results"]]


# -- C15: maintenance through commands, direct edits seen by health -------------------------------


def test_c15_rebuild_refuses_a_running_agent_and_health_sees_direct_edits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``rebuild`` will not run beside the agent holding the root (exit 3); directly edited
    canonical Markdown and SQLite rows are findings of ``health`` (exit 1); ``rebuild`` with
    the agent stopped repairs both and health is clean again."""
    root = tmp_path / "root"
    make_root(root, {"mode": "lite"}, TEXTS)
    with MemoryStore.open(root, clock=clock, background=False):
        code, out, err = cli(capsys, "--root", str(root), "rebuild")
        assert code == 3 and out == "" and "memory-es: error:" in err
    daily = root / "daily" / "2026-05-04.md"
    original = daily.read_bytes()
    daily.write_bytes(original.replace(b"oat milk", b"oat cream"))
    writer = apsw.Connection(str(active_index_path(root)), flags=apsw.SQLITE_OPEN_READWRITE)
    writer.execute("UPDATE memories SET text = 'edited by hand' WHERE text = ?", (TEXTS[1],))
    writer.close()
    code, out, _ = cli(capsys, "--root", str(root), "health", "--json")
    report = json.loads(out)
    assert code == 1 and report["status"] != "clean"
    paths = json.dumps(report["findings"])
    assert "daily/2026-05-04.md" in paths and "memories" in paths
    assert "oat cream" not in out and "edited by hand" not in out  # content-free findings
    code, _, err = cli(capsys, "--root", str(root), "rebuild")
    assert (code, err) == (0, "")
    assert daily.read_bytes() == original
    assert sorted(t for (t,) in index_rows(root, "SELECT text FROM memories")) == sorted(TEXTS)
    code, out, _ = cli(capsys, "--root", str(root), "health", "--json")
    assert code == 0 and json.loads(out)["status"] == "clean"


# -- C17: operator inspection whatever recallTool says ---------------------------------------


def test_c17_operator_inspection_works_with_the_recall_tool_disabled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With ``recallTool.enabled: false`` the operator's read-only commands (inspect, search,
    journal, list, show, health, export) still answer, with the same content as without it."""
    root = tmp_path / "root"
    block = {"mode": "lite", "recallTool": {"enabled": False}}
    ids = make_root(root, block, TEXTS)
    config = tmp_path / "off.json"
    config.write_text(json.dumps({"memory": block}), "utf-8")
    for flags in (["--root", str(root), "--config", str(config)], ["--root", str(root)]):
        code, out, err = cli(capsys, *flags, "inspect", "--json")
        assert (code, err) == (0, "") and json.loads(out)["counts"]
        code, out, _ = cli(capsys, *flags, "search", "printer floor", "--json")
        assert code == 0 and json.loads(out)["results"][0]["id"] == ids[1]
        code, out, _ = cli(capsys, *flags, "journal", "--from", "2026-05-04", "--through",
                           "2026-05-04", "--tz", "UTC", "--json")
        assert code == 0 and [e["id"] for e in json.loads(out)["entries"]] == sorted(
            ids)  # one instant: ordered by id
        code, out, _ = cli(capsys, *flags, "list", "--json")
        assert code == 0 and DENTIST in out
        code, out, _ = cli(capsys, *flags, "show", ids[2], "--json")
        assert code == 0 and TEXTS[2] in out
        code, out, _ = cli(capsys, *flags, "health", "--json")
        assert code == 0 and json.loads(out)["status"] == "clean"
        target = tmp_path / f"export-{len(flags)}.jsonl"
        code, _, err = cli(capsys, *flags, "export", "--journal", str(target))
        assert code == 0 and err.startswith("exported ") and target.stat().st_size > 0
