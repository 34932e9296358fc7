"""The intention lifecycle of BuJo capture, ``memory.capture.intentLifecycle`` (M13-M22, M26,
M33; issue 15 item 3).

Each scenario drives a real store on a real root through ``persist_completed_turn`` and
``drain`` with the scripted model, then reads what the index, the daily Markdown and the
journal hold, and checks that a replay of the journal agrees (health is clean).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from helpers_capture import (
    CAPTURE,
    Clock,
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
from helpers_replay import FIXTURES, regen
from memory_es.capture.contracts import parse_extraction
from memory_es.capture.models import ModelError
from memory_es.capture.prompts import (
    EXTRACT_SYSTEM,
    TurnContext,
    extraction_messages,
    extraction_system,
)
from memory_es.config import parse_config
from memory_es.errors import MemoryEsError
from memory_es.events import Memory
from memory_es.ids import run_hash
from memory_es.root import MemoryRoot

INTENTS = {"capture": {"intentLifecycle": True}}
PASSPORT = [entity("p", "passport", "document")]
# sha256 of the extraction system prompt before the intent lifecycle existed (M33)
EXTRACT_SYSTEM_SHA256 = "279af7d5008c3560892ab2c948ae73b7d05afe838e950ec5ec588168d2d454f8"


KEEP_R1 = ("review", "r1", review("keep"))
KEEP_R2 = ("review", "r2", review("keep"))


def task(text: str, *, state: str | None = None, end: str | None = None,
         source: str = "user", kind: str = "task", entities: tuple[str, ...] = ("p",)
         ) -> dict[str, Any]:
    """One extracted memory with an optional intention proposal."""
    out = memory(text, source=source, kind=kind, entities=entities)
    if state is not None:
        out["intentState"] = state
    if end is not None:
        out["validTo"] = end
    return out


def rows(root: Path) -> dict[str, tuple[str, str | None]]:
    """text -> (status, due_at) of every line, in rowid order (a repeated text: the last)."""
    return {text: (status, due) for text, status, due in index_rows(
        root, "SELECT m.text, m.status, mt.due_at FROM memories m "
              "LEFT JOIN memory_terms mt ON mt.id = m.id ORDER BY m.rowid")}


def clean(root: Path) -> None:
    assert MemoryRoot.open(root).health().status == "clean"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "mem"


# --------------------------------------------------------------------------------------------
# M13, M33: the switch, the contract and the prompt


def test_m13_the_switch_defaults_off_and_is_bujo_capture_only() -> None:
    assert parse_config(CAPTURE).capture.intent_lifecycle is False
    for block, why in (({"mode": "journal", "embeddings": {"dim": 8}}, "BuJo-only"),
                       ({"writeMode": "append-host-summary"}, 'writeMode "capture"')):
        with pytest.raises(MemoryEsError, match=f"memory.capture.intentLifecycle: .*{why}"):
            parse_config({**CAPTURE, **block, **INTENTS})


def test_m33_without_the_switch_the_contract_refuses_intent_fields() -> None:
    raw = extraction([task("Renew the passport", state="planned", end="2026-06-30")], PASSPORT)
    with pytest.raises(ModelError) as refused:
        parse_extraction(raw)
    assert refused.value.code == "model_invalid_output"
    assert str(refused.value) == "memories[0]: unknown field"
    plan = parse_extraction(raw, intents=True)
    assert plan.memories[0].intent_state == "planned"  # type: ignore[union-attr]


def test_m33_without_the_switch_the_extraction_prompt_is_unchanged() -> None:
    assert extraction_system(False) is EXTRACT_SYSTEM
    digest = hashlib.sha256(EXTRACT_SYSTEM.encode("utf-8")).hexdigest()
    assert digest == EXTRACT_SYSTEM_SHA256, "the flags-off extraction prompt changed (M33)"
    context = TurnContext(intake_id="t", admitted_at=datetime(2026, 5, 4, tzinfo=UTC),
                          source_label="User", capture_text="x", answer="y", focus=None)
    off = extraction_messages(context)
    on = extraction_messages(TurnContext(**{**context.__dict__, "intents": True}))
    assert off[0].content == EXTRACT_SYSTEM
    assert on[0].content.startswith(EXTRACT_SYSTEM) and "intentState" in on[0].content
    assert off[1] == on[1]  # the turn itself is asked the same way


@pytest.mark.parametrize("end, rule", [
    ("2026-06-30T18:00:00+02:00", "is not YYYY-MM-DD"),  # not the inclusive last millisecond
    ("2026-06-30T23:59:59.999", "is not YYYY-MM-DD"),  # a time without its zone
    ("2026-02-30", "is not a calendar date"),
    ("2026-06-30T23:59:59.999+15:00", "is not a UTC offset within"),
    ("30.06.2026", "is not YYYY-MM-DD"),
])
def test_m19_an_end_that_is_not_an_inclusive_civil_end_is_invalid_output(end: str,
                                                                         rule: str) -> None:
    with pytest.raises(ModelError) as refused:
        parse_extraction(extraction([task("Renew the passport", end=end)], PASSPORT),
                         intents=True)
    assert refused.value.code == "model_invalid_output"
    assert f"validTo: {rule}" in str(refused.value)
    assert end not in str(refused.value)  # content-free (E8)


# --------------------------------------------------------------------------------------------
# M14-M20: which proposals count and how they are stored


def test_m15_states_map_to_note_statuses(root: Path) -> None:
    plan = extraction([task("Plan the Lisbon trip", state="planned", entities=()),
                       task("Call the plumber", state="pending", entities=()),
                       task("Renew the passport", state="done"),
                       task("Learn the cello", state="abandoned", entities=())], PASSPORT)
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review(*["keep"] * 4))), **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "My plans, in short."))
        assert store.drain() == 1
        hits = {h.text: h.status for h in store.recall("Lisbon plumber passport cello").recall.hits}
    assert rows(root) == {"Plan the Lisbon trip": ("scheduled", None),
                          "Call the plumber": ("open", None),
                          "Renew the passport": ("done", None),
                          "Learn the cello": ("dropped", None)}
    assert "Learn the cello" not in hits  # dropped is terminal: never recalled (G22)
    assert hits.get("Plan the Lisbon trip") == "scheduled"
    assert not index_rows(root, "SELECT rowid FROM vectors WHERE rowid IN (SELECT rowid FROM "
                                "memories WHERE status = 'dropped')")
    clean(root)


def test_m14_m16_only_the_owners_own_task_lines_carry_proposals(root: Path) -> None:
    plan = extraction([
        task("Renew the passport", state="planned", end="2026-06-30"),
        task("The assistant will book the flight", state="planned", end="2026-06-01",
             source="assistant", entities=()),
        task("The guide says to visit in May", state="planned", end="2026-05-31",
             source="document", entities=()),
        task("The office is on the third floor", state="pending", end="2026-07-01",
             kind="note", entities=()),  # an ordinary fact never becomes an intention
    ], PASSPORT)
    peer = extraction([task("Order new business cards", state="planned", end="2026-06-15",
                            entities=())])
    trigger = extraction([task("Back up the laptop", state="planned", end="2026-06-20",
                               entities=())])
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review("keep", "keep", "keep")),
                                         ("extract", "r2", peer), ("extract", "r3", trigger),
                                         ("review", "r3", review("keep"))), **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "Passport by June; flights; the guide."))
        store.persist_completed_turn(turn("r2", "cards", speaker_kind="unknown"))
        store.persist_completed_turn(turn("r3", "backup", trigger="cron",
                                          speaker_kind="trigger"))
        assert store.drain() == 3
    assert rows(root) == {
        "Renew the passport": ("scheduled", "2026-06-30"),
        "The assistant will book the flight": ("open", None),
        "The guide says to visit in May": ("open", None),
        "The office is on the third floor": ("open", None),
        "Order new business cards": ("open", None),
        "Back up the laptop": ("open", None),
    }
    clean(root)


def test_m17_the_end_is_stored_as_due_never_as_validity(root: Path) -> None:
    plan = extraction([task("Renew the passport", state="pending", end="2026-06-30")], PASSPORT)
    store, _ = open_capture(root, script(("extract", "r1", plan), KEEP_R1), **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "I must renew my passport by June 30."))
        assert store.drain() == 1
        hit = store.recall("renew the passport").recall.hits[0]
        events = [e for _, e in MemoryRoot.open(root).events()
                  if isinstance(e, Memory.Created | Memory.Event)]
    assert index_rows(root, "SELECT valid_from, valid_to, due_at FROM memory_terms") == [
        (None, None, "2026-06-30")]
    assert hit.structured()["dueAt"] == "2026-06-30" and "validTo" not in hit.structured()
    daily = (root / "daily" / "2026-05-04.md").read_text()
    assert " due=2026-06-30" in daily and "valid_to" not in daily
    assert [type(e).__name__ for e in events] == ["Captured", "DueStated"]
    assert events[0].status == "open" and events[1].due_at == "2026-06-30"  # type: ignore
    clean(root)


def test_m18_an_undated_plan_gets_no_date(root: Path) -> None:
    plan = extraction([task("Renew the passport", state="planned")], PASSPORT)
    store, _ = open_capture(root, script(("extract", "r1", plan), KEEP_R1), **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "Some day I will renew my passport."))
        assert store.drain() == 1
        kinds = {type(e).__name__ for _, e in MemoryRoot.open(root).events()}
    assert rows(root) == {"Renew the passport": ("scheduled", None)}
    assert "DueStated" not in kinds
    assert index_rows(root, "SELECT count(*) FROM memory_terms") == [(0,)]


def test_m19_an_offset_end_is_kept_as_its_inclusive_instant(root: Path) -> None:
    end = "2026-06-30T23:59:59.999+09:00"
    plan = extraction([task("Renew the passport", state="planned", end=end)], PASSPORT)
    store, _ = open_capture(root, script(("extract", "r1", plan), KEEP_R1), **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "By June 30, Tokyo time."))
        assert store.drain() == 1
        assert store.recall("passport").recall.hits[0].structured()["dueAt"] == end
    assert rows(root) == {"Renew the passport": ("scheduled", end)}
    clean(root)


def test_m20_a_proposal_never_moves_to_a_sibling_line(root: Path) -> None:
    plan = extraction([task("Renew the passport", state="planned", end="2026-06-30"),
                       task("Renew the passport photo booth booking", entities=())], PASSPORT)
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review("keep", "keep"))), **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "Passport by June; photo booth."))
        assert store.drain() == 1
    assert rows(root) == {"Renew the passport": ("scheduled", "2026-06-30"),
                          "Renew the passport photo booth booking": ("open", None)}


# --------------------------------------------------------------------------------------------
# M21, M22: changes go through SUPERSEDE; a repeat without its end keeps the end


def _seeded(root: Path, *more: tuple[str, str, str], clock: Clock | None = None) -> Any:
    seed = extraction([task("Renew the passport", state="pending", end="2026-06-30")],
                      PASSPORT)
    store, model = open_capture(root, script(("extract", "seed", seed),
                                             ("review", "seed", review("keep")), *more),
                                clock=clock, **INTENTS)
    store.persist_completed_turn(turn("seed", "I must renew my passport by June 30."))
    assert store.drain() == 1
    return store, model


def lifecycle(root: Path) -> list[tuple[str, str, str]]:
    """(old text, status, new text) of every supersession in the index."""
    return [tuple(r) for r in index_rows(  # type: ignore[misc]
        root, "SELECT o.text, l.status, n.text FROM lifecycle l JOIN memories o ON o.id = "
              "l.memory_id JOIN memories n ON n.id = l.by ORDER BY l.rowid")]


def test_m21_a_classifier_update_of_an_intention_becomes_a_supersede(root: Path) -> None:
    done = extraction([task("I renewed the passport", state="done")], PASSPORT)
    store, _ = _seeded(root, ("extract", "r2", done), KEEP_R2, ("reconcile", "r2", reconcile(
        {"action": "UPDATE", "target": "m1", "text": "Renewed the passport"})))
    with store:
        store.persist_completed_turn(turn("r2", "Done, I renewed my passport."))
        assert store.drain() == 1
    assert rows(root) == {"Renew the passport": ("superseded", "2026-06-30"),
                          "Renewed the passport": ("done", "2026-06-30")}  # M22: inherited
    assert lifecycle(root) == [("Renew the passport", "superseded", "Renewed the passport")]
    clean(root)


def test_m22_a_noop_without_an_end_keeps_the_end(root: Path) -> None:
    again = extraction([task("Passport renewal still to do", state="pending")], PASSPORT)
    store, _ = _seeded(root, ("extract", "r2", again), KEEP_R2, ("reconcile", "r2", reconcile(
        {"action": "NOOP", "target": "m1"})))
    with store:
        store.persist_completed_turn(turn("r2", "Still need to renew my passport."))
        assert store.drain() == 1
    assert rows(root) == {"Renew the passport": ("open", "2026-06-30")}
    assert lifecycle(root) == []


def test_m21_a_noop_whose_end_changes_supersedes(root: Path) -> None:
    later = extraction([task("Renew the passport by mid July", end="2026-07-15")], PASSPORT)
    store, _ = _seeded(root, ("extract", "r2", later), KEEP_R2, ("reconcile", "r2", reconcile(
        {"action": "NOOP", "target": "m1"})))
    with store:
        store.persist_completed_turn(turn("r2", "The passport can wait until July 15."))
        assert store.drain() == 1
    assert rows(root) == {"Renew the passport": ("superseded", "2026-06-30"),
                          "Renew the passport by mid July": ("open", "2026-07-15")}
    clean(root)


def test_m22_a_replacement_inherits_the_end_unless_a_new_one_is_given(root: Path) -> None:
    planned = extraction([task("Renew the passport at the consulate", state="planned")],
                         PASSPORT)
    store, _ = _seeded(root, ("extract", "r2", planned), KEEP_R2, ("reconcile", "r2", reconcile(
        {"action": "SUPERSEDE", "target": "m1", "text": "Renew the passport at the consulate"})))
    with store:
        store.persist_completed_turn(turn("r2", "I'll do the passport at the consulate."))
        assert store.drain() == 1
    assert rows(root)["Renew the passport at the consulate"] == ("scheduled", "2026-06-30")


def test_m21_the_same_sentence_with_a_new_state_supersedes_without_a_classifier(
        root: Path) -> None:
    same = extraction([task("Renew the passport", state="abandoned")], PASSPORT)
    store, model = _seeded(root, ("extract", "r2", same), KEEP_R2)
    with store:
        store.persist_completed_turn(turn("r2", "Forget the passport, I'm not going."))
        assert store.drain() == 1
    assert [stage for stage, t in model.calls if t == run_hash("r2")] == ["extract", "review"]
    texts = index_rows(root, "SELECT text, status FROM memories ORDER BY rowid")
    assert texts == [("Renew the passport", "superseded"), ("Renew the passport", "dropped")]
    assert index_rows(root, "SELECT due_at FROM memory_terms ORDER BY rowid") == [
        ("2026-06-30",), ("2026-06-30",)]
    clean(root)


def test_m22_the_same_sentence_without_a_change_stays_one_line(root: Path) -> None:
    same = extraction([task("Renew the passport", state="pending")], PASSPORT)
    store, _ = _seeded(root, ("extract", "r2", same), KEEP_R2)
    with store:
        store.persist_completed_turn(turn("r2", "Renew the passport, as I said."))
        assert store.drain() == 1
    assert index_rows(root, "SELECT text, status FROM memories") == [
        ("Renew the passport", "open")]


def test_m21_a_protected_line_is_never_replaced_by_an_intention(root: Path) -> None:
    """A lesson is never superseded (E15), even by a restated intention: it is added."""
    lesson = extraction([memory("Renew documents early", labels=["lesson"], entities=["p"])],
                        PASSPORT)
    later = extraction([task("Renew documents early", state="planned", end="2026-06-30")],
                       PASSPORT)
    store, _ = open_capture(root, script(("extract", "r1", lesson), ("review", "r1",
                                         review("keep")), ("extract", "r2", later), KEEP_R2),
                            **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "Lesson: renew documents early."))
        store.persist_completed_turn(turn("r2", "So I plan to renew by June 30."))
        assert store.drain() == 2
    assert index_rows(root, "SELECT text, status FROM memories") == [
        ("Renew documents early", "open")]


# --------------------------------------------------------------------------------------------
# M26: a retained plan finishes its proposals after the switch is turned off


def test_m26_a_retained_plan_keeps_its_proposals_after_the_switch_is_off(root: Path) -> None:
    plan = extraction([task("Renew the passport", state="planned", end="2026-06-30")],
                      PASSPORT)
    clock = Clock()
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", "!model_timeout")),
                            clock=clock, **INTENTS)
    with store:
        store.persist_completed_turn(turn("r1", "Passport by June 30."))
        store.drain()
        assert store.inspect(run_hash("r1")).records[0].state == "pending"
    clock.advance(hours=1)
    store, model = open_capture(root, script(("review", "r1", review("keep"))), clock=clock)
    with store:
        assert store.drain() == 1
    assert [stage for stage, _ in model.calls] == ["review"]  # never asked to extract again
    assert rows(root) == {"Renew the passport": ("scheduled", "2026-06-30")}
    clean(root)


def test_m33_flags_off_keep_the_capture_fixture_bytes(tmp_path: Path) -> None:
    """The golden BuJo capture fixture, built with every intention and recall switch written
    out as false, is byte-identical to the committed one (built with none of them)."""
    spec = next(s for s in regen.SPECS if s.name == "bujo-capture")
    off = dataclasses.replace(spec, config={
        **spec.config, "capture": {**spec.config.get("capture", {}), "intentLifecycle": False},
        "recall": {**spec.config.get("recall", {}), "intentExpiry": False, "recency": False}})
    assert parse_config(off.config).capture.intent_lifecycle is False
    assert regen.render_fixture(off) == regen.fixture_files(FIXTURES / "bujo-capture")


# --------------------------------------------------------------------------------------------
# The CLI path: a config file with the switch, real chat and embedding servers on 127.0.0.1


def _router(plan: str) -> Any:
    """One 127.0.0.1 server for both providers: Ollama chat (extract, review) and embed."""
    import local_http
    from helpers_chat import ollama_ok

    def respond(req: local_http.Recorded) -> local_http.Reply:
        if req.path == "/api/embed":
            texts = req.body["input"]
            return local_http.js(200, {"model": req.body["model"], "embeddings": [
                [float(len(t) % 7 + 1), 1.0, float(i + 1), 0.5] for i, t in enumerate(texts)]})
        prompt = req.body["messages"][-1]["content"]
        content = plan if prompt.startswith("stage: extract") else review("keep")
        return ollama_ok(content)(req)
    return respond


def test_m13_m17_the_cli_captures_an_intention_from_its_config_file(
        tmp_path: Path, server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from memory_es.cli import main

    server.default = _router(extraction([task("Renew the passport", state="planned",
                                              end="2026-06-30")], PASSPORT))
    config = tmp_path / "memory.json"
    config.write_text(json.dumps({"memory": {
        **CAPTURE, "embeddings": {"provider": "ollama", "model": "e", "dim": 4,
                                  "endpoint": server.url},
        "llm": {"provider": "ollama", "model": "m", "endpoint": server.url}, **INTENTS}}))
    text = tmp_path / "turn.txt"
    text.write_text("I plan to renew my passport by June 30.")
    root = str(tmp_path / "mem")
    common = ["--root", root, "--config", str(config)]
    admit = [*common, "admit", "--answer", "Noted.", "--capture-text-file", str(text)]
    # a turn the host does not vouch for as the owner's supplies no proposal (M14)
    assert main([*admit, "--run-id", "r0"]) == 0
    assert main([*admit, "--run-id", "r1", "--speaker-kind", "human-turn"]) == 0
    assert main([*common, "drain"]) == 0
    capsys.readouterr()
    assert main([*common, "list", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)["memories"]
    # r0's line (open, undated) is replaced by the owner's restatement in a new state (M21)
    assert [(i["text"], i["status"], i.get("dueAt"), "validTo" in i) for i in items] == [
        ("Renew the passport", "scheduled", "2026-06-30", False),
        ("Renew the passport", "superseded", None, False)]
    assert main([*common, "list", "--status", "superseded", "--json"]) == 0
    (old,) = json.loads(capsys.readouterr().out)["memories"]
    assert "dueAt" not in old and old["source"]["intakeId"] == run_hash("r0")
    extract = next(r for r in server.requests if r.path == "/api/chat")
    assert "intentState" in extract.body["messages"][0]["content"]  # the switch reached it
    assert main([*common, "health"]) == 0
