"""Crash at every named write boundary, then reopen and verify (DESIGN 12; SPEC B1, B3, B14).

A real subprocess (tests/helpers_crash.py) runs with ``MEMORY_ES_CRASH_AT=<boundary>`` and is
SIGKILLed by the library exactly there. The test process then reopens the root as a writer and
checks the durability contract: the root opens, every turn is present or absent as a whole,
nothing admitted before is lost, re-admitting gives ``admitted``/``duplicate`` (never a
conflict, never a second event), and a catalog left behind the journal is recovered once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ceilings import HANG_S
from memory_es.events import ADMITTED_TOPIC
from memory_es.ids import intake_uuid, run_hash
from memory_es.intake import CompletedTurn
from memory_es.journal import CATALOG_FILE, Catalog, open_journal
from memory_es.store import MemoryStore

HELPER = Path(__file__).with_name("helpers_crash.py")

BOUNDARIES = [
    "journal.before_commit",
    "journal.after_commit",
    "catalog.torn_write",
    "catalog.after_write",
]
# Is the transaction being written when the process dies durable?
COMMITTED = {
    "journal.before_commit": False,
    "journal.after_commit": True,
    "catalog.torn_write": True,
    "catalog.after_write": True,
}
# Does the next writer open find the catalog behind the journal (B14 recovery)?
# catalog.after_write: the slot was fully written to the page cache before the kill.
CATALOG_BEHIND = {
    "journal.before_commit": False,
    "journal.after_commit": True,
    "catalog.torn_write": True,
    "catalog.after_write": False,
}
EARLIER = ["earlier-1", "earlier-2"]
# The journal position after the earlier turns: the root's recorded configuration rides the
# first admission's transaction (one Root.Configured event before it).
HEAD = len(EARLIER) + 1


def answer_for(run_id: str) -> str:
    return f"answer for {run_id}"  # same bytes as helpers_crash.answer_for


def turn(run_id: str) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer_for(run_id))


def make_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        for r in EARLIER:
            assert store.persist_completed_turn(turn(r)).status == "admitted"
    return root


def crash(root: Path, boundary: str, mode: str, run_ids: list[str]) -> None:
    """Run the helper with the boundary armed and require that it died there by SIGKILL."""
    env = dict(os.environ, MEMORY_ES_CRASH_AT=boundary)
    proc = subprocess.run(
        [sys.executable, str(HELPER), str(root), mode, *run_ids],
        env=env, capture_output=True, text=True, timeout=HANG_S, check=False,
    )
    assert proc.returncode == -9, (proc.returncode, proc.stdout, proc.stderr)
    assert "survived" not in proc.stdout


def admitted_rows(store: MemoryStore) -> list[tuple[int, str, dict[str, object]]]:
    """(position, originator_id, decoded state) of every Intake.Admitted event (its summary
    opened: content is sealed under a record key since issue 14)."""
    unseal = store._opened.recorder.sealer.unseal
    return [
        (position, oid, json.loads(unseal(topic, oid, v, bytes(state)).state))
        for position, oid, v, topic, state, _chain in store.events()
        if topic == ADMITTED_TOPIC
    ]


def reopen_and_check_recovery(root: Path, behind_at: int | None) -> None:
    """First writer open recovers exactly when the catalog was left behind; the second is clean."""
    first = open_journal(root, writable=True, lock_timeout=1.0)
    try:
        assert first.recovered_from == behind_at
        tail = first.recorder.verify()
    finally:
        first.close()
    cat = Catalog.open(root / CATALOG_FILE, writable=False)
    try:
        assert cat.read() == tail, "after recovery the catalog must record the journal tail"
    finally:
        cat.close()
    second = open_journal(root, writable=True, lock_timeout=1.0)
    try:
        assert second.recovered_from is None
    finally:
        second.close()


def check_turns(root: Path, new: list[str], expect_present: bool | None) -> set[str]:
    """Every earlier turn present; each new turn whole or absent; re-admission is idempotent.

    ``expect_present`` None means "all or nothing is not required across transactions": then
    only per-turn wholeness and contiguity are checked. Returns the new run ids found present.
    """
    with MemoryStore.open(root, lock_timeout=1.0, background=False) as store:
        rows = admitted_rows(store)
        by_oid: dict[str, list[tuple[int, dict[str, object]]]] = {}
        for position, oid, state in rows:
            by_oid.setdefault(oid, []).append((position, state))
        for r in EARLIER:
            found = by_oid.get(str(intake_uuid(run_hash(r))), [])
            assert len(found) == 1, (r, found)
            assert found[0][1]["summary"] == answer_for(r)
        present = set()
        new_positions = []
        for r in new:
            found = by_oid.get(str(intake_uuid(run_hash(r))), [])
            assert len(found) <= 1, (r, found)
            if found:
                position, state = found[0]
                assert state["run_hash"] == run_hash(r)
                assert state["summary"] == answer_for(r)  # the turn is there as a whole
                present.add(r)
                new_positions.append(position)
        assert len(rows) == len(EARLIER) + len(present)  # nothing else was written
        # What survived is one contiguous run of positions right after the earlier turns.
        assert sorted(new_positions) == list(range(HEAD + 1, HEAD + 1 + len(present)))
        if expect_present is True:
            assert present == set(new)
        elif expect_present is False:
            assert present == set()

        # B3: re-admitting is never a conflict and never a second event.
        for r in new:
            result = store.persist_completed_turn(turn(r))
            assert result.status == ("duplicate" if r in present else "admitted"), (r, result)
            assert result.intake_id == run_hash(r)
        again = admitted_rows(store)
        assert len(again) == len(EARLIER) + len(new)
        assert len({oid for _p, oid, _s in again}) == len(again)
    with MemoryStore.open(root, lock_timeout=1.0, background=False) as store:
        ids = [rec.id for rec in store.inspect().records]
    assert sorted(ids) == sorted(run_hash(r) for r in [*EARLIER, *new])
    return present


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_crash_during_single_admission(tmp_path: Path, boundary: str) -> None:
    """B1, B3, B14: one turn killed at ``boundary`` is present or absent as a whole."""
    root = make_root(tmp_path)
    crash(root, boundary, "single", ["new-turn"])
    reopen_and_check_recovery(root, HEAD if CATALOG_BEHIND[boundary] else None)
    check_turns(root, ["new-turn"], COMMITTED[boundary])


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_crash_during_one_multi_event_transaction(tmp_path: Path, boundary: str) -> None:
    """B1, B14: a transaction of several events survives a kill all together or not at all."""
    root = make_root(tmp_path)
    new = [f"batch-{i}" for i in range(5)]
    crash(root, boundary, "recorder", new)
    reopen_and_check_recovery(root, HEAD if CATALOG_BEHIND[boundary] else None)
    check_turns(root, new, COMMITTED[boundary])


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_crash_during_concurrent_admissions(tmp_path: Path, boundary: str) -> None:
    """B1, B3: threads admitting at once through group commit, killed at the first commit.

    The first group-commit transaction holds the leader's queue, whose size depends on
    scheduling, so the check is: before the commit nothing survives; after it, a non-empty,
    contiguous set of whole turns survives, and every turn is re-admittable exactly once.
    """
    root = make_root(tmp_path)
    new = [f"thread-{i}" for i in range(6)]
    crash(root, boundary, "threads", new)
    reopen_and_check_recovery(root, HEAD if CATALOG_BEHIND[boundary] else None)
    present = check_turns(root, new, None if COMMITTED[boundary] else False)
    if COMMITTED[boundary]:
        assert present, "the first commit of the batch was durable before the kill"


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_crash_on_first_admission_of_a_new_root(tmp_path: Path, boundary: str) -> None:
    """B1, B15: dying on the very first admission of a brand-new root leaves a root that opens."""
    root = tmp_path / "fresh"
    crash(root, boundary, "single", ["first"])
    reopen_and_check_recovery(root, 0 if CATALOG_BEHIND[boundary] else None)
    with MemoryStore.open(root, lock_timeout=1.0, background=False) as store:
        ids = [rec.id for rec in store.inspect().records]
        assert ids == ([run_hash("first")] if COMMITTED[boundary] else [])
        result = store.persist_completed_turn(turn("first"))
        assert result.status == ("duplicate" if COMMITTED[boundary] else "admitted")
        assert len(admitted_rows(store)) == 1


@pytest.mark.parametrize("recovery_boundary", ["catalog.torn_write", "catalog.after_write"])
def test_crash_during_recovery_is_recovered_again(tmp_path: Path, recovery_boundary: str) -> None:
    """B14: a kill while the recovering writer advances the catalog still leaves a sound root."""
    root = make_root(tmp_path)
    crash(root, "journal.after_commit", "single", ["new-turn"])
    # The next writer open recovers the catalog, and dies while writing it.
    crash(root, recovery_boundary, "single", [])
    behind = recovery_boundary == "catalog.torn_write"
    reopen_and_check_recovery(root, HEAD if behind else None)
    check_turns(root, ["new-turn"], True)


def test_helper_survives_without_a_crash_point(tmp_path: Path) -> None:
    """Control: without MEMORY_ES_CRASH_AT the same helper run completes and admits."""
    root = make_root(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_ES_CRASH_AT"}
    proc = subprocess.run(
        [sys.executable, str(HELPER), str(root), "single", "new-turn"],
        env=env, capture_output=True, text=True, timeout=HANG_S, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["admitted", "survived"]
    reopen_and_check_recovery(root, None)
    check_turns(root, ["new-turn"], True)
