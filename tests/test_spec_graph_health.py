"""The graph (L) and the strict health auditor (N) on real roots: the SPEC IDs the older capture
and health tests left unnamed.

Roots are built through the public store (BuJo capture with the scripted model, Lite, Journal),
closed, then tampered with behind the library's back; health must name what changed, fail
closed on a damaged journal, and never print memory text. Durability claims (L3) are checked
in a real subprocess killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from ceilings import HANG_S
from helpers_capture import (
    entity,
    extraction,
    memory,
    open_capture,
    reconcile,
    review,
    script,
    turn,
)
from helpers_crash_capture import TURNS, write_script
from helpers_index import active_index_path, index_rows
from memory_es.config import parse_config
from memory_es.errors import MemoryEsError
from memory_es.intake import CompletedTurn
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.testing import WordBagEmbedder
from memory_es.transfer import rebuild_root
from projections.graph import GRAPH_FILE, SIDECAR_FILE, canonical

MORGAN = [entity("m", "Morgan")]


def codes(root: Path, config: Any = None) -> set[tuple[str, str]]:
    report = MemoryRoot.open(root, config).health() if config else MemoryRoot.open(root).health()
    return {(f.code, f.path) for f in report.findings}


# Words of the memory text these roots hold: no health report may contain any of them (N12).
CONTENT_WORDS = ("Morgan", "Berlin", "Madrid", "Quetzal", "oolong", "Zeppelin", "Heron",
                 "capture text", "Other memory", "new line")


def health(root: Path) -> Any:
    report = MemoryRoot.open(root).health()
    text = json.dumps(report.to_json())
    assert not [w for w in CONTENT_WORDS if w in text], text
    return report


def tamper_index(root: Path, statement: str, params: tuple[Any, ...] = ()) -> None:
    conn = apsw.Connection(str(active_index_path(root)))
    try:
        with conn:
            conn.execute(statement, params)
    finally:
        conn.close()


def graph_lines(root: Path) -> list[dict[str, Any]]:
    path = root / GRAPH_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


# -- a BuJo root with replay-owned state (a supersession in the sidecar) -------------------------


def _supersession_root(root: Path) -> Path:
    records = script(
        ("extract", "seed", extraction([memory("Morgan lives in Berlin", entities=["m"])],
                                       MORGAN)),
        ("review", "seed", review("keep")),
        ("extract", "r2", extraction([memory("Morgan moved to Madrid", entities=["m"])], MORGAN)),
        ("review", "r2", review("keep")),
        ("reconcile", "r2", reconcile({"action": "SUPERSEDE", "target": "m1",
                                       "text": "Morgan lives in Madrid"})))
    store, _ = open_capture(root, records)
    with store:
        store.persist_completed_turn(turn("seed", "x"))
        store.persist_completed_turn(turn("r2", "y"))
        store.drain()
    assert (root / SIDECAR_FILE).exists()
    assert index_rows(root, "SELECT count(*) FROM lifecycle") == [(1,)]
    assert health(root).status == "clean"
    return root


@pytest.fixture(scope="module")
def replay_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _supersession_root(tmp_path_factory.mktemp("replay") / "root")


@pytest.fixture
def replay_root(replay_template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(replay_template, root, symlinks=True)
    return root


def _rewrite_sidecar(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the sidecar in strict canonical form, after ``change``: only its content
    differs, never its shape."""
    path = root / SIDECAR_FILE
    value = json.loads(path.read_bytes())
    change(value)
    path.write_bytes(canonical(value) + b"\n")


SIDECAR_TAMPERS: dict[str, Callable[[Path], None]] = {
    "index_lifecycle_changed": lambda root: tamper_index(
        root, "UPDATE lifecycle SET at = '2026-05-04T10:00:00.000Z'"),
    "index_lifecycle_deleted": lambda root: tamper_index(root, "DELETE FROM lifecycle"),
    "sidecar_entry_changed": lambda root: _rewrite_sidecar(
        root, lambda v: v["entries"][0].__setitem__("at", "2026-05-04T10:00:00.000Z")),
    "sidecar_entries_dropped": lambda root: _rewrite_sidecar(
        root, lambda v: v["entries"].clear()),
}


