"""SPEC I (MemoryJournal), K (Markdown format & provenance) and D (tier projections): the IDs
no older test was named after (issue 15 coverage).

Every test drives a real root: turns admitted or remembered through ``MemoryStore`` with a
settable clock, read back through ``MemoryStore``/``MemoryRoot`` and the ``memory-es`` CLI, and
checked against the active index generation and the Markdown on disk.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from helpers_attack import EchoModel, tier_config
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
from helpers_index import active_index_path, index_rows
from memory_es import MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.intake import CompletedTurn
from memory_es.testing import WordBagEmbedder

DAY = "2026-05-04"  # helpers_capture.START's UTC day
RANGE = {"fromDate": DAY, "throughDate": DAY, "timeZone": "UTC"}


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes: the runtime directory, SQLite's shared-memory
    files (a reader maps them) and empty write-ahead logs (a reader may create one) aside."""
    files = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or ".runtime" in rel.parts or p.name.endswith("-shm"):
            continue
        data = p.read_bytes()
        if p.name.endswith("-wal") and not data:
            continue
        files[str(rel)] = data
    return files


def cli_json(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> dict[str, Any]:
    assert main(["--root", str(root), "journal", *argv, "--json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def open_tier(root: Path, tier: str, clock: Clock) -> MemoryStore:
    extra: dict[str, Any] = {}
    if tier != "lite":
        extra["embedder"] = WordBagEmbedder()
    if tier == "bujo_capture":
        extra["chat_model"] = EchoModel()
    return MemoryStore.open(root, tier_config(tier), clock=clock, background=False, **extra)


# -- I1: the curated local index, never a copy ---------------------------------------------------


def test_i1_journal_reads_the_curated_index_and_copies_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The journal's entries are exactly the curated ``memories`` rows of the range (ids,
    texts, instants, in order); reading it creates or changes no file, table or row: it is
    not another index and copies nothing."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 5, 4, 8, tzinfo=UTC))
    with MemoryStore.open(root, clock=clock, background=False) as store:
        for i, text in enumerate(["Heron on the pier", "Kettle descaled", "Tram 4 detoured"]):
            clock.now += timedelta(minutes=7)
            assert store.persist_completed_turn(CompletedTurn(
                run_id=f"r{i}", outcome="success", answer=text)).status == "admitted"
        clock.now = datetime(2026, 5, 5, 9, tzinfo=UTC)  # the next day: outside the range
        store.persist_completed_turn(CompletedTurn(run_id="late", outcome="success",
                                                   answer="Next day only"))
        assert store.drain() == 4
    before = tree(root)
    schema = index_rows(root, "SELECT type, name FROM sqlite_master ORDER BY name")
    page = cli_json(capsys, root, "--from", DAY, "--through", DAY, "--tz", "UTC")
    api = MemoryRoot.open(root).journal(RANGE).to_json()
    rows = index_rows(root, "SELECT id, text, recorded_at FROM memories "
                            "WHERE day = ? ORDER BY recorded_at, id", (DAY,))
    assert [(e["id"], e["text"], e["recordedAt"]) for e in page["entries"]] == rows
    assert len(rows) == 3 and api["entries"] == page["entries"]
    assert tree(root) == before
    assert index_rows(root, "SELECT type, name FROM sqlite_master ORDER BY name") == schema


# -- I12: every tier, read-only handles ----------------------------------------------------------


@pytest.mark.parametrize("tier", ["lite", "journal", "bujo_capture"])
def test_i12_every_tier_answers_through_a_read_only_handle(
        tmp_path: Path, tier: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Lite, Journal and BuJo roots all answer MemoryJournal, through the read-only
    ``MemoryRoot`` and the CLI, after the writer closed; neither changes a byte of the root."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 5, 4, 10, tzinfo=UTC))
    with open_tier(root, tier, clock) as store:
        written = store.remember("The boiler service is due in June.", session="web:a")
        assert written.status == "remembered"
        clock.now += timedelta(hours=1)
        second = store.remember("The spare key is with Dana next door.", session="web:a")
    before = tree(root)
    with MemoryRoot.open(root) as reader:
        page = reader.journal({**RANGE, "limit": 1})
        assert [e.id for e in page.entries] == [written.memory_id]
        assert page.entries[0].text == "The boiler service is due in June."
        assert page.cursor is not None
        rest = reader.journal({"cursor": page.cursor})
        assert [e.id for e in rest.entries] == [second.memory_id] and rest.cursor is None
    out = cli_json(capsys, root, "--from", DAY, "--through", DAY, "--tz", "UTC")
    assert [e["id"] for e in out["entries"]] == [written.memory_id, second.memory_id]
    assert all(e["source"] == f"daily/{DAY}.md" for e in out["entries"])
    assert tree(root) == before


# -- I13: canonical source and the supersession state at snapshot time ---------------------------


def test_i13_sources_and_supersession_state_are_those_of_the_snapshot(tmp_path: Path) -> None:
    """An entry names its canonical daily file (which holds the line); a supersession after
    the first page does not change the snapshot's later pages, while a new request shows the
    old line superseded and its replacement current."""
    root = tmp_path / "root"
    old, other, new = "Morgan lives in Berlin", "Kettle descaled", "Morgan lives in Madrid"
    morgan = [entity("m", "Morgan")]
    records = script(
        ("extract", "seed", extraction([memory(old, entities=["m"])], morgan)),
        ("review", "seed", review("keep")),
        ("extract", "kettle", extraction([memory(other)])),
        ("review", "kettle", review("keep")),
        ("extract", "fix", extraction([memory("Morgan moved to Madrid", entities=["m"])],
                                      morgan)),
        ("review", "fix", review("keep")),
        ("reconcile", "fix", reconcile({"action": "SUPERSEDE", "target": "m1", "text": new})))
    clock = Clock()
    store, _ = open_capture(root, records, clock=clock)
    with store:
        store.persist_completed_turn(turn("seed", old))
        store.persist_completed_turn(turn("kettle", other))
        store.drain()
        first = store.journal(DAY, DAY, "UTC", limit=1)
        assert first.cursor is not None
        clock.advance(hours=2)  # still the same day
        store.persist_completed_turn(turn("fix", "Morgan moved to Madrid", session="web:b"))
        store.drain()
        frozen = [*first.entries, *store.journal_continue(first.cursor).entries]
        fresh = store.journal(DAY, DAY, "UTC", limit=25)
    assert {e.text: (e.status, e.currentness) for e in frozen} == {
        old: ("open", "current"), other: ("open", "current")}
    assert {e.text: (e.status, e.currentness) for e in fresh.entries} == {
        old: ("superseded", "superseded"), other: ("open", "current"),
        new: ("open", "current")}
    daily = (root / "daily" / f"{DAY}.md").read_text("utf-8")
    for entry in fresh.entries:
        assert entry.source == f"daily/{DAY}.md"
        assert entry.text in daily and entry.id in daily


# -- I17: recency never touches chronology ---------------------------------------------------------


def test_i17_recency_and_access_never_reorder_the_journal(tmp_path: Path) -> None:
    """With ``recall.recency`` on (BuJo), after recalls that favour the newest line, the
    journal is still oldest-first by recording instant and identical to the recency-off view."""
    root = tmp_path / "root"
    texts = [f"Garden note {n}: planted {crop}" for n, crop in
             enumerate(["beans", "leeks", "garlic", "chard"])]
    clock = Clock(datetime(2026, 5, 4, 6, tzinfo=UTC))
    with_recency = parse_config({**CAPTURE, "recall": {"recency": True}})
    store = MemoryStore.open(root, with_recency, clock=clock, background=False,
                             embedder=WordBagEmbedder(), chat_model=EchoModel())
    with store:
        ids = []
        for text in texts:
            clock.advance(hours=3)
            ids.append(store.remember(text, session="web:g").memory_id)
        for _ in range(3):  # access telemetry for the newest line
            hits = store.recall("planted chard").recall.hits
            assert hits and hits[0].text == texts[-1]
    on = MemoryRoot.open(root, with_recency).journal({**RANGE, "limit": 25}).to_json()
    off = MemoryRoot.open(root, parse_config(CAPTURE)).journal(
        {**RANGE, "limit": 25}).to_json()
    assert [e["id"] for e in on["entries"]] == ids
    assert [e["recordedAt"] for e in on["entries"]] == sorted(e["recordedAt"]
                                                              for e in on["entries"])
    assert on["entries"] == off["entries"]


# -- K5, K8, K9, K11: provenance and daily-file rewrites -----------------------------------------


def daily(root: Path, day: str = DAY) -> str:
    return (root / "daily" / f"{day}.md").read_text("utf-8")


def test_k5_source_session_survives_restart_and_a_rebuild_restores_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each line's ``source_session`` is the same in Markdown and index after a restart and
    after ``memory-es rebuild``; a session edited away in the index comes back on rebuild."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 5, 4, 9, tzinfo=UTC))
    config = parse_config({"mode": "journal", "embeddings": {"provider": "local"}})
    sessions = {"Otter seen at the weir": "web:t-1", "Bread rises overnight": "web:t-2",
                "Fence paint is sage green": None}
    with MemoryStore.open(root, config, clock=clock, background=False,
                          embedder=WordBagEmbedder()) as store:
        for i, (text, session) in enumerate(sessions.items()):
            store.persist_completed_turn(CompletedTurn(run_id=f"k5-{i}", outcome="success",
                                                       answer=text, session=session))
        assert store.drain() == 3
    query = "SELECT text, source_session FROM memories"
    assert dict(index_rows(root, query)) == sessions
    markdown = daily(root)
    with MemoryStore.open(root, config, clock=clock, background=False,
                          embedder=WordBagEmbedder()):
        pass  # a restart changes nothing
    assert daily(root) == markdown and dict(index_rows(root, query)) == sessions
    writer = apsw.Connection(str(active_index_path(root)), flags=apsw.SQLITE_OPEN_READWRITE)
    writer.execute("UPDATE memories SET source_session = NULL")
    writer.close()
    assert main(["--root", str(root), "rebuild"]) == 0
    capsys.readouterr()
    assert dict(index_rows(root, query)) == sessions
    assert daily(root) == markdown
    for text, session in sessions.items():
        line = markdown[markdown.index(f"- {text}\n"):].split("\n")[1]
        assert line.endswith(f" source_session={session}-->" if session else "-->")
        assert (session is None) == ("source_session=" not in line)


def test_k8_no_backfill_from_later_turns_or_text(tmp_path: Path) -> None:
    """A line recorded without a conversation id stays without one: a later repeat of the
    same content from a known conversation (Journal converges on one line, D5) does not fill
    it in, nor does an id-like string in the text; a rebuild guesses nothing either."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 5, 4, 9, tzinfo=UTC))
    config = parse_config({"mode": "journal", "embeddings": {"provider": "local"}})
    texts = ["Buy oat milk today", "Ask web:thread-9 about the invoice"]
    with MemoryStore.open(root, config, clock=clock, background=False,
                          embedder=WordBagEmbedder()) as store:
        for i, text in enumerate(texts):
            store.persist_completed_turn(CompletedTurn(run_id=f"k8-{i}", outcome="success",
                                                       answer=text))
        assert store.drain() == 2
        clock.advance(hours=1)
        store.persist_completed_turn(CompletedTurn(run_id="k8-again", outcome="success",
                                                   answer=texts[0], session="web:later"))
        assert store.drain() == 1
        store.rebuild()
    assert dict(index_rows(root, "SELECT text, source_session FROM memories")) == {
        text: None for text in texts}
    assert "source_session" not in daily(root)
    assert "web:later" not in daily(root)


def test_k9_label_and_card_readers_do_not_expose_provenance(tmp_path: Path) -> None:
    """The labelled background and the person card show the stated facts, never the
    conversation they came from (which Markdown and index do record)."""
    root = tmp_path / "root"
    secret = "web:secret-thread-77"
    plan = extraction([
        memory("I prefer aisle seats on trains", labels=["preference"]),
        memory("Morgan works at Acme", entities=["m"], fact=("m", "employer", "Acme"))],
        [entity("m", "Morgan")])
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review("keep"))))
    with store:
        store.persist_completed_turn(turn("r1", "about Morgan", session=secret))
        store.drain()
        while store.background.embed_pending():
            pass
        card = store.auto_recall("Where does Morgan work these days, remind me?",
                                 session="web:now")
        background = store.auto_recall("aisle seats?", session="web:now")
    assert secret in daily(root)
    assert {s for (s,) in index_rows(root, "SELECT source_session FROM memories")} == {secret}
    assert "## Person: Morgan" in card and "employer: Acme (you said" in card
    assert "I prefer aisle seats on trains" in background
    for block in (card, background):
        assert "secret-thread-77" not in block and "source_session" not in block
        assert "conversation" not in block.lower()


def test_k11_a_rewrite_reserializes_every_bullet_and_fixes_one_line_bullets(
        tmp_path: Path) -> None:
    """A status change rewrites its daily file: every bullet, including one left in the legacy
    one-line form, comes out in the two-line form with its metadata intact."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 5, 4, 9, tzinfo=UTC))
    with MemoryStore.open(root, clock=clock, background=False) as store:
        alpha = store.remember("Alpha fact about the shed", session="web:a")
        beta = store.remember("Beta task: oil the hinges", session="web:b")
    two_line = daily(root)
    legacy = two_line.replace("- Alpha fact about the shed\n  <!--mem",
                              "- Alpha fact about the shed <!--mem")
    assert legacy != two_line
    (root / "daily" / f"{DAY}.md").write_text(legacy, "utf-8")
    with MemoryStore.open(root, clock=clock, background=False) as store:
        assert store.set_status(beta.memory_id, "done").outcome == "changed"
    rewritten = daily(root)
    assert rewritten == two_line.replace(
        f"id={beta.memory_id} type=note status=open", f"id={beta.memory_id} type=note status=done")
    bullets = [b for b in rewritten.split("\n\n") if b.startswith("- ")]
    assert len(bullets) == 2
    for bullet in bullets:
        text_line, meta_line = bullet.rstrip("\n").split("\n")
        assert "<!--" not in text_line and meta_line.startswith("  <!--mem id=")
    assert f"id={alpha.memory_id} type=note status=open" in rewritten


# -- D1, D14: the three tiers and what each one has ----------------------------------------------

TIER_OF = {"lite": "lite", "journal": "journal", "bujo_capture": "bujo"}


def validate(capsys: pytest.CaptureFixture[str], tmp_path: Path,
             block: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"memory": block}), "utf-8")
    code = main(["--config", str(path), "validate"])
    out, err = capsys.readouterr()
    return code, out + err


def test_d1_memory_mode_selects_one_of_three_tiers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``lite``, ``journal`` and ``bujo`` are the only modes; the mode a root is opened with is
    the tier its lines are projected under."""
    embeddings, llm = {"provider": "local"}, {"provider": "ollama", "model": "m"}
    for block in ({"mode": "lite"}, {"mode": "journal", "embeddings": embeddings},
                  {"mode": "bujo", "embeddings": embeddings, "llm": llm}):
        assert validate(capsys, tmp_path, block) == (0, "OK\n")
    for bad in ("full", "Lite", "", "bujo-capture", None, 1):
        code, said = validate(capsys, tmp_path, {"mode": bad, "embeddings": embeddings,
                                                 "llm": llm})
        assert code == 1 and "memory.mode" in said, bad
    for tier, mode in TIER_OF.items():
        root = tmp_path / tier
        with open_tier(root, tier, Clock(datetime(2026, 5, 4, 9, tzinfo=UTC))) as store:
            store.remember(f"Written under the {mode} tier", session="web:d1")
        assert index_rows(root, "SELECT tier, text FROM memories") == [
            (mode, f"Written under the {mode} tier")]


def test_d14_tier_feature_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Graph: BuJo only; capture, profile, intentLifecycle and recency: BuJo only (refused
    elsewhere); Remember, MemoryJournal and FTS: every tier; vectors: Journal and BuJo."""
    for mode, block in (("lite", {}), ("journal", {"embeddings": {"provider": "local"}})):
        for key, value, where in (("writeMode", "capture", "memory.writeMode"),
                                  ("recall", {"recency": True}, "memory.recall.recency"),
                                  ("profile", {"enabled": True}, "memory.profile.enabled")):
            code, said = validate(capsys, tmp_path, {"mode": mode, **block, key: value})
            assert code == 1 and where in said, (mode, key)
        code, said = validate(capsys, tmp_path, {"mode": mode, **block,
                                                 "capture": {"intentLifecycle": True}})
        assert code == 1 and "intentLifecycle" in said, mode
    code, _ = validate(capsys, tmp_path, {**CAPTURE, "recall": {"recency": True},
                                          "profile": {"enabled": True},
                                          "capture": {"intentLifecycle": True}})
    assert code == 0
    for tier, mode in TIER_OF.items():
        root = tmp_path / f"matrix-{tier}"
        clock = Clock(datetime(2026, 5, 4, 9, tzinfo=UTC))
        with open_tier(root, tier, clock) as store:
            clock.advance(minutes=1)
            written = store.remember("Morgan keeps the ladder in the garage", session="web:m")
            assert written.status == "remembered"  # Remember: every tier
            if tier == "bujo_capture":  # a captured turn grows the graph
                store.persist_completed_turn(CompletedTurn(
                    run_id="m1", outcome="success", answer="Noted.",
                    capture_text="Remember that Morgan fixed the gate.", session="web:m",
                    speaker_kind="human-turn"))
                store.drain()
            while store.background.embed_pending():
                pass
            assert [h.id for h in store.lexical_search("ladder")] == [written.memory_id]
            journal = store.journal(DAY, DAY, "UTC", limit=25)  # MemoryJournal: every tier
            assert written.memory_id in [e.id for e in journal.entries]
        vectors = index_rows(root, "SELECT COUNT(*) FROM vectors")[0][0]
        assert (vectors > 0) == (mode != "lite"), tier
        graph = root / "graph.jsonl"
        assert (graph.is_file() and graph.stat().st_size > 0) == (mode == "bujo"), tier
