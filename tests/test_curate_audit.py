"""``memory-es curate audit`` and ``curate decide`` (SPEC C14, M24-M27): the private, reviewed
step before ``memory.recall.intentExpiry``.

One BuJo capture root (intent lifecycle on, a scripted model) holds a line for every finding
and lines the audit must leave out; its report is pinned as text and JSON through the CLI and
the API. Each decision (keep, drop, undate, retype) is shown through the lifecycle events it
writes, in the index, the daily Markdown, recall under intentExpiry and a clean health; a
refused decision writes nothing; the CLI decides through a writer holding the root.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S
from helpers_capture import (
    CAPTURE,
    BagEmbedder,
    Clock,
    entity,
    extraction,
    memory,
    open_capture,
    review,
    script,
    turn,
)
from memory_es import MemoryRoot
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.events import Memory, Root
from memory_es.store import MemoryStore

CLI = [sys.executable, "-m", "memory_es.cli"]
INTENTS = {"capture": {"intentLifecycle": True}}
EXPIRY = {**INTENTS, "recall": {"intentExpiry": True}}
LATER = datetime(2026, 5, 10, 9, tzinfo=UTC)  # the audit's moment in the API tests

EXPECTED = """\
curate audit: 5 line(s) to review
{plumber}  2026-05-04  note [done]
  Pay the plumber
  - done: leaves the automatic block (M24)
{passport}  2026-05-04  note [open]  due=2026-04-30
  Renew the passport
  - leaves the automatic block, even before its date (M24)
  - deliberate recall reads its due= as an inclusive end (M25)
  - that end has passed: deliberate recall shows it ended
  - a note made from a task: its due= was a deadline
{lisbon}  2026-05-04  note [scheduled]  due=2099-06-30
  Plan the Lisbon trip
  - leaves the automatic block, even before its date (M24)
  - deliberate recall reads its due= as an inclusive end (M25)
  - a note made from a task: its due= was a deadline
{dentist}  2026-05-05  note [open]  due=2099-05-20
  Dentist appointment with Dr Moreau
  - leaves the automatic block, even before its date (M24)
  - deliberate recall reads its due= as an inclusive end (M25)
{office}  2026-05-05  note [open]  due=2099-01-10  valid_to=2099-01-01
  The office is closed for works
  - leaves the automatic block, even before its date (M24)
  - deliberate recall reads its due= as an inclusive end (M25)
  - has both due= and valid_to: the earlier ends it
decide each with: memory-es curate decide ID keep|drop|undate|retype [--as note|task|event]"""


def build(root: Path, **overrides: Any) -> dict[str, str]:
    """The fixture root; its lines' ids by short name."""
    def task(text: str, state: str, end: str | None = None) -> dict[str, Any]:
        out = memory(text, kind="task", entities=("p",) if "passport" in text else ())
        return {**out, "intentState": state, **({"validTo": end} if end else {})}

    plan = extraction([task("Renew the passport", "pending", "2026-04-30"),
                       task("Plan the Lisbon trip", "planned", "2099-06-30"),
                       task("Pay the plumber", "done"),
                       memory("Ana likes green tea")], [entity("p", "passport", "document")])
    clock = Clock()
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review(*["keep"] * 4))),
                            clock=clock, **{**INTENTS, **overrides})
    with store:
        store.persist_completed_turn(turn("r1", "My plans, in short."))
        assert store.drain() == 1
        clock.advance(days=1)
        store.remember("Dentist appointment with Dr Moreau", due_at="2099-05-20")
        store.remember("The office is closed for works", valid_to="2099-01-01",
                       due_at="2099-01-10")
        store.remember("The boiler was serviced")  # undated, open: not in the audit
    with MemoryRoot.open(root) as handle:
        lines = handle.list_memories(limit=20).memories
    names = {"Pay the plumber": "plumber", "Renew the passport": "passport",
             "Plan the Lisbon trip": "lisbon", "Dentist appointment with Dr Moreau": "dentist",
             "The office is closed for works": "office", "Ana likes green tea": "tea",
             "The boiler was serviced": "boiler"}
    return {names[line.text]: line.id for line in lines}


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A root only read from (the golden report)."""
    root = tmp_path_factory.mktemp("curate") / "root"
    return root, build(root)


@pytest.fixture
def fresh(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A root a test decides on."""
    root = tmp_path / "root"
    return root, build(root)


