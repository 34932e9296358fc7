"""BuJo's enhanced Remember: about, supersedes, replaceable and validity (SPEC J6-J11, J13,
G13; issue 14 item 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers_attack import open_store
from helpers_capture import (
    BagEmbedder,
    entity,
    extraction,
    memory,
    open_capture,
    reconcile,
    review,
    script,
    turn,
)
from helpers_index import index_rows
from memory_es import MemoryRoot
from memory_es.cli import main
from memory_es.config import load_config
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.store import MemoryStore

TEA = "Morgan drinks green tea every morning."


def daily(root: Path) -> str:
    return "".join(p.read_text("utf-8") for p in sorted((root / "daily").glob("*.md")))


def status_of(root: Path, memory_id: str) -> str:
    return str(index_rows(root, "SELECT status FROM memories WHERE id = ?", (memory_id,))[0][0])


def captured(root: Path, *extra: tuple[str, str, str]) -> tuple[MemoryStore, Any]:
    """A BuJo store whose first turn captured a document's note about Morgan (a person
    entity), a preference, a lesson and an owner-stated fact (an owner's own user line gains
    the coarse ``fact`` label); ``extra`` adds more scripted records."""
    records = script(
        ("extract", "r1", extraction(
            [memory(TEA, entities=["m"], source="document"),
             memory("I prefer window seats", labels=["preference"]),
             memory("Always pin the CI image", labels=["lesson"]),
             memory("Morgan lives in Oslo", labels=["fact"], entities=["m"],
                    fact=("m", "city", "Oslo"))],
            [entity("m", "Morgan")])),
        ("review", "r1", review("keep", "keep")),
        *extra)
    store, model = open_capture(root, records)
    store.persist_completed_turn(turn("r1", "About Morgan and me"))
    store.drain()
    return store, model


def morgan_id(root: Path) -> str:
    """The person node the capture made for Morgan (its id comes from that run, L1)."""
    return str(index_rows(root, "SELECT id FROM entities WHERE name = 'Morgan'")[0][0])


def id_of(root: Path, text: str) -> str:
    return str(index_rows(root, "SELECT id FROM memories WHERE text = ?", (text,))[0][0])


def test_j7_about_links_an_existing_person_and_never_creates_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store, _ = captured(root)
    with store:
        people = index_rows(root, "SELECT id FROM entities")
        done = store.remember("Morgan is allergic to peanuts.", about=morgan_id(root)[:12])
        assert done.status == "remembered"
        assert index_rows(root, "SELECT entity_id FROM memory_entities WHERE memory_id = ?",
                          (done.memory_id,)) == [(morgan_id(root),)]
        assert f"about={morgan_id(root)}" in daily(root)
        events = len(list(store.events()))
        with pytest.raises(MemoryEsError) as unknown:
            store.remember("Quinn likes jazz.", about="ab" * 32)
        assert unknown.value.code == "remember_about_unknown"
        assert len(list(store.events())) == events  # nothing written
        assert index_rows(root, "SELECT id FROM entities") == people  # no person made
        context = store.auto_context("Is Morgan allergic to peanuts?").text
        shown = [line for line in context.splitlines() if "peanuts" in line]
        assert shown and all("you said" not in line for line in shown)  # J9: never verified
    assert MemoryRoot.open(root).health().status == "clean"


def test_j8_supersedes_a_captured_note_and_keeps_it_as_history(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store, _ = captured(root)
    with store:
        old = id_of(root, TEA)
        new = store.remember("Morgan switched to black tea.", supersedes=old[:10],
                             about=morgan_id(root))
        assert status_of(root, old) == "superseded"
        assert status_of(root, new.memory_id) == "open"
        detail = store.show(new.memory_id)
        assert [link.id for link in detail.supersedes] == [old]
        hits = store.recall("what tea does Morgan drink", limit=5).recall.hits
        by_id = {h.id: h for h in hits}
        assert by_id[new.memory_id].currentness == "current"
        assert old not in by_id or by_id[old].currentness == "superseded"
        # an enhanced line may itself be superseded by a later enhanced write (J8)
        newer = store.remember("Morgan now drinks only water.", supersedes=new.memory_id)
        assert status_of(root, new.memory_id) == "superseded"
        assert newer.status == "remembered"
    assert f"superseded_by={new.memory_id}" in daily(root)
    assert MemoryRoot.open(root).health().status == "clean"
    before = daily(root)
    with MemoryStore.open(root, background=False, embedder=BagEmbedder()) as store:
        store.rebuild()  # the supersession is replay-owned state (F1): rebuilt exactly
    assert daily(root) == before


@pytest.mark.parametrize("text, why", [
    ("I prefer window seats", "preference"),
    ("Always pin the CI image", "lesson"),
    ("Morgan lives in Oslo", "owner-stated fact"),
])
def test_j8_never_replaces_preferences_lessons_or_owner_facts(tmp_path: Path, text: str,
                                                              why: str) -> None:
    root = tmp_path / "root"
    store, _ = captured(root)
    with store:
        target = id_of(root, text)
        events = len(list(store.events()))
        with pytest.raises(MemoryEsError) as refused:
            store.remember("Something else entirely.", supersedes=target)
        assert refused.value.code == "remember_supersedes_refused"
        assert why in str(refused.value)
        assert len(list(store.events())) == events
        assert status_of(root, target) == "open"


def test_j8_never_replaces_a_text_only_remember_line_or_history(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store, _ = captured(root)
    with store:
        plain = store.remember("The boiler was serviced in May.")
        with pytest.raises(MemoryEsError, match="text-only Remember line"):
            store.remember("The boiler was serviced in June.", supersedes=plain.memory_id)
        old = id_of(root, TEA)
        store.remember("Morgan drinks black tea.", supersedes=old)
        with pytest.raises(MemoryEsError, match="superseded, not current"):
            store.remember("Morgan drinks oolong.", supersedes=old)
        with pytest.raises(MemoryEsError) as missing:
            store.remember("Morgan drinks mate.", supersedes="0" * 64)
        assert missing.value.code == "memory_not_found"


def test_j6_lite_and_journal_take_text_only(tmp_path: Path) -> None:
    for tier in ("lite", "journal"):
        root = tmp_path / tier
        with open_store(root, tier, background=False) as store:
            store.remember("A plain fact is fine on every tier.")
            events = len(list(store.events()))
            for options in ({"replaceable": True}, {"about": "ab" * 8},
                            {"supersedes": "ab" * 8}, {"valid_to": "2026-12-31"}):
                with pytest.raises(MemoryEsError) as refused:
                    store.remember("An enhanced write.", **options)
                assert refused.value.code == "remember_text_only", options
            assert len(list(store.events())) == events


def test_j9_enhanced_writes_are_assistant_noted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store, _ = captured(root)
    with store:
        done = store.remember("The courier comes on Tuesdays.", replaceable=True)
        plain = store.remember("The bins go out on Mondays.")
        items = {m.id: m for m in store.list_memories().memories}
        assert items[done.memory_id].attribution == "assistant noted"
        assert items[plain.memory_id].attribution != "assistant noted"
        hit = store.recall("when does the courier come").recall.hits[0]
        assert (hit.id, hit.attribution) == (done.memory_id, "assistant noted")


def test_j10_only_a_replaceable_remember_line_can_be_superseded_by_a_capture(
        tmp_path: Path) -> None:
    """A scan (capture) SUPERSEDE of a replaceable Remember line lands; of a plain one it
    becomes an ADD, the Remember line untouched (J10)."""
    root = tmp_path / "root"
    scan = "The inbox holds 3 unread messages from Quinn."
    plain = "The shed key hangs by the back door."
    records = script(
        ("extract", "r2", extraction([memory("The inbox holds 5 unread messages from Quinn.",
                                             source="tool")])),
        ("reconcile", "r2", reconcile({"action": "SUPERSEDE", "target": "m1",
                                       "text": "The inbox holds 5 unread messages from Quinn."})),
        ("extract", "r3", extraction([memory("The shed key hangs in the kitchen.",
                                             source="tool")])),
        ("reconcile", "r3", reconcile({"action": "SUPERSEDE", "target": "m1",
                                       "text": "The shed key hangs in the kitchen."})))
    store, _ = open_capture(root, records)
    with store:
        replaceable = store.remember(scan, replaceable=True)
        protected = store.remember(plain)
        store.persist_completed_turn(turn("r2", "inbox scan"))
        store.drain()
        store.persist_completed_turn(turn("r3", "key scan"))
        store.drain()
        assert status_of(root, replaceable.memory_id) == "superseded"
        assert status_of(root, protected.memory_id) == "open"
        assert status_of(root, id_of(root, "The shed key hangs in the kitchen.")) == "open"
    assert "replaceable=true" in daily(root)


def test_j11_a_plain_repeat_of_a_replaceable_write_is_a_duplicate_keeping_the_marker(
        tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_store(root, "bujo_capture", background=False) as store:
        first = store.remember("The printer is out of toner.", replaceable=True,
                               session="web:a")
        events = len(list(store.events()))
        again = store.remember("The printer is out of toner.", session="web:b")
        assert (again.status, again.memory_id) == ("duplicate", first.memory_id)
        assert len(list(store.events())) == events
        assert index_rows(root, "SELECT replaceable FROM memory_terms WHERE id = ?",
                          (first.memory_id,)) == [(1,)]


def test_j13_a_remember_is_visible_to_the_very_next_recall(tmp_path: Path) -> None:
    """J13: the engine keeps no search cache a write could leave stale: a recall made right
    before a Remember and one right after differ by exactly the new line."""
    root = tmp_path / "root"
    with open_store(root, "bujo_capture", background=False) as store:
        store.remember("The gate code is 4412.")
        before = [h.id for h in store.recall("gate code").recall.hits]
        new = store.remember("The garden gate code changed to 9031.", valid_from="2026-06-01")
        after = [h.id for h in store.recall("gate code").recall.hits]
        assert new.memory_id in after and new.memory_id not in before


def test_g13_validity_is_stored_shown_and_checked(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_store(root, "bujo_capture", background=False) as store:
        done = store.remember("The office is closed for renovation.",
                              valid_from="2026-01-05", valid_to="2026-02-01T17:00:00+01:00")
        item = store.show(done.memory_id).memory
        assert item.to_json()["validFrom"] == "2026-01-05"
        assert item.to_json()["validTo"] == "2026-02-01T17:00:00+01:00"
        hit = store.recall("office renovation").recall.hits[0]
        assert hit.structured()["validFrom"] == "2026-01-05"
        events = len(list(store.events()))
        for bad in ({"valid_to": "2026-02-30"}, {"valid_to": "2026-02-01T17:00:00"},
                    {"due_at": "tomorrow"}, {"valid_from": "2026-03-01", "valid_to": "2026-02-01"},
                    {"replaceable": "yes"}, {"about": "Morgan"}):
            with pytest.raises(InvalidArgumentError):
                store.remember("A bad write.", **bad)
        assert len(list(store.events())) == events
    text = daily(root)
    assert "valid_from=2026-01-05 valid_to=2026-02-01T17:00:00%2B01:00-->" in text


def test_cli_remember_options_and_refusals(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    config = tmp_path / "bujo.json"
    config.write_text(json.dumps({"memory": {
        "mode": "bujo", "path": str(root), "embeddings": {"dim": 8},
        "llm": {"provider": "ollama", "model": "m"}}}))
    MemoryStore.open(root, load_config(config), background=False).close()  # remember
    # never starts a root (only admit and the API do)

    def run(*argv: str) -> tuple[int, Any]:
        code = main(["--config", str(config), *argv, "--json"])
        out = capsys.readouterr().out
        return code, json.loads(out) if out.strip() else None

    code, first = run("remember", "The lease ends in March.", "--replaceable",
                      "--valid-to", "2027-03-31")
    assert code == 0 and first["status"] == "remembered"
    code, second = run("remember", "The lease was extended to June.", "--supersedes",
                       first["id"][:8])
    assert code == 0
    assert status_of(root, first["id"]) == "superseded"
    assert run("remember", "x", "--valid-to", "soon")[0] == 2
    code, err = run("remember", "Another line.", "--about", "ab" * 8)
    assert code == 1 and err["error"]["code"] == "remember_about_unknown"
    code, err = run("remember", "Another line.", "--supersedes", second["id"][:8],
                    "--about", "cd" * 8)
    assert code == 1
