"""Issue 12, item 1: every path a user takes leaves recall whole, and says when it is not.

A paraphrase that shares no word with its memory can only be found through vectors. After
``memory-es admit`` + ``drain``, ``rebuild``, ``replay`` and the API's ``drain`` it must be
found; while vectors are missing, ``search``/``recall`` say ``degraded`` with the reason
``vectors_pending`` and the count, and ``inspect``/``health`` show the backlog. The real
offline model (the ``local`` provider) embeds: no fake can prove a paraphrase is found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.config import parse_config

DENTIST = "Dentist appointment with Dr. Hale on Tuesday at nine."
TEXTS = [DENTIST, "The office printer is on the third floor.",
         "Buy oat milk and bread on the way home."]
PARAPHRASE = "when are my teeth getting checked"  # no word in common with DENTIST
BLOCK = {"mode": "journal", "embeddings": {"provider": "local"}}


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "memory.json"
    path.write_text(json.dumps({"memory": BLOCK}), "utf-8")
    return path


def cli(capsys: pytest.CaptureFixture[str], root: Path, config: Path | None,
        *argv: str) -> str:
    flags = ["--root", str(root)] + (["--config", str(config)] if config else [])
    code = main([*flags, *argv])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def search(capsys: pytest.CaptureFixture[str], root: Path, config: Path | None
           ) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(cli(capsys, root, config, "search", PARAPHRASE,
                                            "--json"))
    return result


def texts(result: dict[str, Any]) -> list[str]:
    return [hit["text"] for hit in result["results"]]


def admit_all(capsys: pytest.CaptureFixture[str], root: Path, config: Path) -> None:
    for n, text in enumerate(TEXTS):
        cli(capsys, root, config, "admit", "--run-id", f"run-{n}", "--answer", text)


def test_c9_cli_drain_embeds_and_search_says_degraded_until_then(
        tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    admit_all(capsys, root, config_file)
    out = cli(capsys, root, config_file, "drain", "--no-embed")
    assert out.strip().endswith("vectors_pending=3")
    waiting = search(capsys, root, config_file)
    assert (waiting["degraded"], waiting["reason"], waiting["vectors_pending"]) == (
        True, "vectors_pending", 3)
    assert DENTIST not in texts(waiting)  # no shared word: lexical recall cannot find it
    inspect = json.loads(cli(capsys, root, config_file, "inspect", "--json"))
    assert inspect["vectors_pending"] == 3
    health = json.loads(cli(capsys, root, config_file, "health", "--json"))
    assert (health["status"], health["vectors_pending"]) == ("clean", 3)

    out = cli(capsys, root, config_file, "drain")
    assert out.strip().endswith("vectors_pending=0")
    found = search(capsys, root, config_file)
    assert (found["degraded"], found["reason"], found["vectors_pending"]) == (False, None, 0)
    assert texts(found)[0] == DENTIST


def test_d10_rebuild_and_replay_fill_vectors_before_activating(
        tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    admit_all(capsys, root, config_file)
    cli(capsys, root, config_file, "drain")

    out = cli(capsys, root, config_file, "rebuild")
    assert out.strip().endswith("vectors_pending=0")
    assert texts(search(capsys, root, config_file))[0] == DENTIST

    export = tmp_path / "journal.jsonl"
    cli(capsys, root, config_file, "export", "--journal", str(export))
    replayed = tmp_path / "replayed"
    out = cli(capsys, replayed, config_file, "replay", str(export))
    assert out.strip().endswith("vectors_pending=0")
    result = search(capsys, replayed, config_file)
    assert (result["degraded"], texts(result)[0]) == (False, DENTIST)

    # Replayed without --config, the root's own recorded configuration (in the export)
    # embeds it all the same.
    own = tmp_path / "own"
    out = cli(capsys, own, None, "replay", str(export))
    assert out.strip().endswith("vectors_pending=0")
    # Replayed under a config without a provider, the root has no vectors: recall under the
    # provider's config says so, with the count, until a drain embeds them.
    lite = tmp_path / "lite.json"
    lite.write_text(json.dumps({"memory": {"mode": "lite"}}), "utf-8")
    bare = tmp_path / "bare"
    out = cli(capsys, bare, lite, "replay", str(export))
    assert "vectors_pending" not in out
    waiting = search(capsys, bare, config_file)
    assert (waiting["degraded"], waiting["reason"], waiting["vectors_pending"]) == (
        True, "vectors_pending", 3)
    cli(capsys, bare, config_file, "drain")
    assert texts(search(capsys, bare, config_file))[0] == DENTIST


def test_api_drain_embeds(tmp_path: Path) -> None:
    config = parse_config(BLOCK)
    with MemoryStore.open(tmp_path / "root", config, background=False) as store:
        for n, text in enumerate(TEXTS):
            assert store.persist_completed_turn(
                CompletedTurn(run_id=f"run-{n}", outcome="success", answer=text)).ok
        store.drain(embed=False)
        assert store.vector_backlog() == 3
        waiting = store.recall(PARAPHRASE)
        assert (waiting.degraded, waiting.reason, waiting.vectors_pending) == (
            True, "vectors_pending", 3)
        assert store.inspect().vectors_pending == 3
        store.drain()
        assert store.vector_backlog() == 0
        result = store.recall(PARAPHRASE)
        assert (result.degraded, result.reason) == (False, None)
        assert result.recall.hits[0].text == DENTIST
        assert store.inspect().worker == "not_running"  # opened without background
    with MemoryRoot.open(tmp_path / "root", config) as reader:
        assert reader.recall(PARAPHRASE).recall.hits[0].text == DENTIST
        assert reader.inspect().vectors_pending == 0
        assert reader.health().vectors_pending == 0


def test_lite_is_lexical_only_and_says_so(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "root", parse_config({"mode": "lite"}),
                          background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer=DENTIST))
        store.drain()
        assert store.vector_backlog() is None
        result = store.recall("dentist")
        assert (result.degraded, result.reason, result.vectors_pending) == (
            True, "lexical_only", 0)