def cli(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--root", str(root), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def journal_length(root: Path) -> int:
    with MemoryRoot.open(root) as handle:
        return len(handle.events())


def audit(root: Path, *, everything: bool = False) -> dict[str, dict[str, Any]]:
    with MemoryRoot.open(root) as handle:
        report = handle.curate_audit(everything=everything, now=LATER)
    return {line.id: line.to_json() for line in report.lines}


def healthy(root: Path) -> None:
    with MemoryRoot.open(root) as handle:
        assert handle.health().status == "clean"


# --------------------------------------------------------------------------------------------
# The audit (C14): what it lists and why, pinned


def test_c14_the_audit_is_pinned_as_text_and_json(pinned: tuple[Path, dict[str, str]],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root, ids = pinned
    code, out, _ = cli(capsys, root, "curate", "audit")
    assert code == 0
    assert out.rstrip("\n") == EXPECTED.format(**{k: v[:12] for k, v in ids.items()})
    code, out, _ = cli(capsys, root, "curate", "audit", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["intentExpiry"] is False and shown["decided"] == 0
    assert [line["id"] for line in shown["lines"]] == [
        ids[k] for k in ("plumber", "passport", "lisbon", "dentist", "office")]
    assert shown["lines"][1] == {
        "id": ids["passport"], "text": "Renew the passport", "type": "note", "status": "open",
        "day": "2026-05-04", "source": "user", "dueAt": "2026-04-30", "validTo": None,
        "findings": ["dated", "due_becomes_end", "ended_by_due", "task_turned_note"],
        "reviewed": None}
    with MemoryRoot.open(root) as handle:  # the API's report is the CLI's
        assert handle.curate_audit().to_json() == shown


def test_an_end_is_judged_at_the_moment_asked(pinned: tuple[Path, dict[str, str]]) -> None:
    root, ids = pinned
    with MemoryRoot.open(root) as handle:
        before = handle.curate_audit(now=datetime(2026, 4, 30, 9, tzinfo=UTC))
        after = handle.curate_audit(now=datetime(2099, 5, 21, tzinfo=UTC))
    assert "ended_by_due" not in before.lines[1].findings  # the civil end day itself: current
    ended = {line.id for line in after.lines if "ended_by_due" in line.findings}
    assert ended == {ids["passport"], ids["dentist"], ids["office"]}


def test_the_audit_reads_beside_a_running_writer(tmp_path: Path) -> None:
    root = tmp_path / "root"
    ids = build(root)
    with MemoryStore.open(root, None, background=False), MemoryRoot.open(root) as handle:
        assert len(handle.curate_audit(now=LATER).lines) == len(ids) - 2  # the writer holds it


# --------------------------------------------------------------------------------------------
# Decisions (M26): each through an existing lifecycle transition, with its record


def test_c14_m26_keep_writes_only_its_record(fresh: tuple[Path, dict[str, str]],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    root, ids = fresh
    before = journal_length(root)
    code, out, _ = cli(capsys, root, "curate", "decide", ids["lisbon"][:10], "keep")
    assert code == 0
    assert json.loads(out) == {"id": ids["lisbon"], "decision": "keep", "kind": None,
                               "replacedBy": None}
    with MemoryRoot.open(root) as handle:
        events = handle.events()
        line = handle.show(ids["lisbon"])
    assert len(events) == before + 1
    assert isinstance(events[-1][1], Root.Reviewed)
    assert line.memory.status == "scheduled"  # the line is as it was
    assert not any(isinstance(e, Memory.Event) and getattr(e, "memory_id", "") == ids["lisbon"]
                   for _, e in events[before:])
    assert ids["lisbon"] not in audit(root)  # decided: left out, unless asked for
    assert audit(root, everything=True)[ids["lisbon"]]["reviewed"]["decision"] == "keep"
    code, out, _ = cli(capsys, root, "curate", "audit")
    assert out.splitlines()[0] == ("curate audit: 4 line(s) to review (1 more already decided: "
                                   "--all shows them)")
    code, out, _ = cli(capsys, root, "curate", "audit", "--all")
    assert out.splitlines()[0] == "curate audit: 5 line(s), 1 of them already decided"
    healthy(root)


def test_drop_closes_the_line_for_good(fresh: tuple[Path, dict[str, str]]) -> None:
    root, ids = fresh
    with MemoryStore.open(root, None, background=False) as store:
        assert store.curate(ids["plumber"], "drop").decision == "drop"
        hits = store.recall("plumber").recall.hits
        status = [e for _, e in MemoryRoot.open(root).events()
                  if isinstance(e, Memory.StatusChanged)][-1]
    assert (status.memory_id, status.status, status.reason) == (ids["plumber"], "dropped",
                                                                "curate_audit")
    assert all(h.id != ids["plumber"] for h in hits)  # terminal: never recalled (G22)
    assert ids["plumber"] not in audit(root, everything=True)  # no longer live
    healthy(root)


def test_undate_removes_the_date_everywhere(fresh: tuple[Path, dict[str, str]]) -> None:
    root, ids = fresh
    with MemoryStore.open(root, None, background=False) as store:
        store.curate(ids["dentist"], "undate")
        with pytest.raises(MemoryEsError, match=r"curate_refused: .* nothing intentExpiry"):
            store.curate(ids["dentist"], "undate")  # now undated and open: not in the audit
    daily = (root / "daily" / "2026-05-05.md").read_text()
    dentist = daily.split("Dentist appointment")[1].split("\n- ")[0]
    assert "due=" not in dentist and f"id={ids['dentist']}" in dentist
    assert ids["dentist"] not in audit(root, everything=True)
    with MemoryRoot.open(root) as handle:
        assert handle.show(ids["dentist"]).memory.due_at is None
    healthy(root)


def test_m25_retype_supersedes_the_line_with_a_task_whose_date_stays_a_deadline(
        tmp_path: Path) -> None:
    root = tmp_path / "root"
    ids = build(root, **EXPIRY)
    with MemoryStore.open(root, parse_config({**CAPTURE, **EXPIRY}), background=False,
                          clock=lambda: LATER, embedder=BagEmbedder()) as store:
        before = {h.id: h.currentness for h in store.recall("Renew the passport").recall.hits}
        decision = store.curate(ids["passport"], "retype", kind="task")
        after = {h.id: h.currentness for h in store.recall("Renew the passport").recall.hits}
        old, new = store.show(ids["passport"]), store.show(str(decision.replaced_by))
    assert before[ids["passport"]] == "ended"  # M25: the note's date read as its end
    assert after.get(decision.replaced_by) == "current"  # a task's date is a deadline
    assert old.memory.status == "superseded" and old.superseded_by[0].id == new.memory.id
    assert (new.memory.type, new.memory.status, new.memory.due_at, new.memory.text) == (
        "task", "open", date(2026, 4, 30), "Renew the passport")
    assert new.entities == old.entities and new.memory.source == old.memory.source
    reviewed = audit(root, everything=True)[new.memory.id]["reviewed"]
    assert reviewed["decision"] == "retype" and reviewed["kind"] == "task"
    with MemoryStore.open(root, None, background=False) as store, \
            pytest.raises(MemoryEsError, match="is superseded: only live lines are reviewed"):
        store.curate(ids["passport"], "keep")  # the old line is history now
    healthy(root)


def test_a_retyped_line_and_its_copy_are_forgotten_together(
        fresh: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    """The copy holds the very words of the line it replaced: forgetting either erases both,
    and the forget's byte scan finds them nowhere."""
    root, ids = fresh
    with MemoryStore.open(root, None, background=False) as store:
        copy = str(store.curate(ids["passport"], "retype", kind="task").replaced_by)
        original = store.show(ids["passport"])
        assert store.show(copy).memory.created_at == original.memory.created_at
    code, out, _ = cli(capsys, root, "--json", "forget", copy[:12], "--reason", "user-request")
    assert code == 0 and json.loads(out)["status"] == "forgotten"
    for day in (root / "daily").glob("*.md"):
        assert "Renew the passport" not in day.read_text()
    with MemoryRoot.open(root) as handle:
        left = {m.id for m in handle.list_memories(limit=50).memories}
    assert not left & {copy, ids["passport"]} and ids["lisbon"] in left
    healthy(root)


def test_a_replayed_root_equals_the_decided_one_byte_for_byte(
        fresh: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, ids = fresh
    with MemoryStore.open(root, None, background=False) as store:
        store.curate(ids["lisbon"], "retype", kind="task")
        store.curate(ids["office"], "undate")
        store.curate(ids["plumber"], "drop")
        store.curate(ids["dentist"], "keep")
    export = tmp_path / "export.jsonl"
    with MemoryRoot.open(root) as handle:
        handle.export_to(export)
    copy = tmp_path / "copy"
    assert main(["--root", str(copy), "replay", str(export)]) == 0
    for day in ("2026-05-04", "2026-05-05"):
        assert (copy / "daily" / f"{day}.md").read_bytes() == \
            (root / "daily" / f"{day}.md").read_bytes()
    assert audit(copy, everything=True) == audit(root, everything=True)


# --------------------------------------------------------------------------------------------
# Refusals: one line, a documented exit code, nothing written


@pytest.mark.parametrize("argv, code, message", [
    (["decide", "{tea}", "keep"], 1, "curate_refused: .* nothing intentExpiry would read"),
    (["decide", "{passport}", "retype", "--as", "note"], 1, "is already a note"),
    (["decide", "{office}", "retype", "--as", "task"], 1, "a Remember stated with a validity"),
    (["decide", "{boiler}", "undate"], 1, "nothing intentExpiry"),
    (["decide", "0123456789abcdef", "keep"], 1, "memory_not_found"),
    (["decide", "{passport}", "forget"], 2, "decision must be one of keep, drop, undate"),
    (["decide", "{passport}", "retype"], 2, "retype needs --as note|task|event$"),
    (["decide", "{passport}", "keep", "--as", "task"], 2, "--as is only for retype"),
    (["decide", "{passport}"], 2, "curate decide needs an id and a decision"),
    (["decide", "nothex!", "keep"], 2, "is not 8 to 64 lowercase hex"),
    (["audit", "{passport}"], 2, "curate audit takes no id"),
    (["decide", "{passport}", "keep", "--all"], 2, "curate decide takes no --all or --tz"),
    (["decide", "{passport}", "keep", "--tz", "UTC"], 2, "curate decide takes no --all"),
])
def test_a_refused_decision_writes_nothing(pinned: tuple[Path, dict[str, str]],
                                           capsys: pytest.CaptureFixture[str],
                                           argv: list[str], code: int, message: str) -> None:
    root, ids = pinned
    before = journal_length(root)
    got, out, err = cli(capsys, root, "curate", *(a.format(**ids) for a in argv))
    assert got == code and out == ""
    assert len(err.splitlines()) == 1
    assert re.search(message, err.strip()), err
    assert journal_length(root) == before


def test_a_root_that_is_not_bujo_has_no_audit(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    journal = parse_config({"mode": "journal", "embeddings": {"dim": 8}})
    with MemoryStore.open(root, journal, background=False) as store:
        line = store.remember("Renew the passport").memory_id
        with pytest.raises(MemoryEsError, match="curate_bujo_only"):
            store.curate(line, "keep")
    for argv in (["audit"], ["decide", line, "keep"]):
        code, out, _ = cli(capsys, root, "--json", "curate", *argv)
        assert code == 1 and json.loads(out)["error"]["code"] == "curate_bujo_only"


def test_the_library_checks_its_arguments(pinned: tuple[Path, dict[str, str]]) -> None:
    root, ids = pinned
    with MemoryStore.open(root, None, background=False) as store:
        with pytest.raises(InvalidArgumentError, match="retype needs --as"):
            store.curate(ids["passport"], "retype", kind="person")
        with pytest.raises(InvalidArgumentError, match="decision must be one of"):
            store.curate(ids["passport"], None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Beside a running writer, and the config check that points here


def test_decide_goes_through_the_writer_holding_the_root(
        fresh: tuple[Path, dict[str, str]]) -> None:
    root, ids = fresh
    with MemoryStore.open(root, None, background=False, control=True) as store:
        done = subprocess.run([*CLI, "--root", str(root), "curate", "decide", ids["lisbon"],
                               "retype", "--as", "event"], capture_output=True, text=True,
                              timeout=HANG_S)
        assert done.returncode == 0, done.stderr
        made = json.loads(done.stdout)["replacedBy"]
        assert store.show(made).memory.type == "event"  # the writer wrote it
    healthy(root)


def test_validate_points_intent_expiry_to_the_audit(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"memory": {**CAPTURE, **EXPIRY}}))
    assert main(["validate", "--config", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "OK" and "memory-es curate audit" in out[1]
    assert main(["--json", "validate", "--config", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["valid"] is True and "curate audit" in shown["notices"][0]
    path.write_text(json.dumps({"memory": CAPTURE}))  # off: nothing to point to
    assert main(["--json", "validate", "--config", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["notices"] == []
