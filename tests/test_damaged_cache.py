"""A damaged vector cache never blocks the journal (D4, D9, B25, N1, N12; issue 14 forget).

``embeddings/cache.db`` is a projection of the provider: garbage bytes or a truncated file
are found on open (or on any later read or write), the file is deleted with one warning
naming it, and what it held is embedded again. A forget still destroys its keys and
completes; health names the file with ``vector_cache_damaged`` and stays content-free."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import apsw
import pytest

from helpers_attack import open_store
from memory_es import CompletedTurn, MemoryRoot
from memory_es.cli import main

CACHE_REL = "embeddings/cache.db"

MARKER = "xqzvkptwq"
ANSWERS = ("The boiler was serviced in April.", f"My locker code word is {MARKER} today.",
           "The cat prefers the blue bowl.")


@pytest.fixture
def root(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "root"
    with open_store(path, "journal", background=False) as store:
        for i, answer in enumerate(ANSWERS):
            store.persist_completed_turn(CompletedTurn(run_id=f"r{i}", outcome="success",
                                                       answer=answer, session="web:c"))
        store.drain()
        memory_id = store.lexical_search(MARKER)[0].id
    assert (path / CACHE_REL).stat().st_size > 4096
    return path, memory_id


def damage(root: Path, how: str) -> None:
    cache = root / CACHE_REL
    if how == "garbage":
        cache.write_bytes(b"\x00garbage\xff" * 2048)
    else:  # truncated: the header survives, the tables' pages do not
        data = cache.read_bytes()
        cache.write_bytes(data[:4096 + 100])


def health_json(root: Path) -> dict[str, object]:
    report = MemoryRoot.open(root).health()
    text = json.dumps(report.to_json())
    assert MARKER not in text and "boiler" not in text  # N12: content-free
    return report.to_json()


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_health_names_a_damaged_cache(root: tuple[Path, str], how: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = root
    damage(path, how)
    report = health_json(path)
    assert report["status"] == "findings"
    codes = {(f["code"], f["path"]) for f in report["findings"]}  # type: ignore[attr-defined]
    assert codes == {("vector_cache_damaged", CACHE_REL)}
    assert main(["--root", str(path), "health"]) == 1
    out = capsys.readouterr().out
    assert "vector_cache_damaged" in out and CACHE_REL in out and MARKER not in out


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_forget_with_a_damaged_cache_destroys_the_keys(
        root: tuple[Path, str], how: str, caplog: pytest.LogCaptureFixture) -> None:
    path, memory_id = root
    damage(path, how)
    with caplog.at_level(logging.WARNING, logger="memory_es"), \
            open_store(path, "journal", background=False) as store:
        receipt = store.forget(memory_id, reason="test")
        assert receipt.status == "forgotten" and receipt.keys_destroyed > 0
        assert receipt.byte_scan is not None and receipt.byte_scan.clean
        assert store.lexical_search(MARKER) == []
        assert len(store.lexical_search("boiler")) == 1
    warnings = [r.getMessage() for r in caplog.records if "vector_cache_damaged" in
                r.getMessage()]
    assert len(warnings) == 1 and CACHE_REL in warnings[0]
    # nothing of the damaged file is kept (set aside it would keep forgotten vectors)
    assert sorted(p.name for p in (path / "embeddings").iterdir()
                  if p.name.startswith("cache.db") and not p.name.endswith(("-wal", "-shm"))
                  ) in ([], ["cache.db"])
    assert health_json(path)["status"] == "clean"


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_writer_open_drain_and_rebuild_replace_a_damaged_cache(
        root: tuple[Path, str], how: str, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = root
    damage(path, how)
    with open_store(path, "journal", background=False) as store:  # no raw CorruptError
        store.persist_completed_turn(CompletedTurn(run_id="r9", outcome="success",
                                                   answer="The fern needs water weekly.",
                                                   session="web:c"))
        store.drain()
        assert store.vector_backlog() == 0
    assert health_json(path)["status"] == "clean"
    damage(path, how)
    assert main(["--root", str(path), "rebuild"]) == 0
    capsys.readouterr()
    assert health_json(path)["status"] == "clean"


@pytest.mark.parametrize("how", ["zero_bytes", "no_table_yet"])
def test_a_cache_a_writer_is_still_creating_is_not_damage(root: tuple[Path, str],
                                                           how: str) -> None:
    """Between creating ``cache.db`` and creating its table a writer's open leaves an empty
    file (or an empty database); health beside it reports no damage, and the next writer
    open gives it its table without a warning."""
    path, _ = root
    cache = path / CACHE_REL
    for side in ("-wal", "-shm"):
        (path / (CACHE_REL + side)).unlink(missing_ok=True)
    cache.write_bytes(b"")
    if how == "no_table_yet":
        conn = apsw.Connection(str(cache))
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
        conn.execute("CREATE TABLE other (x)")
        conn.close()
    assert health_json(path)["status"] == "clean"
    with open_store(path, "journal", background=False) as store:
        store.drain()
        assert store.vector_backlog() == 0
    assert health_json(path)["status"] == "clean"
