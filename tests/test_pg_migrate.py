"""``memory-es migrate-journal`` between SQLite and a real PostgreSQL server (issue 18 item 4).

A root goes to PostgreSQL and back through the CLI (real subprocesses): its export is the
same bytes on either backend, recall and health work after each move, a run killed between
batches resumes from the target's head, a switched root copies nothing, and a database that
holds another journal is refused.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ceilings import HANG_S
from memory_es.config import parse_config
from memory_es.intake import CompletedTurn
from memory_es.journal import CATALOG_FILE, JOURNAL_FILE, MARKER_FILE
from memory_es.journal.backend import DSN_ENV
from memory_es.store import MemoryStore

CLI = [sys.executable, "-m", "memory_es.cli"]
JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}


def cli(*argv: str, dsn: str | None = None, crash: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != DSN_ENV}
    if dsn is not None:
        env[DSN_ENV] = dsn
    if crash is not None:
        env["MEMORY_ES_CRASH_AT"] = crash
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=HANG_S, env=env)


def fill(root: Path, n: int, *, config: Any = None, prefix: str = "run") -> None:
    with MemoryStore.open(root, config or parse_config(JOURNAL), background=False) as store:
        for i in range(n):
            store.persist_completed_turn(CompletedTurn(
                run_id=f"{prefix}-{i}", outcome="success",
                answer=f"Fact {prefix} {i}: the parcel locker code is {1000 + i}."))
        store.remember("The boat is moored at pier 7.")
        store.drain()


def local_keys(root: Path) -> Path:
    """The key store's record-key database of ``root``."""
    root_id = json.loads((root / MARKER_FILE).read_text())["root_id"]
    return Path(os.environ["MEMORY_ES_KEY_STORE"]) / root_id / "records.db"


def export(root: Path, dsn: str | None) -> bytes:
    out = cli("export", "--root", str(root), "--journal", "-", dsn=dsn)
    assert out.returncode == 0, out.stderr
    return out.stdout.encode()


def test_a_root_moves_to_postgres_and_back_with_the_same_export(tmp_path: Path,
                                                                pg_dsn: str) -> None:
    root = tmp_path / "root"
    fill(root, 12)
    with MemoryStore.open(root, parse_config(JOURNAL), background=False) as store:
        store.forget_turn("run-3", reason="user-request")  # a destroyed record key moves too
    before = export(root, None)

    moved = cli("migrate-journal", "--root", str(root), "--to", "postgres", "--dsn", pg_dsn,
                "--json")
    assert moved.returncode == 0, moved.stderr
    report = json.loads(moved.stdout)
    assert report["copied"] == report["position"] > 12 and report["record_keys"] > 0
    assert pg_dsn not in moved.stdout + moved.stderr
    # the source goes with the key store's copy of its keys: a forget could not reach them
    assert sorted(p.name for p in root.glob("journal.db*")) == []
    assert not local_keys(root).exists()
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == "postgres"
    assert export(root, pg_dsn) == before
    assert cli("health", "--root", str(root), dsn=pg_dsn).returncode == 0
    found = cli("search", "--root", str(root), "--json", "pier", dsn=pg_dsn)
    assert found.returncode == 0 and "pier 7" in found.stdout

    again = cli("migrate-journal", "--root", str(root), "--to", "postgres", "--dsn", pg_dsn)
    assert again.returncode == 0 and "nothing copied" in again.stdout

    os.environ[DSN_ENV] = pg_dsn
    try:
        fill(root, 2, config=None, prefix="on-pg")  # written on PostgreSQL
    finally:
        del os.environ[DSN_ENV]
    on_pg = export(root, pg_dsn)
    back = cli("migrate-journal", "--root", str(root), "--to", "sqlite", dsn=pg_dsn)
    assert back.returncode == 0, back.stderr
    assert (root / JOURNAL_FILE).exists() and (root / CATALOG_FILE).exists()
    assert export(root, None) == on_pg  # no DSN needed any more
    with psycopg.connect(pg_dsn) as conn:  # the server's copy is gone, keys and all
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE "
                            "'memory_es_%%'").fetchone() == (0,)
    health = cli("health", "--root", str(root))
    assert health.returncode == 0, health.stdout
    found = cli("search", "--root", str(root), "--json", "--limit", "50", "parcel locker code",
                dsn=None)
    assert found.returncode == 0 and "on-pg" in found.stdout


