"""``memory-es migrate`` (SPEC C12, F1, F4, F13, C16): a Lite or Journal root's lines into
BuJo notes through the configured Ollama chat model only.

A real chat and embedding server on 127.0.0.1 plays Ollama: it answers each line's call with
notes cut from the line's own words. Each tier is migrated through the CLI; each legacy line
becomes its notes and a terminal migration forget the sidecar holds, once. A real subprocess
killed at each boundary of a migrated line is resumed and ends the same; replaying the
migrated root's export never calls the model and gives the same files byte for byte; bad
configs, a running agent, unresolved intakes and a model that is down or answers garbage are
one-line refusals that leave the root whole and resumable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import local_http
from ceilings import HANG_S
from helpers_chat import ollama_ok
from memory_es import MemoryRoot
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.events import Memory, Root
from memory_es.store import MemoryStore

CLI = [sys.executable, "-m", "memory_es.cli"]
TURNS = {"t1": "We moved the standup to 10am and Ana runs it now",
         "t2": "Remember to renew the passport",
         "t3": "The boiler was serviced in March"}
REMEMBERED = "Ana likes green tea"
BOUNDARIES = ("migrate.after_marker", "migrate.before_commit", "migrate.after_commit",
              "migrate.before_finish")


def notes_of(text: str) -> list[dict[str, Any]]:
    """The fake model's notes for a line: one per ``and``-joined part, a task for a
    reminder."""
    out = []
    for part in text.split(" and "):
        kind = "task" if part.startswith("Remember to") else "note"
        out.append({"text": part[0].upper() + part[1:] + ".", "kind": kind,
                    "labels": [] if kind == "task" else ["fact"], "salience": 0.5})
    return out


def ollama(garbage: bool = False) -> local_http.Responder:
    """Ollama's /api/embed and /api/chat; ``garbage``: chat answers a non-contract object."""
    def respond(req: local_http.Recorded) -> local_http.Reply:
        if req.path == "/api/embed":
            return local_http.js(200, {"model": req.body["model"], "embeddings": [
                [float(len(t) % 7 + 1), 1.0, float(i + 1), 0.5]
                for i, t in enumerate(req.body["input"])]})
        line = req.body["messages"][-1]["content"].split("\n\n", 1)[1]
        reply = {"memories": []} if garbage else {"notes": notes_of(line)}
        return ollama_ok(json.dumps(reply))(req)
    return respond


def chats(server: Any) -> list[str]:
    """The line ids the model was asked about, in order."""
    return [r.body["messages"][-1]["content"].split("\n")[1].removeprefix("line: ")
            for r in server.requests if r.path == "/api/chat"]


def configs(tmp_path: Path, url: str) -> dict[str, Path]:
    embed = {"provider": "ollama", "model": "e", "dim": 4, "endpoint": url}
    blocks = {"lite": {"mode": "lite"}, "journal": {"mode": "journal", "embeddings": embed},
              "bujo": {"mode": "bujo", "embeddings": embed,
                       "llm": {"provider": "ollama", "model": "m", "endpoint": url}},
              "openai": {"mode": "bujo", "embeddings": embed,
                         "llm": {"provider": "openai", "model": "m", "endpoint": url,
                                 "apiKeyEnv": "MEMORY_ES_TEST_KEY"}}}
    out = {}
    for name, block in blocks.items():
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(json.dumps({"memory": block}))
    return out


def legacy_root(root: Path, config: Path) -> dict[str, str]:
    """A root of the tier ``config`` names: three turns and one Remember, all projected; its
    lines' ids by text."""
    common = ["--root", str(root), "--config", str(config)]
    for run_id, answer in TURNS.items():
        assert main([*common, "admit", "--run-id", run_id, "--answer", answer,
                     "--session", "web:s1"]) == 0
    assert main([*common, "drain"]) == 0
    assert main([*common, "remember", REMEMBERED]) == 0
    with MemoryRoot.open(root) as handle:
        return {m.text: m.id for m in handle.list_memories().memories}


def cli(root: Path, *argv: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--root", str(root), *argv], capture_output=True, text=True,
                          timeout=HANG_S, env=env)


