"""The BuJo read policies ``memory.recall.intentExpiry`` and ``memory.recall.recency``
(SPEC M24-M33, G11, G14, G15, G31, H*): pure policy functions on fixed instants, then end to
end through MemoryStore and the ``memory-es search`` CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import memory_es.root
from helpers_capture import (
    CAPTURE,
    START,
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
from helpers_index import active_index, index_rows
from memory_es.capture.scripted import ScriptedChat
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.errors import ConfigError
from memory_es.recall.rank.policy import (
    OFF,
    RECENCY_MAX,
    ReadPolicy,
    apply_recency,
    automatic_pool,
    excluded_ids,
    qualifies,
    recency_eligible,
    recency_term,
    recency_terms,
    reorder,
)
from memory_es.recall.rank.render import Hit
from memory_es.recall.rank.score import NOMIC_V15, Candidate
from memory_es.recall.rank.select import SelectMode, currentness
from memory_es.store import MemoryStore

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
EXPIRY = {"intentExpiry": True}
RECENCY = {"recency": True}

LUNCH_QUERY = "Lunch with Sam at the harbour"
# The same base score; on a tie the older line's id ranks first, so only recency puts the
# newer one first.
OLDER = "Lunch with Sam at the harbour diner"  # recorded 90 days before START
NEWER = "Lunch with Sam at the harbour cafe"  # recorded a day before START
DENTIST = "Dentist appointment booked at the harbour clinic"  # dated, not yet due
PASSPORT = "Renew the passport at the city office"  # set done
OSLO = "Morgan lives in Oslo"  # a captured fact about Morgan (person card)
SEATS = "I prefer window seats on long flights"  # a captured agent-scope preference


# --------------------------------------------------------------------------------------------
# Pure policy functions, fixed instants


def cand(id_: str, *, status: str = "open", due: date | datetime | None = None) -> Candidate:
    return Candidate(id=id_, text=id_, type="note", status=status, due_at=due)


def hit(id_: str, score: float, *, kind: str = "note",
        created: datetime | None = NOW) -> Hit:
    return Hit(id=id_, score=score, text=id_, type=kind, status="open", created_at=created,
               valid_from=None, valid_to=None, due_at=None, currentness="current")


def test_m24_automatic_pool_drops_every_dated_and_closed_line() -> None:
    pool = [cand("plain"), cand("future", due=date(2027, 1, 1)),
            cand("past", due=date(2020, 1, 1)),
            cand("instant", due=datetime(2030, 1, 1, tzinfo=UTC)),
            cand("done", status="done"), cand("dropped", status="dropped"),
            cand("scheduled", status="scheduled"), cand("migrated", status="migrated")]
    kept = automatic_pool(pool, ReadPolicy(intent_expiry=True))
    assert [c.id for c in kept] == ["plain", "scheduled", "migrated"]
    assert automatic_pool(pool, OFF) == pool  # off: unchanged
    assert automatic_pool(pool, ReadPolicy(recency=True)) == pool  # the other switch alone


def test_m28_recency_term_is_at_most_002_with_a_30_day_half_life() -> None:
    assert recency_term(NOW, NOW) == pytest.approx(RECENCY_MAX) == pytest.approx(0.02)
    assert recency_term(NOW - timedelta(days=30), NOW) == pytest.approx(0.01)
    assert recency_term(NOW - timedelta(days=60), NOW) == pytest.approx(0.005)
    assert recency_term(NOW - timedelta(days=1), NOW) == pytest.approx(0.02 * 0.5 ** (1 / 30))
    for days in (0, 0.5, 3, 400):
        assert 0.0 < recency_term(NOW - timedelta(days=days), NOW) <= 0.02


def test_m30_future_missing_or_invalid_recording_instants_earn_nothing() -> None:
    assert recency_term(None, NOW) == 0.0
    assert recency_term(NOW + timedelta(seconds=1), NOW) == 0.0
    assert recency_term(datetime(2026, 5, 1, 9, 0), NOW) == 0.0  # naive: no zone, invalid
    assert recency_term(NOW - timedelta(days=1), NOW.replace(tzinfo=None)) == 0.0
    assert recency_term(NOW, NOW) > 0.0  # recorded just now: the whole term


def test_m29_recency_applies_to_unlabelled_notes_and_non_fact_events_only() -> None:
    assert recency_eligible("note", [""], False)
    assert recency_eligible("note", [], False)
    assert recency_eligible("event", [""], False)
    assert recency_eligible("event", ["lesson"], False)
    assert not recency_eligible("event", ["fact"], False)
    assert not recency_eligible("event", ["lesson", "preference"], False)
    assert not recency_eligible("note", ["fact"], False)
    assert not recency_eligible("note", ["preference"], False)
    assert not recency_eligible("note", ["lesson"], False)  # a labelled note
    assert not recency_eligible("note", [""], True)  # a task turned note
    assert not recency_eligible("task", [""], False)
    assert not recency_eligible(None, [""], False)


def test_m31_reorder_moves_only_qualified_hits_and_keeps_scores() -> None:
    hits = (hit("a", 0.90), hit("b", 0.89), hit("c", 0.80), hit("low", 0.60))
    terms = {"b": 0.02, "low": 0.02, "c": 0.001}
    out = reorder(hits, terms, NOMIC_V15)
    assert [h.id for h in out] == ["b", "a", "c", "low"]  # 0.91 > 0.90; the tail stays put
    assert {h.id: h.score for h in out} == {h.id: h.score for h in hits}  # scores unchanged
    # a below-floor hit is never rescued, even when its term would lift it over the floor
    near = (hit("a", 0.70), hit("below", 0.64))
    assert reorder(near, {"below": 0.02}, NOMIC_V15) == near
    assert not qualifies(0.64, 0.70, NOMIC_V15) and qualifies(0.65, 0.70, NOMIC_V15)
    # the tail margin 0.15 of the base score: 0.74 is out of reach of a 0.90 best
    assert not qualifies(0.74, 0.90, NOMIC_V15) and qualifies(0.75, 0.90, NOMIC_V15)
    # a best below the floor qualifies nothing: nothing moves
    weak = (hit("a", 0.60), hit("b", 0.59))
    assert reorder(weak, {"b": 0.02}, NOMIC_V15) == weak
    # no term: the order is exactly the base order (ties keep their previous order)
    tied = (hit("x", 0.8), hit("y", 0.8), hit("z", 0.79))
    assert reorder(tied, {}, NOMIC_V15) == tied


def test_m28_original_query_mode_reorders_in_place_and_degraded_never() -> None:
    hits = (hit("a", 0.90, created=NOW - timedelta(days=300)),
            hit("b", 0.89, created=NOW - timedelta(hours=1)),
            hit("tail", 0.50, created=NOW))

    class NoIndex:  # recency_terms' labels read: a line without a memory_meta row
        def execute(self, *_: Any) -> list[Any]:
            return []

    on = ReadPolicy(recency=True)
    conn: Any = NoIndex()
    moved = apply_recency(conn, hits, now=NOW, calibration=NOMIC_V15, mode="original-query",
                          policy=on)
    assert [h.id for h in moved] == ["b", "a", "tail"]  # the uncut tail stays in place
    assert [h.id for h in apply_recency(conn, hits, now=NOW, calibration=NOMIC_V15,
                                        mode="explicit", policy=on)] == ["b", "a", "tail"]
    unchanged: tuple[tuple[SelectMode, ReadPolicy], ...] = (
        ("degraded", on), ("explicit", OFF), ("explicit", ReadPolicy(intent_expiry=True)))
    for mode, policy in unchanged:
        assert apply_recency(conn, hits, now=NOW, calibration=NOMIC_V15, mode=mode,
                             policy=policy) == hits


def test_m33_policies_are_bujo_only_and_independent() -> None:
    assert ReadPolicy.of(parse_config(CAPTURE)) == OFF
    both = parse_config({**CAPTURE, "recall": {**EXPIRY, **RECENCY}})
    assert ReadPolicy.of(both) == ReadPolicy(intent_expiry=True, recency=True)
    assert ReadPolicy.of(parse_config({**CAPTURE, "recall": EXPIRY})) == \
        ReadPolicy(intent_expiry=True)
    assert ReadPolicy.of(parse_config({**CAPTURE, "recall": RECENCY})) == \
        ReadPolicy(recency=True)
    # Lite and Journal: refused by validation, and ignored by the read path all the same
    for mode in ("lite", "journal"):
        with pytest.raises(ConfigError):
            parse_config({"mode": mode, "recall": RECENCY})
    lite = both.model_copy(update={"mode": "lite"})
    assert ReadPolicy.of(lite) == OFF


def test_m27_intent_expiry_does_not_need_intent_lifecycle() -> None:
    config = parse_config({**CAPTURE, "recall": EXPIRY})
    assert config.capture.intent_lifecycle is False
    assert ReadPolicy.of(config).intent_expiry
    direct = parse_config({"mode": "bujo", "writeMode": "disabled",
                           "embeddings": {"dim": 256}, "llm": {"provider": "ollama", "model": "m"},
                           "recall": EXPIRY})  # not even capture mode
    assert ReadPolicy.of(direct).intent_expiry


# --------------------------------------------------------------------------------------------
# End to end: one BuJo root, read under each combination of flags


@dataclass
class World:
    root: Path
    clock: Clock
    ids: dict[str, str]


def build(root: Path, clock: Clock) -> dict[str, str]:
    """Capture a fact about Morgan and a preference, then Remember the lunch lines (90 days
    and one day old), a dated appointment and a line set done."""
    records = script(
        ("extract", "r1", extraction(
            [memory(OSLO, labels=["fact"], entities=["m"], fact=("m", "city", "Oslo")),
             memory(SEATS, labels=["preference"])],
            [entity("m", "Morgan")])),
        ("review", "r1", review("keep")))
    clock.now = START - timedelta(days=90)
    store, _ = open_capture(root, records, clock=clock)
    ids: dict[str, str] = {}
    with store:
        store.persist_completed_turn(turn("r1", "About Morgan and my seats"))
        store.drain()
        ids[OLDER] = store.remember(OLDER).memory_id
        clock.now = START - timedelta(days=1)
        ids[NEWER] = store.remember(NEWER).memory_id
        ids[DENTIST] = store.remember(DENTIST, due_at="2026-06-01").memory_id
        ids[PASSPORT] = store.remember(PASSPORT).memory_id
        store.set_status(ids[PASSPORT], "done")
        store.drain()
    for text in (OSLO, SEATS):
        ids[text] = str(index_rows(root, "SELECT id FROM memories WHERE text = ?",
                                   (text,))[0][0])
    clock.now = START
    return ids


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = Clock()
    root = tmp_path / "root"
    return World(root, clock, build(root, clock))


def reader(world: World, recall: dict[str, bool] | None = None, *,
           embedder: BagEmbedder | None = None) -> MemoryStore:
    """The world's root opened with ``memory.recall`` = ``recall`` (None: no recall block)."""
    block: dict[str, Any] = dict(CAPTURE)
    if recall is not None:
        block["recall"] = recall
    return MemoryStore.open(world.root, parse_config(block), clock=world.clock,
                            background=False, embedder=embedder or BagEmbedder(),
                            chat_model=ScriptedChat([]), time_zone="UTC")


