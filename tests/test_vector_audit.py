"""Vector content is audited, and rebuild never trusts a cache entry it cannot verify (D4,
D9, B25, N13, N14). Zeroed, scaled or identical vectors pass no health: semantic recall
would silently stop. A cache entry that is not a finite unit vector of its identity's
dimension is dropped and its text embedded again, so a rebuild never refills the index from
a poisoned cache. ``health --deep`` also re-embeds a sample of stored vectors' texts and
names vectors that are whole but not their text's (``vector_mismatch``). Counts only."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import apsw
import numpy as np
import pytest

from helpers_attack import tier_config
from helpers_index import active_index_path
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.testing import WordBagEmbedder

BAG = {"mode": "journal", "embeddings": {"provider": "ollama", "model": "bag", "dim": 8}}
ANSWERS = ["Heron-1101 nests by the pond", "Otter-2202 swims at dusk",
           "Badger-3303 digs near the oak", "Finch-4404 sings at dawn"]


def bag() -> WordBagEmbedder:
    return WordBagEmbedder(8, provider="ollama", model="bag")


def fill(path: Path, config: object, **kw: object) -> None:
    with MemoryStore.open(path, config, background=False, **kw) as store:  # type: ignore[arg-type]
        for i, answer in enumerate(ANSWERS):
            store.persist_completed_turn(CompletedTurn(run_id=f"v{i}", outcome="success",
                                                       answer=answer))
        store.drain()
        assert store.vector_backlog() == 0


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    fill(path, parse_config(BAG), embedder=bag())
    return path


def poison(db: Path, table_blob: bytes | None = None, *, swap: bool = False) -> None:
    conn = apsw.Connection(str(db))
    with conn:
        if swap:  # each row gets the next row's (whole, unit) vector
            rows = list(conn.execute("SELECT rowid, vector FROM vectors ORDER BY rowid"))
            for (rowid, _), (_, blob) in zip(rows, rows[1:] + rows[:1], strict=True):
                conn.execute("UPDATE vectors SET vector = ? WHERE rowid = ?", (blob, rowid))
        else:
            conn.execute("UPDATE vectors SET vector = ?", (table_blob,))
    conn.close()


def codes(root: Path, config: object = None, *, deep: bool = False) -> set[str]:
    report = MemoryRoot.open(root, config).health(deep=deep)  # type: ignore[arg-type]
    text = json.dumps(report.to_json())
    assert not any(word in text for word in ("Heron", "Otter", "Badger", "Finch")), text
    assert report.exit_code == (1 if report.findings else 0), report.to_json()
    return {f.code for f in report.findings}


ZERO = struct.pack("<8f", *([0.0] * 8))
UNIT = struct.pack("<8f", 1.0, *([0.0] * 7))
HALF = struct.pack("<8f", 0.5, *([0.0] * 7))


@pytest.mark.parametrize(("blob", "code"), [(ZERO, "vector_not_unit"),
                                            (HALF, "vector_not_unit"),
                                            (UNIT, "vector_constant")],
                         ids=["zeroed", "scaled", "constant"])
def test_poisoned_vectors_are_findings(root: Path, blob: bytes, code: str) -> None:
    assert codes(root, parse_config(BAG)) == set()
    poison(active_index_path(root), blob)
    assert codes(root, parse_config(BAG)) == {code}


def test_rebuild_drops_poisoned_cache_entries(root: Path) -> None:
    """Every vector zeroed in the index and in the cache: rebuild re-embeds, health clean."""
    poison(active_index_path(root), ZERO)
    poison(root / "embeddings" / "cache.db", ZERO)
    assert codes(root, parse_config(BAG), deep=True) == {"vector_not_unit",
                                                         "vector_cache_invalid"}
    embedder = bag()
    with MemoryStore.open(root, parse_config(BAG), background=False,
                          embedder=embedder) as store:
        calls = embedder.calls
        assert store.rebuild().vectors_pending == 0
        assert embedder.calls > calls  # the poisoned entries were embedded again
        hits = store.recall("Which bird nests by the pond?").recall.hits
        assert hits and "Heron" in hits[0].text
    assert codes(root, parse_config(BAG), deep=True) == set()
    conn = apsw.Connection(str(root / "embeddings" / "cache.db"))
    norms = [float(np.linalg.norm(np.frombuffer(bytes(b), dtype=np.float32)))
             for (b,) in conn.execute("SELECT vector FROM vectors")]
    conn.close()
    assert norms and all(abs(n - 1) < 1e-3 for n in norms)


def test_deep_health_re_embeds_a_sample(tmp_path: Path) -> None:
    """Whole unit vectors moved to the wrong rows pass the shallow audit; the deep one
    embeds their texts again with the configured (local) model and names them."""
    path = tmp_path / "root"
    fill(path, tier_config("journal"))
    assert codes(path, deep=True) == set()
    poison(active_index_path(path), swap=True)
    assert codes(path) == set()
    assert codes(path, deep=True) == {"vector_mismatch"}
