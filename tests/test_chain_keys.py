"""Tamper evidence that survives a recomputed chain (issue 13 item 11; B13-B17, N5, N6).

The edits of rows and catalog an editor without the key might make are in test_tamper.py, run
on both journal backends; this module keeps the key store, the marker, schema-1 roots and
anchors.

The journal's chain is keyed (HMAC-SHA256, a per-root key in an owner-only key store outside
the root), so an editor without the key cannot append, rewrite or replace rows even when they
recompute the plain SHA-256 chain and the catalog; an anchor kept outside the root lets
``health --expect-anchor`` catch what no key can: a rollback of the whole root to an older
copy and a swap with another root. Everything crossing a process boundary runs in real
subprocesses (the CLI, a crash, a lock holder) with the test's key store in the environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest

from ceilings import HANG_S
from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.intake import CompletedTurn
from memory_es.journal import (
    CATALOG_FILE,
    GENESIS,
    JOURNAL_FILE,
    MARKER_FILE,
    chain_link,
    open_journal,
)
from memory_es.journal.chain import NEVER, Chain, verify_chain
from memory_es.keystore import CHAIN_KEY_FILE, KEY_STORE_ENV, KeyStore
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export
from tamper import SqliteTamper, recompute_plain

CLI = [sys.executable, "-m", "memory_es.cli"]


def admit(root: Path, run_ids: list[str], *, drain: bool = True, prefix: str = "") -> None:
    with MemoryStore.open(root, background=False) as store:
        for run_id in run_ids:
            result = store.persist_completed_turn(CompletedTurn(
                run_id=run_id, outcome="success", answer=f"{prefix}answer for {run_id}."))
            assert result.status == "admitted", result
        if drain:
            store.drain()


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=HANG_S,
                          env=env if env is not None else dict(os.environ))


def marker(root: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((root / MARKER_FILE).read_bytes())
    return result


def rows(root: Path) -> list[tuple[int, str, int, str, bytes, bytes]]:
    return SqliteTamper(root).rows()


def fails_closed(root: Path, code: str, *words: str) -> None:
    """Writer and reader both refuse with ``code``; the catalog is not advanced."""
    before = (root / CATALOG_FILE).read_bytes()
    for opener in (lambda: MemoryStore.open(root, background=False, lock_timeout=0.5),
                   lambda: MemoryRoot.open(root).inspect()):
        with pytest.raises(MemoryEsError) as err:
            opener()
        assert err.value.code == code, str(err.value)
        for word in words:
            assert word in str(err.value), str(err.value)
    assert (root / CATALOG_FILE).read_bytes() == before
    report = MemoryRoot.open(root).health()
    assert code in {f.code for f in report.findings}, report.to_json()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    admit(r, ["run-a", "run-b", "run-c"])
    return r


# --------------------------------------------------------------------------------------------
# The keyed chain: what recomputing the plain chain no longer achieves


def test_new_roots_are_keyed(root: Path, key_store: Path) -> None:
    m = marker(root)
    assert m["schema"] == 2 and m["chain"] == "hmac-sha256" and m["keyed_from"] == 1
    key = key_store / m["root_id"] / CHAIN_KEY_FILE
    assert len(key.read_bytes()) == 32
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert oct((key_store / m["root_id"]).stat().st_mode & 0o777) == "0o700"
    assert oct(key_store.stat().st_mode & 0o777) == "0o700"
    # the stored chain is not the plain one
    first = rows(root)[0]
    assert first[5] != chain_link(GENESIS, *first[:5])


def test_marker_fields_cannot_be_changed_without_the_key(root: Path) -> None:
    m = marker(root)
    (root / MARKER_FILE).write_text(json.dumps(m | {"keyed_from": 99}))
    fails_closed(root, "marker_invalid", "does not verify")


# --------------------------------------------------------------------------------------------
# The key store: fail closed, never fall back, never mint a key for an existing root


def test_missing_key_fails_closed_and_mints_nothing(root: Path, key_store: Path) -> None:
    m = marker(root)
    moved = key_store.parent / "moved-away"
    (key_store / m["root_id"]).rename(moved)
    before = sorted(os.listdir(key_store))
    fails_closed(root, "chain_key_missing", m["root_id"], KEY_STORE_ENV)
    done = cli("--root", str(root), "inspect", "--json")
    assert done.returncode == 3, done
    assert json.loads(done.stdout)["error"]["code"] == "chain_key_missing"
    done = cli("--root", str(root), "health", "--json")
    assert done.returncode == 1
    assert [f["code"] for f in json.loads(done.stdout)["findings"]] == ["chain_key_missing"]
    assert sorted(os.listdir(key_store)) == before  # no key was minted for this root
    assert marker(root) == m
    (moved).rename(key_store / m["root_id"])
    assert MemoryRoot.open(root).health().status == "clean"


def test_a_key_store_elsewhere_is_a_missing_key(root: Path, tmp_path: Path) -> None:
    other = KeyStore(tmp_path / "other-keys")
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root, key_store=other).inspect()
    assert err.value.code == "chain_key_missing"
    assert not (tmp_path / "other-keys").exists()


@pytest.mark.parametrize("damage", ["store_0755", "root_dir_0750", "key_0644", "key_symlink",
                                    "store_symlink", "key_hardlink", "key_short"])
def test_unsafe_key_store_fails_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       damage: str) -> None:
    store = tmp_path / "state" / "keys"
    monkeypatch.setenv(KEY_STORE_ENV, str(store))
    root = tmp_path / "root"
    admit(root, ["run-a"])
    root_dir = store / marker(root)["root_id"]
    key = root_dir / CHAIN_KEY_FILE
    code = "key_store_unsafe"
    if damage == "store_0755":
        store.chmod(0o755)
    elif damage == "root_dir_0750":
        root_dir.chmod(0o750)
    elif damage == "key_0644":
        key.chmod(0o644)
    elif damage == "key_symlink":
        key.rename(tmp_path / "elsewhere.key")
        key.symlink_to(tmp_path / "elsewhere.key")
    elif damage == "store_symlink":
        store.rename(tmp_path / "real-keys")
        store.symlink_to(tmp_path / "real-keys")
    elif damage == "key_hardlink":
        os.link(key, tmp_path / "second-link")
    elif damage == "key_short":
        key.write_bytes(b"short")
        code = "chain_key_missing"
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root).inspect()
    assert err.value.code == code, str(err.value)
    assert "\n" not in str(err.value)
    done = cli("--root", str(root), "admit", "--run-id", "run-b", "--answer", "x")
    assert done.returncode == 3 and code in done.stderr, done
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_key_store_inside_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with pytest.raises(MemoryEsError) as err:
        MemoryStore.open(root, background=False, key_store=root / "keys")
    assert err.value.code == "key_store_unsafe"
    assert not root.exists()  # refused before anything was created


def test_the_default_location_follows_xdg(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.delenv(KEY_STORE_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert KeyStore.resolve().path == tmp_path / "xdg" / "memory-es" / "keys"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert KeyStore.resolve().path == tmp_path / "home" / ".local" / "state" / "memory-es" / \
        "keys"
    assert KeyStore.resolve(tmp_path / "explicit").path == tmp_path / "explicit"


# --------------------------------------------------------------------------------------------
# Schema 1 (plain SHA-256) roots: readable, verifiable, keyed by the next writer


def make_schema1(root: Path) -> None:
    """Turn a root into what a pre-item-11 engine wrote: schema 1 marker, plain chain, and
    plain content (sealing, issue 14, came later: the export holds each state open)."""
    export = root.parent / "schema1-source.jsonl"
    MemoryRoot.open(root).export_to(export)
    conn = apsw.Connection(str(root / JOURNAL_FILE))
    for raw in export.read_bytes().splitlines():
        line = json.loads(raw)
        state = json.dumps(line["state"], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False).encode()
        conn.execute("UPDATE events SET state = ? WHERE position = ?", (state, line["position"]))
    conn.close()
    export.unlink()
    recompute_plain(SqliteTamper(root))
    (root / MARKER_FILE).write_text(json.dumps(
        {"format": "memory-es", "journal": JOURNAL_FILE, "schema": 1},
        sort_keys=True, separators=(",", ":")) + "\n")


def test_schema1_root_stays_readable_then_a_writer_keys_it(root: Path, tmp_path: Path) -> None:
    export_before = tmp_path / "before.jsonl"
    MemoryRoot.open(root).export_to(export_before)
    make_schema1(root)
    head = len(rows(root))
    plain_rows = rows(root)
    # readable and verifiable as it is; health says the chain is unkeyed
    report = MemoryRoot.open(root).health()
    assert {f.code for f in report.findings} == {"chain_unkeyed"}, report.to_json()
    done = cli("--root", str(root), "anchor", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["error"]["code"] == "chain_unkeyed"
    # ...and the plain chain still catches accidents
    snap = (root / JOURNAL_FILE).read_bytes()
    conn = apsw.Connection(str(root / JOURNAL_FILE))
    conn.execute("UPDATE events SET state = CAST(replace(CAST(state AS TEXT), 'run-b', "
                 "'run-z') AS BLOB) WHERE position = 3")
    conn.close()
    with pytest.raises(IntegrityError, match="position 3"):
        MemoryRoot.open(root).inspect()
    (root / JOURNAL_FILE).write_bytes(snap)

    admit(root, ["run-d"])  # a writer open keys the root from the next position on
    m = marker(root)
    assert m["schema"] == 2 and m["keyed_from"] == head + 1
    after = rows(root)
    assert after[:head] == plain_rows  # the plain prefix is kept as it was
    assert MemoryRoot.open(root).health().status == "clean"
    export_after = tmp_path / "after.jsonl"
    MemoryRoot.open(root).export_to(export_after)
    assert export_after.read_bytes().startswith(export_before.read_bytes())
    # the first keyed link covers the plain prefix: rewriting it plain is now detected
    recompute_plain(SqliteTamper(root))
    fails_closed(root, "chain_broken", f"position {head + 1}")


def test_exports_carry_the_plain_chain_and_a_replay_gets_its_own_key(root: Path,
                                                                      tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    chain = GENESIS
    for line in export.read_bytes().splitlines():
        obj = json.loads(line)
        chain = chain_link(chain, obj["position"], obj["originator_id"],
                           obj["originator_version"], obj["topic"],
                           json.dumps(obj["state"], separators=(",", ":"),
                                      ensure_ascii=False).encode())
    copy = tmp_path / "copy"
    replay_export(export, copy)
    assert marker(copy)["root_id"] != marker(root)["root_id"]
    again = tmp_path / "again.jsonl"
    MemoryRoot.open(copy).export_to(again)
    assert again.read_bytes() == export.read_bytes()
    assert rows(copy)[-1][5] != rows(root)[-1][5]  # keyed with another key


# --------------------------------------------------------------------------------------------
# Anchors: what the key cannot catch


def anchor_file(root: Path, path: Path) -> Path:
    done = cli("--root", str(root), "anchor")
    assert done.returncode == 0, done
    path.write_text(done.stdout)
    return path


def health(root: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    done = cli("--root", str(root), "health", "--json", *extra)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def codes(report: dict[str, Any]) -> set[str]:
    return {f["code"] for f in report["findings"]}


def test_anchor_accepts_a_journal_that_extends_it(root: Path, tmp_path: Path) -> None:
    anchor = anchor_file(root, tmp_path / "anchor.json")
    obj = json.loads(anchor.read_text())
    assert obj["root_id"] == marker(root)["root_id"] and obj["position"] == len(rows(root))
    export = tmp_path / "export.jsonl"
    MemoryRoot.open(root).export_to(export)
    assert json.loads(export.read_bytes().splitlines()[-1])["chain"] == obj["export_chain"]
    assert health(root, "--expect-anchor", str(anchor)) == (0, health(root)[1])
    admit(root, ["run-d", "run-e"])
    code, report = health(root, "--expect-anchor", str(anchor))
    assert (code, report["status"]) == (0, "clean"), report


def test_anchor_detects_a_rollback_to_an_older_copy(root: Path, tmp_path: Path) -> None:
    backup = tmp_path / "backup"
    shutil.copytree(root, backup)  # an older copy of the whole root
    admit(root, ["run-d", "run-e"])
    anchor = anchor_file(root, tmp_path / "anchor.json")
    shutil.rmtree(root)
    shutil.copytree(backup, root)  # rolled back: journal, catalog, marker, projections
    code, report = health(root)
    assert (code, report["status"]) == (0, "clean")  # the documented limit without an anchor
    code, report = health(root, "--expect-anchor", str(anchor))
    assert code == 1 and codes(report) == {"anchor_rollback"}, report


def test_anchor_detects_a_rollback_that_was_extended_again(root: Path, tmp_path: Path) -> None:
    backup = tmp_path / "backup"
    shutil.copytree(root, backup)
    admit(root, ["run-d"])
    anchor = anchor_file(root, tmp_path / "anchor.json")
    shutil.rmtree(root)
    shutil.copytree(backup, root)
    admit(root, ["run-x", "run-y"], prefix="other ")  # past the anchored position again
    code, report = health(root, "--expect-anchor", str(anchor))
    assert code == 1 and codes(report) == {"anchor_fork"}, report


def test_anchor_detects_a_swap_with_another_root(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    admit(other, ["run-a", "run-b", "run-c", "run-d"])  # its key is in the same store
    anchor = anchor_file(root, tmp_path / "anchor.json")
    shutil.rmtree(root)
    shutil.copytree(other, root)
    code, report = health(root)
    assert (code, report["status"]) == (0, "clean")  # a valid root, just not this one
    code, report = health(root, "--expect-anchor", str(anchor))
    assert code == 1 and codes(report) == {"anchor_root_mismatch"}, report


def test_an_edited_anchor_is_detected(root: Path, tmp_path: Path) -> None:
    anchor = anchor_file(root, tmp_path / "anchor.json")
    obj = json.loads(anchor.read_text())
    anchor.write_text(json.dumps(obj | {"position": obj["position"] - 1}))
    code, report = health(root, "--expect-anchor", str(anchor))
    assert code == 1 and codes(report) == {"anchor_mac_invalid"}, report


@pytest.mark.parametrize("content", [b"", b"{}", b"not json", b"x" * 5000,
                                     b'{"format": "memory-es-anchor"}'])
def test_a_file_that_is_no_anchor_is_a_usage_error(root: Path, tmp_path: Path,
                                                   content: bytes) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    done = cli("--root", str(root), "health", "--expect-anchor", str(bad))
    assert done.returncode == 2, done
    assert "anchor" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = cli("--root", str(root), "health", "--expect-anchor", str(tmp_path / "absent"))
    assert done.returncode == 2 and "cannot read" in done.stderr


# --------------------------------------------------------------------------------------------
# Journal ahead of the catalog: its own finding with no writer, in progress with one


LOCK_ONLY = """
import sys
from pathlib import Path
from memory_es.journal.lock import WriterLock
lock = WriterLock(Path(sys.argv[1]) / ".writer.lock")
lock.acquire(5)
print("ready", flush=True)
sys.stdin.readline()
lock.release()
"""


def test_journal_ahead_of_catalog(root: Path) -> None:
    env = dict(os.environ, MEMORY_ES_CRASH_AT="journal.after_commit")
    done = cli("--root", str(root), "admit", "--run-id", "run-d", "--answer", "x y z",
               env=env)
    assert done.returncode == -9, done  # killed between the commit and the catalog write
    code, report = health(root)
    # known crash residue the next writer open adopts: recoverable, exit 0 (N*, C15)
    assert (code, report["status"]) == (0, "recoverable"), report
    assert codes(report) == {"journal_ahead_of_catalog"}, report
    assert "projection_behind" not in codes(report)
    (finding,) = report["findings"]
    assert finding["path"] == CATALOG_FILE and "no writer" in finding["detail"]

    # the same state while a process holds the writer lock: a writer between its commit
    # and its catalog write, in progress, not a finding
    holder = subprocess.Popen([sys.executable, "-c", LOCK_ONLY, str(root)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        code, report = health(root)
        assert (code, report["status"], report["findings"]) == (0, "in_progress", []), report
    finally:
        holder.communicate("\n", timeout=HANG_S)

    # the next writer open verifies the keyed suffix and adopts it
    with MemoryStore.open(root, background=False) as store:
        store.drain()
    code, report = health(root)
    assert (code, report["status"]) == (0, "clean"), report


def test_open_loads_the_key_once(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    load = KeyStore.load_chain_key

    def counting(self: KeyStore, root_id: str) -> bytes:
        calls.append(root_id)
        return load(self, root_id)

    monkeypatch.setattr(KeyStore, "load_chain_key", counting)
    with MemoryStore.open(root, background=False) as store:
        for i in range(20):
            store.persist_completed_turn(CompletedTurn(run_id=f"many-{i}", outcome="success",
                                                       answer=f"turn {i}"))
    assert len(calls) == 1
    opened = open_journal(root, writable=False)
    opened.close()
    assert len(calls) == 2


@pytest.mark.parametrize("key_bytes", [16, 32, 64, 65, 100])
def test_a_keyed_link_is_rfc_2104_hmac_sha256_of_its_fields(key_bytes: int) -> None:
    """The link computes HMAC from the key's padded hash states (issue 16: a third faster);
    every journal ever written must still verify, so it equals ``hmac.new`` byte for byte,
    keys longer than a block included."""
    import hashlib
    import hmac
    import random

    from memory_es.journal.chain import Chain, _fields

    rng = random.Random(key_bytes)
    key = rng.randbytes(key_bytes)
    chain = Chain(key, 1)
    for n in range(50):
        prev, state = rng.randbytes(32), rng.randbytes(rng.randint(0, 3000))
        fields = _fields(n + 1, f"oid-{n}", n, "memory_es/Topic.é", state)
        assert chain.link(prev, n + 1, f"oid-{n}", n, "memory_es/Topic.é", state) == \
            hmac.new(key, prev + fields, hashlib.sha256).digest()


@pytest.mark.parametrize("keyed_from", [1, 7, NEVER])
def test_verification_computes_the_same_links_as_chain_link(keyed_from: int) -> None:
    """verify_chain (every read's floor, issue 16: the topics' bytes are cached): over plain,
    keyed and upgraded (plain then keyed) chains it accepts exactly the chain ``Chain.link``
    builds, and refuses it with one byte of one state changed."""
    import random

    rng = random.Random(keyed_from)
    chain = Chain(rng.randbytes(32) if keyed_from != NEVER else None, keyed_from)
    rows, value = [], GENESIS
    for n in range(1, 40):
        oid, topic = f"oid-{n % 5}", rng.choice(["memory_es/A.B", "memory_es/Ä.é", "t"])
        state = rng.randbytes(rng.randint(0, 400))
        value = chain.link(value, n, oid, n % 3, topic, state)
        rows.append((n, oid, n % 3, topic, state, value))
    assert verify_chain("j", iter(rows), chain) == (39, value)
    edited = list(rows)
    n, oid, version, topic, state, stored = edited[20]
    edited[20] = (n, oid, version, topic, bytes([state[0] ^ 1]) + state[1:] if state else b"x",
                  stored)
    with pytest.raises(IntegrityError, match="position 21"):
        verify_chain("j", iter(edited), chain)
