"""``memory-es import apply SRC --from FORMAT`` (SPEC C6, C16): another tool's memories in.

Each format's sample in ``import_samples/`` is written from that format's documentation (mem0's
``get_all`` JSON, basic-memory / Obsidian notes with front matter, ChatGPT's
``conversations.json``); its import is pinned byte for byte (the exported journal and the daily
Markdown, ``import_samples/<format>/expected``). Importing twice writes nothing; the dry run's
counts are what applying writes; each refusal has a one-line reason in the dry run and in the
receipt; a source that is not the format writes nothing at all; a running agent holds the
import off. Regenerate the expected trees after a deliberate change with
``python tests/helpers_imports.py --regenerate``.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from ceilings import HANG_S
from helpers_imports import (
    AT,
    CLI,
    JOURNAL,
    SAMPLES,
    SOURCES,
    big_mem0,
    cli,
    expected,
    free_port,
    imported,
    receipts,
    source,
    tree,
)
from journal_backends import BACKENDS, use_backend
from memory_es import MemoryRoot
from memory_es.config import parse_config
from memory_es.imports import ImportSourceError, apply_import, plan_import
from memory_es.imports.apply import PART
from memory_es.intake import MAX_ACTIVE, CompletedTurn
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export

# -- each format, pinned ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", SOURCES)
def test_an_import_gives_the_pinned_journal_and_markdown(fmt: str, tmp_path: Path) -> None:
    """C6: sample in, the events and the projections out, byte for byte."""
    root, _ = imported(fmt, tmp_path)
    assert tree(root) == expected(fmt)


@pytest.mark.parametrize("fmt", SOURCES)
def test_importing_twice_writes_nothing_new(fmt: str, tmp_path: Path) -> None:
    root, first = imported(fmt, tmp_path)
    before = tree(root)
    again = apply_import(root, source(fmt, tmp_path / "again"), fmt, clock=lambda: AT)
    assert first.new and again.new == [] and again.already == len(first.new)
    assert again.receipts == []  # nothing new, no receipt
    assert tree(root) == before


@pytest.mark.parametrize("fmt", SOURCES)
def test_the_dry_run_counts_what_apply_writes_and_writes_nothing(fmt: str,
                                                                tmp_path: Path) -> None:
    root = tmp_path / "root"
    src = source(fmt, tmp_path)
    plan = plan_import(root, src, fmt, config=parse_config(JOURNAL))
    assert not root.exists()
    done = apply_import(root, src, fmt, config=parse_config(JOURNAL), clock=lambda: AT)
    assert (plan.new, plan.already, plan.refused) == (done.new, done.already, done.refused)
    assert not plan.applied and done.applied
    replan = plan_import(root, src, fmt)
    assert replan.new == [] and replan.already == len(done.new)


@pytest.mark.parametrize("fmt", SOURCES)
def test_the_receipt_names_each_item_and_no_text(fmt: str, tmp_path: Path) -> None:
    """The receipt is one journalled event after the items: intake id, the source's id and
    time per item, the refusals' reasons; no memory text."""
    root, report = imported(fmt, tmp_path)
    [receipt] = receipts(root)
    assert receipt.format == fmt and receipt.source_sha256 == report.source_sha256
    assert [row[0] for row in receipt.admitted] == report.new
    assert receipt.refused == [r.to_json() for r in report.refused]
    events = MemoryRoot.open(root).events()
    texts = [e.summary for _, e in events if hasattr(e, "summary")]
    state = json.dumps([receipt.admitted, receipt.refused])
    assert texts and not any(t[:30] in state for t in texts)
    admitted_at = {e.run_hash: e.timestamp for _, e in events if hasattr(e, "summary")}
    for intake_id, _original, at in receipt.admitted:
        assert admitted_at[intake_id] == datetime.fromisoformat(at)  # the source's own time