@dataclass(frozen=True)
class Reads:
    recall: dict[str, Any]
    auto: dict[str, str]
    profile: str
    journal: list[Any]


AUTO_TEXTS = (DENTIST + " please", PASSPORT + " soon", "Where does Morgan live these days?",
              SEATS + " please", LUNCH_QUERY + " again")
RECALL_QUERIES = (LUNCH_QUERY, DENTIST, PASSPORT, "Morgan Oslo", "harbour")


def reads(world: World, recall: dict[str, bool] | None) -> Reads:
    with reader(world, recall) as store:
        return Reads(
            recall={q: store.recall(q, 10).to_json() for q in RECALL_QUERIES},
            auto={t: store.auto_context(t).text for t in AUTO_TEXTS},
            profile=store.profile().text,
            journal=[e for e in store.journal("2026-04-05", "2026-05-04", "UTC", 25)
                     .to_json()["entries"]])


def ranked(result: dict[str, Any]) -> list[str]:
    return [r["text"] for r in result["results"]]


def scores(result: dict[str, Any]) -> dict[str, float]:
    return {r["id"]: r["score"] for r in result["results"]}


def test_m24_automatic_context_leaves_out_dated_and_closed_lines(world: World) -> None:
    with reader(world) as store:
        assert DENTIST in store.auto_context(DENTIST + " please").text  # today's behaviour
        assert PASSPORT in store.auto_context(PASSPORT + " soon").text
    with reader(world, EXPIRY) as store:
        dated = store.auto_context(DENTIST + " please").text
        assert DENTIST not in dated  # dated, even before its end (2026-06-01)
        assert PASSPORT not in store.auto_context(PASSPORT + " soon").text  # done
        assert OLDER in store.auto_context(LUNCH_QUERY + " again").text  # undated, open: kept
        # nothing is mutated: the lines stay in deliberate recall, statuses as they were
        assert DENTIST in ranked(store.recall(DENTIST, 10).to_json())
        assert store.recall(PASSPORT, 10).recall.hits[0].status == "done"


