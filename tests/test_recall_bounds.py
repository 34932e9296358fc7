"""Recall and search take bounded, validated limits, and a query that names nothing finds
nothing (issue 12, item 4; G31: the fifty-hit pool bounds every result)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_es import CompletedTurn, MemoryEsError, MemoryRoot, MemoryStore
from memory_es.cli import main

ANSWERS = ["Booked the dentist for Tuesday.", "The office WiFi password is hunter2.",
           "Renewed the passport in March."]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    with MemoryStore.open(path, background=False) as store:
        for i, answer in enumerate(ANSWERS):
            assert store.persist_completed_turn(CompletedTurn(
                run_id=f"r{i}", outcome="success", answer=answer)).ok
        store.drain()
    return path


@pytest.mark.parametrize("limit", [0, -1, 51, 10**6, True, 2.5, "5"])
def test_every_door_refuses_a_limit_outside_1_to_50(root: Path, limit: object) -> None:
    with MemoryStore.open(root, background=False) as store:
        for call in (store.recall, store.search, store.lexical_search):
            with pytest.raises(MemoryEsError) as raised:
                call("dentist", limit=limit)  # type: ignore[arg-type]
            assert raised.value.code == "recall_invalid_limit"
            assert "from 1 to 50" in str(raised.value)
    reader = MemoryRoot.open(root)
    for read in (reader.recall, reader.search, reader.lexical_search):
        with pytest.raises(MemoryEsError):
            read("dentist", limit=limit)  # type: ignore[arg-type]


def test_the_bounds_themselves_are_accepted(root: Path) -> None:
    with MemoryStore.open(root, background=False) as store:
        assert len(store.recall("dentist", limit=1).recall.hits) == 1
        assert store.recall("dentist", limit=50).recall.hits[0].text == ANSWERS[0]
        assert len(store.lexical_search("the", limit=1)) == 1
        assert len(store.lexical_search("the", limit=50)) == 3  # every answer says "the"


@pytest.mark.parametrize("query", ["", "   ", "?!", "\u3000\t"])
def test_a_query_that_names_nothing_finds_nothing(root: Path, query: str) -> None:
    with MemoryStore.open(root, background=False) as store:
        assert store.recall(query).recall.hits == ()
        assert store.lexical_search(query) == []
        assert store.search(query).recall.hits == ()
    assert MemoryRoot.open(root).recall(query).recall.hits == ()


def test_a_query_in_any_script_still_counts(root: Path) -> None:
    with MemoryStore.open(root, background=False) as store:
        assert store.recall("паспорт").recall.hits == ()  # content, no match: not refused
        assert store.recall("dentist").recall.hits[0].text == ANSWERS[0]


def test_cli_search_refuses_a_bad_limit_in_one_line(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(root), "search", "dentist", "--limit", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "recall_invalid_limit" in err and "Traceback" not in err
    assert main(["--root", str(root), "search", "dentist", "--limit", "1"]) == 0
    assert capsys.readouterr().out.count("dentist") == 1
