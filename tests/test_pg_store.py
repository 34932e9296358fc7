"""The store with its journal on a real PostgreSQL server (issue 18 items 1-3).

Everything above the journal is the same code on both backends; these tests drive it through
the Python API and the CLI (real subprocesses) against the throwaway server of conftest.py:
the root's directory holds projections and a marker naming the server, never a journal file
or the DSN; idempotency and the fail-closed conflict rule hold in the database; tampering in
the database is found on open; a second host joins the same journal and sees its intakes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql
import pytest

from ceilings import HANG_S
from memory_es.config import parse_config
from memory_es.errors import IntegrityError, InvalidArgumentError, MemoryEsError
from memory_es.intake import CompletedTurn
from memory_es.journal import CATALOG_FILE, JOURNAL_FILE, MARKER_FILE
from memory_es.journal.backend import DSN_ENV
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore

CLI = [sys.executable, "-m", "memory_es.cli"]


def config(dsn: str, **journal: str) -> object:
    return parse_config({"mode": "journal", "embeddings": {"provider": "local"},
                         "journal": {"backend": "postgres", "dsn": dsn, **journal}})


def turn(run_id: str, answer: str) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer)


def cli(*argv: str, dsn: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != DSN_ENV}
    if dsn is not None:
        env[DSN_ENV] = dsn
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=HANG_S, env=env)


def test_a_store_on_postgres_admits_once_projects_and_recalls(tmp_path: Path,
                                                               pg_dsn: str) -> None:
    """B1-B3 on PostgreSQL: a turn is admitted once (a repeat is a duplicate, other content
    under the same run id a conflict), projected and recalled; the root keeps no journal
    file, and its marker names the server without credentials."""
    root = tmp_path / "root"
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        first = store.persist_completed_turn(turn("run-1", "My dentist is Dr. Okafor."))
        again = store.persist_completed_turn(turn("run-1", "My dentist is Dr. Okafor."))
        clash = store.persist_completed_turn(turn("run-1", "My dentist is Dr. Who."))
        assert (first.status, again.status, clash.status) == ("admitted", "duplicate",
                                                              "rejected")
        assert clash.code == "run_id_conflict"
        store.drain()
        hits = store.recall("Okafor").recall.hits
        assert [h.text for h in hits][:1] == ["My dentist is Dr. Okafor."]
    assert not (root / JOURNAL_FILE).exists() and not (root / CATALOG_FILE).exists()
    marker = json.loads((root / MARKER_FILE).read_text())
    assert marker["journal"] == "postgres" and marker["location"].startswith("postgresql://")
    password = psycopg.conninfo.conninfo_to_dict(pg_dsn)["password"]
    for path in root.rglob("*"):
        if path.is_file():
            assert str(password).encode() not in path.read_bytes(), path
    with psycopg.connect(pg_dsn) as conn:
        count = conn.execute("SELECT count(*) FROM memory_es_events").fetchone()
    assert count is not None and count[0] >= 1


def test_reopened_from_its_marker_and_the_environment(tmp_path: Path, pg_dsn: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18 item 1: a root made on PostgreSQL reopens without a config, the server from
    $MEMORY_ES_PG_DSN; without a DSN it says which server it needs, naming no secret."""
    root = tmp_path / "root"
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.persist_completed_turn(turn("run-1", "The boiler was serviced in March."))
        store.drain()
    monkeypatch.delenv(DSN_ENV, raising=False)
    with pytest.raises(InvalidArgumentError) as e:
        MemoryStore.open(root, None, background=False)
    assert e.value.code == "journal_dsn_missing" and "postgresql://127.0.0.1" in str(e.value)
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    with MemoryStore.open(root, None, background=False) as store:
        assert store.recall("boiler").recall.hits
    report = MemoryRoot.open(root).health()
    assert report.status == "clean" and not report.findings, report


