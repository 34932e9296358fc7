"""See what is stored: ``list`` and ``show`` on MemoryRoot, MemoryStore and the CLI (issue 14
item 6; SPEC G13, G14, G25, K2-K7, C1).

One BuJo capture root built once: Morgan lives in Berlin, corrected to Madrid a day later, then
to Lisbon a day after that (a supersession chain of three), plus one unrelated line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from helpers_capture import (
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
from helpers_index import active_index_path
from memory_es import CompletedTurn, MemoryEsError, MemoryRoot, MemoryStore
from memory_es.browse.inventory import resolve_id, truncate
from memory_es.cli import main
from memory_es.cli.contract import classify
from memory_es.errors import InvalidArgumentError

MORGAN = [entity("m", "Morgan")]
BERLIN, MADRID, LISBON = ("Morgan lives in Berlin", "Morgan lives in Madrid",
                          "Morgan lives in Lisbon")


def _fix(run_id: str, said: str, target: str, text: str) -> list[dict[str, str]]:
    return script(("extract", run_id, extraction([memory(said, entities=["m"])], MORGAN)),
                  ("review", run_id, review("keep")),
                  ("reconcile", run_id, reconcile({"action": "SUPERSEDE", "target": target,
                                                   "text": text})))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("inventory") / "root"
    records = script(
        ("extract", "seed", extraction([memory(BERLIN, entities=["m"], labels=["fact"]),
                                        memory("I prefer window seats")], MORGAN)),
        ("review", "seed", review("keep", "keep")),
    ) + _fix("fix1", "Actually Morgan moved to Madrid", "m1", MADRID) \
        + _fix("fix2", "Morgan moved again, to Lisbon", "m1", LISBON)
    clock = Clock()
    store, _model = open_capture(path, records, clock=clock)
    with store:
        store.persist_completed_turn(turn("seed", f"{BERLIN}. I prefer window seats.",
                                          session="web:a"))
        store.drain()
        for run_id, said, session in (("fix1", "Actually Morgan moved to Madrid", "web:b"),
                                      ("fix2", "Morgan moved again, to Lisbon", "web:c")):
            clock.advance(days=1)
            store.persist_completed_turn(turn(run_id, said, session=session))
            store.drain()
    return path


def ids(root: Path) -> dict[str, str]:
    return {m.text: m.id for m in MemoryRoot.open(root).list_memories().memories}


def test_list_is_newest_first_with_recall_fields(root: Path) -> None:
    page = MemoryRoot.open(root).list_memories()
    texts = [m.text for m in page.memories]
    assert texts[:2] == [LISBON, MADRID] and set(texts[2:]) == {BERLIN, "I prefer window seats"}
    assert page.cursor is None and page.limit == 50
    first = page.to_json()["memories"][0]
    assert set(first) == {"id", "text", "type", "status", "createdAt", "currentness",
                          "attribution", "source"}
    assert (first["status"], first["currentness"], first["createdAt"]) == (
        "open", "current", "2026-05-06T09:00:00.000Z")
    assert first["source"]["session"] == "web:c" and len(first["source"]["intakeId"]) == 64
    statuses = {m.text: (m.status, m.currentness) for m in page.memories}
    assert statuses[BERLIN] == statuses[MADRID] == ("superseded", "superseded")


def test_list_filters_and_keyset_cursor(root: Path) -> None:
    reader = MemoryRoot.open(root)
    assert [m.text for m in reader.list_memories(status="superseded").memories] == [
        MADRID, BERLIN]
    assert reader.list_memories(status="invalidated").memories == ()
    assert [m.text for m in reader.list_memories(since="2026-05-05").memories] == [
        LISBON, MADRID]
    # an offset is honoured: 10:30+01:00 is 09:30Z, after Madrid's 09:00Z of that day
    assert [m.text for m in reader.list_memories(since="2026-05-05T10:30+01:00").memories] == [
        LISBON]
    assert [m.text for m in reader.list_memories(since="2026-05-05T09:00:00Z").memories] == [
        LISBON, MADRID]  # inclusive
    seen: list[str] = []
    cursor = None
    while True:
        page = reader.list_memories(limit=1, cursor=cursor)
        seen += [m.id for m in page.memories]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == [m.id for m in reader.list_memories().memories]
    for bad in ({"status": "finished"}, {"limit": 0}, {"limit": 1001}, {"limit": True},
                {"since": "2026-02-30"}, {"since": "yesterday"}, {"cursor": "x~y"}):
        with pytest.raises(InvalidArgumentError):
            reader.list_memories(**bad)


def test_show_the_chain_both_ways_entities_provenance_and_events(root: Path) -> None:
    by_text = ids(root)
    reader = MemoryRoot.open(root)
    detail = reader.show(by_text[MADRID][:8])
    obj = detail.to_json()
    assert obj["id"] == by_text[MADRID] and obj["text"] == MADRID
    assert [(x["id"], x["text"], x["status"]) for x in obj["supersedes"]] == [
        (by_text[BERLIN], BERLIN, "superseded")]
    assert [(x["id"], x["text"]) for x in obj["supersededBy"]] == [(by_text[LISBON], LISBON)]
    assert [e["name"] for e in obj["entities"]] == ["Morgan"]
    assert obj["provenance"]["session"] == "web:b" and obj["provenance"]["tier"] == "bujo"
    assert obj["provenance"]["file"] == "daily/2026-05-05.md"
    assert obj["scope"] is not None and isinstance(obj["salience"], float)
    topics = [e["topic"] for e in obj["events"]]
    assert topics == ["memory_es/Memory.Captured", "memory_es/Memory.Superseded"]
    positions = [e["position"] for e in obj["events"]]
    assert positions == sorted(positions) and obj["events"][1]["timestamp"] == \
        "2026-05-06T09:00:00.000Z"
    oldest = reader.show(by_text[BERLIN]).to_json()
    assert oldest["labels"] == ["fact"] and oldest["supersedes"] == []
    assert [x["text"] for x in oldest["supersededBy"]] == [MADRID, LISBON]  # nearest first
    assert [x.text for x in reader.show(by_text[LISBON]).supersedes] == [MADRID, BERLIN]
    assert not any(MADRID in json.dumps(e) for e in obj["events"])  # content-free events
    # its status history, read from the same events: open when captured, then superseded by
    # Lisbon's line at the Superseded event's position
    assert [(s["from"], s["to"], s["by"], s["position"]) for s in obj["statusHistory"]] == [
        (None, "open", None, positions[0]), ("open", "superseded", by_text[LISBON], positions[1])]
    assert obj["statusHistory"][1]["at"] == "2026-05-06T09:00:00.000Z"
    with MemoryStore.open(root, background=False) as store:  # the writer agrees
        assert store.show(by_text[MADRID]).to_json() == obj
        assert store.list_memories(limit=2).to_json() == reader.list_memories(
            limit=2).to_json()


def test_unknown_ambiguous_and_malformed_ids(root: Path) -> None:
    reader = MemoryRoot.open(root)
    with pytest.raises(MemoryEsError) as e:
        reader.show("0" * 64 if not any(i.startswith("0" * 8) for i in ids(root).values())
                    else "f" * 64)
    assert e.value.code == "memory_not_found" and classify(e.value).exit_code == 1
    for bad in ("abc", "ABCDEF12", "g" * 8, "0" * 65, ""):
        with pytest.raises(InvalidArgumentError):
            reader.show(bad)
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE memories (id TEXT)")
    conn.execute("INSERT INTO memories VALUES (?), (?)", ("abcdef12" + "0" * 56,
                                                          "abcdef12" + "1" * 56))
    with pytest.raises(MemoryEsError) as amb:
        resolve_id(conn, "abcdef12")
    assert amb.value.code == "memory_id_ambiguous" and classify(amb.value).exit_code == 1
    assert resolve_id(conn, "abcdef121") == "abcdef12" + "1" * 56


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_list_and_show(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = str(root)
    code, out, err = run(capsys, "--root", r, "list", "--limit", "2")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].split()[1:] == ["2026-05-06", "open", *LISBON.split()]
    assert err.startswith("more: --cursor 2026-05-05T09:00:00.000Z~")
    code, out, err = run(capsys, "--root", r, "list", "--cursor", err.split()[-1], "--json")
    assert code == 0 and len(json.loads(out)["memories"]) == 2
    code, out, _ = run(capsys, "--root", r, "show", ids(root)[MADRID][:12])
    assert code == 0 and out.splitlines()[0] == MADRID and "superseded by" in out
    for argv, want in ((["list", "--status", "finished"], 2), (["list", "--limit", "0"], 2),
                       (["list", "--since", "2026-13-01"], 2), (["show", "xyz"], 2),
                       (["show", "0" * 63 + "g"], 2), (["show", "f" * 64], 1)):
        code, out, err = run(capsys, "--root", r, *argv, "--json")
        assert code == want, (argv, out)
        assert json.loads(out)["error"]["code"] and "Traceback" not in err


def test_a_damaged_index_is_index_unreadable(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer="Booked the dentist."))
        store.drain()
    (memory_id,) = [m.id for m in MemoryRoot.open(root).list_memories().memories]
    path = active_index_path(root)
    path.write_bytes(b"not a database" * 300)
    for argv in (["list"], ["show", memory_id]):
        code, out, err = run(capsys, "--root", str(root), *argv, "--json")
        assert code == 3 and json.loads(out)["error"]["code"] == "index_unreadable", out
        code, out, err = run(capsys, "--root", str(root), *argv)
        assert code == 3 and err.startswith("memory-es: error: ") and "Traceback" not in err


@pytest.mark.parametrize(("text", "width", "want"), [
    ("short", 10, "short"),
    ("two\nlines  here", 20, "two lines here"),
    ("abcdefghij", 5, "abcd…"),
    ("abce\u0301fgh", 5, "abc…"),  # never between e and its combining acute
    ("ab\U0001f469\u200d\U0001f4bbcd", 5, "ab…"),  # nor inside a ZWJ sequence
])
def test_truncate_on_a_character_boundary(text: str, width: int, want: Any) -> None:
    assert truncate(text, width) == want
