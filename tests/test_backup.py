"""``memory-es backup`` and ``memory-es import restore`` (SPEC C5, C6, C16): a root and its keys
into one owner-only file and back, on every tier and both journal backends.

Round trips destroy the root *and* its keys before restoring: the export is the same bytes,
health is clean, recall finds what was stored, a forgotten memory stays forgotten and an
anchor taken of the original still verifies. Bad secrets, tampered files and used targets get
one line, a documented exit code, and nothing written. Real roots, real key stores, real CLI
subprocesses, a real PostgreSQL server.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S
from memory_es import MemoryRoot
from memory_es.backup.archive import read_backup, take_backup
from memory_es.backup.fileformat import NONE, Secret
from memory_es.backup.ledger import read_entries
from memory_es.backup.restore import restore_backup
from memory_es.config import parse_config
from memory_es.events import FORGOTTEN_TOPICS
from memory_es.history import open_reader
from memory_es.intake import CompletedTurn
from memory_es.journal import MARKER_FILE
from memory_es.journal.backend import DSN_ENV
from memory_es.journal.sealing import SEALED_KEY_ID
from memory_es.keystore import KeyStore
from memory_es.store import MemoryStore

CLI = [sys.executable, "-m", "memory_es.cli"]
JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}


def cli(*argv: str, keys: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != DSN_ENV}
    if keys is not None:
        env["MEMORY_ES_KEY_STORE"] = str(keys)
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=HANG_S, env=env)


def secret_file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def fill(root: Path, config: Any = None) -> None:
    with MemoryStore.open(root, config or parse_config(JOURNAL), background=False) as store:
        for i in range(6):
            store.persist_completed_turn(CompletedTurn(
                run_id=f"run-{i}", outcome="success", session="chat:1",
                answer=f"Fact {i}: the parcel locker code is {1000 + i}."))
        store.remember("The boat is moored at pier 7.")
        store.drain()
        store.forget_turn("run-3", reason="user-request")


def root_id(root: Path) -> str:
    return str(json.loads((root / MARKER_FILE).read_text())["root_id"])


def export(root: Path, keys: Path | None = None, config: Any = None) -> bytes:
    out = io.BytesIO()
    MemoryRoot.open(root, config, key_store=keys).export(out)
    return out.getvalue()


def destroy(root: Path) -> None:
    """The root and every key it had: what a lost disk leaves."""
    shutil.rmtree(Path(os.environ["MEMORY_ES_KEY_STORE"]) / root_id(root))
    shutil.rmtree(root)


def test_a_root_survives_losing_its_files_and_keys(tmp_path: Path) -> None:
    root, backup = tmp_path / "root", tmp_path / "monday.mesb"
    fill(root)
    passphrase = secret_file(tmp_path / "pass", b"correct horse battery staple\n")
    anchor = cli("anchor", "--root", str(root))
    assert anchor.returncode == 0, anchor.stderr
    (tmp_path / "anchor.json").write_text(anchor.stdout)
    before = export(root)

    made = cli("backup", "--root", str(root), str(backup), "--passphrase-file", str(passphrase),
               "--json")
    assert made.returncode == 0, made.stderr
    report = json.loads(made.stdout)
    assert report["protection"] == "passphrase" and report["root_id"] == root_id(root)
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert b"pier 7" not in backup.read_bytes()  # encrypted: no memory in the clear
    destroy(root)

    restored = cli("import", "restore", str(backup), "--root", str(root), "--passphrase-file",
                   str(passphrase), "--json")
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["position"] == report["position"]
    assert export(root) == before
    health = cli("health", "--root", str(root), "--expect-anchor", str(tmp_path / "anchor.json"))
    assert health.returncode == 0, health.stdout + health.stderr  # the same root id and chain
    found = cli("search", "--root", str(root), "where is the boat moored")
    assert "pier 7" in found.stdout
    gone = cli("search", "--root", str(root), "parcel locker code 1003")
    assert gone.returncode == 0, gone.stderr
    assert "1003" not in gone.stdout  # forgotten before the backup: forgotten after it


def test_restore_onto_postgres_and_back(tmp_path: Path, pg_dsn: str) -> None:
    root = tmp_path / "root"
    fill(root)
    before = export(root)
    take_backup(root, tmp_path / "b1", NONE)
    destroy(root)
    on_pg = parse_config({**JOURNAL, "journal": {"backend": "postgres", "dsn": pg_dsn}})
    report = restore_backup(tmp_path / "b1", root, None, config=on_pg)
    assert report.journal == "postgres"
    assert json.loads((root / MARKER_FILE).read_text())["journal"] == "postgres"
    assert not (root / "journal.db").exists()
    assert export(root, config=on_pg) == before
    # a PostgreSQL journal backs up to the same format and restores to SQLite
    take_backup(root, tmp_path / "b2", NONE, config=on_pg)
    keys = tmp_path / "other-keys"
    restore_backup(tmp_path / "b2", tmp_path / "back", None, key_store=keys)
    assert export(tmp_path / "back", keys) == before


@pytest.mark.parametrize("tier", ["lite", "journal", "bujo"])
def test_every_tier_round_trips(tmp_path: Path, tier: str) -> None:
    root, keys = tmp_path / "root", tmp_path / "restored-keys"
    if tier == "bujo":
        from test_remember_bujo import TEA, captured

        store, _ = captured(root)
        with store:
            tea = store.lexical_search("green tea")[0].id
            store.remember("Morgan drinks black coffee every morning.", supersedes=tea)
    else:
        config = parse_config({"mode": tier} if tier == "lite" else JOURNAL)
        with MemoryStore.open(root, config, background=False) as store:
            store.remember("The boat is moored at pier 7.")
            store.persist_completed_turn(CompletedTurn(run_id="r1", outcome="success",
                                                       answer="Booked the dentist."))
            store.drain()
        TEA = "The boat is moored at pier 7."
    key = secret_file(tmp_path / "key", os.urandom(32))
    take_backup(root, tmp_path / "b", Secret.from_file("key-file", str(key)))
    restore_backup(tmp_path / "b", tmp_path / "copy", Secret.from_file("key-file", str(key)),
                   key_store=keys)
    assert export(tmp_path / "copy", keys) == export(root)
    assert MemoryRoot.open(tmp_path / "copy", key_store=keys).health().status == "clean"
    assert MemoryRoot.open(tmp_path / "copy", key_store=keys).lexical_search(TEA)
    # the Markdown projections are rebuilt byte for byte
    for path in sorted((root / "daily").glob("*.md")):
        assert (tmp_path / "copy" / "daily" / path.name).read_bytes() == path.read_bytes()


@pytest.mark.parametrize(("flags", "code"), [
    ((), "backup_secret_required"),
    (("--passphrase-file", "wrong"), "backup_secret_wrong"),
    (("--key-file", "key"), "backup_secret_required"),
    (("--passphrase-file", "loose"), "backup_secret_unsafe"),
])
def test_a_restore_without_the_right_secret_writes_nothing(tmp_path: Path,
                                                           flags: tuple[str, ...],
                                                           code: str) -> None:
    root = tmp_path / "root"
    fill(root)
    secret_file(tmp_path / "pass", b"correct horse battery staple")
    secret_file(tmp_path / "wrong", b"incorrect horse battery staple")
    secret_file(tmp_path / "key", os.urandom(32))
    (tmp_path / "loose").write_bytes(b"correct horse battery staple")
    (tmp_path / "loose").chmod(0o644)
    take_backup(root, tmp_path / "b", Secret.from_file("passphrase", str(tmp_path / "pass")))
    keys = tmp_path / "fresh-keys"
    args = [a if not a or a.startswith("--") else str(tmp_path / a) for a in flags]
    out = cli("import", "restore", str(tmp_path / "b"), "--root", str(tmp_path / "new"), *args,
              "--json", keys=keys)
    assert out.returncode == 2, out.stdout + out.stderr
    assert json.loads(out.stdout)["error"]["code"] == code
    assert not (tmp_path / "new").exists() and not keys.exists()


def test_a_tampered_or_foreign_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fill(root)
    take_backup(root, tmp_path / "plain", NONE)
    passphrase = secret_file(tmp_path / "pass", b"correct horse battery staple")
    take_backup(root, tmp_path / "sealed", Secret.from_file("passphrase", str(passphrase)))
    data = (tmp_path / "plain").read_bytes()
    sealed = (tmp_path / "sealed").read_bytes()
    cases = {
        "flipped": (data[:-40] + bytes([data[-40] ^ 1]) + data[-39:], (), 3, "backup_corrupt"),
        "foreign": (b'{"not": "a backup"}\n', (), 2, "backup_malformed"),
        # the header is the sealed body's associated data: an edited position cannot open it
        "sealed-header": (sealed.replace(b'"position":', b'"position":1', 1),
                          ("--passphrase-file", str(passphrase)), 2, "backup_secret_wrong"),
    }
    for name, (content, flags, exit_code, code) in cases.items():
        (tmp_path / name).write_bytes(content)
        out = cli("import", "restore", str(tmp_path / name), "--root", str(tmp_path / f"r-{name}"),
                  *flags, "--json", keys=tmp_path / f"k-{name}")
        assert out.returncode == exit_code, (name, out.stdout, out.stderr)
        assert json.loads(out.stdout)["error"]["code"] == code, name
        assert not (tmp_path / f"r-{name}").exists() and not (tmp_path / f"k-{name}").exists()


def test_used_targets_and_existing_files_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fill(root)
    take_backup(root, tmp_path / "b", NONE)
    again = cli("backup", "--root", str(root), str(tmp_path / "b"), "--unencrypted", "--json")
    assert again.returncode == 1 and json.loads(again.stdout)["error"]["code"] == "backup_exists"
    inside = cli("backup", "--root", str(root), str(root / "b"), "--unencrypted")
    assert inside.returncode == 2 and "inside the memory root" in inside.stderr
    assert len(inside.stderr.strip().splitlines()) == 1
    none = cli("backup", "--root", str(root), str(tmp_path / "c"))
    assert none.returncode == 2 and not (tmp_path / "c").exists()  # a protection is required
    weak = secret_file(tmp_path / "weak", b"short")
    out = cli("backup", "--root", str(root), str(tmp_path / "c"), "--passphrase-file", str(weak))
    assert out.returncode == 2 and "fewer than 8 characters" in out.stderr
    # restore: into a used root, and into a key store that still holds this root's keys
    used = cli("import", "restore", str(tmp_path / "b"), "--root", str(root), "--json",
               keys=tmp_path / "other")
    assert used.returncode == 1 and json.loads(used.stdout)["error"]["code"] == "root_not_empty"
    twin = cli("import", "restore", str(tmp_path / "b"), "--root", str(tmp_path / "twin"),
               "--json")
    assert twin.returncode == 1
    assert json.loads(twin.stdout)["error"]["code"] == "restore_keys_exist"
    assert not (tmp_path / "twin").exists()


def test_a_backup_beside_a_running_agent_and_the_forget_that_follows(tmp_path: Path) -> None:
    """C5: the backup only reads, so it runs while the agent holds the root; the key store's
    ledger records it before its keys are read, and a later forget's receipt names it."""
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL), background=False) as store:
        kept = store.remember("The boat is moored at pier 7.")
        report = take_backup(root, tmp_path / "b", NONE)  # the writer still holds the root
        ledger = read_entries(KeyStore.resolve(), report.root_id)
        assert [(e["backup_id"], e["state"]) for e in ledger] == [(report.backup_id, "done")]
        receipt = store.forget([kept.memory_id], reason="user-request")
    named = [r.where for r in receipt.retained if report.backup_id in r.where]
    assert len(named) == 1 and str(tmp_path / "b") in named[0]
    # the backup still holds the text the forget erased here; its restore opens it
    keys = tmp_path / "restore-keys"
    restore_backup(tmp_path / "b", tmp_path / "copy", None, key_store=keys)
    hits = MemoryRoot.open(tmp_path / "copy", key_store=keys).lexical_search("pier")
    assert [h.text for h in hits] == ["The boat is moored at pier 7."]
    restored_ledger = read_entries(KeyStore(keys), report.root_id)
    assert restored_ledger[-1]["backup_id"] == report.backup_id
    assert restored_ledger[-1]["state"] == "done"