def test_the_cli_reads_a_postgres_root(tmp_path: Path, pg_dsn: str) -> None:
    """Every CLI command takes the same journal: search, inspect and health through
    $MEMORY_ES_PG_DSN; without it a one-line error and exit 2, no traceback."""
    root = tmp_path / "root"
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.persist_completed_turn(turn("run-1", "Priya's birthday is on 4 May."))
        store.drain()
    found = cli("search", "--root", str(root), "--json", "birthday", dsn=pg_dsn)
    assert found.returncode == 0, found.stderr
    assert "Priya" in found.stdout
    health = cli("health", "--root", str(root), dsn=pg_dsn)
    assert health.returncode == 0, health.stdout + health.stderr
    inspect = cli("inspect", "--root", str(root), "--json", dsn=pg_dsn)
    assert inspect.returncode == 0 and "run-1" not in inspect.stderr
    missing = cli("search", "--root", str(root), "birthday", dsn=None)
    assert missing.returncode == 2, missing
    assert "journal_dsn_missing" in missing.stderr or DSN_ENV in missing.stderr
    assert "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_tampering_in_the_database_is_found_on_open(tmp_path: Path, pg_dsn: str) -> None:
    """B13 on PostgreSQL: a row edited in the database fails every open, closed."""
    root = tmp_path / "root"
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        for n in range(3):
            store.persist_completed_turn(turn(f"run-{n}", f"Fact number {n}."))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE memory_es_events SET state = state || 'x'::bytea "
                     "WHERE notification_id = 2")
    with pytest.raises(IntegrityError) as e:
        MemoryStore.open(root, config(pg_dsn), background=False)  # type: ignore[arg-type]
    assert e.value.code == "chain_broken" and "position 2" in str(e.value)


