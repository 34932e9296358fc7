"""``memory-es import apply SRC --from FORMAT`` (SPEC C6, C16): another tool's memories in.

Each format's sample in ``import_samples/`` is written from that format's documentation (mem0's
``get_all`` JSON, basic-memory / Obsidian notes with front matter, ChatGPT's
``conversations.json``); its import is pinned byte for byte (the exported journal and the daily
Markdown, ``import_samples/<format>/expected``). Importing twice writes nothing; the dry run's
counts are what applying writes; each refusal has a one-line reason in the dry run and in the
receipt; a source that is not the format writes nothing at all; a running agent holds the
import off. Regenerate the expected trees after a deliberate change with
``python tests/test_imports.py --regenerate``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S
from helpers_replay import FIXTURES, regen
from journal_backends import BACKENDS, use_backend
from memory_es import MemoryRoot
from memory_es.config import parse_config
from memory_es.errors import MemoryEsError
from memory_es.events import Root
from memory_es.imports import ImportSourceError, apply_import, plan_import
from memory_es.imports.adopt import adopt_replay
from memory_es.imports.apply import PART
from memory_es.intake import CompletedTurn
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export
from projections.graph import canonical
from projections.replay import read_current

SAMPLES = Path(__file__).resolve().parent / "import_samples"
SOURCES = {"mem0": "mem0/memories.json", "notes": "notes/source",
           "chatgpt": "chatgpt/conversations.json", "memory-es": "memory-es/journal.jsonl",
           "mcp-memory": "mcp-memory/memory.jsonl"}
JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}
AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
UNDATED_NOTE = "projects/untitled.md"  # no date in its front matter: its file time counts
FILE_TIME = datetime(2025, 3, 1, 12, 0, tzinfo=UTC).timestamp()
CLI = [sys.executable, "-m", "memory_es.cli"]
SIDECAR = ".replay-projection-v1.json"


def source(fmt: str, workdir: Path) -> Path:
    """The sample, copied where its file time counts (git keeps none: the undated note and
    the MCP graph, whose format holds no time, get a known one)."""
    sample = SAMPLES / SOURCES[fmt]
    workdir.mkdir(parents=True, exist_ok=True)
    if sample.is_dir():
        copy = workdir / "source"
        shutil.copytree(sample, copy)
        os.utime(copy / UNDATED_NOTE, (FILE_TIME, FILE_TIME))
        return copy
    if fmt == "mcp-memory":
        copy = Path(shutil.copy(sample, workdir / sample.name))
        os.utime(copy, (FILE_TIME, FILE_TIME))
        return copy
    return sample


def imported(fmt: str, workdir: Path) -> tuple[Path, Any]:
    root = workdir / "root"
    report = apply_import(root, source(fmt, workdir), fmt, config=parse_config(JOURNAL),
                          clock=lambda: AT)
    return root, report


def tree(root: Path) -> dict[str, bytes]:
    """What an import is pinned by: the exported journal and the daily Markdown."""
    out = io.BytesIO()
    MemoryRoot.open(root).export(out)
    files = {f"daily/{p.name}": p.read_bytes() for p in sorted((root / "daily").glob("*.md"))}
    return {"journal.jsonl": out.getvalue(), **files}


def expected(fmt: str) -> dict[str, bytes]:
    base = SAMPLES / fmt / "expected"
    return {p.relative_to(base).as_posix(): p.read_bytes()
            for p in sorted(base.rglob("*")) if p.is_file()}


def receipts(root: Path) -> list[Root.Imported]:
    return [e for _, e in MemoryRoot.open(root).events() if isinstance(e, Root.Imported)]


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
            "invalid: created_at: 'last tuesday' is not an ISO 8601 time",
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


# -- the reference host's own folder (DESIGN 9.1: legacy roots enter through import) ---------

BUJO_FOLDERS = [s for s in regen.SPECS if s.config.get("mode") == "bujo"
                and (FIXTURES / s.name / "expected" / "graph.jsonl").exists()]
PROJECTED = ("graph.jsonl", "index.md")


@pytest.mark.parametrize("spec", BUJO_FOLDERS, ids=lambda s: s.name)
def test_a_reference_folder_becomes_the_same_lines(spec: Any, tmp_path: Path) -> None:
    """Each golden BuJo tree, read as a reference host's folder (its daily Markdown,
    graph.jsonl and sidecar) into a new BuJo root: the same daily files, graph and
    consolidation byte for byte, supersession timed as the sidecar says, health clean; a
    second run writes nothing; the dry run counts what apply writes."""
    folder = FIXTURES / spec.name / "expected"
    root = tmp_path / "root"
    config = parse_config(spec.config)
    plan = plan_import(root, folder, "reference", config=config)
    report = apply_import(root, folder, "reference", config=config, clock=lambda: AT)
    assert (plan.new, plan.already, plan.refused) == (report.new, 0, [])
    daily = sorted((folder / "daily").glob("*.md"))
    assert daily and [p.name for p in sorted((root / "daily").glob("*.md"))] == \
        [p.name for p in daily]
    for source in [*daily, *(folder / name for name in PROJECTED)]:
        assert (root / source.relative_to(folder)).read_bytes() == source.read_bytes(), source
    ended = [{k: v for k, v in e.items() if k not in ("position", "digest", "authority")}
             for e in json.loads((folder / SIDECAR).read_text())["entries"]]
    assert [{k: v for k, v in e.items() if k not in ("position", "digest", "authority")}
            for e in json.loads((root / SIDECAR).read_text())["entries"]] == ended
    health = MemoryRoot.open(root).health()
    assert (health.status, health.findings) == ("clean", ())
    before = tree(root)
    again = apply_import(root, folder, "reference")
    assert (again.new, again.already, again.receipts) == ([], len(report.new), [])
    assert tree(root) == before


def test_a_reference_folder_into_journal_keeps_its_live_lines(tmp_path: Path) -> None:
    """Lite and Journal keep no supersession (F10): live lines become turns on their own
    day with their session; superseded ones are refused, saying why."""
    folder = FIXTURES / "lifecycle" / "expected"
    report = apply_import(tmp_path / "root", folder, "reference", config=parse_config(JOURNAL))
    history = [r for r in report.refused if r.reason.startswith("history: superseded")]
    assert len(history) == 2 and len(report.new) == 8
    handle = MemoryRoot.open(tmp_path / "root")
    texts = {m.text for m in handle.list_memories(limit=50).memories}
    assert len(texts) == 8
    assert {p.name for p in (tmp_path / "root" / "daily").glob("*.md")} <= \
        {p.name for p in (folder / "daily").glob("*.md")}


def test_reference_bullets_old_and_new_forms(tmp_path: Path) -> None:
    """K11/K12: a legacy one-line bullet and one without metadata read too (the latter with
    an id from its place and no session, K7, K8); a credential is refused (J5)."""
    folder = tmp_path / "legacy"
    (folder / "daily").mkdir(parents=True)
    (folder / "daily" / "2024-05-01.md").write_text(
        "# 2024-05-01\n\n"
        "- Old bullet with &lt;b&gt; tags <!--mem id=" + "a" * 64 + " type=note status=open "
        "recorded=2024-05-01T08:00:00.000Z source_session=web%3Aold-->\n\n"
        "- A bullet written before metadata existed\n\n"
        "- The AWS secret is AKIAIOSFODNN7EXAMPLE\n"
        "  <!--mem id=" + "b" * 64 + " type=note status=open "
        "recorded=2024-05-01T09:00:00.000Z-->\n")
    report = apply_import(tmp_path / "root", folder, "reference",
                          config=parse_config(JOURNAL))
    assert [r.to_json() for r in report.refused] == [
        {"id": "b" * 64, "reason": "unsafe_text: looks like a credential"}]
    rows = {e.summary: e for _, e in MemoryRoot.open(tmp_path / "root").events()
            if hasattr(e, "summary")}
    assert set(rows) == {"Old bullet with <b> tags", "A bullet written before metadata existed"}
    assert rows["Old bullet with <b> tags"].session == "web:old"
    assert rows["A bullet written before metadata existed"].session is None
    assert rows["A bullet written before metadata existed"].timestamp == \
        datetime(2024, 5, 1, tzinfo=UTC)


def legacy_folder(spec: Any, workdir: Path, *, managed: bool = False) -> Path:
    """A reference folder as a legacy host leaves it: the golden tree without its sidecar,
    and the SQLite index holding the replay state (an unmanaged memory.db, or a managed
    generation under index/)."""
    folder = workdir / "legacy"
    shutil.copytree(FIXTURES / spec.name / "expected", folder)
    (folder / SIDECAR).unlink()
    built = workdir / "built"
    replay_export(FIXTURES / spec.name / "journal.jsonl", built)
    generation = read_current(built)
    target = folder / "memory.db"
    if managed:
        (folder / "index" / "gen-3").mkdir(parents=True)
        (folder / "index" / "CURRENT").write_text("3\n")
        target = folder / "index" / "gen-3" / "memory.db"
    shutil.copy(built / "index" / f"gen-{generation}" / "memory.db", target)
    return folder


ADOPTABLE = [s for s in BUJO_FOLDERS if (FIXTURES / s.name / "expected" / SIDECAR).exists()]


@pytest.mark.parametrize(("spec", "managed"), [
    *((s, False) for s in ADOPTABLE), (ADOPTABLE[0], True)],
    ids=[*(s.name for s in ADOPTABLE), f"{ADOPTABLE[0].name}-generation"])
def test_adopt_replay_then_import_gives_the_original_tree(spec: Any, managed: bool,
                                                          tmp_path: Path) -> None:
    """C7, C8, F11-F14: a folder whose SQLite holds replay state but which has no sidecar is
    refused by the import (never inferred from SQLite); adoption writes the sidecar the
    original had, byte for byte; the import then gives the original's projections."""
    folder = legacy_folder(spec, tmp_path, managed=managed)
    root = tmp_path / "root"
    with pytest.raises(ImportSourceError) as refused:
        plan_import(root, folder, "reference", config=parse_config(spec.config))
    assert refused.value.code == "replay_adoption_required"
    run = cli("--root", str(root), "import", "apply", str(folder), "--from", "reference")
    assert run.returncode == 1 and "adopt-replay" in run.stderr and not root.exists()
    adopted = cli("--json", "adopt-replay", str(folder))
    assert adopted.returncode == 0, adopted.stderr
    shape = json.loads(adopted.stdout)
    assert shape["lifecycle"] > 0 and shape["migration_marker"] is False
    original = (FIXTURES / spec.name / "expected" / SIDECAR).read_bytes()
    assert (folder / SIDECAR).read_bytes() == original
    assert (folder / SIDECAR).stat().st_mode & 0o777 == 0o600
    assert cli("adopt-replay", str(folder)).returncode == 1  # adopt_not_needed
    apply_import(root, folder, "reference", config=parse_config(spec.config))
    for name in [*(f"daily/{p.name}" for p in (folder / "daily").glob("*.md")), *PROJECTED]:
        assert (root / name).read_bytes() == (folder / name).read_bytes(), name