@pytest.mark.parametrize("point", ["restore.after_keys", "restore.after_rows",
                                   "restore.before_rename"])
def test_a_restore_killed_anywhere_resumes(tmp_path: Path, point: str) -> None:
    """A SIGKILL at each boundary leaves the target absent (the work happens beside it);
    running the same restore again finishes it; a restore into another target is refused."""
    root = tmp_path / "root"
    fill(root)
    before = export(root)
    take_backup(root, tmp_path / "b", NONE)
    keys, target = tmp_path / "keys", tmp_path / "copy"
    env = {**os.environ, "MEMORY_ES_KEY_STORE": str(keys), "MEMORY_ES_CRASH_AT": point}
    killed = subprocess.run([*CLI, "import", "restore", str(tmp_path / "b"), "--root",
                             str(target)], capture_output=True, text=True, timeout=HANG_S,
                            env=env)
    assert killed.returncode == -9, killed.stderr
    assert not target.exists()
    elsewhere = cli("import", "restore", str(tmp_path / "b"), "--root", str(tmp_path / "twin"),
                    "--json", keys=keys)
    assert elsewhere.returncode == 1, elsewhere.stdout
    assert json.loads(elsewhere.stdout)["error"]["code"] == "restore_keys_exist"
    again = cli("import", "restore", str(tmp_path / "b"), "--root", str(target), "--json",
                keys=keys)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["resumed"] is True
    assert export(target, keys) == before
    assert MemoryRoot.open(target, key_store=keys).health().status == "clean"
    assert not list(tmp_path.glob(".copy.restoring*"))