@pytest.mark.parametrize("tamper", sorted(SIDECAR_TAMPERS))
def test_n1_any_sidecar_and_index_difference_is_canonical_mismatch(
        replay_root: Path, tamper: str) -> None:
    SIDECAR_TAMPERS[tamper](replay_root)
    report = health(replay_root)
    assert ("canonical_mismatch", SIDECAR_FILE) in {(f.code, f.path) for f in report.findings}
    assert (report.status, report.exit_code) == ("findings", 1)
    rebuild_root(replay_root)  # the journal, not either copy, is the authority
    assert health(replay_root).status == "clean"


@pytest.mark.parametrize("tier", ["lite", "journal"])
@pytest.mark.parametrize("table", ["lifecycle", "threads"])
def test_n9_a_lite_or_journal_index_with_replay_state_is_rejected(
        tmp_path: Path, tier: str, table: str) -> None:
    root = tmp_path / tier
    config = parse_config({"mode": "journal", "embeddings": {"dim": 64}} if tier == "journal"
                          else {})
    embedder = WordBagEmbedder(64) if tier == "journal" else None

    def open_store() -> MemoryStore:
        return MemoryStore.open(root, config, background=False, embedder=embedder)

    with open_store() as store:
        store.persist_completed_turn(CompletedTurn(run_id="r1", outcome="success",
                                                   answer="Morgan lives in Berlin"))
        store.drain()
    assert MemoryRoot.open(root, config).health().status == "clean"
    row = ("INSERT INTO lifecycle VALUES (99, 'a', 'superseded', 'b', "
           "'2026-05-04T09:00:00.000Z', 'capture')" if table == "lifecycle" else
           "INSERT INTO threads VALUES (99, 'a', 'b', 1.0, '2026-05-04T09:00:00.000Z', 'x')")
    tamper_index(root, row)
    with open_store() as store:
        assert store.persist_completed_turn(CompletedTurn(
            run_id="r2", outcome="success", answer="Another line")).ok  # B4: intake goes on
        with pytest.raises(MemoryEsError) as err:
            store.drain()
        assert err.value.code == "replay_state_rejected"
    found = codes(root, config)
    assert ("canonical_mismatch", str(active_index_path(root).relative_to(root))) in found
    assert not (root / SIDECAR_FILE).exists()  # never read nor written for these tiers


def test_n10_replay_state_without_its_sidecar_is_never_trusted(replay_root: Path) -> None:
    sidecar = (replay_root / SIDECAR_FILE).read_bytes()
    # A generation that holds replay state, plus a plausible forged row, and no sidecar.
    tamper_index(replay_root, "INSERT INTO lifecycle SELECT rowid + 1000, memory_id, "
                              "'invalidated', by, at, authority FROM lifecycle")
    (replay_root / SIDECAR_FILE).unlink()
    found = codes(replay_root)
    assert ("canonical_mismatch", SIDECAR_FILE) in found
    assert ("file_missing", SIDECAR_FILE) in found
    rebuild_root(replay_root)
    # The sidecar comes back from the journal alone: the forged row is not adopted.
    assert (replay_root / SIDECAR_FILE).read_bytes() == sidecar
    assert index_rows(replay_root, "SELECT count(*) FROM lifecycle") == [(1,)]
    assert health(replay_root).status == "clean"


def test_n10_d10_a_legacy_memory_db_is_never_read_as_a_root(replay_root: Path,
                                                        tmp_path: Path) -> None:
    legacy = tmp_path / "legacy"
    legacy.mkdir(mode=0o700)
    shutil.copyfile(active_index_path(replay_root), legacy / "memory.db")
    os.chmod(legacy / "memory.db", 0o600)
    before = (legacy / "memory.db").read_bytes()
    # Without a journal it is no memory root at all.
    report = MemoryRoot.open(legacy).health()
    assert (report.status, report.exit_code) == ("cannot_audit", 2)
    # A store opened there starts its own journal and takes nothing from the legacy file.
    with MemoryStore.open(legacy, background=False) as store:
        assert store.recall("Morgan lives").recall.hits == ()
        store.persist_completed_turn(CompletedTurn(run_id="n", outcome="success",
                                                   answer="A new line"))
        store.drain()
    assert index_rows(legacy, "SELECT text FROM memories") == [("A new line",)]
    assert index_rows(legacy, "SELECT count(*) FROM lifecycle") == [(0,)]
    assert not (legacy / SIDECAR_FILE).exists()
    assert (legacy / "memory.db").read_bytes() == before
    # and health keeps saying it is there, unmanaged
    assert ("file_extra", "memory.db") in codes(legacy)