def test_a_second_host_joins_the_journal_and_sees_every_intake(tmp_path: Path,
                                                               pg_dsn: str) -> None:
    """Issue 18 item 3: another root (another host's projections) on the same journal sees
    every intake and recalls what the first host admitted; each keeps its own projections."""
    a, b = tmp_path / "host-a", tmp_path / "host-b"
    with MemoryStore.open(a, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.persist_completed_turn(turn("run-a", "The spare key is under the blue pot."))
        store.drain()
    with MemoryStore.open(b, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.persist_completed_turn(turn("run-b", "The bins go out on Thursday."))
        again = store.persist_completed_turn(turn("run-a", "The spare key is under the blue pot."))
        assert again.status == "duplicate"
        store.drain()
        counts = store.inspect().counts
        assert (counts.total, counts.resolved) == (2, 2)
        assert store.recall("spare key").recall.hits
    assert json.loads((a / MARKER_FILE).read_text())["root_id"] == \
        json.loads((b / MARKER_FILE).read_text())["root_id"]
    report = MemoryRoot.open(b, config(pg_dsn)).health()  # type: ignore[arg-type]
    assert report.status == "clean" and not report.findings, report


def test_a_sqlite_root_refuses_a_postgres_config(tmp_path: Path, pg_dsn: str) -> None:
    """A root keeps the journal it has; moving it is migrate-journal's job, never an open's."""
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config({"mode": "lite"}), background=False):
        pass
    with pytest.raises(IntegrityError) as e:
        MemoryStore.open(root, config(pg_dsn), background=False)  # type: ignore[arg-type]
    assert e.value.code == "journal_backend_mismatch"


def test_a_host_with_only_the_chain_key_opens_what_another_host_sealed(
        tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18 with issue 14: record keys live in the database wrapped under the chain key,
    so host B, whose key store holds only a copy of the journal's chain key, opens what host A
    sealed; a forget on A shreds it for B too; without the chain key B cannot open at all."""
    from memory_es.keystore import CHAIN_KEY_FILE, KEY_STORE_ENV

    store_a, store_b = tmp_path / "keys-a", tmp_path / "keys-b"
    a, b = tmp_path / "host-a", tmp_path / "host-b"
    monkeypatch.setenv(KEY_STORE_ENV, str(store_a))
    with MemoryStore.open(a, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.persist_completed_turn(turn("run-a", "The alarm code is 4417."))
        store.persist_completed_turn(turn("run-gone", "My old PIN was 9931."))
        store.drain()
        root_id = store.root_id
    assert root_id is not None
    with psycopg.connect(pg_dsn) as conn:
        raw = b"".join(bytes(r[0]) for r in conn.execute("SELECT state FROM memory_es_events"))
        wrapped = conn.execute("SELECT count(*) FROM memory_es_record_keys").fetchone()
    assert b"4417" not in raw and wrapped is not None and wrapped[0] > 0  # sealed, keys there

    monkeypatch.setenv(KEY_STORE_ENV, str(store_b))
    with pytest.raises(MemoryEsError) as e:
        MemoryStore.open(b, config(pg_dsn), background=False)  # type: ignore[arg-type]
    assert e.value.code == "chain_key_missing"
    store_b.mkdir(mode=0o700, exist_ok=True)
    store_b.chmod(0o700)
    (store_b / root_id).mkdir(mode=0o700)
    key = store_b / root_id / CHAIN_KEY_FILE
    key.write_bytes((store_a / root_id / CHAIN_KEY_FILE).read_bytes())
    key.chmod(0o600)
    with MemoryStore.open(b, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.drain()
        assert "4417" in " ".join(h.text for h in store.recall("alarm code").recall.hits)

    monkeypatch.setenv(KEY_STORE_ENV, str(store_a))
    with MemoryStore.open(a, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.forget_turn("run-gone", reason="user-request")
    monkeypatch.setenv(KEY_STORE_ENV, str(store_b))
    with MemoryStore.open(b, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        store.drain()
        assert "9931" not in " ".join(h.text for h in store.recall("old PIN").recall.hits)
        assert "4417" in " ".join(h.text for h in store.recall("alarm code").recall.hits)
    report = MemoryRoot.open(b, config(pg_dsn)).health()  # type: ignore[arg-type]
    assert report.status == "clean", report


@pytest.mark.slow
def test_writer_processes_race_on_one_journal(tmp_path: Path, pg_dsn: str) -> None:
    """Issue 18: 4 writer processes (4 threads each) admit into one journal, 10 % of the
    run ids repeated (same bytes, across processes) and 1 % conflicting (other bytes), each
    draining the shared journal every 500 while the others do: every distinct run id is in the
    journal exactly once, every repeat is a duplicate, every conflicting variant but the one
    admitted is rejected, every intake is resolved once; two reader hosts replay clean."""
    import random

    writers, per_writer = 4, int(os.environ.get("MEMORY_ES_PG_ADMISSIONS", "2000"))
    rng = random.Random(18)
    plans: list[list[list[str]]] = [[] for _ in range(writers)]
    distinct = 0
    for w in range(writers):
        for n in range(per_writer):
            roll = rng.random()
            if roll < 0.10 and distinct:  # a repeat of any earlier run id, same bytes
                k = rng.randrange(distinct)
                plans[w].append([f"run-{k}", f"Answer number {k}."])
            elif roll < 0.11 and distinct:  # the same run id with other bytes
                k = rng.randrange(distinct)
                plans[w].append([f"run-{k}", f"Another answer {k} from writer {w}-{n}."])
            else:
                plans[w].append([f"run-{distinct}", f"Answer number {distinct}."])
                distinct += 1
    helper = Path(__file__).with_name("helpers_pg_writer.py")
    env = {**os.environ, DSN_ENV: pg_dsn}
    procs = []
    for w, plan in enumerate(plans):
        (tmp_path / f"plan-{w}.json").write_text(json.dumps(plan))
        procs.append(subprocess.Popen(
            [sys.executable, str(helper), str(tmp_path / f"host-{w}"),
             str(tmp_path / f"plan-{w}.json"), str(tmp_path / f"results-{w}.json")],
            env=env, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    results = [r for w in range(writers)
               for r in json.loads((tmp_path / f"results-{w}.json").read_text())]
    admitted: dict[str, str] = {}
    for run_id, answer, status, _code in results:
        if status == "admitted":
            assert run_id not in admitted, f"{run_id} admitted twice"
            admitted[run_id] = answer
    assert len(admitted) == distinct
    for run_id, answer, status, code in results:
        if status != "admitted":
            expect = ("duplicate", None) if answer == admitted[run_id] else ("rejected",
                                                                              "run_id_conflict")
            assert (status, code) == expect, (run_id, answer, status, code)
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT originator_id, count(*) FROM memory_es_events "
                            "WHERE topic LIKE '%Intake.Admitted' GROUP BY originator_id"
                            ).fetchall()
    assert len(rows) == distinct and all(count == 1 for _, count in rows)
    with psycopg.connect(pg_dsn) as conn:
        resolved = conn.execute("SELECT originator_id, count(*) FROM memory_es_events WHERE "
                                "topic LIKE '%Intake.Resolved' GROUP BY originator_id").fetchall()
    assert len(resolved) == distinct and all(count == 1 for _, count in resolved)

    for host in (tmp_path / "host-0", tmp_path / "host-1"):
        with MemoryStore.open(host, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
            store.drain()
            counts = store.inspect().counts
            assert (counts.total, counts.resolved) == (distinct, distinct)
        report = MemoryRoot.open(host, config(pg_dsn)).health()  # type: ignore[arg-type]
        assert report.status == "clean" and not report.findings, report


def test_a_running_store_sees_what_another_host_appends(tmp_path: Path, pg_dsn: str) -> None:
    """Issue 18 item 3: a store that stays open folds in the intakes another host admits and
    resolves (inspect on any host shows every intake), and its worker projects them."""
    a, b = tmp_path / "host-a", tmp_path / "host-b"
    with MemoryStore.open(a, config(pg_dsn), background=False) as store_a:  # type: ignore[arg-type]
        store_a.persist_completed_turn(turn("run-a", "The gate code is 2468."))
        with MemoryStore.open(b, config(pg_dsn), background=False) as store_b:  # type: ignore[arg-type]
            store_b.persist_completed_turn(turn("run-b", "The heron nests by the weir."))
            store_b.persist_completed_turn(turn("run-c", "The kayak is in the second shed."))
            seen = store_a.inspect().counts
            assert (seen.total, seen.pending) == (3, 3)  # b's two, before anyone drained
            store_b.drain()  # b resolves all three, a's too
        store_a.persist_completed_turn(turn("run-d", "The bins go out on Thursday."))
        counts = store_a.inspect().counts
        assert (counts.total, counts.resolved, counts.pending) == (4, 3, 1)
        store_a.drain()
        assert store_a.recall("heron").recall.hits  # projected from b's resolution
    with psycopg.connect(pg_dsn) as conn:
        resolved = conn.execute("SELECT originator_id, count(*) FROM memory_es_events WHERE "
                                "topic LIKE '%Intake.Resolved' GROUP BY originator_id").fetchall()
    assert len(resolved) == 4 and all(n == 1 for _, n in resolved)


@pytest.mark.slow
def test_two_hosts_draining_the_same_intakes_resolve_each_once(tmp_path: Path,
                                                               pg_dsn: str) -> None:
    """Two hosts drain the same 60 pending intakes at once: each intake's step runs on one
    host only (advisory-lock leases, then the other host's work folded in), each is resolved
    exactly once, and both hosts replay clean."""
    import threading
    import time
    from collections import Counter

    from memory_es.observe import ObserveProcessor

    steps: Counter[str] = Counter()

    class Counting(ObserveProcessor):
        """The model-free step, counted per intake and slow enough for the hosts to meet."""

        def process(self, admitted: Any, payload: bytes | None, ctx: Any) -> list[Any]:
            steps[admitted.run_hash] += 1
            time.sleep(0.002)
            return super().process(admitted, payload, ctx)

    a, b = tmp_path / "host-a", tmp_path / "host-b"
    with MemoryStore.open(a, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        for n in range(60):
            store.persist_completed_turn(turn(f"run-{n}", f"Numbered fact {n} about otters."))
    stores = [MemoryStore.open(h, config(pg_dsn), background=False,  # type: ignore[arg-type]
                               processor=Counting()) for h in (a, b)]
    try:
        errors: list[BaseException] = []

        def drain(store: MemoryStore) -> None:
            try:
                store.drain()
            except BaseException as e:  # the test fails on it below
                errors.append(e)

        threads = [threading.Thread(target=drain, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        for s in stores:  # one drain each was enough: nothing left pending anywhere
            counts = s.inspect().counts
            assert (counts.total, counts.resolved) == (60, 60), counts
    finally:
        for s in stores:
            s.close()
    with psycopg.connect(pg_dsn) as conn:
        resolved = conn.execute("SELECT originator_id, count(*) FROM memory_es_events WHERE "
                                "topic LIKE '%Intake.Resolved' GROUP BY originator_id").fetchall()
    assert len(resolved) == 60 and all(n == 1 for _, n in resolved)
    # leases: no intake's step ran on both hosts (each host attempts what it leased, once
    # it has folded in what the other wrote)
    assert len(steps) == 60 and set(steps.values()) == {1}, steps.most_common(3)
    for host in (a, b):
        report = MemoryRoot.open(host, config(pg_dsn)).health()  # type: ignore[arg-type]
        assert report.status == "clean" and not report.findings, (host, report)


def test_the_password_comes_from_a_password_file(tmp_path: Path, pg_dsn: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18 item 1: a DSN without a password takes it from libpq's password file
    ($PGPASSFILE), for the API and the CLI alike, on the pool's connections and the writer's
    own; without the file the server refuses, a one-line error naming no secret."""
    info = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    bare = pg_dsn.replace(f":{info['password']}@", "@")
    assert str(info["password"]) not in bare
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"{info['host']}:{info['port']}:{info['dbname']}:{info['user']}:"
                        f"{info['password']}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    root = tmp_path / "root"
    with MemoryStore.open(root, config(bare), background=False) as store:  # type: ignore[arg-type]
        assert store.persist_completed_turn(turn("run-1", "The locker code is 4471.")).status \
            == "admitted"
        store.drain()
    found = cli("search", "--root", str(root), "--json", "locker", dsn=bare)
    assert found.returncode == 0 and "4471" in found.stdout, found.stderr
    monkeypatch.delenv("PGPASSFILE")
    refused = cli("search", "--root", str(root), "locker", dsn=bare)
    assert refused.returncode == 3, refused
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert str(info["password"]) not in refused.stderr


def test_a_schema_named_in_capitals_holds_the_journal(tmp_path: Path, pg_dsn: str) -> None:
    """Review of issue 18: our statements quote the schema, so a mixed-case name holds a
    journal that admits, seals, reopens and replays clean (it failed every open with a bare
    AssertionError); a reserved word (which eventsourcing's own statements cannot take) is
    refused at open naming the setting, through the API and the CLI, and nothing is created."""
    schema = "MySchema"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("CREATE SCHEMA {}").format(psycopg.sql.Identifier(schema)))
    block = {"mode": "journal", "embeddings": {"provider": "local"},
             "journal": {"backend": "postgres", "dsn": pg_dsn, "schema": schema}}
    root = tmp_path / "root"
    for n in range(2):
        with MemoryStore.open(root, parse_config(block), background=False) as store:
            assert store.persist_completed_turn(turn(f"run-{n}", f"Fact {n}.")).status \
                == "admitted"
            store.drain()
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(psycopg.sql.SQL("SELECT count(*) FROM {}.memory_es_events").format(
            psycopg.sql.Identifier(schema))).fetchone()
    assert rows is not None and rows[0] >= 4
    report = MemoryRoot.open(root, parse_config(block)).health()
    assert report.status == "clean" and not report.findings, report
    block["journal"]["schema"] = "user"
    with pytest.raises(InvalidArgumentError) as e:
        MemoryStore.open(tmp_path / "other", parse_config(block), background=False)
    assert e.value.code == "journal_schema_invalid" and "memory.journal.schema" in str(e.value)
    config_file = tmp_path / "memory.json"
    config_file.write_text(json.dumps({**block, "journal": {"backend": "postgres",
                                                            "schema": "user"}}))
    config_file.chmod(0o600)
    refused = cli("admit", "--root", str(tmp_path / "third"), "--config", str(config_file),
                  "--run-id", "r", "--answer", "a", dsn=pg_dsn)
    assert refused.returncode == 2 and "memory.journal.schema 'user'" in refused.stderr, refused
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "Traceback" not in refused.stderr


def test_a_host_with_another_role_writes_to_the_journal(tmp_path: Path, pg_dsn: str) -> None:
    """Review of issue 18: the write function is created once, by the first writer, not on
    every writable open, so a second host connecting as another role (granted use of the
    tables, not their ownership) opens the journal writable and admits (it failed with "must
    be owner of function")."""
    a_root, b_root = tmp_path / "a", tmp_path / "b"
    with MemoryStore.open(a_root, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        assert store.persist_completed_turn(turn("run-a", "Fact a.")).status == "admitted"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE ROLE other_host LOGIN PASSWORD 'other-pw'")
        for grant in ("GRANT USAGE, CREATE ON SCHEMA public TO other_host",
                      "GRANT ALL ON ALL TABLES IN SCHEMA public TO other_host",
                      "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO other_host",
                      "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO other_host"):
            conn.execute(grant)
    info = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    other = pg_dsn.replace(f"{info['user']}:{info['password']}@", "other_host:other-pw@")
    with MemoryStore.open(b_root, config(other), background=False) as store:  # type: ignore[arg-type]
        assert store.persist_completed_turn(turn("run-b", "Fact b.")).status == "admitted"
        assert store.inspect().counts.total == 2
        store.drain()
    with psycopg.connect(pg_dsn) as conn:
        functions = conn.execute("SELECT count(*) FROM pg_proc WHERE proname LIKE "
                                 "'memory_es_append%'").fetchone()
    assert functions is not None and functions[0] == 1


def test_a_row_planted_past_the_head_refuses_writes_as_tampering(tmp_path: Path,
                                                                 pg_dsn: str) -> None:
    """Review of issue 18: a row inserted behind the journal's head (by someone with the
    database's credentials) takes the position the next write needs. The write is refused
    as tampering (``chain_broken``, logged), not retried as a run-id race and reported
    "run ids kept racing"; the next open fails closed on the same row."""
    root = tmp_path / "root"
    with MemoryStore.open(root, config(pg_dsn), background=False) as store:  # type: ignore[arg-type]
        assert store.persist_completed_turn(turn("run-1", "Fact 1.")).status == "admitted"
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO memory_es_events SELECT notification_id + 1, "
                         "gen_random_uuid(), 1, topic, state, chain FROM memory_es_events "
                         "ORDER BY notification_id DESC LIMIT 1")
        refused = store.persist_completed_turn(turn("run-2", "Fact 2."))
        assert (refused.status, refused.code) == ("rejected", "journal_write_failed"), refused
        assert "racing" not in (refused.detail or "")
    with pytest.raises(IntegrityError) as e:
        MemoryStore.open(root, config(pg_dsn), background=False)  # type: ignore[arg-type]
    assert e.value.code == "chain_broken"