def test_mem0_refusals_have_one_line_reasons_and_the_rest_goes_in(tmp_path: Path) -> None:
    root, report = imported("mem0", tmp_path)
    reasons = {r.original_id: r.reason for r in report.refused}
    assert reasons == {
        "4f2e8d7c-6b5a-4948-8372-615049382716":
            "duplicate_id: the source holds this id more than once",
        "c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b": "unsafe_text: looks like a credential",
        "d4e5f6a7-1829-4a3b-b5c6-d7e8f90a1b2c":
            "invalid: created_at: not an ISO 8601 time",
        "#7": "invalid: no string id",
    }
    assert len(report.new) == 3
    assert b"Tr0ub4dor" not in b"".join(tree(root).values())
    hits = MemoryRoot.open(root).search("half marathon training").recall.hits
    assert hits and "Lisbon half marathon" in hits[0].text


def test_an_oversized_note_paragraph_is_refused_alone(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "long.md").write_text("---\ndate: 2025-01-01\n---\n" + "word " * 600 + "\n\n"
                                   "A short paragraph that fits.\n")
    report = apply_import(tmp_path / "root", notes, "notes", config=parse_config(JOURNAL))
    assert [r.original_id for r in report.refused] == ["long.md#1"]
    assert report.refused[0].reason.startswith("too_large: ")
    assert len(report.new) == 1


def test_chatgpt_keeps_what_the_user_said_on_the_current_branch(tmp_path: Path) -> None:
    root, report = imported("chatgpt", tmp_path)
    assert len(report.new) == 3  # two exchanges, then one with an image part
    handle = MemoryRoot.open(root)
    text = "\n".join(h.text for h in handle.search("sister Noor birthday climbing", 3).recall.hits)
    assert "Noor" in text and "bouldering" in text
    everything = b"".join(tree(root).values())
    assert b"regenerated answer" not in everything  # another branch, not the current one
    assert b"search results" not in everything  # a tool message is no exchange


def test_mcp_graph_lines_and_refusals(tmp_path: Path) -> None:
    root, report = imported("mcp-memory", tmp_path)
    assert [r.to_json() for r in report.refused] == [
        {"id": "line 7", "reason": "invalid: type is neither entity nor relation"},
        {"id": "line 8", "reason": "invalid: a relation needs from, to and relationType"},
    ]
    hits = MemoryRoot.open(root).search("where does John Smith work").recall.hits
    assert "John Smith works at Anthropic" in [h.text for h in hits]
    assert all("John" not in row[1] for row in receipts(root)[0].admitted)  # names: digests


def test_merging_another_root_keeps_its_turns_and_refuses_a_conflict(tmp_path: Path) -> None:
    """Another root's export: the same turn is nothing new, another turn under one of its
    run ids is refused (never overwritten), a forgotten turn is not in it to bring."""
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL), background=False) as store:
        mine = store.persist_completed_turn(CompletedTurn(
            run_id="host-run-2", outcome="success", answer="My own second turn."))
    report = apply_import(root, SAMPLES / SOURCES["memory-es"], "memory-es")
    reasons = {r.original_id: r.reason for r in report.refused}
    assert reasons[str(mine.intake_id)] == "rejected: run_id_conflict"
    assert "forgotten: the source erased this turn" in reasons.values()
    assert len(report.new) == 3  # two turns and the Remember line
    text = b"".join(tree(root).values())
    assert b"My own second turn." in text and b"Tiles chosen" not in text
    assert b"Bin day moved to Tuesday" in text and b"spare key" not in text
    copy = tmp_path / "copy"  # the source itself, replayed: every turn is already there
    replay_export(SAMPLES / SOURCES["memory-es"], copy)
    again = apply_import(copy, SAMPLES / SOURCES["memory-es"], "memory-es")
    assert again.already == 3 and len(again.new) == 1  # the Remember line is new as a turn


def test_a_forgotten_import_is_never_brought_back(tmp_path: Path) -> None:
    root, first = imported("mem0", tmp_path)
    gone = "9e1d2c3b-4a59-4687-a7b6-c5d4e3f2a1b0"
    with MemoryStore.open(root, background=False) as store:
        store.forget_turn(f"import:mem0:{gone}", reason="user-request")
    plan = plan_import(root, SAMPLES / SOURCES["mem0"], "mem0")
    again = apply_import(root, SAMPLES / SOURCES["mem0"], "mem0")
    for report in (plan, again):
        assert {r.original_id: r.reason for r in report.refused}[gone] == \
            "rejected: run_id_forgotten"
        assert report.new == [] and report.already == len(first.new) - 1
    assert b"night shifts" not in b"".join(tree(root).values())


