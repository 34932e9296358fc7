"""Issue 15 item 1: the owner profile (M1-M9, C11).

The selection rule is checked on an in-memory index whose rows are written directly (validity
and due dates only come from Remember, which writes no labels, so a stored row is the only way
to put a labelled line with an end in front of the rule); the wiring through a real BuJo
capture store, the automatic context, the read-only door and the CLI after that.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import apsw
import numpy as np
import pytest

import memory_es.transfer as transfer
from helpers_capture import (
    Clock,
    extraction,
    memory,
    open_capture,
    review,
    script,
    turn,
)
from helpers_replay import FIXTURES
from memory_es import MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.config import ConfigError, parse_config
from memory_es.embeddings import EmbeddingError, EmbeddingIdentity
from memory_es.recall.sections.profile import (
    PROFILE_HEADING,
    PROFILE_MAX_CODE_POINTS,
    owner_profile,
)
from memory_es.testing import WordBagEmbedder
from memory_es.transfer import replay_export
from projections.derived import IN_MEMORY
from projections.sqlite_index import IndexProjection

NOW = datetime(2026, 5, 10, 12, 0, tzinfo=UTC)


class Index:
    """An in-memory index with the projection's own schema, rows written by hand."""

    def __init__(self) -> None:
        self.projection = IndexProjection(IN_MEMORY, create=True)
        self.conn: apsw.Connection = self.projection.conn
        self.n = 0

    def add(self, text: str, *, labels: Sequence[str] = ("fact",), scope: str = "agent",
            source: str = "user", status: str = "open", kind: str = "note",
            recorded: str = "2026-05-01T09:00:00.000Z", fact: tuple[str, str, str] | None = None,
            valid_from: str | None = None, valid_to: str | None = None,
            due_at: str | None = None, memory_id: str | None = None,
            from_task: bool = False) -> str:
        self.n += 1
        mid = memory_id or f"{self.n:064x}"
        self.conn.execute("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, "
                          "'bujo')", (self.n, mid, kind, text, recorded[:10], recorded, status,
                                      source))
        subject, key, value = fact or (None, None, None)
        self.conn.execute("INSERT INTO memory_meta VALUES (?, ?, ?, ?, 0.8, ?, ?, NULL, ?, ?, ?)",
                          (self.n, mid, ",".join(labels), scope, int(from_task), text, subject,
                           key, value))
        if valid_from or valid_to or due_at:
            self.conn.execute("INSERT INTO memory_terms VALUES (?, ?, NULL, 0, ?, ?, ?, 0)",
                              (self.n, mid, valid_from, valid_to, due_at))
        return mid

    def texts(self) -> list[str]:
        return [e.text for e in owner_profile(self.conn, now=NOW, tz=UTC).entries]


# --------------------------------------------------------------------------------------------
# M3: owner-stated owner facts and agent-scope preferences; current, open notes only


def test_m3_selects_owner_facts_and_agent_preferences_only() -> None:
    index = Index()
    index.add("I live in Lisbon")
    index.add("I prefer aisle seats", labels=("fact", "preference"))
    index.add("Sam prefers tea", labels=("preference",), scope="peer")  # not the owner's scope
    index.add("The build is green", labels=("fact",), source="tool")  # not owner-stated
    index.add("Morgan works at Acme", labels=())  # unlabelled (a Remember line, say)
    index.add("Keep answers short", labels=("lesson",))  # a lesson is not a profile entry
    profile = owner_profile(index.conn, now=NOW, tz=UTC)
    assert [(e.label, e.text) for e in profile.entries] == [
        ("fact", "I live in Lisbon"), ("preference", "I prefer aisle seats")]
    assert profile.text == "\n".join([
        PROFILE_HEADING, "", "- fact: I live in Lisbon (recorded 2026-05-01)",
        "- preference: I prefer aisle seats (recorded 2026-05-01)"])


