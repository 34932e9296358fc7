"""A long-lived read-only handle keeps what it read between reads.

Its vector matrix (D4): reused while the generation, the folded journal position and the
embedding identity stay, caught up when vectors arrive for rows it already knew, read afresh
when the journal moved (a rewrite, a forget or a status change may have changed a stored
vector) or the generation changed. Its intake fold (C1, C2, B13): carried forward over the
rows appended since, each of their links recomputed; a journal that no longer extends what
it folded is verified and folded afresh, and fails closed when broken.

Real Journal roots on disk with a word-bag embedder and the local model."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import parse_config
from memory_es.errors import MemoryEsError
from memory_es.testing import WordBagEmbedder
from memory_es.transfer import rebuild_root
from memory_es.vectors.kept import KeptMatrix
from projections.derived import open_active_index
from tamper import SqliteTamper
from test_chain_checkpoint import links  # noqa: F401  (the link-counting fixture)
from test_recall_conversation import JOURNAL, journal

TURNS = [("Maya: the climb took nine hours", "chat:1"), ("Jonas: we did Ben Nevis", "chat:1")]


def admit(root: Path, run_id: str, text: str, *, embed: bool = True) -> None:
    with MemoryStore.open(root, parse_config(JOURNAL), background=False,
                          embedder=WordBagEmbedder(4096)) as store:
        if text:
            store.persist_completed_turn(CompletedTurn(run_id=run_id, outcome="success",
                                                       answer=text, session="chat:1"))
        store.drain(embed=embed)
        while embed and store.background.embed_pending():
            pass


def kept_rows(kept: KeptMatrix, root: Path) -> tuple[object, int]:
    conn = open_active_index(root)
    assert conn is not None
    try:
        matrix = kept(WordBagEmbedder(4096), conn)
        return matrix, len(matrix.rowids)
    finally:
        conn.close()


def test_the_matrix_is_kept_caught_up_and_read_again_when_the_journal_moves(
        tmp_path: Path) -> None:
    root = tmp_path / "chat"
    with journal(root, TURNS):
        pass
    kept = KeptMatrix()
    first, rows = kept_rows(kept, root)
    assert rows == 2
    assert kept_rows(kept, root) == (first, 2)  # nothing changed: the same matrix, reused
    admit(root, "late", "Maya: the view from the top", embed=False)  # the journal moves
    second, rows = kept_rows(kept, root)
    assert second is not first and rows == 2  # read afresh; the new row waits for its vector
    admit(root, "", "")  # its vector arrives; the journal does not move
    assert kept_rows(kept, root) == (second, 3)  # caught up in place
    rebuild_root(root)  # a new generation (its vectors come from the word-bag model, which
    third, rows = kept_rows(kept, root)  # the rebuild cannot make: none yet)
    assert third is not second and rows == 0


@pytest.fixture(scope="module")
def local_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kept") / "root"
    local_store(root, "The dentist appointment is on Tuesday.",
                "We planted tomatoes in the garden.")
    return root


LOCAL = {"mode": "journal", "embeddings": {"provider": "local"}}


def local_store(root: Path, *texts: str) -> None:
    """Admit ``texts`` as turns of a local-model Journal root, drained and embedded."""
    with MemoryStore.open(root, parse_config(LOCAL), background=False) as store:
        for n, text in enumerate(texts):
            store.persist_completed_turn(CompletedTurn(run_id=f"r{n}", outcome="success",
                                                       answer=text))
        store.drain()
        while store.background.embed_pending():
            pass


def test_a_long_lived_handle_answers_like_a_fresh_one(local_root: Path) -> None:
    handle = MemoryRoot.open(local_root)
    first = handle.search("when do I see the dentist", 5).to_json()
    assert handle.search("when do I see the dentist", 5).to_json() == first
    assert first == MemoryRoot.open(local_root).search("when do I see the dentist", 5).to_json()
    config = parse_config({"mode": "journal", "embeddings": {"provider": "local"}})
    with MemoryStore.open(local_root, config, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r9", outcome="success",
                                                   answer="The dentist moved it to Friday."))
        store.drain()
        while store.background.embed_pending():
            pass
    again = handle.search("when do I see the dentist", 5).to_json()
    assert again == MemoryRoot.open(local_root).search("when do I see the dentist",
                                                        5).to_json()
    assert "The dentist moved it to Friday." in [h["text"] for h in again["results"]]


def plain_admit(root: Path, runs: list[str]) -> None:
    with MemoryStore.open(root, background=False) as store:
        for run in runs:
            store.persist_completed_turn(CompletedTurn(run_id=run, outcome="success",
                                                       answer=f"answer for {run}."))
        store.drain()


def test_inspect_folds_only_what_was_appended_since(tmp_path: Path,
                                                    links: list[int]) -> None:  # noqa: F811
    root = tmp_path / "root"
    plain_admit(root, ["a", "b", "c"])
    handle = MemoryRoot.open(root)
    first = handle.inspect()
    assert first.counts == MemoryRoot.open(root).inspect().counts
    head = SqliteTamper(root).rows()[-1][0]
    plain_admit(root, ["d"])
    links.clear()
    again = handle.inspect()
    counted = list(links)
    assert again.to_json() == MemoryRoot.open(root).inspect().to_json()
    assert again.counts != first.counts
    # the rows appended since were verified; nothing folded before was verified again
    assert sorted(set(counted)) == [r[0] for r in SqliteTamper(root).rows() if r[0] > head]


def test_inspect_refolds_a_journal_that_no_longer_extends_its_fold(tmp_path: Path) -> None:
    root = tmp_path / "root"
    plain_admit(root, ["a", "b"])
    tamper = SqliteTamper(root)
    before = tamper.snapshot()
    plain_admit(root, ["c"])
    handle = MemoryRoot.open(root)
    assert handle.inspect().counts.total == 3
    tamper.restore(before)  # an older copy put back: shorter than what the handle folded
    assert handle.inspect().to_json() == MemoryRoot.open(root).inspect().to_json()
    assert handle.inspect().counts.total == 2
    plain_admit(root, ["d"])
    rows = tamper.rows()
    last = rows[-1]
    tamper.update(last[0], state=last[4].replace(b'"', b"'", 1))  # an edit past the fold
    with pytest.raises(MemoryEsError) as err:
        handle.inspect()
    assert err.value.code == "chain_broken"


def test_intake_counts_are_inspects_without_its_records(tmp_path: Path) -> None:
    root = tmp_path / "root"
    plain_admit(root, ["a", "b"])
    handle = MemoryRoot.open(root)
    assert handle.intake_counts() == handle.inspect().counts
    plain_admit(root, ["c"])
    assert handle.intake_counts() == MemoryRoot.open(root).inspect().counts
    assert handle.intake_counts().total == 3


def test_a_kept_matrix_never_serves_a_forgotten_memory(tmp_path: Path) -> None:
    root = tmp_path / "root"
    local_store(root, "My locker code is written on the blue card.",
                "We planted tomatoes in the garden.")
    config = parse_config(LOCAL)
    handle = MemoryRoot.open(root)
    hits = handle.search("where is my locker code", 5).recall.hits
    assert hits and hits[0].text.startswith("My locker code")
    with MemoryStore.open(root, config, background=False) as store:
        store.forget(hits[0].id, reason="test")
    after = handle.search("where is my locker code", 5).to_json()
    assert "locker" not in str(after)
    assert after == MemoryRoot.open(root).search("where is my locker code", 5).to_json()


def test_rows_read_again_are_read_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """Rows waiting below the high-water mark are read back in bounded IN lists (SQLite binds
    at most 32,766 values; after a model switch every row waits)."""
    import numpy as np

    from memory_es.vectors import matrix as matrix_module

    root = tmp_path / "chat"
    with journal(root, [(f"Maya: line {n} about topic {n}", "chat:1") for n in range(7)]):
        pass
    conn = open_active_index(root)
    assert conn is not None
    try:
        m = matrix_module.VectorMatrix(4096, WordBagEmbedder(4096).identity.key)
        m.refresh(conn, WordBagEmbedder(4096).identity.key)
        before = dict(zip(m.rowids.tolist(), m.matrix.copy(), strict=True))
        m.forget(list(before))
        monkeypatch.setattr(matrix_module, "_IN_CHUNK", 2)
        m.refresh(conn, WordBagEmbedder(4096).identity.key)
        live = [r for r in m.rowids.tolist() if r != -1]
        assert sorted(live) == sorted(before)
        for rowid, row in zip(m.rowids.tolist(), m.matrix, strict=True):
            if rowid != -1:
                assert np.array_equal(row, before[rowid])
    finally:
        conn.close()


def test_a_long_lived_reader_searches_the_saved_ann_index_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """D4 past the ANN threshold: the kept matrix of a read-only door proposes rows from the
    index the writer saved beside the generation (when it covers exactly these rows), with the
    same answers as the exact search; it never builds, saves or removes a file there, and
    without a saved index it searches exactly."""
    import weakref

    import numpy as np

    from memory_es.vectors import ann
    from memory_es.vectors.matrix import VectorMatrix
    from test_ann import admit_lockers, wait_for_index

    monkeypatch.setattr(ann, "ANN_THRESHOLD", 60)
    root = tmp_path / "ann"
    embedder = WordBagEmbedder(4096)
    with MemoryStore.open(root, parse_config(JOURNAL), background=False,
                          embedder=embedder) as store:
        admit_lockers(store)
        wait_for_index(store)
        queries = [np.asarray(embedder.embed([text])[0], dtype=np.float32)
                   for text in ("which locker holds crate-033", "crate-071", "Locker 5")]
        writer = [store.vectors._matrix.top(q, 5)  # type: ignore[union-attr]
                  for q in queries]
    conn = open_active_index(root)
    assert conn is not None
    generation = Path(conn.filename).parent
    files = ann.ann_paths(generation, embedder.identity.key)
    assert all(f.exists() for f in files)  # the writer saved it on close
    def listing() -> dict[str, int]:  # what is ours (SQLite's own -wal/-shm aside)
        return {p.name: p.stat().st_mtime_ns for p in generation.iterdir()
                if not p.name.endswith(("-wal", "-shm"))}

    before = listing()
    try:
        kept = KeptMatrix()
        matrix = kept(embedder, conn)
        assert matrix.approximate and len(matrix.rowids) == 80
        exact = VectorMatrix(embedder.identity.dim, embedder.identity.key)
        exact.refresh(conn, embedder.identity.key)
        for query, proposed in zip(queries, writer, strict=True):
            # the writer's index answers, each proposal scored exactly (word-bag vectors tie
            # so much that HNSW misses rows an exact pass finds: the reader is no worse)
            assert matrix.top(query, 5) == proposed
            cosines = exact.cosines(query, [r for r, _ in proposed])
            assert all(abs(cosines[r] - c) < 1e-6 for r, c in proposed)
        assert listing() == before  # nothing built, saved or removed
        gone = weakref.ref(matrix)
        del matrix
        kept.clear()
        assert gone() is None  # let go at once (no cycle waits for a collection)

        saved = {f: f.read_bytes() for f in files}
        for f in files:  # no saved index: the reader searches exactly and writes none
            f.unlink()
        reader = KeptMatrix()
        again = reader(embedder, conn)
        assert not again.approximate and len(again.rowids) == 80
        assert not any(f.exists() for f in files)
        # a writer saves one that covers these rows later, with no journal event: the same
        # kept matrix picks it up at its next read
        for f in files:  # the index, then its record, as a writer publishes them
            f.write_bytes(saved[f])
        assert reader(embedder, conn) is again and again.approximate
        # a record of another row count is not loaded, and the matrix is not hashed for it
        hashed: list[int] = []
        real = ann.coverage
        monkeypatch.setattr(ann, "coverage", lambda r, m: hashed.append(len(r)) or real(r, m))
        files[1].write_text(files[1].read_text().replace('"rows": 80', '"rows": 79'))
        other = KeptMatrix()(embedder, conn)
        assert not other.approximate and hashed == []
        files[1].write_bytes(saved[files[1]])
        reader.clear()
        other.close()
    finally:
        conn.close()