def test_a_tampered_export_is_refused_whole(tmp_path: Path) -> None:
    lines = (SAMPLES / SOURCES["memory-es"]).read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"Tiles chosen", b"Tiles chosem")
    bad = tmp_path / "tampered.jsonl"
    bad.write_bytes(b"".join(lines))
    with pytest.raises(ImportSourceError, match="hash chain does not verify") as caught:
        plan_import(tmp_path / "root", bad, "memory-es")
    assert caught.value.code == "import_malformed"


@pytest.mark.parametrize("journal_backend", BACKENDS, indirect=True)
def test_import_on_each_journal_backend(journal_backend: str, tmp_path: Path) -> None:
    """The same import, the same export, whichever backend holds the journal."""
    root, report = imported("mem0", tmp_path)
    assert tree(root)["journal.jsonl"] == expected("mem0")["journal.jsonl"]
    again = apply_import(root, SAMPLES / SOURCES["mem0"], "mem0", clock=lambda: AT)
    assert again.new == [] and again.already == len(report.new)


@pytest.fixture
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_backend(request, monkeypatch)


# -- a source that is not the format, through the API and the CLI -----------------------------


@pytest.mark.parametrize(("fmt", "content", "code"), [
    ("mem0", "{not json", "import_malformed"),
    ("mem0", '{"something": "else"}', "import_wrong_format"),
    ("chatgpt", (SAMPLES / SOURCES["mem0"]).read_text(), "import_wrong_format"),
    ("mem0", (SAMPLES / SOURCES["chatgpt"]).read_text(), "import_wrong_format"),
])
def test_a_source_that_is_not_the_format_writes_nothing(fmt: str, content: str, code: str,
                                                       tmp_path: Path) -> None:
    bad = tmp_path / "source.json"
    bad.write_text(content)
    root = tmp_path / "root"
    with pytest.raises(ImportSourceError) as caught:
        apply_import(root, bad, fmt, config=parse_config(JOURNAL))
    assert caught.value.code == code
    assert not root.exists()
    run = cli("--root", str(root), "import", "apply", str(bad), "--from", fmt, "--yes")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and str(bad) in run.stderr
    assert not root.exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["import", "apply", "x.json"], "import apply needs --from FORMAT"),
    (["import", "apply", "x.json", "--from", "evernote"], "invalid choice: 'evernote'"),
    (["import", "restore", "x.bak", "--from", "mem0"], "import restore takes no --from"),
    (["import", "apply", "missing.json", "--from", "mem0"], "missing.json: no such file"),
])
def test_cli_usage_errors_are_one_line(argv: list[str], message: str, tmp_path: Path) -> None:
    run = cli("--root", str(tmp_path / "root"), *argv)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "root").exists()


def test_cli_dry_run_then_yes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"memory": JOURNAL}))
    src = str(SAMPLES / SOURCES["mem0"])
    dry = cli("--root", str(root), "--config", str(config), "import", "apply", src,
              "--from", "mem0")
    assert dry.returncode == 0 and not root.exists()
    lines = dry.stdout.splitlines()
    assert lines[0].startswith("would import 3 new items from mem0 source ")
    assert lines[0].endswith("; 0 already here; 4 refused")
    assert "  refused c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b: unsafe_text: looks like a " \
           "credential" in lines
    assert lines[-1] == "dry run: nothing written; add --yes to import"
    done = cli("--root", str(root), "--config", str(config), "--json", "import", "apply", src,
               "--from", "mem0", "--yes")
    assert done.returncode == 0, done.stderr
    shape = json.loads(done.stdout)
    assert set(shape) == {"format", "source_sha256", "applied", "new", "already", "refused",
                          "receipts", "waiting_for_capture", "samples"}
    assert (shape["applied"], shape["new"], len(shape["refused"])) == (True, 3, 4)
    listed = cli("--root", str(root), "--json", "list")
    assert len(json.loads(listed.stdout)["memories"]) == 3


