"""Concurrent admission: threads (group commit), racing CLI processes, readers during writes.

SPEC B3 (same bytes = duplicate, other bytes = conflict), B23 (one writer per root, callers
serialised per store), DESIGN 3 (group commit; readers never see a transaction in flight).
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from pathlib import Path

from ceilings import HANG_S
from memory_es.events import ADMITTED_TOPIC
from memory_es.ids import intake_uuid, run_hash
from memory_es.intake import AdmissionResult, CompletedTurn
from memory_es.journal import open_journal
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore

CLI = Path(sys.executable).with_name("memory-es")


def turn(run_id: str, answer: str) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer)


def admitted_by_oid(root: Path) -> dict[str, list[dict[str, object]]]:
    """Decoded state of every Intake.Admitted event, grouped by originator id (verified open)."""
    out: dict[str, list[dict[str, object]]] = defaultdict(list)
    opened = open_journal(root, writable=False)
    try:
        unseal = opened.recorder.sealer.unseal  # the summary is sealed (issue 14)
        for _p, oid, v, topic, state, _c in opened.recorder.rows():
            if topic == ADMITTED_TOPIC:
                out[oid].append(json.loads(unseal(topic, oid, v, bytes(state)).state))
    finally:
        opened.close()
    return out


def test_threads_racing_on_overlapping_run_ids(tmp_path: Path) -> None:
    """B3, B23: 8 threads x 40 shared run ids through one store.

    Half the ids get identical bytes from every thread (one admitted, the rest duplicate);
    the other half get a different answer per thread (one admitted, the rest rejected with
    run_id_conflict, and the journal keeps the admitted caller's answer).
    """
    root = tmp_path / "root"
    n_threads, n_ids = 8, 40
    run_ids = [f"race-{i}" for i in range(n_ids)]
    same = set(run_ids[::2])

    def answer(run_id: str, k: int) -> str:
        return f"same answer for {run_id}" if run_id in same else f"answer from {k}"

    results: dict[tuple[int, str], AdmissionResult] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(n_threads)

    def worker(store: MemoryStore, k: int) -> None:
        try:
            order = list(run_ids)
            random.Random(k).shuffle(order)
            barrier.wait()
            for r in order:
                results[(k, r)] = store.persist_completed_turn(turn(r, answer(r, k)))
        except BaseException as e:
            errors.append(e)

    with MemoryStore.open(root, background=False) as store:
        threads = [threading.Thread(target=worker, args=(store, k)) for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=HANG_S)
        assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert len(results) == n_threads * n_ids

    stored = admitted_by_oid(root)
    assert len(stored) == n_ids
    for r in run_ids:
        events = stored[str(intake_uuid(run_hash(r)))]
        assert len(events) == 1, (r, len(events))
        per_thread = {k: results[(k, r)] for k in range(n_threads)}
        assert all(res.intake_id == run_hash(r) for res in per_thread.values())
        winners = [k for k, res in per_thread.items() if res.status == "admitted"]
        assert len(winners) == 1, (r, per_thread)
        others = [res for k, res in per_thread.items() if k != winners[0]]
        if r in same:
            assert all(res.status == "duplicate" and res.code is None for res in others), others
        else:
            assert all(
                res.status == "rejected" and res.code == "run_id_conflict" for res in others
            ), others
        assert events[0]["summary"] == answer(r, winners[0])
        assert events[0]["run_hash"] == run_hash(r)
    # The positions are 2..n+1 with nothing else in between.
    report = MemoryRoot.open(root).inspect()
    assert report.counts.total == n_ids
    # position 1 is the root's recorded configuration, committed with the first admission
    assert sorted(rec.position for rec in report.records) == list(range(2, n_ids + 2))


def test_cli_processes_racing_on_one_root(tmp_path: Path) -> None:
    """B3, B23: CLI admits launched at once on a brand-new root wait for the lock, never fail.

    Ids ``same`` (3 processes, identical bytes) and ``clash`` (3 processes, different answers):
    one admitted each; the rest are duplicates (exit 0) or run_id_conflict rejections (exit 1).
    """
    root = tmp_path / "root"
    jobs = [("same", "identical answer")] * 3 + [("clash", f"answer from {k}") for k in range(3)]
    procs = [
        subprocess.Popen(
            [str(CLI), "--root", str(root), "admit", "--run-id", r, "--answer", a],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for r, a in jobs
    ]
    outcomes = []
    for (r, a), p in zip(jobs, procs, strict=True):
        out, err = p.communicate(timeout=HANG_S)
        assert p.returncode in (0, 1), (r, p.returncode, out, err)
        lines = out.splitlines()
        assert len(lines) == 1, out
        result = json.loads(lines[0])
        assert result["intake_id"] == run_hash(r)
        assert p.returncode == (1 if result["status"] == "rejected" else 0), result
        outcomes.append((r, a, result))

    same = [res for r, _a, res in outcomes if r == "same"]
    assert Counter(res["status"] for res in same) == {"admitted": 1, "duplicate": 2}
    clash = [(a, res) for r, a, res in outcomes if r == "clash"]
    assert Counter(res["status"] for _a, res in clash) == {"admitted": 1, "rejected": 2}
    assert all(res["code"] == "run_id_conflict" for _a, res in clash
               if res["status"] == "rejected")
    winner = next(a for a, res in clash if res["status"] == "admitted")

    stored = admitted_by_oid(root)  # verifies the chain against the catalog
    assert sorted(len(v) for v in stored.values()) == [1, 1]
    assert stored[str(intake_uuid(run_hash("same")))][0]["summary"] == "identical answer"
    assert stored[str(intake_uuid(run_hash("clash")))][0]["summary"] == winner
    with MemoryStore.open(root, lock_timeout=1.0, background=False) as store:
        assert store.inspect().counts.total == 2


def test_reader_sees_consistent_snapshots_while_writers_admit(tmp_path: Path) -> None:
    """DESIGN 3, C5: exports during admission are valid JSONL, contiguous 1..n, n never shrinks.

    Writers pause after every few admissions until the reader has finished two more exports,
    so the reader is guaranteed to observe many intermediate states, not just the end.
    """
    root = tmp_path / "root"
    n_writers, per_writer, pause_every = 4, 20, 5
    total = n_writers * per_writer
    cv = threading.Condition()
    exports_done = 0
    writers_done = threading.Event()
    errors: list[BaseException] = []
    seen: list[int] = []
    inspected: list[int] = []

    def wait_for_reader() -> None:
        with cv:
            target = exports_done + 2
            assert cv.wait_for(lambda: exports_done >= target or bool(errors), timeout=HANG_S)

    def writer(store: MemoryStore, w: int) -> None:
        try:
            for i in range(per_writer):
                res = store.persist_completed_turn(turn(f"w{w}-{i}", f"answer {w}/{i}"))
                assert res.status == "admitted", res
                if (i + 1) % pause_every == 0:
                    wait_for_reader()
        except BaseException as e:
            errors.append(e)
            with cv:
                cv.notify_all()

    def reader() -> None:
        nonlocal exports_done
        try:
            while True:
                last_round = writers_done.is_set()
                buf = io.BytesIO()
                count = MemoryRoot.open(root).export(buf)
                lines = buf.getvalue().splitlines()
                assert len(lines) == count
                positions = [json.loads(line)["position"] for line in lines]
                assert positions == list(range(1, count + 1))
                count -= 1 if count else 0  # the root's configuration rides the first turn
                assert not seen or count >= seen[-1], (seen[-1], count)
                seen.append(count)
                report = MemoryRoot.open(root).inspect()
                assert report.counts.total >= count
                assert not inspected or report.counts.total >= inspected[-1]
                inspected.append(report.counts.total)
                with cv:
                    exports_done += 1
                    cv.notify_all()
                if last_round:
                    return
        except BaseException as e:
            errors.append(e)
            with cv:
                cv.notify_all()

    with MemoryStore.open(root, background=False) as store:
        reader_thread = threading.Thread(target=reader)
        reader_thread.start()
        writers = [threading.Thread(target=writer, args=(store, w)) for w in range(n_writers)]
        for t in writers:
            t.start()
        for t in writers:
            t.join(timeout=HANG_S)
        writers_done.set()
        reader_thread.join(timeout=HANG_S)
        assert not reader_thread.is_alive()
    assert errors == []
    assert seen[-1] == total
    assert inspected[-1] == total
    assert len(set(seen)) > 3, seen  # the reader really ran during the writes
