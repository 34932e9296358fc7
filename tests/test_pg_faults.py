"""Crashes and faults against the real PostgreSQL server (issue 18, "What must be shown").

A writer process SIGKILLed inside its commit and right after it; the server stopped with
``pg_ctl stop -m immediate`` while admissions run and started again; the store's connections
cut with ``pg_terminate_backend``. Each time: no acknowledged admission is lost, none is
duplicated, what failed while the server was down said so with a code (never an exception
into the host), and the store recovers without being reopened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ceilings import HANG_S
from memory_es.config import parse_config
from memory_es.intake import AdmissionResult, CompletedTurn
from memory_es.journal.backend import DSN_ENV
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore

HELPER = Path(__file__).with_name("helpers_pg_writer.py")


def config(dsn: str) -> Any:
    return parse_config({"mode": "journal", "embeddings": {"provider": "local"},
                         "journal": {"backend": "postgres", "dsn": dsn}})


def turn(run_id: str) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=f"Answer for {run_id}.")


def admitted_runs(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM memory_es_events "
                           "WHERE topic LIKE '%Intake.Admitted'").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("boundary, kept", [("journal.before_commit", 0),
                                            ("journal.after_commit", 1)])
def test_a_writer_killed_in_its_commit(tmp_path: Path, pg_dsn: str, boundary: str,
                                       kept: int) -> None:
    """SIGKILL inside the transaction: the server rolls it back (and frees the table lock);
    right after the commit: the admission is there once. Either way the run, admitted again,
    ends in the journal exactly once and the root replays clean."""
    root = tmp_path / "root"
    with MemoryStore.open(root, config(pg_dsn), background=False):
        pass  # the journal exists; the kill below is in the first admission
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([["run-kill", "Answer for run-kill."]]))
    proc = subprocess.run([sys.executable, str(HELPER), str(root), str(plan),
                           str(tmp_path / "out.json")], capture_output=True, text=True,
                          timeout=HANG_S, env={**os.environ, DSN_ENV: pg_dsn,
                                            "MEMORY_ES_CRASH_AT": boundary})
    assert proc.returncode == -9, proc.stderr
    assert not (tmp_path / "out.json").exists()  # never reported as written
    assert admitted_runs(pg_dsn) == kept
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:
        again = store.persist_completed_turn(turn("run-kill"))
        assert again.status == ("duplicate" if kept else "admitted")
        other = store.persist_completed_turn(turn("run-next"))  # the table lock is free
        assert other.status == "admitted"
        store.drain()
    assert admitted_runs(pg_dsn) == 2
    report = MemoryRoot.open(root, config(pg_dsn)).health()
    assert report.status == "clean" and not report.findings, report


def test_a_writer_killed_while_its_statement_is_on_the_server(tmp_path: Path,
                                                              pg_dsn: str) -> None:
    """SIGKILL while the one-statement write waits at the server (for the table lock another
    session holds): the server finishes the orphaned statement and commits it, so the turn the
    writer never acknowledged is in the journal, once; admitted again it is a duplicate."""
    root = tmp_path / "root"
    with MemoryStore.open(root, config(pg_dsn), background=False):
        pass
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([["run-kill", "Answer for run-kill."]]))
    with psycopg.connect(pg_dsn) as holder:
        holder.execute("LOCK TABLE memory_es_events IN EXCLUSIVE MODE")  # reads still pass
        proc = subprocess.Popen([sys.executable, str(HELPER), str(root), str(plan),
                                 str(tmp_path / "out.json")], env={**os.environ, DSN_ENV: pg_dsn})
        try:
            deadline = time.monotonic() + HANG_S
            while not _waiting_on_lock(pg_dsn, "memory_es_append"):
                assert proc.poll() is None and time.monotonic() < deadline, "never blocked"
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait(timeout=HANG_S)
        holder.rollback()  # the lock goes; the orphaned statement runs and commits
    deadline = time.monotonic() + HANG_S
    while admitted_runs(pg_dsn) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (tmp_path / "out.json").exists()
    assert admitted_runs(pg_dsn) == 1
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:
        assert store.persist_completed_turn(turn("run-kill")).status == "duplicate"
        store.drain()
    report = MemoryRoot.open(root, config(pg_dsn)).health()
    assert report.status == "clean" and not report.findings, report


def _waiting_on_lock(dsn: str, query: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
                           "'Lock' AND position(%s IN query) > 0", (query,)).fetchone()
    return row is not None and row[0] > 0


def _admit_while(store: MemoryStore, stop: threading.Event, prefix: str,
                 results: list[tuple[str, AdmissionResult]]) -> None:
    n = 0
    while not stop.is_set():
        run_id = f"{prefix}-{n}"
        results.append((run_id, store.persist_completed_turn(turn(run_id))))
        n += 1
        time.sleep(0.005)


def _recovered(results: list[tuple[str, AdmissionResult]], since: int) -> bool:
    """Three admissions in a row after ``since`` were admitted."""
    tail = [res.status for _, res in results[since:]][-3:]
    return tail == ["admitted"] * 3


def test_the_server_stopped_and_restarted_under_load(tmp_path: Path, pg_dsn: str,
                                                      pg_cluster: Any) -> None:
    """``pg_ctl stop -m immediate`` while two threads admit, then start: every acknowledged
    admission is in the journal once; those refused meanwhile say ``io_error`` (one whose
    commit the outage cut off before its answer is there, and a retry says duplicate); admissions
    succeed again after the restart without reopening the store. (An admission waits for a
    connection up to the DSN's connect_timeout, 1 s here: an outage shorter than that only
    delays it; this one is longer.)"""
    root = tmp_path / "root"
    pg_dsn = pg_dsn.replace("connect_timeout=5", "connect_timeout=1")
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:
        stop = threading.Event()
        out: list[list[tuple[str, AdmissionResult]]] = [[], []]
        threads = [threading.Thread(target=_admit_while, args=(store, stop, f"t{i}", out[i]))
                   for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        pg_cluster.stop("immediate")
        time.sleep(3.0)
        pg_cluster.start()
        since = [len(o) for o in out]
        deadline = time.monotonic() + HANG_S  # recovered by itself, however loaded the machine
        while not all(_recovered(o, k) for o, k in zip(out, since, strict=True)) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(timeout=HANG_S)
        assert all(_recovered(o, k) for o, k in zip(out, since, strict=True))
        results = out[0] + out[1]
        acknowledged = [r for r, res in results if res.status == "admitted"]
        refused = [res for _, res in results if res.status != "admitted"]
        assert refused, "the stop refused nothing: the test did not hit the outage"
        assert {res.code for res in refused} == {"io_error"}, refused[:3]
        after = store.persist_completed_turn(turn("after-restart"))
        assert after.status == "admitted"
        # The host retries what was refused: a commit the outage cut off before its answer
        # is there (duplicate), the rest is admitted now; never twice.
        retried = [store.persist_completed_turn(turn(r)).status
                   for r, res in results if res.status != "admitted"]
        assert set(retried) <= {"admitted", "duplicate"}, retried
        assert {store.persist_completed_turn(turn(r)).status for r in acknowledged} == {
            "duplicate"}  # every acknowledged admission is there
        store.drain()
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT count(*), count(DISTINCT originator_id) FROM "
                            "memory_es_events WHERE topic LIKE '%Intake.Admitted'").fetchone()
    assert rows is not None and rows[0] == rows[1] == len(results) + 1
    report = MemoryRoot.open(root, config(pg_dsn)).health()
    assert report.status == "clean" and not report.findings, report


def test_connections_cut_by_the_server(tmp_path: Path, pg_dsn: str) -> None:
    """``pg_terminate_backend`` of every connection the store holds: once they are gone the
    next admission is made on a fresh connection (the writer sees the server hung up on its
    own before sending, the pool checks the others before use); nothing is lost."""
    root = tmp_path / "root"
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:
        assert store.persist_completed_turn(turn("before")).status == "admitted"
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            cut = [r[0] for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND "
                "pid <> pg_backend_pid()", (dbname,))]
            conn.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid",
                         (cut,))
        assert cut
        deadline = time.monotonic() + HANG_S  # the backends exit asynchronously
        while _alive(pg_dsn, cut) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.persist_completed_turn(turn("after")).status == "admitted"
        assert store.persist_completed_turn(turn("before")).status == "duplicate"
        store.drain()
        assert store.inspect().counts.total == 2


def _alive(dsn: str, pids: list[int]) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)",
                           (pids,)).fetchone()
    return bool(row and row[0])


def test_an_admission_while_the_server_is_down_is_an_io_error(tmp_path: Path, pg_dsn: str,
                                                              pg_cluster: Any) -> None:
    """The first admission of a store seals its turn under a record key it reserves in the
    database first: with the server down, that is refused as ``io_error`` like the write
    itself (it said ``internal_error``), and admitted once the server is back."""
    root = tmp_path / "root"
    pg_dsn = pg_dsn.replace("connect_timeout=5", "connect_timeout=1")
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:
        pg_cluster.stop("fast")
        try:
            down = store.persist_completed_turn(turn("run-down"))
        finally:
            pg_cluster.start()
        assert (down.status, down.code) == ("rejected", "io_error"), down
        assert store.persist_completed_turn(turn("run-down")).status == "admitted"
        store.drain()
    report = MemoryRoot.open(root, config(pg_dsn)).health()
    assert report.status == "clean" and not report.findings, report
