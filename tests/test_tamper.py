"""The tamper suite, written once and run on both journal backends (issue 18 item 1).

SPEC B12-B17, N5, N6; DESIGN 3. Each test builds a real root, edits its journal the way an
operator, a bad restore or an attacker holding the file or the database's credentials (but not
the root's chain key) would, and checks that every open, writer and reader, fails closed with
the code and words that name the cause, that the integrity catalog (the head row on
PostgreSQL) is not "repaired" to match, that health reports it, and that undoing the edit gives
back every record already stored. Tampering that only a file can suffer (a torn catalog slot,
a deleted marker, modes, links) is in test_journal_integrity.py; rollbacks and swaps of whole
roots, which no key can catch, in test_chain_keys.py (anchors).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_backends import BACKENDS, use_backend
from memory_es.errors import MemoryEsError
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn
from memory_es.journal import chain_link
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from tamper import PostgresTamper, Tamper, append_forged_row, recompute_plain, tamper_of


@pytest.fixture(autouse=True, params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_backend(request, monkeypatch)


def admit(root: Path, run_ids: list[str], *, prefix: str = "", drain: bool = False) -> None:
    with MemoryStore.open(root, background=False) as store:
        for r in run_ids:
            result = store.persist_completed_turn(CompletedTurn(
                run_id=r, outcome="success", answer=f"{prefix}answer for {r}."))
            assert result.status == "admitted", result
        if drain:
            store.drain()


def ids_in(root: Path) -> list[str]:
    """Intake ids of the root in journal order, through a writer open (must succeed)."""
    with MemoryStore.open(root, background=False) as store:
        return [r.id for r in store.inspect().records]


# Position 1 is the root's recorded configuration (written with the first admission);
# run-a is at position 2 ... run-e at position 6.
RUNS = ["run-a", "run-b", "run-c", "run-d", "run-e"]
HASHES = [run_hash(r) for r in RUNS]


@pytest.fixture
def root(tmp_path: Path, journal_backend: str) -> Path:
    r = tmp_path / "root"
    admit(r, RUNS)
    on_postgres = isinstance(tamper_of(r), PostgresTamper)
    assert on_postgres == (journal_backend == "postgres"), "the journal is not where expected"
    return r


def refused(root: Path, tamper: Tamper, code: str, *words: str) -> str:
    """Writer and reader both refuse with ``code`` naming ``words``; the catalog (head) is left
    as the tampering left it; health reports ``code``. Returns the writer's message."""
    head = tamper.head()
    messages = []
    for opener in (lambda: MemoryStore.open(root, background=False, lock_timeout=0.5),
                   lambda: MemoryRoot.open(root).inspect()):
        with pytest.raises(MemoryEsError) as err:
            opener()
        assert err.value.code == code, str(err.value)
        for word in words:
            assert word in str(err.value), str(err.value)
        messages.append(str(err.value))
    assert tamper.head() == head, "a refused open must not move the catalog"
    report = MemoryRoot.open(root).health()
    assert code in {f.code for f in report.findings}, report.to_json()
    return messages[0]


def edited(state: bytes) -> bytes:
    """A plain field of an event edited (the texts themselves are sealed since issue 14)."""
    forged = state.replace(b'"write_mode":"', b'"write_mode":"evil')
    assert forged != state
    return forged


# --------------------------------------------------------------------------------------------
# B13: truncation, holes, edits


def test_truncated_journal_fails_closed_and_nothing_is_lost(root: Path) -> None:
    """B13: deleting the newest events leaves the catalog ahead: 'truncated'."""
    t = tamper_of(root)
    snap = t.snapshot()
    t.delete("position > %s", 3)
    msg = refused(root, t, "journal_truncated", "truncated", "position 3", "records 6")
    assert t.location in msg
    t.restore(snap)
    assert ids_in(root) == HASHES


def test_missing_event_in_the_middle_fails_closed(root: Path) -> None:
    """B13: a hole in the positions is named, though the tail still matches the catalog."""
    t = tamper_of(root)
    snap = t.snapshot()
    t.delete("position = %s", 2)
    refused(root, t, "chain_broken", "position 2 is missing")
    t.restore(snap)
    assert ids_in(root) == HASHES


