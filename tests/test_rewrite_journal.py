"""``memory-es rewrite-journal``: a root written with content-derived ids, rewritten into the
form a forget can fully erase, verified, in place (B3, B5, D3, D5, L1, N1).

The roots are replayed from the legacy golden fixtures (journals as the engine wrote them
before ids stopped hashing content), so they hold exactly the ids and digests old roots hold.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ceilings import HANG_S
from helpers_index import index_rows
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.errors import IntegrityError
from memory_es.ids import run_memory_id
from memory_es.journal import open_journal
from memory_es.rewrite import rewrite_journal, rewrite_lines, verify
from memory_es.text import fold, journal_text
from memory_es.transfer import replay_export

LEGACY = Path(__file__).resolve().parents[1] / "replay_fixtures" / "legacy"
CLI = [sys.executable, "-m", "memory_es.cli"]


def legacy_root(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    replay_export(LEGACY / name / "journal.jsonl", root)
    return root


def texts(root: Path) -> list[tuple[str, str, str]]:
    return sorted(index_rows(root, "SELECT text, status, day FROM memories"))


def digests_of(root: Path) -> set[bytes]:
    """The content-derived ids the old form wrote: the SHA-256 (hex) of every stored line's
    Journal normal form and of every entity's type and folded name."""
    found = {hashlib.sha256(journal_text(t).encode()).hexdigest().encode()
             for t, _s, _d in texts(root) if t}
    return found | {hashlib.sha256(f"{kind}\x00{fold(name)}".encode()).hexdigest().encode()
                    for name, kind in index_rows(root, "SELECT name, type FROM entities")}


def every_byte(base: Path) -> bytes:
    """Every stored byte but the index's: the index keeps each live line's text key beside
    its text (a projection, erased with the line)."""
    return b"".join(p.read_bytes() for p in sorted(base.rglob("*"))
                    if p.is_file() and "index" not in p.relative_to(base).parts)


@pytest.mark.parametrize("name", ["journal-repeats", "lifecycle", "bujo-capture"])
def test_a_legacy_root_is_rewritten_verified_and_keeps_every_line(tmp_path: Path,
                                                                  name: str) -> None:
    root = legacy_root(tmp_path, name)
    before, old_id = texts(root), MemoryRoot.open(root).anchor().root_id
    hashed = digests_of(root)
    assert any(d in every_byte(root) for d in hashed)  # the old form: ids hash the text
    report = rewrite_journal(root)
    assert not report.already and report.memories + report.entities > 0
    assert texts(root) == before  # the same lines, statuses and days
    assert not any(d in every_byte(root) for d in hashed)
    assert report.root_id != old_id
    keys = Path(os.environ["MEMORY_ES_KEY_STORE"])
    assert not (keys / old_id).exists()  # the old root's keys went with it
    assert not any(p.name.startswith(root.name + ".rewrite") for p in tmp_path.iterdir())
    health = MemoryRoot.open(root).health()
    assert health.status == "clean", health.to_json()
    # the old journal's writer, closed after the swap, left no checkpoint of the old chain:
    # the rewritten root's own one holds, so a read recomputes no link
    opened = open_journal(root, writable=False, checkpoint=True)
    assert opened.from_checkpoint
    opened.close()
    again = rewrite_journal(root)
    assert again.already  # nothing left to rewrite


def test_a_journal_observation_takes_its_first_runs_id_and_repeats_still_converge(
        tmp_path: Path) -> None:
    root = legacy_root(tmp_path, "journal-repeats")
    export = (LEGACY / "journal-repeats" / "journal.jsonl").read_bytes().splitlines(True)
    first_run = {}
    for line in export:
        row = json.loads(line)
        if row["topic"] == "memory_es/Memory.Recorded":
            first_run.setdefault(row["state"]["memory_id"], row["state"]["run_hash"])
    rewrite_journal(root)
    ids = {r[0] for r in index_rows(root, "SELECT id FROM memories")}
    assert ids == {run_memory_id(run, 0) for run in first_run.values()}
    line = index_rows(root, "SELECT text FROM memories ORDER BY rowid LIMIT 1")[0][0]
    count = len(index_rows(root, "SELECT id FROM memories"))
    with MemoryStore.open(root, background=False) as store:  # D5 on the rewritten root
        store.persist_completed_turn(CompletedTurn(run_id="after-rewrite", outcome="success",
                                                   answer=line))
        store.drain()
    assert len(index_rows(root, "SELECT id FROM memories")) == count


def test_a_forgotten_turns_digests_go_and_a_capture_texts_digest_is_sealed(
        tmp_path: Path) -> None:
    lines, _ids = rewrite_lines((LEGACY / "bujo-capture" / "journal.jsonl").read_bytes()
                                .splitlines(True))
    for line in lines:
        row = json.loads(line)
        if row["topic"] == "memory_es/Intake.Admitted":
            assert row["state"]["payload_sha256"] in (None, "sealed")
            assert row["state"]["payload_bytes"] == 0


def test_a_rewrite_that_does_not_verify_swaps_nothing(tmp_path: Path) -> None:
    root = legacy_root(tmp_path, "journal-repeats")
    other = legacy_root(tmp_path, "lifecycle")
    from memory_es.journal import open_journal

    opened = open_journal(root, writable=False)
    try:
        with pytest.raises(IntegrityError, match="differs"):
            verify(opened, other, {})
    finally:
        opened.close()


def test_cli_rewrite_journal(tmp_path: Path) -> None:
    root = legacy_root(tmp_path, "journal-repeats")
    done = subprocess.run([*CLI, "--root", str(root), "rewrite-journal", "--json"],
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["already"] is False and report["memories"] > 0
    again = subprocess.run([*CLI, "--root", str(root), "rewrite-journal"],
                           capture_output=True, text=True, timeout=HANG_S)
    assert again.returncode == 0 and "nothing rewritten" in again.stdout
    missing = subprocess.run([*CLI, "--root", str(tmp_path / "nope"), "rewrite-journal"],
                             capture_output=True, text=True, timeout=HANG_S)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1, missing


@pytest.mark.parametrize("crash", ["rewrite.before_swap", "rewrite.inside_swap"])
def test_a_killed_rewrite_leaves_the_root_whole_and_the_next_run_finishes(
        tmp_path: Path, crash: str) -> None:
    root = legacy_root(tmp_path, "journal-repeats")
    before = texts(root)
    env = {**os.environ, "MEMORY_ES_CRASH_AT": crash}
    killed = subprocess.run([*CLI, "--root", str(root), "rewrite-journal"], env=env,
                            capture_output=True, text=True, timeout=HANG_S)
    assert killed.returncode == -9, killed
    if crash == "rewrite.before_swap":
        assert texts(root) == before and MemoryRoot.open(root).health().status == "clean"
    done = subprocess.run([*CLI, "--root", str(root), "rewrite-journal", "--json"],
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert texts(root) == before
    assert not any(p.name.startswith(root.name + ".rewrite") for p in tmp_path.iterdir())
    assert MemoryRoot.open(root).health().status == "clean"
    assert rewrite_journal(root).already