# -- N8: the sidecar file itself ------------------------------------------------------------------


def _sidecar_big(root: Path) -> None:
    data = (root / SIDECAR_FILE).read_bytes()
    (root / SIDECAR_FILE).write_bytes(data[:-3] + b" " * (32 * 1024 * 1024) + data[-3:])


def _sidecar_many(root: Path) -> None:
    (root / SIDECAR_FILE).write_bytes(
        canonical({"entries": [{}] * 131_073, "version": 1}) + b"\n")


def _sidecar_not_canonical(root: Path) -> None:
    value = json.loads((root / SIDECAR_FILE).read_bytes())
    (root / SIDECAR_FILE).write_text(json.dumps(value, indent=1))


def _sidecar_symlink(root: Path) -> None:
    outside = root.parent / "outside.json"
    shutil.copyfile(root / SIDECAR_FILE, outside)
    os.chmod(outside, 0o600)
    (root / SIDECAR_FILE).unlink()
    os.symlink(outside, root / SIDECAR_FILE)


def _sidecar_directory(root: Path) -> None:
    (root / SIDECAR_FILE).unlink()
    os.mkdir(root / SIDECAR_FILE, 0o700)


SIDECAR_FILE_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "mode_0644": (lambda root: os.chmod(root / SIDECAR_FILE, 0o644), "unsafe_mode"),
    "hard_link": (lambda root: os.link(root / SIDECAR_FILE, root.parent / "second-link"),
                  "hard_link"),
    "symlink": (_sidecar_symlink, "symlink"),
    "directory": (_sidecar_directory, "file_unreadable"),
    "not_canonical": (_sidecar_not_canonical, "sidecar_invalid"),
    "over_32_mib": (_sidecar_big, "sidecar_invalid"),
    "over_131072_entries": (_sidecar_many, "sidecar_invalid"),
}
if os.geteuid() == 0:
    SIDECAR_FILE_CASES["foreign_owner"] = (
        lambda root: os.chown(root / SIDECAR_FILE, 4242, 4242), "foreign_owner")


@pytest.mark.parametrize("case", sorted(SIDECAR_FILE_CASES))
def test_n8_the_sidecar_file_is_checked(replay_root: Path, case: str) -> None:
    damage, code = SIDECAR_FILE_CASES[case]
    damage(replay_root)
    report = health(replay_root)
    findings = {(f.code, f.path): f.detail for f in report.findings}
    assert (code, SIDECAR_FILE) in findings, report.findings
    assert report.exit_code == 1
    if case == "over_32_mib":
        assert "more than 33554432" in findings[(code, SIDECAR_FILE)]
    if case == "over_131072_entries":
        assert findings[(code, SIDECAR_FILE)] == "131073 entries, more than 131072"


HEALTH_CHILD = """
import json, sys
from memory_es.root import MemoryRoot
report = MemoryRoot.open(sys.argv[1]).health()
print(json.dumps(report.to_json()))
"""


def test_n8_a_fifo_in_place_of_the_sidecar_never_blocks_health(replay_root: Path) -> None:
    """A FIFO with no writer: reading it would block forever. Health runs in a real child
    with a deadline so a regression fails instead of hanging the suite."""
    (replay_root / SIDECAR_FILE).unlink()
    os.mkfifo(replay_root / SIDECAR_FILE, 0o600)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", HEALTH_CHILD, str(replay_root)], env=env,
                          capture_output=True, text=True, timeout=HANG_S, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["status"] == "findings"
    assert {"code": "file_unreadable", "path": SIDECAR_FILE,
            "detail": "NotARegularFileError"} in report["findings"]


