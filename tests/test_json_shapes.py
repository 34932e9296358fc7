"""Issue 11: the ``--json`` outputs of ``inspect``, ``journal`` and ``health`` keep their shape
(keys and value types, C1, C2, I*, N*) now that the library returns typed results, and each is
exactly the ``to_json()`` of the typed result, printed canonically (sorted keys).

The root is built with a fixed clock: two turns projected, a third admitted after the drain,
so inspect lists resolved and pending records and health has one finding (projection behind).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_es.browse.journal_page import JournalEntry
from memory_es.cli import main
from memory_es.intake import CompletedTurn, IntakeRecord
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from projections.findings import Finding
from projections.search import SearchHit

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
DAY = "2026-03-02"

COUNTS = {k: "int" for k in ("active", "dead", "delayed", "due", "pending", "resolved", "total",
                             "transitions")}
RECORD = {"admitted_at": "str", "attempts": "int", "attempts_left": "int", "category": "null",
          "due": "bool", "failures": "int", "id": "str", "next_due_at": "null", "outcome": "str",
          "position": "int", "reason_slug": "null", "retained": "null", "revision": "int",
          "state": "str"}
PENDING = {**RECORD, "next_due_at": "str", "outcome": "null"}
ENTRY = {"currentness": "str", "day": "str", "id": "str", "recordedAt": "str", "source": "str",
         "status": "str", "text": "str", "time": "str", "truncated": "bool", "type": "str"}
RANGE = {"days": "int", "fromDate": "str", "fromUtc": "str", "interval": "str",
         "throughDate": "str", "timeZone": "str", "toUtc": "str"}


def shape(value: Any) -> Any:
    """Keys and JSON value types, recursively; a list shows every item's shape."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return "null" if value is None else type(value).__name__