def test_adoption_refusals(tmp_path: Path) -> None:
    spec = ADOPTABLE[0]
    folder = legacy_folder(spec, tmp_path)
    intake = folder / ".capture-intake"
    (intake / "pending").mkdir(parents=True)
    (intake / "pending" / "a.json").write_text("{}")
    (intake / "migration-1.json").write_text("{}")
    with pytest.raises(MemoryEsError, match="pending capture work beside a pending migration"):
        adopt_replay(folder)
    (intake / "migration-2.json").write_text("{}")
    with pytest.raises(MemoryEsError, match="2 migration markers"):
        adopt_replay(folder)
    shutil.rmtree(intake)
    (folder / "memory.db").unlink()
    with pytest.raises(MemoryEsError) as nothing:
        adopt_replay(folder)
    assert nothing.value.code == "adopt_nothing"
    root, _ = imported("mem0", tmp_path / "root")
    with pytest.raises(MemoryEsError) as rooted:
        adopt_replay(root)
    assert rooted.value.code == "adopt_not_legacy"
    assert not (folder / SIDECAR).exists()


def test_a_sidecar_thread_comes_over_and_a_bad_sidecar_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    shutil.copytree(FIXTURES / "lifecycle" / "expected", folder)
    sidecar = json.loads((folder / SIDECAR).read_text())
    ids = [e["memory"] for e in sidecar["entries"]]
    thread = {"at": "2026-07-08T09:00:00.000Z", "authority": "capture", "digest": "d" * 64,
              "from": ids[1], "kind": "thread", "position": 99, "to": ids[0], "weight": 0.5}
    sidecar["entries"].append(thread)
    (folder / SIDECAR).write_bytes(canonical(sidecar) + b"\n")
    root = tmp_path / "root"
    apply_import(root, folder, "reference", config=parse_config(regen.BUJO_CAPTURE))
    threads = [e for e in json.loads((root / SIDECAR).read_text())["entries"]
               if e["kind"] == "thread"]
    assert [(e["from"], e["to"], e["weight"], e["at"]) for e in threads] == \
        [(ids[1], ids[0], 0.5, thread["at"])]
    (folder / SIDECAR).write_text(json.dumps(sidecar, indent=1))  # not canonical (F6)
    with pytest.raises(ImportSourceError) as bad:
        plan_import(tmp_path / "other", folder, "reference")
    assert bad.value.code == "import_malformed"


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


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=HANG_S)


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def big_mem0(path: Path, count: int) -> Path:
    rows = [{"id": f"id-{i:05d}", "memory": f"Fact number {i} about topic {i % 97}",
             "created_at": f"2025-01-{1 + i % 28:02d}T10:00:00Z"} for i in range(count)]
    path.write_text(json.dumps(rows))
    return path


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


def regenerate() -> None:
    """Write each format's expected tree from the current code (a deliberate change)."""
    import tempfile

    os.environ["MEMORY_ES_KEY_STORE"] = tempfile.mkdtemp()
    for fmt in SOURCES:
        with tempfile.TemporaryDirectory() as work:
            root, _ = imported(fmt, Path(work))
            base = SAMPLES / fmt / "expected"
            shutil.rmtree(base, ignore_errors=True)
            for name, data in tree(root).items():
                (base / name).parent.mkdir(parents=True, exist_ok=True)
                (base / name).write_bytes(data)
            print(f"{fmt}: {len(tree(root))} files")


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate"]:
    regenerate()
