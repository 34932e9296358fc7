"""Vectors and hybrid recall over a live store (SPEC D2, D4, D6, D9, B25, G3, G10, G20, G22,
G31, N14).

Most tests use ``FakeEmbedder``: a deterministic bag of words whose vectors are built from word
hashes. A few concept words (tea/drink/beverage, like/enjoy/love) share a bucket, so a
paraphrase with no shared word is close in vector space while lexical search cannot see it.
Tokens containing digits carry no vector weight, so two memories differing only in a number or
date have identical vectors and only the anchor bonus (G5, G6) can tell them apart. One test
runs the real offline ``LocalEmbedder`` end to end.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

import memory_es.store.vectors
from ceilings import HANG_S
from helpers_index import active_index_path, index_rows
from memory_es.config import parse_config
from memory_es.embeddings import EmbeddingError, EmbeddingIdentity
from memory_es.intake import CompletedTurn
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.transfer import rebuild_root
from memory_es.vectors.pending import MAX_IN_FLIGHT, MAX_IN_FLIGHT_BYTES
from projections.derived import open_active_index, read_current

JOURNAL_FAKE: dict[str, Any] = {"mode": "journal", "embeddings": {"dim": 8}}
CONCEPTS = {"tea": 0, "drink": 0, "beverage": 0, "like": 1, "enjoy": 1, "love": 1}
WORD = re.compile(r"\w+")
LINE = re.compile(r"^(?P<score>\d+\.\d{3}) \[recorded (?P<at>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:"
                  r"\d{2}\.\d{3}Z)\] (?P<text>.+)$")


class FakeEmbedder:
    """Deterministic hash-based embedder with a call log and an outage switch."""

    def __init__(self, model: str = "bag-of-words", dim: int = 8) -> None:
        self.identity = EmbeddingIdentity("fake", model, dim)
        self.calls: list[list[str]] = []  # successful calls only
        self.failed = 0
        self.down = False
        self._lock = threading.Lock()

    def vector(self, text: str) -> np.ndarray:
        dim = self.identity.dim
        v = np.zeros(dim, dtype=np.float64)
        for word in WORD.findall(text.casefold()):
            if word in CONCEPTS:
                v[CONCEPTS[word]] += 1.0
            elif not any(ch.isdigit() for ch in word):
                digest = hashlib.sha256(f"{self.identity.model}:{word}".encode()).digest()
                v[2 + digest[0] % (dim - 2)] += 0.25 if digest[1] & 1 else -0.25
        if not v.any():
            v[dim - 1] = 1.0
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            if self.down:
                self.failed += 1
                raise EmbeddingError("fake provider is down", code="embedding_unavailable")
            self.calls.append(list(texts))
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts])

    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def open_store(root: Path, embedder: Any, *, block: dict[str, Any] | None = None,
               background: bool = False, **kw: Any) -> MemoryStore:
    config = parse_config(JOURNAL_FAKE if block is None else block)
    return MemoryStore.open(root, config, background=background, embedder=embedder, **kw)


def admit(store: MemoryStore, texts: Sequence[str], prefix: str = "r") -> None:
    for i, text in enumerate(texts):
        result = store.persist_completed_turn(
            CompletedTurn(run_id=f"{prefix}{i}", outcome="success", answer=text))
        assert result.status == "admitted", result


def embed_all(store: MemoryStore) -> list[int]:
    """Call embed_pending until it returns 0; the per-call counts."""
    counts: list[int] = []
    for _ in range(100):
        n = store.background.embed_pending()
        if not n:
            return counts
        counts.append(n)
    raise AssertionError(f"embed_pending never settled: {counts[-5:]}")


def tamper(root: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    conn = apsw.Connection(str(active_index_path(root)))
    conn.setbusytimeout(5000)
    try:
        with conn:
            conn.execute(sql, params)
    finally:
        conn.close()


def memory_id(root: Path, text: str) -> str:
    rows = index_rows(root, "SELECT id FROM memories WHERE text = ?", (text,))
    assert len(rows) == 1, rows
    return str(rows[0][0])


def vectors_by_text(root: Path) -> dict[str, tuple[str, bytes]]:
    rows = index_rows(root, "SELECT m.text, v.identity, v.vector FROM vectors v "
                            "JOIN memories m ON m.rowid = v.rowid")
    return {r[0]: (r[1], bytes(r[2])) for r in rows}


def vector_count(root: Path) -> int:
    return int(index_rows(root, "SELECT COUNT(*) FROM vectors")[0][0])


def ids(result: Any) -> list[str]:
    return [item["id"] for item in result.to_json()["results"]]


FACTS = [
    "I like green tea",
    "The rocket launch is scheduled for Friday",
    "My sister lives in Lisbon",
    "Fixed the login bug in PR-1234",
    "Fixed the login bug in PR-1243",
    "Dentist appointment on 2026-12-09",
    "Dentist appointment on 2026-12-10",
]


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def facts_root(tmp_path: Path, fake: FakeEmbedder) -> Iterator[tuple[Path, MemoryStore]]:
    root = tmp_path / "root"
    with open_store(root, fake, clock=Clock()) as store:
        admit(store, FACTS)
        store.drain(embed=False)
        assert embed_all(store) == [len(FACTS)]
        yield root, store


# -- D2 / N14: Lite never embeds -----------------------------------------------------------------


def test_n14_lite_never_embeds_and_recall_is_lexical(tmp_path: Path, fake: FakeEmbedder) -> None:
    root = tmp_path / "root"
    with open_store(root, fake, block={"mode": "lite"}) as store:
        admit(store, ["I like green tea", "Green paint for the fence", "Rocket launch Friday"])
        store.drain(embed=False)
        assert store.background.embed_pending() == 0
        result = store.recall("green tea")
        assert result.degraded is True
        texts = [item["text"] for item in result.to_json()["results"]]
        assert texts[0] == "I like green tea"
        assert set(texts) == {"I like green tea", "Green paint for the fence"}
        assert result.to_json()["evidence"] is None
        assert result.to_json()["notes"] == []
        assert vector_count(root) == 0
    assert fake.calls == [] and fake.failed == 0
    assert not (root / "embeddings").exists()


# -- D4 / D6: batches of 32, at most 256 texts / 2 MiB in flight ----------------------------------


def test_d4_admission_never_embeds_and_batches_hold_at_most_32(
    tmp_path: Path, fake: FakeEmbedder
) -> None:
    root = tmp_path / "root"
    texts = [f"Memory about topic number {i} and a lamp" for i in range(70)]
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        assert fake.calls == []  # D4: no provider call on the admission/projection path
        assert embed_all(store) == [70]
        assert max(len(call) for call in fake.calls) <= 32
        assert len(fake.calls) == 3
        assert sorted(fake.embedded()) == sorted(texts)
        assert vector_count(root) == 70


def test_d6_at_most_256_texts_per_embed_pending(tmp_path: Path, fake: FakeEmbedder) -> None:
    root = tmp_path / "root"
    texts = [f"Short note {i} on apples" for i in range(300)]
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        first = store.background.embed_pending()
        assert first == MAX_IN_FLIGHT == 256
        first_texts = fake.embedded()
        assert len(first_texts) == 256
        assert all(len(call) <= 32 for call in fake.calls)
        assert store.background.embed_pending() == 44
        assert store.background.embed_pending() == 0
        assert sorted(fake.embedded()) == sorted(texts)
        assert vector_count(root) == 300


def test_d6_at_most_2_mib_in_flight(tmp_path: Path, fake: FakeEmbedder) -> None:
    root = tmp_path / "root"
    filler = "lorem ipsum " * 850
    texts = [f"doc {i:04d} {filler}".strip() for i in range(250)]
    size = len(texts[0].encode("utf-8"))
    assert all(len(t.encode("utf-8")) == size for t in texts) and size > 10_000
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        first = store.background.embed_pending()
        assert MAX_IN_FLIGHT_BYTES == 2 * 1024 * 1024  # D6: 2 MiB, not just "the constant"
        assert first == MAX_IN_FLIGHT_BYTES // size
        assert first < 256
        in_flight = fake.embedded()
        assert len(in_flight) == first
        assert sum(len(t.encode("utf-8")) for t in in_flight) <= MAX_IN_FLIGHT_BYTES
        assert all(len(call) <= 32 for call in fake.calls)
        assert store.background.embed_pending() == 250 - first
        assert store.background.embed_pending() == 0
        assert vector_count(root) == 250


# -- B25: the vector cache ------------------------------------------------------------------------


def test_rebuild_restores_vectors_from_the_cache(tmp_path: Path, fake: FakeEmbedder) -> None:
    root = tmp_path / "root"
    texts = [f"Cached memory about gardens {i}" for i in range(40)] + ["I like green tea"]
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        assert sum(embed_all(store)) == 41
        before = vectors_by_text(root)
        assert len(before) == 41
        generation = read_current(root)
        fake.calls.clear()
        store.rebuild()
        assert read_current(root) != generation
        embed_all(store)
        assert fake.calls == []  # every vector came from the cache
        assert vectors_by_text(root) == before
        result = store.recall("beverage enjoy")
        assert result.degraded is False
        assert result.to_json()["results"][0]["text"] == "I like green tea"
    # A closed root rebuilt by the operator, then a fresh provider object of the same identity.
    rebuild_root(root)
    again = FakeEmbedder()
    with open_store(root, again) as store:
        assert sum(embed_all(store)) == 41
        assert vectors_by_text(root) == before
    assert again.calls == []


def test_changed_identity_reembeds_and_drops_old_vectors(
    tmp_path: Path, fake: FakeEmbedder
) -> None:
    root = tmp_path / "root"
    texts = [f"Identity test memory {i} about kites" for i in range(40)]
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        assert sum(embed_all(store)) == 40
    other = FakeEmbedder(model="bag-of-words-v2")
    with open_store(root, other) as store:
        assert sum(embed_all(store)) == 40
        assert sorted(other.embedded()) == sorted(texts)
        assert index_rows(root, "SELECT DISTINCT identity FROM vectors") == [(other.identity.key,)]
        stored = vectors_by_text(root)
        assert len(stored) == 40
        for text, (_identity, blob) in stored.items():
            assert blob == other.vector(text).tobytes()
            assert blob != fake.vector(text).tobytes()
    cache = apsw.Connection(str(root / "embeddings" / "cache.db"),
                            flags=apsw.SQLITE_OPEN_READONLY)
    try:
        counts = dict(cache.execute("SELECT identity, COUNT(*) FROM vectors GROUP BY identity"))
    finally:
        cache.close()
    assert counts == {fake.identity.key: 40, other.identity.key: 40}
    # Back to the first identity: the cache still holds its vectors, nothing is re-embedded.
    back = FakeEmbedder()
    with open_store(root, back) as store:
        assert sum(embed_all(store)) == 40
        assert index_rows(root, "SELECT DISTINCT identity FROM vectors") == [(back.identity.key,)]
    assert back.calls == []


# -- D9 / G10: a memory waiting for its vector is found lexically ---------------------------------


def test_d9_g10_memory_without_vector_is_found_lexically(
    facts_root: tuple[Path, MemoryStore], fake: FakeEmbedder
) -> None:
    root, store = facts_root
    admit(store, ["Zebra crossing painted blue on Main Street"], prefix="late")
    store.drain(embed=False)
    zebra = memory_id(root, "Zebra crossing painted blue on Main Street")
    waiting = index_rows(root, "SELECT m.id FROM memories m "
                               "LEFT JOIN vectors v ON v.rowid = m.rowid WHERE v.rowid IS NULL")
    assert waiting == [(zebra,)]
    assert vector_count(root) == len(FACTS)
    result = store.recall("zebra crossing")
    # Issue 12 item 1: a live memory without a vector makes the result degraded, with the
    # reason and the count, though the hits are still scored (not the uncut lexical mode).
    assert (result.degraded, result.reason, result.vectors_pending) == (
        True, "vectors_pending", 1)
    assert result.to_json()["vectors_pending"] == 1
    top = result.to_json()["results"][0]
    assert top["id"] == zebra
    # Term overlap (both query words present) stands in for the cosine: 1.0 plus a tiny RRF hint.
    assert 1.0 <= top["score"] < 1.05


# -- G20 / G21: provider outage -------------------------------------------------------------------


def test_outage_recall_is_degraded_lexical_and_logged(
    tmp_path: Path, fake: FakeEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "root"
    texts = ["I like green tea", "Green paint for the fence", "Tea towels need washing",
             "Rocket launch on Friday"]
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        assert embed_all(store) == [4]
        fake.down = True
        with caplog.at_level(logging.WARNING, logger="memory_es"):
            result = store.recall("green tea")
        assert fake.failed == 1
        assert result.degraded is True
        body = result.to_json()
        got = [item["text"] for item in body["results"]]
        assert got[0] == "I like green tea"
        # Lexical-only keeps the old output: no tail cut, no notes (G20).
        assert set(got) == {"I like green tea", "Green paint for the fence",
                            "Tea towels need washing"}
        assert body["evidence"] is None and body["notes"] == []
        assert not result.text.startswith("Insufficient")
        assert any("memory_recall_unavailable" in r.getMessage() for r in caplog.records)
        fake.down = False
        assert store.recall("green tea").degraded is False


def test_outage_embed_pending_logs_and_retries_after_pause(
    tmp_path: Path, fake: FakeEmbedder, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "root"
    monkeypatch.setattr(memory_es.store.vectors, "EMBED_RETRY_SECONDS", 0.0)
    with open_store(root, fake) as store:
        admit(store, ["I like green tea", "Rocket launch on Friday"])
        store.drain(embed=False)
        fake.down = True
        with caplog.at_level(logging.WARNING, logger="memory_es"):
            assert store.background.embed_pending() == 0
        assert fake.failed == 1
        assert any("memory_degraded" in r.getMessage() for r in caplog.records)
        assert vector_count(root) == 0
        result = store.recall("tea")  # still answers, lexically
        assert result.degraded is True
        assert [item["text"] for item in result.to_json()["results"]] == ["I like green tea"]
        fake.down = False
        assert embed_all(store) == [2]  # a zero pause: the very next call retries
        assert vector_count(root) == 2
        assert store.recall("beverage enjoy").degraded is False


def test_outage_pauses_the_provider_for_the_retry_interval(
    tmp_path: Path, fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    monkeypatch.setattr(memory_es.store.vectors, "EMBED_RETRY_SECONDS", 3600.0)
    with open_store(root, fake) as store:
        admit(store, ["I like green tea", "Rocket launch on Friday"])
        store.drain(embed=False)
        fake.down = True
        assert store.background.embed_pending() == 0
        assert fake.failed == 1
        fake.down = False
        assert store.background.embed_pending() == 0  # paused: the provider is not asked again yet
        result = store.recall("tea")
        assert result.degraded is True
        assert [item["text"] for item in result.to_json()["results"]] == ["I like green tea"]
        assert fake.calls == [] and fake.failed == 1
    with open_store(root, fake) as store:  # the pause is per process, not durable
        assert embed_all(store) == [2]


# -- Hybrid recall (G2-G6, G23, G25) --------------------------------------------------------------


def test_paraphrase_found_by_vectors_not_by_words(
    facts_root: tuple[Path, MemoryStore], fake: FakeEmbedder
) -> None:
    root, store = facts_root
    tea = memory_id(root, "I like green tea")
    paraphrase = "which beverage would you enjoy"
    assert store.lexical_search(paraphrase) == []  # no shared word with any memory
    result = store.recall(paraphrase)
    assert result.degraded is False
    body = result.to_json()
    assert body["results"][0]["id"] == tea
    assert body["results"][0]["score"] >= 0.65
    assert body["evidence"] is None
    fake.down = True
    lexical = store.recall(paraphrase)
    assert lexical.degraded is True
    assert tea not in ids(lexical)


@pytest.mark.parametrize(("query_text", "expected", "distractor"), [
    ("login bug PR-1234", "Fixed the login bug in PR-1234", "Fixed the login bug in PR-1243"),
    ("dentist appointment 2026-12-09", "Dentist appointment on 2026-12-09",
     "Dentist appointment on 2026-12-10"),
])
def test_anchor_ranks_the_exact_number_or_date_first(
    facts_root: tuple[Path, MemoryStore], query_text: str, expected: str, distractor: str
) -> None:
    root, store = facts_root
    # The fake gives both memories the same vector: only the anchor can separate them.
    assert dict(vectors_by_text(root))[expected][1] == dict(vectors_by_text(root))[distractor][1]
    result = store.recall(query_text, limit=10)
    assert result.degraded is False
    body = result.to_json()["results"]
    assert body[0]["id"] == memory_id(root, expected)
    scores = {item["id"]: item["score"] for item in body}
    other = memory_id(root, distractor)
    if other in scores:  # the tail cut may drop it; if kept, the anchor bonus separates them
        assert scores[body[0]["id"]] - scores[other] >= 0.14


def test_results_carry_structured_fields_and_text_lines(
    facts_root: tuple[Path, MemoryStore]
) -> None:
    _root, store = facts_root
    result = store.recall("which beverage would you enjoy", limit=5)
    body = result.to_json()
    assert set(body) >= {"degraded", "evidence", "notes", "results"}
    assert body["results"]
    for item in body["results"]:
        assert {"id", "score", "text", "currentness"} <= set(item)
        assert isinstance(item["score"], float)
        assert item["currentness"] == "current"
        assert item["status"] == "open" and item["type"] == "observation"
        assert re.fullmatch(r"[0-9a-f]{64}", item["id"])
    lines = result.text.splitlines()
    assert lines[:len(body["notes"])] == body["notes"]
    hit_lines = lines[len(body["notes"]):]
    assert len(hit_lines) == len(body["results"])
    for line, item in zip(hit_lines, body["results"], strict=True):
        m = LINE.match(line)
        assert m is not None, line
        assert m.group("score") == f"{item['score']:.3f}"
        assert m.group("text") == item["text"]
        assert m.group("at") == item["createdAt"]
    first = LINE.match(hit_lines[0])
    assert first is not None
    # The injected clock: the fixture's first admission is the clock's first reading.
    assert first.group("at").startswith("2026-03-01T09:00:")
    assert first.group("text") == "I like green tea"


# -- G31: the bounded candidate pool --------------------------------------------------------------


def test_pool_is_bounded_to_fifty(tmp_path: Path, fake: FakeEmbedder) -> None:
    root = tmp_path / "root"
    # All 120 match "apples" lexically; the short ones win bm25, the long ones win the vectors,
    # so the two retrievers' top fifties together exceed fifty.
    texts = ([f"Note {i}: apples" for i in range(60)]
             + [f"Note {i}: apples and we drink and enjoy it" for i in range(60)])
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        assert sum(embed_all(store)) == 120
        for limit in (7, 10):
            result = store.recall("apples tea", limit=limit)
            assert result.degraded is False
            assert 1 <= len(result.to_json()["results"]) <= limit
        wide = store.recall("apples tea", limit=50)
        assert 1 <= len(wide.to_json()["results"]) <= 50
        fake.down = True
        degraded = store.recall("apples tea", limit=50)
        assert degraded.degraded is True
        assert len(degraded.to_json()["results"]) == 50  # uncut, but the pool holds fifty
        assert len(store.recall("apples", limit=7).to_json()["results"]) == 7


# -- G22: terminal records stay out ---------------------------------------------------------------


def test_terminal_records_are_excluded(tmp_path: Path, fake: FakeEmbedder) -> None:
    root = tmp_path / "root"
    # Same words, different numbers: equal vectors, so the tail cut keeps all three.
    texts = ["Buy oat milk 1", "Buy oat milk 2", "Buy oat milk 3", "Rocket launch on Friday"]
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        assert embed_all(store) == [4]
        dropped = memory_id(root, "Buy oat milk 1")
        invalidated = memory_id(root, "Buy oat milk 2")
        live = memory_id(root, "Buy oat milk 3")
        before = store.recall("oat milk", limit=10)
        assert {dropped, invalidated, live} <= set(ids(before))
        # Tampering with the index (health would flag it): only recall is judged here.
        tamper(root, "UPDATE memories SET status = 'dropped' WHERE id = ?", (dropped,))
        tamper(root, "UPDATE memories SET status = 'invalidated' WHERE id = ?", (invalidated,))
        after = store.recall("oat milk", limit=10)
        assert after.degraded is False
        assert live in ids(after)
        assert dropped not in ids(after) and invalidated not in ids(after)
        fake.down = True
        lexical = store.recall("oat milk", limit=10)
        assert lexical.degraded is True
        assert ids(lexical) == [live]
        fake.down = False
        # A terminal record is not queued for a vector either.
        admit(store, ["Oat milk is finished"], prefix="late")
        store.drain(embed=False)
        late = memory_id(root, "Oat milk is finished")
        tamper(root, "UPDATE memories SET status = 'dropped' WHERE id = ?", (late,))
        fake.calls.clear()
        assert store.background.embed_pending() == 0
        assert fake.calls == []


def test_terminal_records_do_not_crowd_live_ones_out_of_the_pool(
    tmp_path: Path, fake: FakeEmbedder
) -> None:
    """G22 + G31: the fifty-candidate pool is a pool of live records. Sixty terminal records that
    outrank the one live match in both retrievers must not leave recall empty."""
    root = tmp_path / "root"
    live_text = "Buy oat milk and some more things for later"
    texts = [f"Buy oat milk {i}" for i in range(60)] + [live_text]
    with open_store(root, fake) as store:
        admit(store, texts)
        store.drain(embed=False)
        assert sum(embed_all(store)) == 61
        live = memory_id(root, live_text)
        tamper(root, "UPDATE memories SET status = 'dropped' WHERE id != ?", (live,))
        assert ids(store.recall("oat milk", limit=50)) == [live]
        fake.down = True
        lexical = store.recall("oat milk", limit=50)
        assert lexical.degraded is True
        assert ids(lexical) == [live]


# -- N: health with the cache and the vectors table -----------------------------------------------


def test_health_is_clean_with_vector_cache_and_vectors(
    tmp_path: Path, fake: FakeEmbedder
) -> None:
    root = tmp_path / "root"
    with open_store(root, fake) as store:
        admit(store, FACTS)
        store.drain(embed=False)
        assert embed_all(store) == [len(FACTS)]
        assert store.recall("which beverage would you enjoy").degraded is False
        store.rebuild()  # D10: the new generation gets its vectors before activation
        assert vector_count(root) == len(FACTS)
        assert embed_all(store) == []
    assert (root / "embeddings" / "cache.db").is_file()
    report = MemoryRoot.open(root).health()
    assert report.findings == ()
    assert report.status == "clean"


# -- The real offline provider --------------------------------------------------------------------


def test_local_embedder_end_to_end(tmp_path: Path) -> None:
    root = tmp_path / "root"
    facts = ["I like green tea", "The rocket launch is scheduled for Friday",
             "My sister lives in Lisbon", "The car needs new tyres",
             "Meeting with Bob about the budget"]
    block = {"mode": "journal", "embeddings": {"provider": "local"}}
    with open_store(root, None, block=block) as store:
        admit(store, facts)
        store.drain(embed=False)
        assert embed_all(store) == [5]
        identities = index_rows(root, "SELECT DISTINCT identity FROM vectors")
        assert identities == [('["local","use-multilingual-v3",512]',)]  # the default
        result = store.recall("what drink do I enjoy?")
        assert result.degraded is False
        assert result.to_json()["results"][0]["text"] == "I like green tea"


# -- The background worker embeds on its own ------------------------------------------------------


def test_background_worker_embeds_without_embed_pending(
    tmp_path: Path, fake: FakeEmbedder
) -> None:
    root = tmp_path / "root"
    texts = [f"Background memory {i} about owls" for i in range(5)]
    with open_store(root, fake, background=True) as store:
        admit(store, texts)
        deadline = time.monotonic() + HANG_S
        count = 0
        while time.monotonic() < deadline:
            conn = open_active_index(root)
            if conn is not None:
                try:
                    count = int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
                finally:
                    conn.close()
                if count == 5:
                    break
            time.sleep(0.02)
        assert count == 5
        assert sorted(fake.embedded()) == sorted(texts)
        assert all(len(call) <= 32 for call in fake.calls)
        result = store.recall("owls")
        assert result.degraded is False
        assert len(result.to_json()["results"]) == 5