def test_m3_leaves_out_superseded_closed_episodes_dated_and_conflicting() -> None:
    index = Index()
    index.add("I live in Lisbon")
    index.add("I lived in Porto", status="superseded")
    index.add("I was dropped", status="dropped")
    index.add("I finished the course", status="done")
    index.add("I ran a marathon on Sunday", kind="event")  # an episode
    index.add("I will renew my passport", due_at="2026-09-01")  # a dated intention
    index.add("I will call the bank", due_at="2026-01-01")  # a dated intention, past
    index.add("Buy new hiking boots", from_task=True)  # a task turned note: an intention
    index.add("I work at Globex", valid_to="2026-05-09")  # ended yesterday
    index.add("I start at Initech", valid_from="2026-06-01")  # not yet current
    index.add("My shoe size is 42", fact=("owner", "shoe_size", "42"))
    index.add("My shoe size is 43", fact=("owner", "shoe_size", "43"),
              labels=("fact",), source="document")  # a conflicting current value
    index.add("My eyes are green", fact=("owner", "eye_colour", "green"))
    index.add("My eyes are Green", fact=("owner", "eye_colour", "Green "))  # the same value
    assert index.texts() == ["I live in Lisbon", "My eyes are green", "My eyes are Green"]


def test_m3_an_ended_conflicting_value_no_longer_conflicts() -> None:
    index = Index()
    index.add("My desk is in room 4", fact=("owner", "desk", "4"))
    index.add("My desk is in room 9", fact=("owner", "desk", "9"), valid_to="2026-05-01")
    assert index.texts() == ["My desk is in room 4"]


# --------------------------------------------------------------------------------------------
# M4: newest date first, then the stable source id


def test_m4_newest_date_first_then_source_id() -> None:
    index = Index()
    index.add("old", recorded="2026-04-01T08:00:00.000Z", memory_id="a" * 64)
    index.add("late b", recorded="2026-05-02T07:00:00.000Z", memory_id="b" * 64)
    index.add("early c", recorded="2026-05-02T06:00:00.000Z", memory_id="c" * 64)
    index.add("late a", recorded="2026-05-02T23:00:00.000Z", memory_id="0" * 64)
    # one day, ordered by id (not by time of day); then the older day
    assert index.texts() == ["late a", "late b", "early c", "old"]


# --------------------------------------------------------------------------------------------
# M5: an instant ends when it passes; a civil end date holds through the host's local day


def test_m5_civil_end_inclusive_through_the_host_day_and_instants_at_the_instant() -> None:
    index = Index()
    index.add("civil", valid_to="2026-05-10")
    index.add("instant", valid_to="2026-05-10T12:00:00+00:00")
    # 2026-05-10 23:30 in UTC+02:00 is 21:30Z: the civil date still holds there
    plus2 = timezone(timedelta(hours=2))
    late = datetime(2026, 5, 10, 21, 30, tzinfo=UTC)
    assert [e.text for e in owner_profile(index.conn, now=late, tz=plus2).entries] == ["civil"]
    # in UTC+03:00 the host's day is already 2026-05-11: the civil end has passed
    plus3 = timezone(timedelta(hours=3))
    assert owner_profile(index.conn, now=late, tz=plus3).entries == ()
    before = datetime(2026, 5, 10, 11, 59, tzinfo=UTC)
    assert [e.text for e in owner_profile(index.conn, now=before, tz=UTC).entries] == [
        "civil", "instant"]


# --------------------------------------------------------------------------------------------
# M6: at most 600 code points, heading included, and memory.maxBytes; whole entries only


def test_m6_whole_entries_within_600_code_points_and_max_bytes() -> None:
    index = Index()
    long = "ż" * 400  # 400 code points, 800 bytes
    index.add(long, recorded="2026-05-03T09:00:00.000Z")
    index.add("x" * 200, recorded="2026-05-02T09:00:00.000Z")  # no longer fits after it
    index.add("short one", recorded="2026-05-01T09:00:00.000Z")  # still fits
    profile = owner_profile(index.conn, now=NOW, tz=UTC)
    assert [e.text for e in profile.entries] == [long, "short one"]
    assert profile.left_out == 1
    assert len(profile.text) <= PROFILE_MAX_CODE_POINTS
    assert len(profile.text.encode("utf-8")) > PROFILE_MAX_CODE_POINTS  # points, not bytes
    small = owner_profile(index.conn, now=NOW, tz=UTC, max_bytes=200)
    assert [e.text for e in small.entries] == ["short one"]  # the byte budget too
    assert len(small.text.encode("utf-8")) <= 200
    assert owner_profile(index.conn, now=NOW, tz=UTC, max_bytes=50).text == ""  # never cut