def used_key_ids(rows: list[tuple[int, str, int, str, bytes, bytes]]) -> set[int]:
    return {int(k) for row in rows for k in SEALED_KEY_ID.findall(row[4])}


def test_a_backup_holds_only_the_keys_of_its_own_live_records(tmp_path: Path) -> None:
    """Not the writer's reserved keys (they would open records written after the backup),
    not the keys a forget among its rows destroyed, even one whose forget was cut short."""
    root = tmp_path / "root"
    fill(root)  # run-3 forgotten, to the end
    killed = subprocess.run(
        [*CLI, "forget", "--root", str(root), "--run-id", "run-4", "--reason", "user-request",
         "--yes"], capture_output=True, text=True, timeout=HANG_S,
        env={**os.environ, "MEMORY_ES_CRASH_AT": "forget.after_commit"})
    assert killed.returncode == -9, killed.stderr
    report = take_backup(root, tmp_path / "b", NONE)
    _, body, position, _ = read_backup(tmp_path / "b")
    held = {k for k, _ in body.record_keys}
    assert held and held <= used_key_ids(body.rows)
    named = {int(k) for row in body.rows if row[3] in FORGOTTEN_TOPICS
             for k in json.loads(row[4])["key_ids"]}
    assert len(named) >= 2 and not held & named  # both forgets: the finished, the cut short
    with MemoryStore.open(root, parse_config(JOURNAL), background=False) as store:
        store.remember("Written after the backup.")
    with open_reader(root) as opened:
        later = [row for row in opened.recorder.rows() if row[0] > position]
    assert used_key_ids(later) and not used_key_ids(later) & held
    assert report.record_keys == len(held)