def test_edited_event_breaks_the_hash_chain(root: Path) -> None:
    """B13, B17: one stored event's state rewritten in place."""
    t = tamper_of(root)
    snap = t.snapshot()
    t.update(4, state=edited(t.rows()[3][4]))
    refused(root, t, "chain_broken", "hash chain does not verify at position 4")
    t.restore(snap)
    assert ids_in(root) == HASHES


def test_edited_event_with_recomputed_chain_column_still_fails(root: Path) -> None:
    """B13, issue 13 item 11: forging the edited row's stored chain with the plain SHA-256 link
    fails at that row itself, because the root's chain is keyed."""
    t = tamper_of(root)
    snap = t.snapshot()
    rows = t.rows()
    position, oid, version, topic, state, _ = rows[3]
    forged = edited(state)
    t.update(position, state=forged,
             chain=chain_link(rows[2][5], position, oid, version, topic, forged))
    refused(root, t, "chain_broken", "hash chain does not verify at position 4")
    t.restore(snap)
    assert ids_in(root) == HASHES


# --------------------------------------------------------------------------------------------
# The keyed chain: what recomputing the plain chain (and the catalog) does not achieve


def test_appended_row_with_recomputed_plain_chain_and_catalog_is_detected(root: Path) -> None:
    t = tamper_of(root)
    position = append_forged_row(t, head=True)
    refused(root, t, "chain_broken", f"position {position}")


def test_appended_row_is_not_adopted_as_crash_recovery(root: Path) -> None:
    """B14 adopts a verified suffix the catalog lags behind; a forged one is not verified."""
    t = tamper_of(root)
    position = append_forged_row(t, head=False)
    refused(root, t, "chain_broken", f"position {position}")


def test_rewritten_middle_with_recomputed_suffix_and_catalog_is_detected(root: Path) -> None:
    t = tamper_of(root)
    t.update(3, state=edited(t.rows()[2][4]))
    recompute_plain(t, start=3)
    refused(root, t, "chain_broken", "position 3")


def test_whole_journal_recomputed_plain_is_detected(root: Path) -> None:
    t = tamper_of(root)
    recompute_plain(t)
    refused(root, t, "chain_broken", "position 1")


# --------------------------------------------------------------------------------------------
# Replacement: another root's journal, a fork of the same root, another catalog


def test_journal_of_another_root_fails_closed(root: Path, tmp_path: Path) -> None:
    """B13: a valid journal of another root (same run ids, other bytes, one more event) in
    place of this one: its rows are keyed with the other root's key, so the chain already
    breaks at position 1."""
    other = tmp_path / "other"
    admit(other, [*RUNS, "run-f"], prefix="other ")
    assert len(ids_in(other)) == 6  # the donor is itself a valid root
    t = tamper_of(root)
    snap = t.snapshot()
    t.replace_rows(tamper_of(other).rows())
    refused(root, t, "chain_broken", "does not verify at position 1", "chain key")
    t.restore(snap)
    assert ids_in(root) == HASHES


def test_a_same_key_fork_is_replaced(root: Path) -> None:
    """Two histories of one root (same key) that went separate ways after a restore: the
    catalog's chain is not the fork's at its position."""
    t = tamper_of(root)
    snap = t.snapshot()
    admit(root, ["run-x", "run-y", "run-z"], prefix="forked ", drain=True)
    fork = t.rows()
    t.restore(snap)
    admit(root, ["run-f"], drain=True)
    assert len(fork) > t.head()[0]
    t.replace_rows(fork)
    refused(root, t, "journal_replaced", "does not match")


def test_catalog_of_another_root_fails_closed(root: Path, tmp_path: Path) -> None:
    """B13: a catalog behind the journal but recording a foreign chain is not 'recovered'."""
    other = tmp_path / "other"
    admit(other, ["x-1", "x-2"])
    t = tamper_of(root)
    snap = t.snapshot()
    t.set_head(*tamper_of(other).head())
    refused(root, t, "journal_replaced", "replaced", "position 3")
    t.restore(snap)
    assert ids_in(root) == HASHES