def test_a_killed_migration_resumes_from_the_targets_head(tmp_path: Path, pg_dsn: str) -> None:
    root = tmp_path / "root"
    fill(root, 20)
    killed = cli("migrate-journal", "--root", str(root), "--to", "postgres", "--dsn", pg_dsn,
                 "--batch", "5", crash="migrate.after_batch")
    assert killed.returncode == -9
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == JOURNAL_FILE  # unswitched
    with psycopg.connect(pg_dsn) as conn:
        head = conn.execute("SELECT position FROM memory_es_head").fetchone()
    assert head is not None and head[0] == 5
    done = cli("migrate-journal", "--root", str(root), "--to", "postgres", "--dsn", pg_dsn,
               "--batch", "5", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["resumed_from"] == 5 and report["copied"] == report["position"] - 5
    assert cli("health", "--root", str(root), dsn=pg_dsn).returncode == 0


@pytest.mark.parametrize("argv, code", [
    (["--to", "postgres"], "journal_dsn_missing"),
    (["--to", "postgres", "--dsn", "PG", "--batch", "0"], "usage"),
])
def test_bad_migrations_are_one_line_errors(tmp_path: Path, pg_dsn: str, argv: list[str],
                                            code: str) -> None:
    root = tmp_path / "root"
    fill(root, 1)
    out = cli("migrate-journal", "--root", str(root), "--json",
              *[pg_dsn if a == "PG" else a for a in argv])
    assert out.returncode == 2, out
    assert code == "usage" or json.loads(out.stdout)["error"]["code"] == code
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == JOURNAL_FILE


def test_a_database_holding_another_journal_is_refused(tmp_path: Path, pg_dsn: str) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    fill(first, 2)
    fill(second, 2)
    assert cli("migrate-journal", "--root", str(first), "--to", "postgres",
               "--dsn", pg_dsn).returncode == 0
    out = cli("migrate-journal", "--root", str(second), "--to", "postgres", "--dsn", pg_dsn,
              "--json")
    assert out.returncode == 3, out
    assert json.loads(out.stdout)["error"]["code"] == "migrate_target_foreign"
    assert (second / JOURNAL_FILE).exists()  # untouched


def test_a_forget_after_a_migration_leaves_no_copy_that_opens_the_text(
        tmp_path: Path, pg_dsn: str) -> None:
    """Before, the old journal stayed as ``journal.db*.migrated`` and the key store kept
    every record key: a forget on PostgreSQL destroyed the key only on the server, and the
    leftovers opened the text again."""
    root = tmp_path / "root"
    fill(root, 3)
    secret = b"parcel locker code is 1001"
    assert cli("migrate-journal", "--root", str(root), "--to", "postgres",
               "--dsn", pg_dsn).returncode == 0
    os.environ[DSN_ENV] = pg_dsn
    try:
        with MemoryStore.open(root, None, background=False) as store:
            assert store.forget_turn("run-1", reason="user-request").status == "forgotten"
    finally:
        del os.environ[DSN_ENV]
    store_dir = Path(os.environ["MEMORY_ES_KEY_STORE"])
    for base in (root, store_dir):
        for path in base.rglob("*"):
            assert not path.is_file() or secret not in path.read_bytes(), path
    assert not any(p.name.startswith("journal.db") for p in root.iterdir())


def test_leftovers_of_a_cut_short_migration_are_reported_and_removed(
        tmp_path: Path, pg_dsn: str) -> None:
    """A kill right after the switch, and the ``*.migrated`` copy an earlier version kept:
    health names them (exit 1), and running the command again removes them."""
    root = tmp_path / "root"
    fill(root, 2)
    killed = cli("migrate-journal", "--root", str(root), "--to", "postgres", "--dsn", pg_dsn,
                 crash="migrate.after_switch")
    assert killed.returncode == -9
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == "postgres"
    (root / (JOURNAL_FILE + ".migrated")).write_bytes((root / JOURNAL_FILE).read_bytes())
    health = cli("health", "--root", str(root), "--json", dsn=pg_dsn)
    assert health.returncode == 1, health.stdout
    found = {(f["code"], f["path"]) for f in json.loads(health.stdout)["findings"]}
    assert ("journal_leftover", JOURNAL_FILE) in found
    assert ("journal_leftover", JOURNAL_FILE + ".migrated") in found
    assert any(code == "journal_leftover" and path.endswith("records.db")
               for code, path in found)
    again = cli("migrate-journal", "--root", str(root), "--to", "postgres", "--dsn", pg_dsn)
    assert again.returncode == 0, again.stderr
    assert not any(p.name.startswith("journal.db") for p in root.iterdir())
    assert not local_keys(root).exists()
    assert cli("health", "--root", str(root), dsn=pg_dsn).returncode == 0


def test_the_dsn_comes_from_the_environment_or_an_owner_only_file(tmp_path: Path,
                                                                  pg_dsn: str) -> None:
    """The password stays out of ``ps``: ``$MEMORY_ES_PG_DSN`` or ``--dsn-file`` (owner-only,
    like a config file holding ``journal.dsn``); ``--dsn`` with a password still works but
    says so on stderr."""
    password = psycopg.conninfo.conninfo_to_dict(pg_dsn)["password"]
    dsn_file = tmp_path / "dsn"
    dsn_file.write_text(pg_dsn + "\n")
    dsn_file.chmod(0o644)
    root = tmp_path / "root"
    fill(root, 2)
    loose = cli("migrate-journal", "--root", str(root), "--to", "postgres",
                "--dsn-file", str(dsn_file))
    assert loose.returncode == 2 and loose.stderr.count("\n") == 1, loose
    assert str(dsn_file) in loose.stderr and "0644" in loose.stderr
    assert password not in loose.stdout + loose.stderr
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == JOURNAL_FILE
    dsn_file.chmod(0o600)
    moved = cli("migrate-journal", "--root", str(root), "--to", "postgres",
                "--dsn-file", str(dsn_file))
    assert moved.returncode == 0 and moved.stderr == "", moved
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == "postgres"
    back = cli("migrate-journal", "--root", str(root), "--to", "sqlite", dsn=pg_dsn)
    assert back.returncode == 0 and back.stderr == "", back  # the environment alone

    other = tmp_path / "other"
    fill(other, 1)
    for db in ("env", "flag"):
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {db}_{os.getpid()}")
    base = pg_dsn.rsplit("/", 1)[0]
    env_dsn = f"{base}/env_{os.getpid()}?connect_timeout=5"
    by_env = cli("migrate-journal", "--root", str(other), "--to", "postgres", dsn=env_dsn)
    assert by_env.returncode == 0 and by_env.stderr == "", by_env
    third = tmp_path / "third"
    fill(third, 1)
    flagged = cli("migrate-journal", "--root", str(third), "--to", "postgres", "--dsn",
                  f"{base}/flag_{os.getpid()}?connect_timeout=5")
    assert flagged.returncode == 0, flagged
    assert "warning: --dsn carries a password" in flagged.stderr
    assert password not in flagged.stderr


def test_a_bad_dsn_parameter_a_wrong_password_and_a_server_down_read_differently(
        tmp_path: Path, pg_dsn: str) -> None:
    password = psycopg.conninfo.conninfo_to_dict(pg_dsn)["password"]
    root = tmp_path / "root"
    fill(root, 1)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    port = psycopg.conninfo.conninfo_to_dict(pg_dsn)["port"]
    cases = {
        "timeout": (pg_dsn.replace("connect_timeout=5", "connect_timeout=abc"), 2,
                    "journal_dsn_invalid", "connect_timeout"),
        "password": (pg_dsn.replace(password, "not-the-password"), 3,
                     "journal_auth_failed", "authentication failed"),
        "down": (pg_dsn.replace(f":{port}/", f":{dead}/"), 3, "io_error",
                 "server unreachable"),
    }
    for name, (dsn, code, error, words) in cases.items():
        for argv in (["--json"], []):
            out = cli("migrate-journal", "--root", str(root), "--to", "postgres", *argv,
                      dsn=dsn)
            assert out.returncode == code, (name, out)
            assert "Traceback" not in out.stderr and password not in out.stdout + out.stderr
            if argv:
                assert json.loads(out.stdout)["error"]["code"] == error, (name, out.stdout)
            else:
                assert out.stderr.count("\n") == 1 and words in out.stderr, (name, out.stderr)
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == JOURNAL_FILE