def test_m24_background_and_person_card_leave_out_closed_sources(world: World) -> None:
    where = "Where does Morgan live these days?"
    with reader(world, EXPIRY) as store:  # open sources: card and background as before
        assert "city: Oslo" in store.auto_context(where).text
        assert SEATS in store.auto_context(SEATS + " please").text
        store.set_status(world.ids[OSLO], "done")
        store.set_status(world.ids[SEATS], "done")
    with reader(world) as store:  # off: done lines still feed both
        assert "city: Oslo" in store.auto_context(where).text
        assert SEATS in store.auto_context(SEATS + " please").text
    with reader(world, EXPIRY) as store:
        assert "Person: Morgan" not in store.auto_context(where).text
        assert SEATS not in store.auto_context(SEATS + " please").text


def test_m24_excluded_ids_reads_due_dates_and_statuses(world: World) -> None:
    with active_index(world.root) as conn:
        statuses = {i: s for i, s in conn.execute("SELECT id, status FROM memories")}
        out = excluded_ids(conn, statuses)
    assert out == {world.ids[DENTIST], world.ids[PASSPORT]}
    assert excluded_ids(conn, {}) == frozenset()


def test_m25_deliberate_currentness_reads_due_as_an_inclusive_end(tmp_path: Path) -> None:
    clock = Clock(datetime(2026, 5, 4, 9, 0, tzinfo=UTC))
    store, _ = open_capture(tmp_path / "root", [], clock=clock, recall=EXPIRY)

    def seen(query: str) -> Hit:
        return store.recall(query, 10).recall.hits[0]

    with store:
        day = store.remember("Pay the rent for the flat", due_at="2026-05-04").memory_id
        store.remember("Call the plumber about the boiler",
                       due_at="2026-05-04T12:00:00+02:00")  # 10:00Z
        store.drain()
        assert seen("Pay the rent for the flat").currentness == "current"
        clock.now = datetime(2026, 5, 4, 23, 59, 59, 999000, tzinfo=UTC)  # the last moment
        assert seen("Pay the rent for the flat").currentness == "current"
        clock.now = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)  # the inclusive instant
        assert seen("Call the plumber about the boiler").currentness == "current"
        clock.now = datetime(2026, 5, 4, 10, 0, 0, 1000, tzinfo=UTC)
        plumber = seen("Call the plumber about the boiler")
        assert plumber.currentness == "ended"
        assert plumber.ended_on == datetime(2026, 5, 4, 12, 0, tzinfo=timezone(
            timedelta(hours=2)))  # its offset kept (G15)
        clock.now = datetime(2026, 5, 5, 0, 0, tzinfo=UTC)  # the next civil day
        rent = seen("Pay the rent for the flat")
        assert rent.currentness == "ended" and rent.ended_on == date(2026, 5, 4)
        store.set_status(day, "done")  # a closed status keeps its prefix
        text = store.recall("Pay the rent for the flat", 10).text
        assert "[done] [ended 2026-05-04] Pay the rent for the flat" in text
        assert seen("Pay the rent for the flat").currentness == "ended"
        store.remember("Pay the rent for the flat by transfer", supersedes=day)
        store.drain()
        old = [h for h in store.recall("Pay the rent for the flat", 10).recall.hits
               if h.id == day]
        assert old and old[0].currentness == "superseded"  # supersession unchanged