def test_m6_an_entry_longer_than_the_budget_is_left_out_not_cut() -> None:
    index = Index()
    index.add("y" * 700)
    profile = owner_profile(index.conn, now=NOW, tz=UTC)
    assert (profile.text, profile.left_out) == ("", 1)


# --------------------------------------------------------------------------------------------
# M7: no labels, no profile; no index, no profile


def test_m7_missing_labels_produce_no_profile() -> None:
    index = Index()
    index.add("I live in Lisbon", labels=())
    index.add("I like tea", labels=("",))
    assert owner_profile(index.conn, now=NOW, tz=UTC).text == ""
    assert owner_profile(None, now=NOW).text == ""
    bare = apsw.Connection(":memory:")  # a generation without the label tables
    bare.execute("CREATE TABLE memories (id TEXT)")
    assert owner_profile(bare, now=NOW).entries == ()


# --------------------------------------------------------------------------------------------
# M1: off by default, BuJo only


def test_m1_profile_defaults_off_and_requires_bujo() -> None:
    assert parse_config({}).profile.enabled is False
    with pytest.raises(ConfigError, match=re.escape(
            'memory.profile.enabled: true requires memory.mode "bujo"')):
        parse_config({"mode": "journal", "embeddings": {"provider": "local"},
                      "profile": {"enabled": True}})
    assert parse_config({"mode": "bujo", "embeddings": {"provider": "local"},
                         "llm": {"provider": "ollama", "model": "m"},
                         "profile": {"enabled": True}}).profile.enabled is True


# --------------------------------------------------------------------------------------------
# The wiring: a BuJo capture store (M2 engine side, M8, M9, C11)


class Switchable(WordBagEmbedder):
    """The word-bag embedder, switchable into an outage."""

    down = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.down:
            raise EmbeddingError("provider down", code="embedding_unavailable")
        return super().embed(texts)


PLAN = extraction([
    memory("I live in Lisbon"),
    memory("I prefer window seats", labels=["preference"]),
    memory("We hiked Sintra yesterday", kind="event"),
    memory("The assistant thinks I like jazz", source="assistant", salience=0.9)])


def _filled(root: Path, embedder: WordBagEmbedder, **overrides: object) -> MemoryStore:
    store, _ = open_capture(root, script(("extract", "r1", PLAN),
                                         ("review", "r1", review("keep", "keep", "keep"))),
                            clock=Clock(datetime(2026, 5, 4, 9, tzinfo=UTC)),
                            embedder=embedder, **overrides)
    store.persist_completed_turn(turn("r1", "I live in Lisbon; window seats please."))
    store.drain()
    while store.background.embed_pending():
        pass
    return store


EXPECTED = "\n".join([PROFILE_HEADING, "",
                      "- fact: I live in Lisbon (recorded 2026-05-04)",
                      "- preference: I prefer window seats (recorded 2026-05-04)"])


def test_m2_m3_profile_enters_the_automatic_context_of_owner_turns_only(tmp_path: Path) -> None:
    store = _filled(tmp_path / "mem", Switchable(), profile={"enabled": True})
    with store:
        got = store.auto_context("what should I pack for the trip to Porto?")
        assert got.profile == EXPECTED
        assert got.text.startswith(EXPECTED)
        assert "Sintra" not in got.profile and "jazz" not in got.profile
        assert store.auto_context("what should I pack?", owner=False).text == ""
        assert store.profile().text == EXPECTED


def test_m1_profile_off_leaves_the_automatic_context_unchanged(tmp_path: Path) -> None:
    store = _filled(tmp_path / "mem", Switchable())
    with store:
        got = store.auto_context("what should I pack for the trip to Porto?")
        assert got.profile == "" and PROFILE_HEADING not in got.text
        preview = store.profile()
        assert (preview.text, preview.enabled) == (EXPECTED, False)