def forgets(root: Path) -> Counter[str]:
    """How many migration forgets each line has in the journal."""
    with MemoryRoot.open(root) as handle:
        return Counter(e.memory_id for _, e in handle.events()
                       if isinstance(e, Memory.MigrationForgotten))


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if p.parts[-2] in ("daily", "audit")} | {
        name: (root / name).read_bytes() for name in (".replay-projection-v1.json",
                                                      "graph.jsonl") if (root / name).exists()}


def expected_notes() -> int:
    return sum(len(notes_of(t)) for t in [*TURNS.values(), REMEMBERED])


@pytest.fixture
def paths(tmp_path: Path, server: Any) -> dict[str, Path]:
    server.default = ollama()
    return configs(tmp_path, server.url)


# --------------------------------------------------------------------------------------------
# The migration (C12, F1, F4)


@pytest.mark.parametrize("tier", ["lite", "journal"])
def test_c12_each_line_becomes_its_notes_and_a_terminal_forget(
        tmp_path: Path, server: Any, paths: dict[str, Path], tier: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    ids = legacy_root(root, paths[tier])
    common = ["--root", str(root), "--config", str(paths[tier])]
    assert main([*common, "set-status", ids[TURNS["t2"]], "done"]) == 0  # kept by its notes
    assert main([*common, "mark", ids[TURNS["t3"]], "--insight"]) == 0
    with MemoryRoot.open(root) as handle:
        recorded = {m.id: m.created_at for m in handle.list_memories().memories}
    capsys.readouterr()
    before = len(MemoryRoot.open(root).events())
    assert main(["--root", str(root), "--config", str(paths["bujo"]), "migrate"]) == 0
    assert capsys.readouterr().out == ("would migrate 4 lines into BuJo notes with ollama:m; "
                                       "run again with --yes\n")
    assert chats(server) == [] and len(MemoryRoot.open(root).events()) == before  # dry run
    assert main(["--root", str(root), "--config", str(paths["bujo"]), "--json", "migrate",
                 "--yes"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "applied": True, "resumed": False, "lines": 4, "migrated": 4,
        "notes": expected_notes(), "already": 0, "model": "ollama:m"}
    assert sorted(chats(server)) == sorted(ids.values())  # one call per line
    with MemoryRoot.open(root) as handle:
        assert handle.config.mode == "bujo"
        lines = {m.text: m for m in handle.list_memories(limit=50).memories}
        standup = handle.show(ids[TURNS["t1"]])
        hits = [h.text for h in handle.recall("Who runs the standup?").recall.hits]
    assert standup.memory.status == "invalidated"  # out of recall, its text still kept
    assert {t: (m.type, m.status, m.insight) for t, m in lines.items()
            if m.status != "invalidated"} == {
        "We moved the standup to 10am.": ("note", "open", False),
        "Ana runs it now.": ("note", "open", False),
        "Remember to renew the passport.": ("note", "done", False),  # a task: a note (A19)
        "The boiler was serviced in March.": ("note", "open", True),
        "Ana likes green tea.": ("note", "open", False)}
    assert lines["Ana runs it now."].source == standup.memory.source  # same session and turn
    assert lines["Ana runs it now."].created_at == recorded[ids[TURNS["t1"]]]  # and instant
    assert "Ana runs it now." in hits
    sidecar = json.loads((root / ".replay-projection-v1.json").read_text())
    migrations = [e for e in sidecar["entries"] if e["authority"] == "migration"]
    assert sorted(e["memory"] for e in migrations) == sorted(ids.values())
    assert all(e["status"] == "invalidated" and e["at"] for e in migrations)  # F1
    assert forgets(root) == Counter(ids.values())
    assert MemoryRoot.open(root).health().status == "clean"


def test_f1_replaying_a_migrated_root_never_calls_the_model(
        tmp_path: Path, server: Any, paths: dict[str, Path]) -> None:
    root = tmp_path / "root"
    legacy_root(root, paths["journal"])
    assert main(["--root", str(root), "--config", str(paths["bujo"]), "migrate", "--yes"]) == 0
    asked = len(chats(server))
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    copy = tmp_path / "copy"
    assert main(["--root", str(copy), "--config", str(paths["bujo"]), "replay",
                 str(export)]) == 0
    assert len(chats(server)) == asked  # the notes are in the journal
    assert files(copy) == files(root)
    assert (copy / ".replay-projection-v1.json").exists()


# --------------------------------------------------------------------------------------------
# A kill at each boundary of a migrated line, then resume (F4, F5)


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_f4_f5_a_kill_then_resume_migrates_every_line_once(
        tmp_path: Path, server: Any, paths: dict[str, Path], boundary: str) -> None:
    root = tmp_path / "root"
    ids = legacy_root(root, paths["lite"])
    migrate = ["--config", str(paths["bujo"]), "migrate", "--yes"]
    killed = cli(root, *migrate, env={**os.environ, "MEMORY_ES_CRASH_AT": boundary})
    assert killed.returncode == -9, killed.stderr
    refused = cli(root, "admit", "--run-id", "t9", "--answer", "x")  # F13: nothing else writes
    assert refused.returncode == 1 and "migration_pending" in refused.stderr
    assert "--config BUJO.json --yes" in refused.stderr and "--abort" in refused.stderr
    assert "migration_pending" in {f.code for f in MemoryRoot.open(root).health().findings}
    done = cli(root, "--json", *migrate)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["resumed"] is True
    assert report["already"] + report["migrated"] == 4
    assert forgets(root) == Counter(ids.values())  # every line migrated exactly once
    asked = Counter(chats(server))
    assert set(asked) == set(ids.values()) and sum(asked.values()) <= 5  # only a cut line twice
    with MemoryRoot.open(root) as handle:
        events = [e for _, e in handle.events()]
    assert sum(isinstance(e, Root.MigrationStarted) for e in events) == 1
    assert isinstance(events[-1], Root.MigrationFinished)
    assert MemoryRoot.open(root).health().status == "clean"
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    copy = tmp_path / "copy"
    assert main(["--root", str(copy), "--config", str(paths["bujo"]), "replay",
                 str(export)]) == 0
    assert files(copy) == files(root)


# --------------------------------------------------------------------------------------------
# Refusals: one line, a documented exit code, the root whole


def test_only_a_bujo_config_with_an_ollama_model(tmp_path: Path, paths: dict[str, Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    legacy_root(root, paths["lite"])
    capsys.readouterr()
    before = len(MemoryRoot.open(root).events())
    for config, code in ((paths["openai"], "migrate_ollama_only"),
                         (paths["lite"], "migrate_needs_bujo"), (None, "migrate_needs_bujo")):
        argv = ["--root", str(root), "--json", "migrate", "--yes"]
        assert main([*argv, "--config", str(config)] if config else argv) == 2
        assert json.loads(capsys.readouterr().out)["error"]["code"] == code
    assert len(MemoryRoot.open(root).events()) == before


def test_c16_f13_a_running_agent_unresolved_intakes_and_nothing_to_migrate_are_refused(
        tmp_path: Path, paths: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    legacy_root(root, paths["lite"])
    migrate = ["--root", str(root), "--config", str(paths["bujo"]), "--json", "migrate", "--yes"]
    capsys.readouterr()
    with MemoryStore.open(root, parse_config({"mode": "lite"}), background=False):
        assert main(migrate) == 3  # the liveness fence (C16)
        assert json.loads(capsys.readouterr().out)["error"]["code"] == "lock_held"
        assert main(migrate[:-1]) == 0  # the dry run only reads
        assert json.loads(capsys.readouterr().out)["lines"] == 4
    assert main(["--root", str(root), "admit", "--run-id", "late", "--answer", "Later."]) == 0
    capsys.readouterr()
    assert main(migrate) == 1  # F13: the turn waits for its projection first
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "migrate_pending_work"
    assert main(["--root", str(root), "drain"]) == 0
    assert main(migrate) == 0
    capsys.readouterr()
    assert main(migrate) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "migrate_nothing"
    # a migrated root is BuJo for good: a Lite config is refused, not half-read
    assert main(["--root", str(root), "--config", str(paths["lite"]), "--json", "remember",
                 "x"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "reconfigure_refused"


def test_a_line_no_note_can_hold_is_refused_before_anything_is_written(
        tmp_path: Path, server: Any, paths: dict[str, Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    legacy_root(root, paths["lite"])
    common = ["--root", str(root), "--config", str(paths["lite"])]
    assert main([*common, "admit", "--run-id", "leak", "--answer",
                 "The office wifi password is hunter2-Zq9!xT7#pLm4"]) == 0
    assert main([*common, "drain"]) == 0
    capsys.readouterr()
    before = len(MemoryRoot.open(root).events())
    migrate = ["--root", str(root), "--config", str(paths["bujo"]), "--json", "migrate"]
    for argv in (migrate, [*migrate, "--yes"]):
        assert main(argv) == 1
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "migrate_unmigratable" and "forget them first" in error["message"]
    assert chats(server) == [] and len(MemoryRoot.open(root).events()) == before
    assert main([*common, "forget", "--run-id", "leak", "--reason", "leak"]) == 0
    assert main([*migrate, "--yes"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["migrated"] == 4


def test_forgetting_a_migrated_note_forgets_its_line_and_the_other_notes(
        tmp_path: Path, paths: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    ids = legacy_root(root, paths["lite"])
    assert main(["--root", str(root), "--config", str(paths["bujo"]), "migrate", "--yes"]) == 0
    with MemoryRoot.open(root) as handle:
        (note,) = [m.id for m in handle.list_memories().memories if m.text == "Ana runs it now."]
    capsys.readouterr()
    assert main(["--root", str(root), "--json", "forget", note, "--reason", "user-request"]) == 0
    with MemoryRoot.open(root) as handle:
        left = {m.text for m in handle.list_memories(limit=50).memories}
    assert not left & {TURNS["t1"], "We moved the standup to 10am.", "Ana runs it now."}
    assert ids[TURNS["t3"]] and "The boiler was serviced in March." in left
    assert not any("standup" in p.read_text() for p in (root / "daily").glob("*.md"))
    assert MemoryRoot.open(root).health().status == "clean"


@pytest.mark.parametrize("fault", ["down", "garbage"])
def test_a_model_down_or_answering_garbage_stops_and_a_rerun_finishes(
        tmp_path: Path, server: Any, paths: dict[str, Path], fault: str) -> None:
    root = tmp_path / "root"
    ids = legacy_root(root, paths["lite"])
    good = ollama()
    calls = [0]

    def faulty(req: local_http.Recorded) -> local_http.Reply:
        if req.path == "/api/chat":
            calls[0] += 1
            if calls[0] >= 2:  # the second line fails, retries included
                return local_http.js(503, {"error": "overloaded"}) if fault == "down" \
                    else ollama(garbage=True)(req)
        return good(req)

    server.default = faulty
    migrate = ["--config", str(paths["bujo"]), "migrate", "--yes"]
    failed = cli(root, *migrate)
    code = "model_unavailable" if fault == "down" else "model_invalid_output"
    error = failed.stderr.splitlines()[-1]  # after the reconfiguration's log line
    assert failed.returncode == 3 and error.startswith("memory-es: error: migrate: line 2 of 4")
    assert f": {code}: " in error and "run memory-es migrate --yes again to resume" in error
    assert sum(forgets(root).values()) == 1  # the first line, whole
    if fault == "garbage":  # stop here instead: the lines not reached stay as they were
        stopped = cli(root, "--json", "migrate", "--abort")
        assert json.loads(stopped.stdout) == {"aborted": True, "migrated": 1, "left": 3}
        assert MemoryRoot.open(root).health().status == "clean"  # projected to its end
        assert cli(root, "admit", "--run-id", "t9", "--answer", "Writable again.").returncode == 0
        again = cli(root, "--json", "migrate", "--abort")
        assert again.returncode == 1 and "migrate_not_pending" in again.stdout
        assert sum(forgets(root).values()) == 1
        assert MemoryRoot.open(root).health().status == "clean"
        return
    server.default = good
    done = cli(root, "--json", *migrate)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["already"] == 1
    assert forgets(root) == Counter(ids.values())
    assert MemoryRoot.open(root).health().status == "clean"