def test_m28_recency_reorders_deliberate_hybrid_recall(world: World) -> None:
    with reader(world) as store:
        off = store.recall(LUNCH_QUERY, 10)
    with reader(world, RECENCY) as store:
        on = store.recall(LUNCH_QUERY, 10)
        limited = store.recall(LUNCH_QUERY, 1)
    assert not off.degraded and not on.degraded
    assert ranked(off.to_json())[:2] == [OLDER, NEWER]  # base order: the older line first
    assert ranked(on.to_json())[:2] == [NEWER, OLDER]  # a day old beats 90 days old
    assert off.recall.hits[0].score >= off.recall.hits[1].score  # the base really favours cafe
    assert scores(on.to_json()) == scores(off.to_json())  # scores and membership unchanged
    assert ranked(limited.to_json()) == [OLDER]  # the delivered set is the base one (M32)


def test_m29_recency_terms_skip_facts_preferences_and_labelled_notes(world: World) -> None:
    with reader(world, RECENCY) as store:
        hits = [h for q in (OSLO, SEATS, OLDER) for h in store.recall(q, 10).recall.hits]
    with active_index(world.root) as conn:
        terms = recency_terms(conn, hits, now=START)
    assert world.ids[OSLO] not in terms and world.ids[SEATS] not in terms
    assert terms[world.ids[OLDER]] == pytest.approx(0.02 * 0.5 ** 3)  # 90 days: 3 half-lives