def test_m2_a_line_the_profile_shows_is_not_repeated_in_the_block(tmp_path: Path) -> None:
    question = "Do I prefer window seats on the train?"
    with _filled(tmp_path / "off", Switchable()) as store:
        off = store.auto_context(question).text
    with _filled(tmp_path / "on", Switchable(), profile={"enabled": True}) as store:
        on = store.auto_context(question)
    assert "I prefer window seats (recorded" in off  # the block carries it without a profile
    assert on.text.startswith(EXPECTED)
    assert on.text.count("I prefer window seats") == 1  # shown once, in the profile


def test_m8_embedding_failure_keeps_the_profile(tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    embedder = Switchable()
    store = _filled(tmp_path / "mem", embedder, profile={"enabled": True})
    embedder.down = True
    with store, caplog.at_level(logging.WARNING, logger="memory_es"):
        got = store.auto_context("what should I pack for the trip to Porto?")
    assert (got.text, got.profile, got.degraded, got.reason) == (
        EXPECTED, EXPECTED, True, "provider_unavailable")
    messages = [r.getMessage() for r in caplog.records]
    assert messages and all(m.startswith("memory_recall_unavailable") for m in messages)


def _files(root: Path) -> list[tuple[Path, bytes]]:
    return sorted((p.relative_to(root), p.read_bytes()) for p in root.rglob("*")
                  if p.is_file() and not p.name.endswith(("-shm", "-wal")))


def test_c11_m9_read_only_profile_cli_and_root_apply_the_same_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "mem"
    store = _filled(root, Switchable(), profile={"enabled": True})
    store.close()
    before = _files(root)
    assert MemoryRoot.open(root).profile().text == EXPECTED
    assert main(["--root", str(root), "profile"]) == 0
    out = capsys.readouterr()
    assert out.out == EXPECTED + "\n"
    assert "memory.profile.enabled is off" in out.err  # the root's own config: the switch is off
    assert main(["--root", str(root), "profile", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["text"] == EXPECTED and shown["left_out"] == 0
    assert [e["label"] for e in shown["entries"]] == ["fact", "preference"]
    assert _files(root) == before  # M7: no new file (a reader's SQLite -shm aside)


def test_c11_profile_cli_errors_follow_the_exit_code_contract(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "none")
    assert main(["--root", missing, "profile"]) == 2 == main(["--root", missing, "list"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].endswith("no memory root here")  # one line each
    assert main(["--root", str(tmp_path), "profile", "--bogus"]) == 2


# --------------------------------------------------------------------------------------------
# Golden: the profile of the committed bujo-capture fixture, replayed with every model path
# blocked (the profile is a read of the replayed index: no model, no vector)

GOLDEN_BUJO_CAPTURE = """\
## Owner profile (what you told me about yourself; verify before relying)

- fact: Morgan lives in Madrid (recorded 2026-07-07)
- fact: Zoë Ångström lives in 東京 & likes <b>bold</b> type 👩\u200d💻 (recorded 2026-07-07)
- preference: I prefer window seats on trains (recorded 2026-07-06)
- fact: Morgan is a lead engineer at Acme Robotics (recorded 2026-07-06)
- preference: I always take the stairs (recorded 2026-07-06)"""


class _Down:
    """The recorded embedding provider, down: replay goes on without vectors."""

    def __init__(self, dim: int) -> None:
        self.identity = EmbeddingIdentity("fixture", "unreachable", dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError("blocked in this test", code="embedding_unavailable")


def test_m4_m9_golden_profile_of_the_bujo_capture_fixture(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def blocked(*args: object, **kwargs: object) -> None:
        raise OSError("no network in this test")

    monkeypatch.setattr(transfer, "make_embedder", lambda block: _Down(block.dim))
    monkeypatch.setattr(socket.socket, "connect", blocked)
    root = tmp_path / "root"
    replay_export(FIXTURES / "bujo-capture" / "journal.jsonl", root)
    profile = MemoryRoot.open(root, time_zone="UTC").profile()
    assert profile.text == GOLDEN_BUJO_CAPTURE
    assert profile.left_out == 0 and len(profile.text) <= PROFILE_MAX_CODE_POINTS