# -- a Lite root with two days of turns (the journal and intake side) ----------------------------


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _lite_root(root: Path, answers: list[str]) -> Path:
    with MemoryStore.open(root, clock=Clock(), background=False) as store:
        for i, answer in enumerate(answers):
            result = store.persist_completed_turn(CompletedTurn(
                run_id=f"{root.name}-{i}", outcome="success", answer=answer,
                session="web:thread"))
            assert result.status == "admitted"
        store.drain()
    assert health(root).status == "clean"
    return root


@pytest.fixture
def lite_root(tmp_path: Path) -> Path:
    return _lite_root(tmp_path / "root", ["Quetzal-7431 prefers oolong tea",
                                          "Zeppelin-2086 parks by the river"])


_SLOT = struct.Struct("<4sQ32sI")


def _catalog_slots(root: Path) -> list[tuple[int, bytes]]:
    raw = (root / "journal.catalog").read_bytes()
    out = []
    for i in (0, 1):
        _magic, position, chain, _crc = _SLOT.unpack_from(raw, i * 64)
        out.append((position, chain))
    return out


def _rewrite_newest_slot(root: Path, *, position: int | None = None,
                         chain: bytes | None = None) -> None:
    """Rewrite the newest catalog slot with a valid checksum: a well-formed catalog that
    disagrees with the journal (its high-water mark or its chain hash)."""
    path = root / "journal.catalog"
    raw = bytearray(path.read_bytes())
    slots = _catalog_slots(root)
    newest = max((0, 1), key=lambda i: slots[i][0])
    old_position, old_chain = slots[newest]
    body = b"MESC" + struct.pack("<Q", old_position if position is None else position) + (
        old_chain if chain is None else chain)
    raw[newest * 64:newest * 64 + _SLOT.size] = body + struct.pack("<I", zlib.crc32(body))
    path.write_bytes(bytes(raw))


