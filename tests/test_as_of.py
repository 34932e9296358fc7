"""Recall as of an instant (issue 14 item 5; G13, G14, C9, E13).

One root is written through a history: a Journal-tier turn, then BuJo captures with the
scripted model where each step SUPERSEDEs the line before it. The test then asks as of each
step, on the writer (``MemoryStore``), the read-only door (``MemoryRoot``) and the CLI: the
line current then is current, later lines are absent, and an old line reads ``superseded``
only after its supersession. Every commit lands minutes after its turn was admitted, so a
cut by event timestamp (instead of by journal position, one commit whole) would be caught.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers_capture import (
    CAPTURE,
    START,
    BagEmbedder,
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
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.errors import InvalidArgumentError
from memory_es.events import Intake, Memory
from memory_es.intake import CompletedTurn
from memory_es.recall import RecallResult
from memory_es.recall.as_of import check_as_of
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from projections.asof import as_of_cut

QUERY = "Where does Morgan live?"
DEPLOY = "The deploy window is Friday at noon"
CITIES = ("Berlin", "Madrid", "Lisbon")
MORGAN = [entity("m", "Morgan")]
JOURNAL = {"mode": "journal", "embeddings": {"dim": 256}}
# A reader whose provider is down (nothing listens on port 9): recall degrades to lexical.
DOWN = {**CAPTURE, "embeddings": {"dim": 256, "endpoint": "http://127.0.0.1:9",
                                  "timeoutMs": 200}}


def at(hours: float, minutes: float = 0) -> datetime:
    return START + timedelta(hours=hours, minutes=minutes)


def line(city: str) -> str:
    return f"Morgan lives in {city}"


def history() -> list[dict[str, str]]:
    """Seed Berlin, then each step supersedes the line before it (E13)."""
    records = script(("extract", "seed", extraction([memory(line("Berlin"), entities=["m"])],
                                                    MORGAN)),
                     ("review", "seed", review("keep")))
    for run_id, city in (("fix1", "Madrid"), ("fix2", "Lisbon")):
        records += script(
            ("extract", run_id, extraction([memory(f"Morgan moved to {city}", entities=["m"])],
                                           MORGAN)),
            ("review", run_id, review("keep")),
            ("reconcile", run_id, reconcile({"action": "SUPERSEDE", "target": "m1",
                                             "text": line(city)})))
    return records


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Clock]]:
    """The history, each turn admitted on the hour and committed five minutes later:
    09:00 Journal turn (committed 09:05), 10:00 Berlin, 11:00 Madrid, 12:00 Lisbon."""
    root = tmp_path_factory.mktemp("asof") / "mem"
    clock = Clock()
    store = MemoryStore.open(root, parse_config(JOURNAL), clock=clock, background=False,
                             embedder=BagEmbedder())
    with store:
        store.persist_completed_turn(CompletedTurn(run_id="j1", outcome="success",
                                                   answer=DEPLOY, session="web:j"))
        clock.advance(minutes=5)
        assert store.drain() == 1
    store, _model = open_capture(root, history(), clock=clock)
    with store:
        for hour, run_id, text in ((1, "seed", "Morgan lives in Berlin"),
                                   (2, "fix1", "Actually Morgan moved to Madrid"),
                                   (3, "fix2", "Morgan moved again, to Lisbon")):
            clock.now = at(hour)
            store.persist_completed_turn(turn(run_id, text))
            clock.advance(minutes=5)
            assert store.drain() == 1
    clock.now = at(5)
    yield root, clock


def morgan(result: RecallResult) -> dict[str, str]:
    """City -> currentness of the Morgan lines in a recall result."""
    return {city: hit.currentness for hit in result.recall.hits for city in CITIES
            if hit.text == line(city)}


# What the store knew at each instant: (instant, Morgan lines and their currentness).
STEPS = [
    (at(-1), {}),                                  # before the first event
    (at(1, 2), {}),                                # Berlin admitted, not yet curated
    (at(1, 30), {"Berlin": "current"}),
    (at(2, 2), {"Berlin": "current"}),             # Madrid's commit not yet landed
    (at(2, 30), {"Berlin": "superseded", "Madrid": "current"}),
    (at(3, 30), {"Berlin": "superseded", "Madrid": "superseded", "Lisbon": "current"}),
]


def test_as_of_each_step_of_a_supersession_history_on_the_writer(
        written: tuple[Path, Clock]) -> None:
    root, clock = written
    store, _model = open_capture(root, [], clock=clock)
    with store:
        for instant, expected in STEPS:
            result = store.recall(QUERY, 10, as_of=instant)
            assert morgan(result) == expected, instant
            assert result.as_of == instant.isoformat(timespec="milliseconds").replace(
                "+00:00", "Z")
        # now, and any instant after it, is exactly the live answer
        live = store.recall(QUERY, 10)
        for instant in (clock.now, datetime(2999, 1, 1, tzinfo=UTC)):
            answer = store.recall(QUERY, 10, as_of=instant)
            assert answer.recall == live.recall
            assert answer.as_of == "2026-05-04T14:00:00.000Z"  # a future instant is now


def test_as_of_on_the_read_only_door_writes_nothing(written: tuple[Path, Clock]) -> None:
    root, _clock = written
    before = files(root)
    reader = MemoryRoot.open(root, parse_config(DOWN))
    for instant, expected in STEPS:
        assert morgan(reader.recall(QUERY, 10, as_of=instant)) == expected, instant
    # the Journal-tier line: absent until its commit at 09:05, then current
    assert [h.text for h in reader.search(DEPLOY, 5, as_of=at(0, 2)).recall.hits] == []
    found = reader.search(DEPLOY, 5, as_of=at(0, 6).astimezone().isoformat())
    assert [h.text for h in found.recall.hits][:1] == [DEPLOY]
    empty = reader.recall(QUERY, 10, as_of=at(-1))
    assert empty.recall.hits == () and empty.position == 0
    reader.close()
    assert files(root) == before


def files(root: Path) -> dict[Path, int]:
    """Every file and its mtime, but SQLite's -wal and -shm, which any reader maps."""
    return {p: p.stat().st_mtime_ns for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def test_as_of_vectors_come_from_the_cache_not_the_embedder(
        written: tuple[Path, Clock]) -> None:
    """Every line's text was embedded by the writer: an as-of fold embeds only the query."""
    root, clock = written
    embedder = CountingEmbedder()
    store = MemoryStore.open(root, parse_config(CAPTURE), clock=clock, background=False,
                             embedder=embedder)
    with store:
        result = store.recall(QUERY, 10, as_of=at(2, 30))
        assert not result.degraded, result.reason
        assert embedder.texts == [QUERY]
        store.recall(QUERY, 10, as_of=at(2, 31))  # the same cut: the fold is kept
        assert embedder.texts == [QUERY, QUERY]


class CountingEmbedder(BagEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return super().embed(texts)


def test_cli_search_as_of(written: tuple[Path, Clock],
                          capsys: pytest.CaptureFixture[str]) -> None:
    root, _clock = written
    config = root.parent / "lexical.json"
    config.write_text(json.dumps({"memory": DOWN}))
    args = ["--root", str(root), "--config", str(config), "search", QUERY, "--limit", "10"]
    assert main([*args, "--as-of", "2026-05-04T12:30:00+01:00", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["asOf"]["instant"] == "2026-05-04T11:30:00.000Z"
    texts = {r["text"]: r["currentness"] for r in body["results"]}
    assert texts[line("Madrid")] == "current" and line("Lisbon") not in texts
    assert main([*args, "--as-of", "2026-05-04T10:30Z"]) == 0
    out, err = capsys.readouterr()
    assert line("Berlin") in out and line("Madrid") not in out
    assert "as of 2026-05-04T10:30:00.000Z: journal position" in err


@pytest.mark.parametrize("bad", ["yesterday", "2026-05-04", "2026-05-04T10:30",
                                 "2026-13-04T10:30Z", ""])
def test_cli_malformed_as_of_is_a_usage_error_naming_the_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    code = main(["--root", str(tmp_path / "none"), "search", "x", "--as-of", bad])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "argument --as-of:" in err
    assert not (tmp_path / "none").exists()


def test_an_instant_needs_its_offset() -> None:
    with pytest.raises(InvalidArgumentError, match="offset"):
        check_as_of(datetime(2026, 5, 4, 10))  # naive: names no instant
    assert check_as_of("2026-05-04T10:30:00.5+02:00") == datetime(
        2026, 5, 4, 8, 30, 0, 500000, tzinfo=UTC)


def test_the_cut_never_splits_a_commit(written: tuple[Path, Clock]) -> None:
    """The Journal turn's observation is stamped 09:00 (its admission) but committed at 09:05
    with its resolution: at 09:02 the cut stays before it, although a cut by event timestamp
    would take it; at 09:05 the whole commit is in."""
    root, _clock = written
    events = MemoryRoot.open(root).events()
    early, landed = as_of_cut(events, at(0, 2)), as_of_cut(events, at(0, 5))
    after_early = [e for p, e in events if p > early]
    assert type(after_early[0]).__name__ == "Recorded"
    assert after_early[0].timestamp <= at(0, 2)  # a timestamp filter would have held it
    assert [type(e).__name__ for p, e in events if early < p <= landed][:2] == [
        "Recorded", "Resolved"]
    assert as_of_cut(events, at(-1)) == 0
    assert as_of_cut(events, at(9)) == events[-1][0]


def test_the_cut_holds_back_only_a_commit_whose_resolution_comes_later() -> None:
    """Synthetic journals: an observation stamped before T whose intake is resolved after T is
    held back; one whose intake is resolved before T, or never (nothing to wait for), is not."""
    def recorded(run: str | None, hour: float) -> Any:
        return Memory.recorded(at=at(hour), memory_id=run or "r", kind="note", text="x",
                               day="2026-05-04", status="open", source="remember",
                               session=None, run_hash=run, tier="journal")

    def resolved(run: str, hour: float) -> Any:
        return Intake.resolved(run_hash=run, version=1, at=at(hour), outcome="projected")

    a, b = "a" * 64, "b" * 64
    assert as_of_cut([(1, recorded(a, 0)), (2, resolved(a, 2))], at(1)) == 0
    assert as_of_cut([(1, recorded(a, 0)), (2, resolved(a, 1))], at(1)) == 2
    assert as_of_cut([(1, recorded(a, 0)), (2, recorded(b, 2))], at(1)) == 1
    assert as_of_cut([(1, recorded(None, 0)), (2, recorded(a, 0.5)), (3, resolved(a, 2))],
                     at(1)) == 1


def test_as_of_before_a_forget_returns_nothing_of_the_forgotten_line(tmp_path: Path) -> None:
    """A forgotten memory is in no past: before, an as-of instant ahead of the forget
    returned it as a blank hit with its id, instant and score."""
    root = tmp_path / "mem"
    clock = Clock()
    with MemoryStore.open(root, parse_config(JOURNAL), clock=clock, background=False,
                          embedder=BagEmbedder()) as store:
        for run_id, text in (("k1", "The spare key hides under the blue pot"),
                             ("k2", "The spare bike pump hides in the blue shed")):
            store.persist_completed_turn(CompletedTurn(run_id=run_id, outcome="success",
                                                       answer=text, session="web:k"))
        assert store.drain() == 2
        before = clock.now + timedelta(minutes=1)
        clock.advance(minutes=10)
        (pot,) = [h for h in store.recall("spare key blue", 10).recall.hits if "pot" in h.text]
        store.forget(pot.id, reason="user-request")
        for door in (store, MemoryRoot.open(root)):
            for query in ("spare key blue", "what is the weather"):  # a match, and none
                past = door.recall(query, 10, as_of=before)
                assert pot.id not in json.dumps(past.to_json()), query
                assert [h.text for h in past.recall.hits] == [
                    "The spare bike pump hides in the blue shed"], query
