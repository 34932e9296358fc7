"""Health audits stored vectors and the runtime worker state (issue 13 item 12; D4, D9, N13,
N14, B19). Vectors are not events, so replay never compares them; what is stored must still
be usable. Findings are counts, never text or vectors."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import apsw
import pytest

from helpers_index import active_index_path
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.testing import WordBagEmbedder

JOURNAL = {"mode": "journal", "embeddings": {"provider": "ollama", "model": "bag", "dim": 8}}
ANSWERS = ["Heron-1101 nests by the pond", "Otter-2202 swims at dusk",
           "Badger-3303 digs near the oak"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    embedder = WordBagEmbedder(8, provider="ollama", model="bag")
    with MemoryStore.open(path, parse_config(JOURNAL), background=False,
                          embedder=embedder) as store:
        for i, answer in enumerate(ANSWERS):
            store.persist_completed_turn(CompletedTurn(run_id=f"v{i}", outcome="success",
                                                       answer=answer))
        store.drain()
        assert store.vector_backlog() == 0
    return path


def sql(root: Path, statement: str, params: tuple[object, ...] = ()) -> None:
    conn = apsw.Connection(str(active_index_path(root)))
    with conn:
        conn.execute(statement, params)
    conn.close()


def report(root: Path) -> tuple[str, set[tuple[str, str]], str]:
    r = MemoryRoot.open(root, parse_config(JOURNAL)).health()
    text = json.dumps(r.to_json())
    assert not any(word in text for word in ("Heron", "Otter", "Badger")), text
    return r.status, {(f.code, f.detail) for f in r.findings}, str(r.runtime)


def test_whole_vectors_are_clean(root: Path) -> None:
    status, found, _ = report(root)
    assert (status, found) == ("clean", set())


def first_rowid(root: Path) -> int:
    conn = apsw.Connection(str(active_index_path(root)))
    try:
        return int(conn.execute("SELECT min(rowid) FROM vectors").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize(("tamper", "code"), [
    ("orphan", "vector_orphan"), ("dimension", "vector_dimension"),
    ("nan", "vector_non_finite"),
    # its record then has no vector of the generation's identity, and none queued either
    ("identity", "vector_identity_mismatch vector_unqueued"),
    ("deleted", "vector_unqueued")])
def test_damaged_vectors_are_findings(root: Path, tamper: str, code: str) -> None:
    rowid = first_rowid(root)
    if tamper == "orphan":
        sql(root, "INSERT INTO vectors SELECT 99999, identity, vector FROM vectors "
                  "WHERE rowid = ?", (rowid,))
    elif tamper == "dimension":
        sql(root, "UPDATE vectors SET vector = ? WHERE rowid = ?",
            (struct.pack("<3f", 1, 0, 0), rowid))
    elif tamper == "nan":
        sql(root, "UPDATE vectors SET vector = ? WHERE rowid = ?",
            (struct.pack("<8f", float("nan"), *[0.0] * 7), rowid))
    elif tamper == "identity":
        sql(root, "UPDATE vectors SET identity = 'other' WHERE rowid = ?", (rowid,))
    else:
        sql(root, "DELETE FROM vectors WHERE rowid = ?", (rowid,))
    status, found, _ = report(root)
    assert status == "findings"
    assert {c for c, _ in found} == set(code.split()), found
    assert all(detail.startswith("1 ") for _, detail in found), found
    assert MemoryRoot.open(root, parse_config(JOURNAL)).health().exit_code == 1


def test_n14_vectors_in_a_generation_that_names_no_identity(tmp_path: Path) -> None:
    """N14: Lite never embeds; a vector in its index is reported."""
    root = tmp_path / "lite"
    with MemoryStore.open(root, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="l", outcome="success",
                                                   answer="Lynx-4404 hunts at night"))
        store.drain()
    sql(root, "INSERT INTO vectors VALUES (1, 'x', ?)", (struct.pack("<2f", 1, 0),))
    found = {f.code for f in MemoryRoot.open(root).health().findings}
    assert found == {"vector_identity_mismatch"}


@pytest.mark.parametrize(("snapshot", "state"), [
    (None, "absent"),
    ({"pid": 1, "heartbeat": "2026-01-01T00:00:00.000+00:00", "counts": {},
      "shutdown": "stopped", "queue": {}}, "current"),
    ({"pid": 1, "heartbeat": "2026-01-01T00:00:00.000+00:00", "counts": {},
      "shutdown": "running", "queue": {}}, "stale"),
    ("garbage", "invalid")])
def test_runtime_snapshot_state(root: Path, snapshot: object, state: str) -> None:
    """B19, N13: the snapshot a worker publishes, as the report field ``runtime``: a worker
    killed while running leaves ``stale`` (no process holds the root), not drift."""
    path = root / ".runtime" / "snapshot.json"
    path.unlink(missing_ok=True)
    if snapshot is not None:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_text(snapshot if isinstance(snapshot, str) else json.dumps(snapshot))
        path.chmod(0o600)
    status, found, runtime = report(root)
    assert (status, found, runtime) == ("clean", set(), state)