def _swap_journal(root: Path, other: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        (root / f"journal.db{suffix}").unlink(missing_ok=True)
        if (other / f"journal.db{suffix}").exists():
            shutil.copyfile(other / f"journal.db{suffix}", root / f"journal.db{suffix}")
            os.chmod(root / f"journal.db{suffix}", 0o600)


def _missing_shard(root: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        (root / f"journal.db{suffix}").unlink(missing_ok=True)


def _truncated_shard(root: Path) -> None:
    conn = apsw.Connection(str(root / "journal.db"))
    with conn:
        conn.execute("DELETE FROM events WHERE position > (SELECT MAX(position) - 2 FROM events)")
    conn.close()


def _replacement_shard(root: Path) -> None:
    # another root's journal, longer than this one: well-formed, but not this root's history
    other = _lite_root(root.parent / "other", [f"Other memory {i}" for i in range(6)])
    _swap_journal(root, other)


def _high_water_mark_ahead(root: Path) -> None:
    newest = max(position for position, _ in _catalog_slots(root))
    _rewrite_newest_slot(root, position=newest + 1)


def _hash_mismatch(root: Path) -> None:
    _rewrite_newest_slot(root, chain=bytes(32))


LEDGER_CASES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "missing_shard": (_missing_shard, "journal_missing", "journal.db"),
    "truncated_shard": (_truncated_shard, "journal_truncated", "journal.db"),
    "replacement_shard": (_replacement_shard, "chain_broken", "journal.db"),
    "high_water_mark_ahead": (_high_water_mark_ahead, "journal_truncated", "journal.db"),
    "sha256_mismatch": (_hash_mismatch, "journal_replaced", "journal.db"),
}


@pytest.mark.parametrize("case", sorted(LEDGER_CASES))
def test_n5_a_damaged_ledger_fails_closed(lite_root: Path, case: str) -> None:
    damage, code, path = LEDGER_CASES[case]
    damage(lite_root)
    report = health(lite_root)
    assert {(f.code, f.path) for f in report.findings} == {(code, path)}
    assert (report.status, report.exit_code) == ("findings", 1)
    # Fails closed: no writer opens it, no reader answers from it, nothing is rewritten.
    before = sorted(os.listdir(lite_root))
    with pytest.raises(MemoryEsError) as err:
        MemoryStore.open(lite_root, background=False)
    assert err.value.code == code
    with pytest.raises(MemoryEsError):
        MemoryRoot.open(lite_root).recall("Quetzal")
    assert sorted(os.listdir(lite_root)) == before


@pytest.mark.parametrize("removed", [("journal.catalog",),
                                     ("journal.db", "journal.db-wal", "journal.db-shm"),
                                     ("journal.catalog", "journal.db", "journal.db-wal",
                                      "journal.db-shm")])
def test_n6_a_schema_marker_without_its_ledger_is_never_a_fresh_store(
        lite_root: Path, removed: tuple[str, ...]) -> None:
    assert (lite_root / ".memory-es-schema").exists()
    for name in removed:
        (lite_root / name).unlink(missing_ok=True)
    expected = "journal_missing" if "journal.db" in removed else "catalog_missing"
    report = health(lite_root)
    assert (report.status, report.exit_code) == ("findings", 1)
    assert expected in {f.code for f in report.findings}
    before = sorted(os.listdir(lite_root))
    with pytest.raises(MemoryEsError) as err:
        MemoryStore.open(lite_root, background=False)
    assert err.value.code == expected
    # nothing was created in its place: no fresh journal, no fresh catalog
    assert sorted(os.listdir(lite_root)) == before


# -- N7: intake storage (the journal, its catalog and payloads) ---------------------------------


def _payload_root(root: Path) -> tuple[Path, str]:
    config = parse_config({"mode": "bujo", "writeMode": "capture", "embeddings": {"dim": 64},
                           "llm": {"provider": "ollama", "model": "m"}})
    with MemoryStore.open(root, config, clock=Clock(), background=False) as store:
        result = store.persist_completed_turn(CompletedTurn(
            run_id="cap-1", outcome="success", answer="Heron-4410 summary",
            capture_text="Heron-4410 capture text"))
        assert result.status == "admitted"
        store.drain()
    return root, result.intake_id


INTAKE_CASES: dict[str, tuple[Callable[[Path], None], set[tuple[str, str]]]] = {
    "journal_0644": (lambda root: os.chmod(root / "journal.db", 0o644),
                     {("unsafe_mode", "journal.db")}),
    "catalog_0640": (lambda root: os.chmod(root / "journal.catalog", 0o640),
                     {("unsafe_mode", "journal.catalog")}),
    "daily_dir_0755": (lambda root: os.chmod(root / "daily", 0o755),
                       {("unsafe_mode", "daily")}),
    "catalog_symlink": (lambda root: (
        shutil.copyfile(root / "journal.catalog", root.parent / "catalog-copy"),
        os.chmod(root.parent / "catalog-copy", 0o600),
        (root / "journal.catalog").unlink(),
        os.symlink(root.parent / "catalog-copy", root / "journal.catalog")),
        {("symlink", "journal.catalog")}),
}
if os.geteuid() == 0:
    INTAKE_CASES["journal_foreign_owner"] = (
        lambda root: os.chown(root / "journal.db", 4242, 4242),
        {("foreign_owner", "journal.db")})


@pytest.mark.parametrize("case", sorted(INTAKE_CASES))
def test_n7_intake_files_are_checked_for_owner_mode_and_symlinks(
        lite_root: Path, case: str) -> None:
    damage, expected = INTAKE_CASES[case]
    damage(lite_root)
    report = health(lite_root)
    assert expected <= {(f.code, f.path) for f in report.findings}, report.findings
    assert report.exit_code == 1


def test_n7_a_malformed_intake_record_is_reported(tmp_path: Path) -> None:
    root, intake_id = _payload_root(tmp_path / "capture")
    assert health(root).status == "clean"
    conn = apsw.Connection(str(root / "journal.db"))
    with conn:
        conn.execute("UPDATE payloads SET bytes = CAST(? AS BLOB) WHERE intake_id = ?",
                     (b"{not json at all", intake_id))
    conn.close()
    report = health(root)
    assert {(f.code, f.path) for f in report.findings} == {("payload_mismatch", "journal.db")}
    assert intake_id in report.findings[0].detail


def test_n7_records_over_640_kib_never_reach_the_intake(lite_root: Path) -> None:
    head = health(lite_root).journal_position
    with MemoryStore.open(lite_root, background=False) as store:
        result = store.persist_completed_turn(CompletedTurn(
            run_id="big", outcome="success", answer="x" * (640 * 1024 + 1)))
    assert (result.status, result.code) == ("rejected", "record_too_large")
    report = health(lite_root)
    assert report.status == "clean" and report.journal_position == head


# -- L1, L10: what capture writes to graph.jsonl --------------------------------------------------


def test_l1_capture_records_entities_associations_and_directed_relations(tmp_path: Path) -> None:
    root = tmp_path / "graph"
    plan = extraction(
        [memory("Morgan mentors Sam on the Atlas project", entities=["m", "s", "p"]),
         memory("Sam works at Acme Robotics", entities=["s", "a"]),
         memory("Acme Robotics applies event sourcing", entities=["a", "c"])],
        [entity("m", "Morgan"), entity("s", "Sam"), entity("p", "Atlas", "project"),
         entity("a", "Acme Robotics", "organization"), entity("c", "event sourcing", "concept")],
        [("m", "mentors", "s"), ("s", "works_at", "a"), ("a", "applies", "c")])
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", review("keep", "keep", "keep"))))
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
    graph = graph_lines(root)
    entities = {g["id"]: (g["name"], g["type"]) for g in graph if g["kind"] == "entity"}
    assert sorted(entities.values()) == [
        ("Acme Robotics", "organization"), ("Atlas", "project"), ("Morgan", "person"),
        ("Sam", "person"), ("event sourcing", "concept")]
    name = {eid: n for eid, (n, _) in entities.items()}
    texts = dict(index_rows(root, "SELECT id, text FROM memories"))
    # precise per-memory associations: exactly the entities each line names
    associations: dict[str, set[str]] = {}
    for g in graph:
        if g["kind"] == "association":
            associations.setdefault(texts[g["memory"]], set()).add(name[g["entity"]])
    assert associations == {
        "Morgan mentors Sam on the Atlas project": {"Morgan", "Sam", "Atlas"},
        "Sam works at Acme Robotics": {"Sam", "Acme Robotics"},
        "Acme Robotics applies event sourcing": {"Acme Robotics", "event sourcing"}}
    # directed relations with lowercase names, from -> to as stated (never reversed)
    relations = [(name[g["from"]], g["relation"], name[g["to"]]) for g in graph
                 if g["kind"] == "relation"]
    assert sorted(relations) == [("Acme Robotics", "applies", "event sourcing"),
                                 ("Morgan", "mentors", "Sam"),
                                 ("Sam", "works_at", "Acme Robotics")]
    assert all(r == r.lower() for _, r, _ in relations)
    assert index_rows(root, "SELECT count(*) FROM relations") == [(3,)]
    assert health(root).status == "clean"


def test_l10_capture_only_prunes_graph_nodes_of_dropped_lines(tmp_path: Path) -> None:
    root = tmp_path / "only"
    plan = extraction(
        [memory("I prefer aisle seats near Morgan", labels=["preference"],
                entities=["s", "m"]),
         memory("Morgan is my manager at Globex", entities=["m", "g"]),
         memory("Globex is based in Lyon", entities=["g", "l"])],
        [entity("s", "aisle seat", "concept"), entity("m", "Morgan"),
         entity("g", "Globex", "organization"), entity("l", "Lyon", "place")],
        [("m", "works_at", "g"), ("g", "based_in", "l"), ("m", "sits_in", "s")])
    store, _model = open_capture(root, script(("extract", "r1", plan),
                                             ("review", "r1", review("keep", "keep"))),
                                capture={"only": ["preference"]})
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
    assert [t for (t,) in index_rows(root, "SELECT text FROM memories")] == [
        "I prefer aisle seats near Morgan"]
    graph = graph_lines(root)
    names = {g["id"]: g["name"] for g in graph if g["kind"] == "entity"}
    # Globex and Lyon were named only by dropped lines: pruned, with their relations
    assert sorted(names.values()) == ["Morgan", "aisle seat"]
    relations = [(names[g["from"]], g["relation"], names[g["to"]]) for g in graph
                 if g["kind"] == "relation"]
    assert relations == [("Morgan", "sits_in", "aisle seat")]
    assert {g["entity"] for g in graph if g["kind"] == "association"} == set(names)
    assert sorted(n for (n,) in index_rows(root, "SELECT name FROM entities")) == [
        "Morgan", "aisle seat"]
    assert index_rows(root, "SELECT count(*) FROM relations") == [(1,)]
    assert health(root).status == "clean"


# -- L3: the graph only after durable admission; no partial graph -------------------------------

CRASH_HELPER = Path(__file__).with_name("helpers_crash_capture.py")


def _run_capture_child(root: Path, script_path: Path, calls: Path,
                       crash_at: str | None = None, nth: int = 1
                       ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMORY_ES_CRASH_AT", "HELPER_"))}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    if crash_at is not None:
        env["MEMORY_ES_CRASH_AT"] = crash_at
        env["HELPER_CRASH_NTH"] = str(nth)
    return subprocess.run([sys.executable, str(CRASH_HELPER), str(root), str(script_path),
                           str(calls)], env=env, capture_output=True, text=True, timeout=HANG_S,
                          check=False)


@pytest.mark.parametrize("crash_at", ["worker.before_commit", "journal.before_commit"])
def test_l3_a_capture_killed_before_its_commit_publishes_no_graph(
        tmp_path: Path, crash_at: str) -> None:
    """SIGKILL the real worker process after every model stage of the first turn is retained
    but before its capture commits (worker.before_commit), or inside the capture's own journal
    transaction (journal.before_commit, the 4th commit: admission, extract, review, capture):
    the admission is durable, the graph is not written at all. The rerun completes it."""
    root = tmp_path / "root"
    script_path = tmp_path / "script.jsonl"
    write_script(script_path)
    nth = 4 if crash_at == "journal.before_commit" else 1
    first = _run_capture_child(root, script_path, tmp_path / "calls-1.jsonl", crash_at, nth)
    assert first.returncode == -signal.SIGKILL, (first.returncode, first.stderr)
    assert f"kill {crash_at} {nth}" in first.stdout.splitlines()
    # the turn was admitted durably, and no graph state exists anywhere
    with MemoryRoot.open(root).reader() as opened:
        assert opened.recorder.max_notification_id()
    assert not (root / GRAPH_FILE).exists()
    records = MemoryRoot.open(root).inspect().records
    assert [r.state for r in records] == ["pending"]
    second = _run_capture_child(root, script_path, tmp_path / "calls-2.jsonl")
    assert second.returncode == 0, second.stderr
    graph = graph_lines(root)
    names = sorted(g["name"] for g in graph if g["kind"] == "entity")
    assert names == ["Berlin", "Madrid", "Morgan"]
    assert len(graph) == len({json.dumps(g, sort_keys=True) for g in graph})  # no duplicates
    assert [r.outcome for r in MemoryRoot.open(root).inspect().records] == \
        ["captured"] * len(TURNS)
    assert health(root).status == "clean"


def test_l3_a_failed_model_stage_publishes_no_partial_graph(tmp_path: Path) -> None:
    """The extraction (with its entities and relations) is retained, then the review times
    out: nothing of the plan reaches graph.jsonl or the index until the capture commits."""
    root = tmp_path / "root"
    plan = extraction([memory("Morgan works at Acme", entities=["m", "a"])],
                      [*MORGAN, entity("a", "Acme", "organization")], [("m", "works_at", "a")])
    store, _ = open_capture(root, script(("extract", "r1", plan),
                                         ("review", "r1", "!model_timeout")))
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
        [record] = store.inspect().records
        assert (record.state, record.category, record.retained) == (
            "pending", "model_timeout", "extract")
    assert not (root / GRAPH_FILE).exists()
    assert index_rows(root, "SELECT count(*) FROM entities") == [(0,)]
    assert index_rows(root, "SELECT count(*) FROM relations") == [(0,)]
    assert health(root).status == "clean"
