"""The note lifecycle: status transitions as events, stored validity and when it ends
(SPEC K14, G13-G15, G22, G23, H7, I13; issue 14 item 2)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers_capture import BagEmbedder, Clock
from helpers_index import index_rows
from journal_backends import BACKENDS, use_backend
from memory_es import MemoryRoot
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.store import MemoryStore
from memory_es.vocabulary import STATUS_TRANSITIONS


@pytest.fixture(autouse=True, params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on the root's own SQLite journal and on PostgreSQL (issue 18)."""
    return use_backend(request, monkeypatch)


BUJO = {"mode": "bujo", "embeddings": {"dim": 256}, "llm": {"provider": "ollama", "model": "m"}}
TEXT = "Renew the passport before the trip."


def open_bujo(root: Path, clock: Clock | None = None, **kw: Any) -> MemoryStore:
    return MemoryStore.open(root, parse_config(BUJO), background=False,
                            embedder=BagEmbedder(), clock=clock or Clock(), **kw)


def status_of(root: Path, memory_id: str) -> str:
    return str(index_rows(root, "SELECT status FROM memories WHERE id = ?", (memory_id,))[0][0])


def daily(root: Path) -> str:
    return "".join(p.read_text("utf-8") for p in sorted((root / "daily").glob("*.md")))


# --------------------------------------------------------------------------------------------
# K14: statuses as events


ALLOWED = sorted((old, new) for old, targets in STATUS_TRANSITIONS.items() for new in targets)


@pytest.mark.parametrize("old, new", ALLOWED)
def test_k14_every_allowed_transition_is_an_event_projected_at_once(tmp_path: Path, old: str,
                                                                    new: str) -> None:
    root = tmp_path / "root"
    with open_bujo(root) as store:
        memory_id = store.remember(TEXT).memory_id
        if old != "open":
            store.set_status(memory_id, old)
        events = len(list(store.events()))
        result = store.set_status(memory_id, new, reason="by-hand")
        assert (result.outcome, result.previous, result.status) == ("changed", old, new)
        assert len(list(store.events())) == events + 1
        assert list(store.events())[-1][3] == "memory_es/Memory.StatusChanged"
        assert status_of(root, memory_id) == new
        assert f"status={new}" in daily(root)
        hits = {h.id: h for h in store.recall("renew passport trip").recall.hits}
        if new == "dropped":  # G22: terminal lines leave recall
            assert memory_id not in hits
        else:  # G23: a live status other than open is shown
            assert hits[memory_id].status == new
            assert (f"[{new}]" in store.recall("renew passport trip").text) == (new != "open")
    assert MemoryRoot.open(root).health().status == "clean"


def test_k14_forbidden_transitions_are_refused_and_write_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_bujo(root) as store:
        memory_id = store.remember(TEXT).memory_id
        same = store.set_status(memory_id[:8], "open")
        assert same.outcome == "unchanged"
        store.set_status(memory_id, "dropped")
        events = len(list(store.events()))
        for status in ("open", "done", "scheduled", "migrated"):
            with pytest.raises(MemoryEsError) as refused:
                store.set_status(memory_id, status)
            assert refused.value.code == "status_transition_refused"
            assert "history" in str(refused.value)
        for bad in ("superseded", "invalidated", "forgotten", "DONE", 3):
            with pytest.raises(InvalidArgumentError):
                store.set_status(memory_id, bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            store.set_status(memory_id, "done", reason="Not A Slug")
        with pytest.raises(MemoryEsError) as missing:
            store.set_status("f" * 64, "done")
        assert missing.value.code == "memory_not_found"
        assert len(list(store.events())) == events
        assert status_of(root, memory_id) == "dropped"


def test_k14_statuses_replay_byte_exact(tmp_path: Path) -> None:
    """Status changes are journal events: a rebuild reproduces every daily byte."""
    root = tmp_path / "root"
    with open_bujo(root) as store:
        ids = [store.remember(f"Fact number {n} about the garden.").memory_id for n in range(4)]
        for memory_id, status in zip(ids, ("done", "scheduled", "migrated", "dropped"),
                                     strict=True):
            store.set_status(memory_id, status)
        before = daily(root)
        store.rebuild()
        assert daily(root) == before
    assert MemoryRoot.open(root).health().status == "clean"


def test_cli_set_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    with open_bujo(root) as store:
        memory_id = store.remember(TEXT).memory_id
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"memory": {**BUJO, "path": str(root)}}))

    def run(*argv: str) -> tuple[int, Any]:
        code = main(["--config", str(config), *argv, "--json"])
        return code, json.loads(capsys.readouterr().out)

    assert run("set-status", memory_id[:8], "scheduled") == (0, {
        "id": memory_id, "outcome": "changed", "previous": "open", "status": "scheduled"})
    assert run("set-status", memory_id[:8], "dropped")[0] == 0
    code, out = run("set-status", memory_id, "open")
    assert (code, out["error"]["code"]) == (1, "status_transition_refused")
    code, out = run("set-status", memory_id, "finished")
    assert (code, out["error"]["code"]) == (2, "invalid_status")
    code, out = run("list", "--status", "dropped")
    assert [m["id"] for m in out["memories"]] == [memory_id]