def rh(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shapes") / "root"
    with MemoryStore.open(path, background=False, clock=lambda: NOW) as store:
        for run_id, answer in (("s1", "Booked the dentist for Tuesday"),
                               ("s2", "The dentist moved to Friday")):
            assert store.persist_completed_turn(CompletedTurn(
                run_id=run_id, outcome="success", answer=answer)).status == "admitted"
        assert store.drain() == 2
        assert store.persist_completed_turn(CompletedTurn(
            run_id="s3", outcome="success", answer="Paid the dentist")).status == "admitted"
    return path


def cli_json(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, Any]:
    code = main(["--root", str(root), *argv, "--json"])
    out = capsys.readouterr().out
    obj = json.loads(out)
    assert out == json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n"  # canonical
    return code, obj


def test_inspect_json_shape(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, obj = cli_json(capsys, root, "inspect")
    assert code == 0
    assert shape(obj) == {"counts": COUNTS, "records": [RECORD, RECORD, PENDING],
                          "vectors_pending": "null", "worker": "str"}  # a Lite root: null
    assert obj["worker"] == "not_running"
    assert obj["counts"] == {"active": 1, "dead": 0, "delayed": 0, "due": 1, "pending": 1,
                             "resolved": 2, "total": 3, "transitions": 5}
    assert [(r["id"], r["state"], r["outcome"]) for r in obj["records"]] == [
        (rh("s1"), "resolved", "projected"), (rh("s2"), "resolved", "projected"),
        (rh("s3"), "pending", None)]
    assert obj["records"][2]["admitted_at"] == obj["records"][2]["next_due_at"] == \
        "2026-03-02T09:30:00.000Z"
    report = MemoryRoot.open(root).inspect()
    assert obj == report.to_json()
    pending = report.records[2]
    assert isinstance(pending, IntakeRecord)
    assert (pending.state, pending.due, pending.attempts_left, pending.next_due_at) == (
        "pending", True, 16, NOW)
    code, one = cli_json(capsys, root, "inspect", rh("s3"))
    assert code == 0 and one == obj["records"][2]


def test_journal_json_shape(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, obj = cli_json(capsys, root, "journal", "--from", DAY, "--through", DAY, "--tz", "UTC",
                         "--limit", "1")
    assert code == 0
    assert shape(obj) == {
        "coverage": {"bytes": "int", "complete": "bool", "entries": "int", "stoppedBy": "str"},
        "cursor": "str", "entries": [ENTRY], "limit": "int", "noData": "bool", "offset": "int",
        "range": RANGE, "untrusted": "bool"}
    assert obj["range"] == {"days": 1, "fromDate": DAY, "fromUtc": "2026-03-02T00:00:00.000Z",
                            "interval": "half-open [fromUtc, toUtc)", "throughDate": DAY,
                            "timeZone": "UTC", "toUtc": "2026-03-03T00:00:00.000Z"}
    assert (obj["limit"], obj["offset"], obj["noData"], obj["untrusted"]) == (1, 0, False, True)
    assert obj["coverage"]["entries"] == 2 and obj["coverage"]["stoppedBy"] == "range_end"
    assert obj["entries"][0]["text"] == "Booked the dentist for Tuesday"
    page = MemoryRoot.open(root).journal({"fromDate": DAY, "throughDate": DAY,
                                          "timeZone": "UTC", "limit": 1})
    assert isinstance(page.entries[0], JournalEntry)
    page_json = page.to_json()
    assert page.cursor is not None and page_json["cursor"] == page.cursor
    assert {**page_json, "cursor": obj["cursor"]} == obj  # cursors are per handle


def test_health_json_shape(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, obj = cli_json(capsys, root, "health")
    assert code == 0  # projections behind, no writer: recoverable (issue 13 item 9)
    assert shape(obj) == {"findings": [{"code": "str", "detail": "str", "path": "str"}],
                          "journal_position": "int", "projection_position": "int",
                          "runtime": "str", "status": "str", "vectors_pending": "null",
                          "worker": "str", "ann_index": "null"}
    assert obj["status"] == "recoverable"
    assert obj["findings"][0]["code"] == "projection_behind"
    report = MemoryRoot.open(root).health()
    assert obj == report.to_json()
    assert report.findings == (Finding("projection_behind", "index",
                                       obj["findings"][0]["detail"]),)


def test_search_hits_and_rebuild_report_are_typed(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "root", background=False, clock=lambda: NOW) as store:
        store.persist_completed_turn(CompletedTurn(run_id="k", outcome="success",
                                                   answer="Kestrel feeds at dawn"))
        store.drain()
        (hit,) = store.lexical_search("kestrel")
        report = store.rebuild()
    assert isinstance(hit, SearchHit)
    assert shape(hit.to_json()) == {"bm25": "float", "day": "str", "id": "str",
                                    "recorded_at": "str", "text": "str"}
    assert (hit.text, hit.day, hit.recorded_at) == ("Kestrel feeds at dawn", DAY,
                                                    "2026-03-02T09:30:00.000Z")
    assert MemoryRoot.open(tmp_path / "root").lexical_search("kestrel") == [hit]
    assert MemoryRoot.open(tmp_path / "root").search("kestrel").recall.hits[0].text == \
        MemoryRoot.open(tmp_path / "root").recall("kestrel").recall.hits[0].text
    assert (report.generation, report.position) == (2, 4)  # configuration + 3 events
    assert report.to_json() == {"generation": 2, "position": 4, "written": list(report.written),
                                "removed": list(report.removed), "vectors_pending": None}


ITEM = {"attribution": "null", "createdAt": "str", "currentness": "str", "id": "str",
        "provenanceUnknown": "bool", "source": {"intakeId": "str", "session": "null"},
        "status": "str", "text": "str", "type": "str"}


def test_list_and_show_json_shapes(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14 item 6: ``list`` and ``show`` are the to_json() of MemoryRoot's typed
    results, with recall's field names (G25)."""
    code, obj = cli_json(capsys, root, "list", "--limit", "1")
    assert code == 0
    assert shape(obj) == {"cursor": "str", "limit": "int", "memories": [ITEM]}
    (first,) = obj["memories"]
    assert (first["text"], first["status"], first["currentness"], first["createdAt"]) == (
        "Booked the dentist for Tuesday", "open", "current", "2026-03-02T09:30:00.000Z")
    assert first["source"]["intakeId"] == rh("s1")
    assert obj["cursor"] == f"2026-03-02T09:30:00.000Z~{first['id']}"
    assert obj == MemoryRoot.open(root).list_memories(limit=1).to_json()
    code, one = cli_json(capsys, root, "show", first["id"][:8])
    assert code == 0
    assert shape(one) == {**ITEM, "day": "str", "entities": [], "events": [
        {"position": "int", "timestamp": "str", "topic": "str", "version": "int"}],
        "labels": "null", "provenance": {"file": "str", "intakeId": "str", "origin": "str",
                                         "session": "null", "tier": "str"},
        "salience": "null", "scope": "null", "statusHistory": [
            {"at": "str", "by": "null", "from": "null", "position": "int", "reason": "null",
             "to": "str"}], "supersededBy": [], "supersedes": []}
    assert {k: one[k] for k in ITEM} == first
    assert one["provenance"] == {"file": f"daily/{DAY}.md", "intakeId": rh("s1"),
                                 "origin": "host-summary", "session": None, "tier": "lite"}
    assert one["events"][0]["topic"] == "memory_es/Memory.Recorded"
    assert one == MemoryRoot.open(root).show(first["id"]).to_json()