def test_a_running_agent_holds_the_import_off(tmp_path: Path) -> None:
    """C16: applying needs the writer lock (refused at once, exit 3); the dry run reads."""
    root = tmp_path / "root"
    src = str(SAMPLES / SOURCES["mem0"])
    with MemoryStore.open(root, parse_config(JOURNAL), background=False):
        held = cli("--root", str(root), "import", "apply", src, "--from", "mem0", "--yes")
        dry = cli("--root", str(root), "import", "apply", src, "--from", "mem0")
    assert held.returncode == 3 and "lock" in held.stderr, held.stderr
    assert dry.returncode == 0 and dry.stdout.startswith("would import 3 new items")
    assert receipts(root) == []


def test_a_running_mcp_server_holds_import_off_and_backup_reads_beside_it(
        tmp_path: Path) -> None:
    """C16 against a real ``memory-es serve-mcp``: ``import apply --yes`` refuses at once
    (exit 3) naming the server's pid; the dry run and ``backup`` (read-only, C5) run
    beside it."""
    root = tmp_path / "root"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"memory": JOURNAL}))
    src = str(SAMPLES / SOURCES["mem0"])
    assert cli("--root", str(root), "--config", str(config), "import", "apply", src, "--from",
               "mem0", "--yes").returncode == 0
    server = subprocess.Popen(
        [*CLI, "serve-mcp", "--root", str(root), "--config", str(config), "--transport",
         "http", "--port", str(free_port())], stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        assert "MCP server on" in server.stderr.readline()
        held = cli("--root", str(root), "import", "apply", src, "--from", "mem0", "--yes")
        dry = cli("--root", str(root), "import", "apply", src, "--from", "mem0")
        backup = cli("--root", str(root), "backup", str(tmp_path / "b.mesb"), "--unencrypted")
    finally:
        server.terminate()
        server.wait(timeout=HANG_S)
    assert held.returncode == 3 and f"writer lock held by pid {server.pid}" in held.stderr
    assert dry.returncode == 0 and "0 new items" in dry.stdout and "3 already here" in dry.stdout
    assert backup.returncode == 0, backup.stderr


def crashed_import(root: Path, src: Path, boundary: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORY_ES_CRASH_AT": boundary}
    config = root.parent / "config.json"
    config.write_text(json.dumps({"memory": JOURNAL}))
    return subprocess.run([*CLI, "--root", str(root), "--config", str(config), "import",
                           "apply", str(src), "--from", "mem0", "--yes"],
                          capture_output=True, text=True, timeout=HANG_S, env=env)


@pytest.mark.parametrize(("boundary", "survived"), [
    ("journal.before_commit", 0),  # the first part's transaction: nothing of it
    ("import.after_part", PART),  # the first part with its receipt, not the second
])
def test_a_killed_import_leaves_whole_parts_and_the_same_command_finishes(
        boundary: str, survived: int, tmp_path: Path) -> None:
    """Kill a real ``memory-es import apply`` at each boundary, reopen: the parts that
    committed are there with their receipts, the rest is not; the same command again
    imports the rest, and the root ends as one uninterrupted import leaves it."""
    src = big_mem0(tmp_path / "big.json", PART + 500)
    root = tmp_path / "root"
    killed = crashed_import(root, src, boundary)
    assert killed.returncode == -9, killed.stderr
    plan = plan_import(root, src, "mem0")
    assert (len(plan.new), plan.already) == (PART + 500 - survived, survived)
    assert sum(len(r.admitted) for r in receipts(root)) == survived
    done = apply_import(root, src, "mem0")
    assert len(done.new) == PART + 500 - survived and done.already == survived
    rows = [row for r in receipts(root) for row in r.admitted]
    assert sorted(row[1] for row in rows) == [f"id-{i:05d}" for i in range(PART + 500)]
    health = MemoryRoot.open(root).health()
    assert (health.status, health.findings) == ("clean", ())
    assert len(MemoryRoot.open(root).list_memories(limit=100).memories) == 100


def test_an_import_larger_than_the_active_bound_goes_in_whole(tmp_path: Path) -> None:
    """B18 bounds pending turns at 4,096: a Journal import drains between its parts."""
    src = big_mem0(tmp_path / "big.json", 4200)
    report = apply_import(tmp_path / "root", src, "mem0", config=parse_config(JOURNAL))
    assert len(report.new) == 4200 and report.refused == [] and len(report.receipts) == 5


def test_a_capture_root_counts_the_waiting_bound_in_the_dry_run_too(tmp_path: Path) -> None:
    """B18: a capture root's turns wait for the model, so past 4,096 waiting turns the rest
    is refused, and the dry run says so before anything is written; the source's refusals
    are in the first receipt, not repeated in every part's."""
    config = parse_config({"mode": "bujo", "writeMode": "capture", "embeddings": {"dim": 8},
                           "llm": {"provider": "ollama", "model": "m"}})
    src = big_mem0(tmp_path / "big.json", MAX_ACTIVE + 104)
    plan = plan_import(tmp_path / "root", src, "mem0", config=config)
    done = apply_import(tmp_path / "root", src, "mem0", config=config)
    assert (len(plan.new), len(done.new)) == (MAX_ACTIVE, MAX_ACTIVE)
    assert plan.refused == done.refused and len(done.refused) == 104
    assert {r.reason for r in done.refused} == {"rejected: too_many_active_records"}
    assert done.waiting_for_capture == MAX_ACTIVE
    first, *rest = receipts(tmp_path / "root")
    assert len(first.refused) == 104 and all(r.refused == [] for r in rest)


def test_note_paths_stay_out_of_the_receipt_and_links_are_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "my divorce lawyer.md").write_text("---\ndate: 2025-01-01\n---\nCall on Monday.\n")
    outside = tmp_path / "outside.md"
    outside.write_text("A file outside the folder.\n")
    os.symlink(outside, notes / "link.md")
    report = apply_import(tmp_path / "root", notes, "notes", config=parse_config(JOURNAL))
    assert [r.to_json() for r in report.refused] == [
        {"id": "link.md", "reason": "invalid: not a regular file (a link, FIFO or device)"}]
    [receipt] = receipts(tmp_path / "root")
    state = json.dumps([receipt.admitted, receipt.refused])
    assert "divorce" not in state and "link.md" not in state and len(receipt.admitted) == 1


def test_chatgpt_messages_without_a_reply_are_refused_not_lost(tmp_path: Path) -> None:
    conversations = json.loads((SAMPLES / SOURCES["chatgpt"]).read_text())
    mapping = conversations[1]["mapping"]
    mapping["a"]["children"] = ["u2"]
    mapping["u2"] = {"id": "u2", "parent": "a", "children": [], "message": {
        "id": "u2", "author": {"role": "user"}, "create_time": 1720000200.0,
        "content": {"content_type": "text", "parts": ["And a card?"]}}}
    conversations[1]["current_node"] = "u2"
    src = tmp_path / "conversations.json"
    src.write_text(json.dumps(conversations))
    report = plan_import(tmp_path / "root", src, "chatgpt")
    assert [r.to_json() for r in report.refused] == [{
        "id": "7770b3a1-2c3d-4e5f-9a01-b2c3d4e5f607/u2",
        "reason": "unanswered: a user message without an assistant reply is no completed turn"}]
    assert len(report.new) == 3


def test_json_nested_too_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    src = tmp_path / "deep.json"
    src.write_text("[" * 100_000 + "]" * 100_000)
    run = cli("--root", str(tmp_path / "root"), "import", "apply", str(src), "--from", "mem0")
    assert run.returncode == 2 and "nested too deep" in run.stderr
    assert run.stderr.count("\n") == 1


RECALLED = {"mem0": ("is she vegetarian", "vegetarian"),
            "notes": ("when does the flight to Lisbon leave", "TP1357"),
            "chatgpt": ("what did the starter smell like", "nail polish"),
            "memory-es": ("which oven did we buy", "Bosch"),
            "mcp-memory": ("what languages does John speak", "Spanish")}


@pytest.mark.parametrize("fmt", SOURCES)
def test_each_format_is_recallable_after_its_import(fmt: str, tmp_path: Path) -> None:
    root, _ = imported(fmt, tmp_path)
    query, expected_text = RECALLED[fmt]
    hits = MemoryRoot.open(root).search(query, 5).recall.hits
    assert any(expected_text in h.text for h in hits), [h.text for h in hits]