# --------------------------------------------------------------------------------------------
# G13-G15, H7, I13: when validity ends


def currentness_at(tmp_path: Path, instant: datetime, zone: str, **validity: str) -> set[str]:
    """The currentness of one line stated with ``validity``, as recall, the automatic block,
    list and MemoryJournal each show it at ``instant`` for a host in ``zone``."""
    root = tmp_path / f"root-{len(list(tmp_path.iterdir()))}"
    clock = Clock(datetime(2026, 1, 2, 9, 0, tzinfo=UTC))
    with open_bujo(root, clock, time_zone=zone) as store:
        memory_id = store.remember("The lobby is closed for painting.", **validity).memory_id
        store.background.embed_pending()
        clock.now = instant
        seen = {store.recall("lobby closed painting").recall.hits[0].currentness,
                store.list_memories().memories[0].currentness}
        page = store.journal("2026-01-02", "2026-01-02", zone)
        seen.add(page.entries[0].currentness)
        block = store.auto_context("Is the lobby closed for painting?").text
        assert "The lobby is closed for painting." in block
        seen.add("ended" if "; ended " in block else "current")
        assert page.entries[0].to_json().keys() >= {f for f in ("validFrom", "validTo", "dueAt")
                                                    if _key(f) in validity}
        assert memory_id
    return seen


def _key(field: str) -> str:
    return {"validFrom": "valid_from", "validTo": "valid_to", "dueAt": "due_at"}[field]


def test_g15_a_date_only_end_holds_through_the_hosts_local_day(tmp_path: Path) -> None:
    # 2026-05-04 23:30 UTC is already 2026-05-05 01:30 in Warsaw (CEST, +02:00)
    late = datetime(2026, 5, 4, 23, 30, tzinfo=UTC)
    assert currentness_at(tmp_path, late, "UTC", valid_to="2026-05-04") == {"current"}
    assert currentness_at(tmp_path, late, "Europe/Warsaw", valid_to="2026-05-04") == {"ended"}
    assert currentness_at(tmp_path, late, "America/New_York",
                          due_at="2026-05-04") == {"current"}


def test_g15_an_instant_ends_when_it_passes_whatever_the_hosts_zone(tmp_path: Path) -> None:
    end = "2026-05-04T12:00:00+02:00"  # 10:00 UTC
    before, after = (datetime(2026, 5, 4, 9, 59, tzinfo=UTC),
                     datetime(2026, 5, 4, 10, 1, tzinfo=UTC))
    for zone in ("UTC", "Asia/Tokyo"):
        assert currentness_at(tmp_path, before, zone, valid_to=end) == {"current"}
        assert currentness_at(tmp_path, after, zone, valid_to=end) == {"ended"}


@pytest.mark.parametrize("end, closes", [
    # spring forward: Warsaw midnight after 2026-03-28 is 23:00 UTC (CET, +01:00)
    ("2026-03-28", datetime(2026, 3, 28, 23, 0, tzinfo=UTC)),
    # fall back: Warsaw midnight after 2026-10-24 is 22:00 UTC (still CEST, +02:00)
    ("2026-10-24", datetime(2026, 10, 24, 22, 0, tzinfo=UTC)),
])
def test_g15_dst_edges_close_at_the_local_midnight(tmp_path: Path, end: str,
                                                   closes: datetime) -> None:
    minute = timedelta(minutes=1)
    assert currentness_at(tmp_path, closes - minute, "Europe/Warsaw",
                          valid_to=end) == {"current"}
    assert currentness_at(tmp_path, closes + minute, "Europe/Warsaw",
                          valid_to=end) == {"ended"}