def test_a_failed_restore_takes_its_keys_back(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fill(root)
    take_backup(root, tmp_path / "b", NONE)
    keys = tmp_path / "keys"
    typo = cli("import", "restore", str(tmp_path / "b"), "--root",
               str(tmp_path / "no-such-dir" / "new"), "--json", keys=keys)
    assert typo.returncode == 2 and json.loads(typo.stdout)["error"]["code"] == "not_found"
    assert not keys.exists()
    # an existing empty directory (a mount point, say) is filled in place
    (tmp_path / "mounted").mkdir(mode=0o700)
    done = cli("import", "restore", str(tmp_path / "b"), "--root", str(tmp_path / "mounted"),
               "--json", keys=keys)
    assert done.returncode == 0, done.stdout + done.stderr
    assert export(tmp_path / "mounted", keys) == export(root)


def test_hostile_files_are_refused_before_any_work(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fill(root)
    passphrase = secret_file(tmp_path / "pass", b"correct horse battery staple")
    take_backup(root, tmp_path / "b", Secret.from_file("passphrase", str(passphrase)))
    data = (tmp_path / "b").read_bytes()
    costly = tmp_path / "costly"  # a scrypt cost no backup asks for: refused, not attempted
    costly.write_bytes(data.replace(b'"n":131072', b'"n":1073741824', 1))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for source, code in ((costly, "backup_malformed"), (fifo, "backup_malformed")):
        out = cli("import", "restore", str(source), "--root", str(tmp_path / "new"),
                  "--passphrase-file", str(passphrase), "--json", keys=tmp_path / "k")
        assert out.returncode == 2, (source, out.stdout, out.stderr)
        assert json.loads(out.stdout)["error"]["code"] == code
    assert not (tmp_path / "new").exists() and not (tmp_path / "k").exists()


def test_a_backup_killed_while_writing_is_named_and_cleaned_up(tmp_path: Path) -> None:
    root, dest = tmp_path / "root", tmp_path / "b"
    with MemoryStore.open(root, parse_config(JOURNAL), background=False) as store:
        kept = store.remember("The boat is moored at pier 7.")
    killed = cli_env("backup", "--root", str(root), str(dest), "--unencrypted",
                     crash="backup.before_link")
    assert killed.returncode == -9 and not dest.exists()
    left = list(tmp_path.glob(".b.tmp-*"))
    assert len(left) == 1  # a whole copy, until the next backup to that name removes it
    with MemoryStore.open(root, parse_config(JOURNAL), background=False) as store:
        receipt = store.forget([kept.memory_id], reason="user-request")
    assert any(str(dest) in r.where for r in receipt.retained)  # named, with where it went
    take_backup(root, dest, NONE)
    assert not list(tmp_path.glob(".b.tmp-*"))


def cli_env(*argv: str, crash: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != DSN_ENV}
    env["MEMORY_ES_CRASH_AT"] = crash
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=HANG_S, env=env)


def test_backup_list_shows_the_ledger(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config(JOURNAL), background=False) as store:
        store.remember("The boat is moored at pier 7.")
    empty = cli("backup", "--root", str(root), "--list")
    assert empty.returncode == 0 and empty.stdout.startswith("no backups recorded for root ")
    first = take_backup(root, tmp_path / "one", NONE)
    second = take_backup(root, tmp_path / "two", NONE)
    listed = cli("backup", "--root", str(root), "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert doc["root_id"] == first.root_id
    assert [(e["backup_id"], e["state"], e["path"]) for e in doc["backups"]] == [
        (first.backup_id, "done", str(tmp_path / "one")),
        (second.backup_id, "done", str(tmp_path / "two"))]
    text = cli("backup", "--root", str(root), "--list").stdout.splitlines()
    assert len(text) == 2 and text[1].startswith(second.backup_id) and "done" in text[1]
    for argv in (("backup", "--root", str(root)),
                 ("backup", "--root", str(root), "--list", str(tmp_path / "x")),
                 ("backup", "--root", str(root), "--list", "--unencrypted")):
        out = cli(*argv)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, argv