def test_m28_degraded_lexical_recall_ignores_recency(world: World) -> None:
    def lexical(recall: dict[str, bool] | None) -> dict[str, Any]:
        down = BagEmbedder()
        down.down = True  # a provider outage: lexical-only, degraded
        with reader(world, recall, embedder=down) as store:
            result = store.recall(LUNCH_QUERY, 10)
            assert result.degraded
            return result.to_json()

    base = lexical(None)
    assert ranked(base)[:2] == [OLDER, NEWER]  # close enough that recency would flip them
    assert lexical(RECENCY) == base


def test_m32_recency_never_touches_automatic_profile_or_journal(world: World) -> None:
    off, on = reads(world, None), reads(world, RECENCY)
    assert on.auto == off.auto
    assert on.profile == off.profile
    assert on.journal == off.journal
    assert on.recall[LUNCH_QUERY] != off.recall[LUNCH_QUERY]  # while recall does move


def test_m33_flags_off_equal_absent_and_each_switch_alone(world: World) -> None:
    absent = reads(world, None)
    assert reads(world, {}) == absent
    assert reads(world, {"intentExpiry": False, "recency": False}) == absent
    expiry, recency = reads(world, EXPIRY), reads(world, RECENCY)
    assert expiry.recall == absent.recall  # intentExpiry alone: deliberate recall unchanged
    assert expiry.auto != absent.auto
    assert recency.auto == absent.auto  # recency alone: automatic context unchanged
    assert recency.recall != absent.recall
    both = reads(world, {**EXPIRY, **RECENCY})
    assert both.auto == expiry.auto and both.recall == recency.recall
    assert reads(world, None) == absent  # rolled back: the same reads again


# --------------------------------------------------------------------------------------------
# The CLI reads the root's own recorded flags


@pytest.fixture
def bag_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(memory_es.root, "make_embedder", lambda block: BagEmbedder())
    yield


def cli_json(capsys: pytest.CaptureFixture[str], root: Path,
             recall: dict[str, bool] | None, query: str) -> dict[str, Any]:
    """``memory-es search --json`` on ``root`` with a ``--config`` file whose
    ``memory.recall`` is ``recall`` (the root records no read policy: the config file says)."""
    block: dict[str, Any] = dict(CAPTURE)
    if recall is not None:
        block["recall"] = recall
    config = root.parent / f"config-{len(list(root.parent.glob('config-*')))}.json"
    config.write_text(json.dumps({"memory": block}), encoding="utf-8")
    assert main(["--root", str(root), "--config", str(config), "search", query, "--limit",
                 "10", "--json"]) == 0
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    return body