def test_g14_ended_is_shown_in_text_and_sorted_after_current(tmp_path: Path) -> None:
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 1, 2, 9, 0, tzinfo=UTC))
    with open_bujo(root, clock, time_zone="UTC") as store:
        store.remember("The lobby is closed for painting until Friday.",
                       valid_to="2026-01-09")
        store.remember("The lobby is closed for painting again next month.",
                       valid_from="2026-02-01")
        store.background.embed_pending()
        clock.now = datetime(2026, 1, 20, 9, 0, tzinfo=UTC)
        result = store.recall("lobby closed painting")
        assert "[ended 2026-01-09]" in result.text and "[valid 2026-01-02" not in result.text
        assert "[valid 2026-02-01..]" in result.text
        block = store.auto_context("Is the lobby closed for painting?").text
        lines = [line for line in block.splitlines() if "lobby" in line]
        ended = [line for line in lines if "ended" in line]
        assert ended and lines.index(ended[0]) == len(lines) - 1  # H7: current first


def test_g15_time_zone_is_validated(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError) as bad:
        open_bujo(tmp_path / "root", time_zone="Mars/Olympus")
    assert bad.value.code == "invalid_time_zone"
    with pytest.raises(InvalidArgumentError):
        MemoryRoot.open(tmp_path / "root", time_zone="")


# --------------------------------------------------------------------------------------------
# K14, H6, G8: the insight marker


