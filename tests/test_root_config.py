"""A root knows its own configuration (issue 12 item 2; B26).

The first writable open records tier, write mode and the model names as ``Root.Configured``;
later opens without a config (API or CLI) use it; a different config is journalled as
``Root.Reconfigured``; leaving BuJo capture while a capture plan is retained is refused before
anything is written.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from helpers_capture import extraction, memory, open_capture, script, turn
from local_http import FakeServer, Recorded, Reply, js
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.config import load_config, parse_config
from memory_es.errors import MemoryEsError
from memory_es.events import Root
from memory_es.testing import WordBagEmbedder
from memory_es.transfer import rebuild_root

JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}
DENTIST = "Dentist appointment with Dr. Hale on Tuesday at nine."


def root_events(root: Path) -> list[Root.Configured | Root.Reconfigured]:
    return [e for _, e in MemoryRoot.open(root, parse_config({"mode": "lite"})).events()
            if isinstance(e, Root.Configured | Root.Reconfigured)]


def test_first_open_records_the_config_and_later_opens_use_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL), background=False,
                          embedder=WordBagEmbedder()) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer=DENTIST))
    [first] = root_events(root)
    assert isinstance(first, Root.Configured)
    assert (first.tier, first.write_mode) == ("journal", "append-host-summary")
    assert first.embeddings == {"provider": "local", "model": "use-multilingual-v3",
                                "dim": 512}
    with MemoryStore.open(root, background=False, embedder=WordBagEmbedder()) as store:
        assert store.config.mode == "journal"  # no config given: the root's own
        store.drain()
    assert MemoryRoot.open(root).config.mode == "journal"
    with MemoryStore.open(root, parse_config(JOURNAL), background=False,
                          embedder=WordBagEmbedder()):
        pass
    assert len(root_events(root)) == 1  # the same config is not recorded twice


def test_cli_without_config_searches_with_the_roots_own_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    config = tmp_path / "memory.json"
    config.write_text(json.dumps({"memory": JOURNAL}), "utf-8")
    assert main(["--root", str(root), "--config", str(config), "admit", "--run-id", "r",
                 "--answer", DENTIST]) == 0
    assert main(["--root", str(root), "drain"]) == 0  # no --config: embeds all the same
    capsys.readouterr()
    assert main(["--root", str(root), "search", "when are my teeth getting checked",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["degraded"], result["results"][0]["text"]) == (False, DENTIST)
    rebuild_root(root)  # no config: the recorded provider fills the new generation
    assert MemoryRoot.open(root).vector_backlog() == 0


def test_a_different_config_is_a_journalled_reconfiguration(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL), background=False,
                          embedder=WordBagEmbedder()) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer=DENTIST))
    with caplog.at_level(logging.WARNING, logger="memory_es"), \
            MemoryStore.open(root, parse_config({"mode": "lite"}), background=False) as lite:
        lite.persist_completed_turn(CompletedTurn(run_id="r2", outcome="success",
                                                  answer="Another line."))
    assert any("memory_reconfigured" in r.getMessage() for r in caplog.records)
    first, second = root_events(root)
    assert isinstance(first, Root.Configured) and first.tier == "journal"
    assert isinstance(second, Root.Reconfigured)
    assert (second.tier, second.embeddings, second.originator_version) == ("lite", None, 2)
    assert MemoryRoot.open(root).config.mode == "lite"


MINILM = {"mode": "journal", "embeddings": {"provider": "local",
                                          "model": "all-MiniLM-L6-v2-onnx-int8"}}


def test_a_config_naming_no_model_keeps_the_roots_recorded_model(tmp_path: Path) -> None:
    """A root made with MiniLM (the old default) stays on MiniLM when a later config names no
    model, so a new default never re-embeds a root; naming a model is a reconfiguration."""
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(MINILM), background=False,
                          embedder=WordBagEmbedder()) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer=DENTIST))
    with MemoryStore.open(root, parse_config(JOURNAL), background=False,
                          embedder=WordBagEmbedder()) as store:
        assert store.config.embeddings is not None
        assert (store.config.embeddings.model, store.config.embeddings.dim) == (
            "all-MiniLM-L6-v2-onnx-int8", 384)
        store.persist_completed_turn(CompletedTurn(run_id="r2", outcome="success",
                                                   answer="Another line."))
    assert len(root_events(root)) == 1
    use = {"mode": "journal", "embeddings": {"provider": "local",
                                             "model": "use-multilingual-v3"}}
    with MemoryStore.open(root, parse_config(use), background=False,
                          embedder=WordBagEmbedder()) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r3", outcome="success",
                                                   answer="A third line."))
    first, second = root_events(root)
    assert first.embeddings is not None and first.embeddings["dim"] == 384
    assert isinstance(second, Root.Reconfigured)
    assert second.embeddings == {"provider": "local", "model": "use-multilingual-v3",
                                 "dim": 512}


def test_no_endpoint_or_key_is_recorded(tmp_path: Path) -> None:
    config = parse_config({"mode": "journal", "embeddings": {"provider": "openai",
                                                             "model": "text-embedding-3-small",
                                                             "dim": 1536}})
    with MemoryStore.open(tmp_path / "root", config, background=False,
                          embedder=WordBagEmbedder()) as store:
        assert root_events(tmp_path / "root") == []  # an open that writes nothing leaves none
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer=DENTIST))
    [event] = root_events(tmp_path / "root")  # recorded with the first admission
    assert event.embeddings == {"provider": "openai", "model": "text-embedding-3-small",
                                "dim": 1536}
    assert event.llm is None


def test_b26_leaving_capture_with_a_retained_plan_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    store, _ = open_capture(root, script(
        ("extract", "r1", extraction([memory("I live in Lyon")])),
        ("review", "r1", "!model_timeout")))
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
    before = len(MemoryRoot.open(root).events())
    with pytest.raises(MemoryEsError) as err:
        MemoryStore.open(root, parse_config({"mode": "lite"}), background=False)
    assert err.value.code == "reconfigure_refused"
    assert len(MemoryRoot.open(root).events()) == before  # nothing written
    lite = tmp_path / "lite.json"
    lite.write_text(json.dumps({"memory": {"mode": "lite"}}), "utf-8")
    capsys.readouterr()
    assert main(["--root", str(root), "--config", str(lite), "drain"]) == 1  # refused
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 1 and "reconfigure_refused" in err_lines[0]
    # the root's own config still opens it
    with MemoryStore.open(root, background=False, embedder=WordBagEmbedder()) as again:
        assert (again.config.mode, again.config.write_mode) == ("bujo", "capture")


KEY = "sk-from-env-9f8e7d6c5b4a"


def test_host_config_file_with_a_key_variable_end_to_end(
        tmp_path: Path, server: FakeServer, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 13 item 15: a host's whole config file, provider "openai" with its endpoint,
    timeout and a key from the variable it names, through the CLI and the Python API; the key
    is sent, and neither the key nor the endpoint is recorded anywhere in the root or logged."""
    def embeddings(req: Recorded) -> Reply:
        data = [{"object": "embedding", "index": i, "embedding": [1.0, float(len(t)), 0.5, 0.25]}
                for i, t in enumerate(req.body["input"])]
        return js(200, {"object": "list", "data": data, "model": req.body["model"]})

    server.default = embeddings
    monkeypatch.setenv("MEMORY_ES_TEST_KEY", KEY)
    root = tmp_path / "root"
    config = tmp_path / "host.json"
    config.write_text(json.dumps({
        "agent": {"name": "mono", "model": "openai-codex:gpt-5.6-terra"},
        "memory": {"mode": "journal", "embeddings": {
            "provider": "openai", "model": "text-embedding-3-small", "dim": 4,
            "endpoint": server.url + "/v1", "timeoutMs": 5000,
            "apiKeyEnv": "MEMORY_ES_TEST_KEY"}},
        "tools": {"allowedTools": []}}), "utf-8")
    config.chmod(0o644)  # a key variable's name needs no owner-only file
    with caplog.at_level(logging.DEBUG, logger="memory_es"):
        assert main(["--root", str(root), "--config", str(config), "admit", "--run-id", "r",
                     "--answer", DENTIST]) == 0
        assert main(["--root", str(root), "--config", str(config), "drain"]) == 0
        capsys.readouterr()
        assert main(["--root", str(root), "--config", str(config), "search", "dentist",
                     "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["degraded"] is False
        with MemoryStore.open(root, load_config(config), background=False) as store:
            assert not store.search("dentist").degraded
    assert server.requests
    assert {r.headers.get("authorization") for r in server.requests} == {f"Bearer {KEY}"}
    [event] = root_events(root)
    assert event.embeddings == {"provider": "openai", "model": "text-embedding-3-small",
                                "dim": 4}
    address = server.url.removeprefix("http://").encode()
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data, path
            assert address not in data, path
    assert not any(KEY in record.getMessage() for record in caplog.records)