def test_m28_cli_search_orders_by_recency_when_the_config_sets_it(
        tmp_path: Path, bag_cli: None, capsys: pytest.CaptureFixture[str]) -> None:
    now = datetime.now(UTC)  # the CLI reads the real clock
    clock = Clock(now - timedelta(days=90))
    store, _ = open_capture(tmp_path / "root", [], clock=clock)
    with store:
        store.remember(OLDER)
        clock.now = now - timedelta(days=1)
        store.remember(NEWER)
        store.drain()
    off = cli_json(capsys, tmp_path / "root", None, LUNCH_QUERY)
    on = cli_json(capsys, tmp_path / "root", RECENCY, LUNCH_QUERY)
    assert ranked(off)[:2] == [OLDER, NEWER]
    assert ranked(on)[:2] == [NEWER, OLDER]
    assert scores(on) == scores(off)
    assert cli_json(capsys, tmp_path / "root", {"recency": False}, LUNCH_QUERY) == off


def test_m25_cli_search_when_the_config_sets_intent_expiry(
        tmp_path: Path, bag_cli: None, capsys: pytest.CaptureFixture[str]) -> None:
    today = datetime.now(UTC).date()
    store, _ = open_capture(tmp_path / "root", [])
    with store:
        store.remember("Water the garden roses", due_at=(today - timedelta(days=2)).isoformat())
        store.remember("Water the garden tulips", due_at=(today + timedelta(days=2)).isoformat())
        store.drain()
    body = cli_json(capsys, tmp_path / "root", EXPIRY, "Water the garden")
    state = {r["text"]: r["currentness"] for r in body["results"]}
    assert state == {"Water the garden roses": "ended", "Water the garden tulips": "current"}
    # without the switch a note's due= is a deadline, not an end (G14: only an event's)
    off = cli_json(capsys, tmp_path / "root", None, "Water the garden")
    assert {r["text"]: r["currentness"] for r in off["results"]} == {
        "Water the garden roses": "current", "Water the garden tulips": "current"}
    assert [r["id"] for r in off["results"]] == [r["id"] for r in body["results"]]


def test_m33_reads_do_not_write(world: World) -> None:
    """M26: no marker, field or migration: reading under both flags appends no event."""
    with reader(world, {**EXPIRY, **RECENCY}) as store:
        before = len(list(store.events()))
        store.recall(LUNCH_QUERY, 10)
        store.auto_context(DENTIST + " please")
        assert len(list(store.events())) == before


def test_m31_hit_fields_survive_reordering() -> None:
    a = replace(hit("a", 0.9), currentness="ended", ended_on=date(2026, 1, 1))
    out = reorder((a, hit("b", 0.89)), {"b": 0.02}, NOMIC_V15)
    assert out[1] is a


def test_m25_g14_which_due_dates_end_a_line() -> None:
    """G14: an event's past dueAt ends it; a note's only under intentExpiry (M25); a task's
    dueAt is a deadline and never ends it; validTo ends every kind."""
    now = datetime(2026, 5, 10, 12, 0, tzinfo=UTC)
    past = date(2026, 5, 1)

    def state(kind: str, *, expiry: bool, **terms: Any) -> str:
        candidate = Candidate(id="x", text="t", type=kind, status="open", **terms)
        return currentness(candidate, now, UTC, note_due_ends=expiry)

    for expiry in (False, True):
        assert state("event", expiry=expiry, due_at=past) == "ended"
        assert state("task", expiry=expiry, due_at=past) == "current"
        for kind in ("note", "event", "task"):
            assert state(kind, expiry=expiry, valid_to=past) == "ended"
    assert state("note", expiry=False, due_at=past) == "current"
    assert state("note", expiry=True, due_at=past) == "ended"
    assert state("note", expiry=True, due_at=date(2026, 5, 10)) == "current"  # inclusive day