def test_k14_h6_the_insight_marker_is_shown_kept_when_closed_and_breaks_ties(
        tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_bujo(root) as store:
        plain = store.remember("The kiln fires best at 1200 degrees.").memory_id
        marked = store.remember("The kiln fires best at 1200 degrees, glazed.").memory_id
        store.background.embed_pending()
        before = {h.id: h.score for h in store.recall("kiln fires 1200 degrees").recall.hits}
        result = store.mark(marked[:8], insight=True)
        assert (result.outcome, result.insight) == ("changed", True)
        assert store.mark(marked, insight=True).outcome == "unchanged"
        after = store.recall("kiln fires 1200 degrees")
        scores = {h.id: h.score for h in after.recall.hits}
        assert scores[marked] == pytest.approx(before[marked] + 0.005)  # G8: a tie-breaker
        assert scores[plain] == pytest.approx(before[plain])
        assert "[insight]" in after.text.splitlines()[[h.id for h in after.recall.hits]
                                                     .index(marked)]
        assert next(h for h in after.recall.hits if h.id == marked).structured()["insight"]
        store.set_status(marked, "done")  # H6: a closed line keeps its marker
        block = store.auto_context("Does the kiln fire best at 1200 degrees, glazed?").text
        line = [x for x in block.splitlines() if "glazed" in x]
        assert line and line[0].endswith("; insight)")
        assert "insight=true" in daily(root)
        assert [m.insight for m in store.list_memories().memories if m.id == marked] == [True]
        assert store.mark(marked, insight=False).outcome == "changed"
        assert "insight=true" not in daily(root)
        store.rebuild()
    assert MemoryRoot.open(root).health().status == "clean"
    with pytest.raises(MemoryEsError) as missing, open_bujo(root) as store:
        store.mark("ab" * 32, insight=True)
    assert missing.value.code == "memory_not_found"


def test_g15_as_of_judges_validity_at_the_instant_asked(tmp_path: Path) -> None:
    """Recall as of T reads currentness at T (issue 14 item 5): a line whose validity ended
    after T but before now is current in the as-of answer and ended in today's."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 1, 2, 9, 0, tzinfo=UTC))
    with open_bujo(root, clock, time_zone="UTC") as store:
        memory_id = store.remember("The lobby is closed for painting.",
                                   valid_to="2026-01-10").memory_id
        store.background.embed_pending()
        clock.now = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
        now = {h.id: h.currentness for h in store.recall("lobby painting").recall.hits}
        then = {h.id: h.currentness for h in store.recall(
            "lobby painting", as_of="2026-01-05T12:00:00Z").recall.hits}
        assert (now[memory_id], then[memory_id]) == ("ended", "current")


# --------------------------------------------------------------------------------------------
# Forget meets the lifecycle (issue 14 items 3 and 5)

MARKER = "xqzvkptwq"  # no vowel: the Porter stemmer keeps it whole


def files_holding(root: Path, needle: str = MARKER) -> list[str]:
    data = needle.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and data in p.read_bytes())


def test_forget_erases_an_enhanced_remember_line_with_its_terms(tmp_path: Path) -> None:
    """An enhanced Remember (validity, replaceable, insight, a supersession it made) is
    sealed like every line: forgetting it leaves no byte of it under the root, its terms row
    is gone, and the line it superseded stays superseded history."""
    root = tmp_path / "root"
    with open_bujo(root) as store:
        old = store.remember("The spare key is under the blue pot.", replaceable=True)
        new = store.remember(f"The spare key code is {MARKER} now.", supersedes=old.memory_id,
                             valid_to="2026-12-31", due_at="2026-06-01T09:00:00+02:00")
        store.mark(new.memory_id, insight=True)
        store.set_status(new.memory_id, "scheduled")
        store.background.embed_pending()
        assert files_holding(root)
        receipt = store.forget(new.memory_id, reason="user-request")
        assert receipt.byte_scan is not None and receipt.byte_scan.clean
        assert files_holding(root) == []
        assert index_rows(root, "SELECT id FROM memory_terms WHERE id = ?",
                          (new.memory_id,)) == []
        assert status_of(root, old.memory_id) == "superseded"
        store.rebuild()
        assert files_holding(root) == []
    assert MemoryRoot.open(root).health().status == "clean"


def test_as_of_never_returns_forgotten_text(tmp_path: Path) -> None:
    """Recall as of an instant when the line was current still cannot show it once it is
    forgotten: the journal keeps only a content-free tombstone (issue 14 item 5)."""
    root = tmp_path / "root"
    clock = Clock(datetime(2026, 1, 2, 9, 0, tzinfo=UTC))
    with open_bujo(root, clock) as store:
        kept = store.remember("The gate code for the yard is 4412.").memory_id
        gone = store.remember(f"The gate code for the shed is {MARKER}.").memory_id
        store.background.embed_pending()
        clock.now = datetime(2026, 1, 3, 9, 0, tzinfo=UTC)
        then = "2026-01-02T12:00:00Z"
        assert gone in {h.id for h in store.recall("gate code", as_of=then).recall.hits}
        store.forget(gone, reason="user-request")
        result = store.recall(f"gate code {MARKER}", as_of=then)
        assert kept in {h.id for h in result.recall.hits}
        assert gone not in {h.id for h in result.recall.hits}
        assert MARKER not in json.dumps(result.to_json())
    answer = MemoryRoot.open(root).recall(f"gate code {MARKER}", as_of=then)
    assert MARKER not in json.dumps(answer.to_json())


def test_forget_takes_a_unique_prefix_like_show(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_bujo(root) as store:
        memory_id = store.remember(f"The vault phrase is {MARKER}.").memory_id
        receipt = store.forget(memory_id[:10], reason="user-request")
        assert (receipt.status, receipt.memory_ids) == ("forgotten", [memory_id])
        assert store.forget(memory_id, reason="user-request").status == "already_forgotten"
        for bad in ("xyz", memory_id[:7]):
            with pytest.raises(InvalidArgumentError):
                store.forget(bad, reason="user-request")
    assert files_holding(root) == []


def test_forget_matching_lists_first_then_erases(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_bujo(root) as store:
        a = store.remember(f"The first {MARKER} note.").memory_id
        b = store.remember(f"The second {MARKER} note.").memory_id
        kept = store.remember("An unrelated note about ferns.").memory_id
        listing = store.forget_matching(MARKER, reason="user-request")
        assert listing.status == "dry_run" and sorted(listing.memory_ids) == sorted([a, b])
        assert files_holding(root)  # a dry run writes nothing
        done = store.forget_matching(MARKER, reason="user-request", dry_run=False)
        assert sorted(done.memory_ids) == sorted([a, b])
        assert [m.id for m in store.list_memories().memories] == [kept]
        with pytest.raises(MemoryEsError) as none:
            store.forget_matching(MARKER, reason="user-request")
        assert none.value.code == "memory_not_found"
    assert files_holding(root) == []
