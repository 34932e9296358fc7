"""Journal integrity, catalog recovery, filesystem hygiene and the writer lock.

SPEC B12-B17, B23; DESIGN 3. Every test builds a real root, tampers with it the way an operator,
a bad restore or an attacker would, and checks that opening fails closed with an error that
names the cause, and that undoing the tampering gives back every record already stored.
Edits of the journal's rows and catalog (truncation, holes, edited or replaced rows) are in
test_tamper.py, which runs them on both journal backends; this module keeps what only a root
directory can suffer: the marker, missing files, the catalog file, modes, links and the lock.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from ceilings import HANG_S
from helpers_lock import LockHolder, hold_writer_lock
from memory_es import cli
from memory_es.errors import IntegrityError, LockTimeoutError, NotARootError, UnsafePathError
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn
from memory_es.journal import (
    CATALOG_FILE,
    JOURNAL_FILE,
    LOCK_FILE,
    MARKER_FILE,
    Catalog,
    open_journal,
)
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from tamper import SqliteTamper

CLI = Path(sys.executable).with_name("memory-es")
FOREIGN_UID = 12345


# --------------------------------------------------------------------------------------------
# Helpers


def turn(run_id: str, answer: str | None = None) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success",
                         answer=answer if answer is not None else f"answer for {run_id}")


def admit(root: Path, run_ids: list[str], prefix: str = "") -> None:
    with MemoryStore.open(root, background=False) as store:
        for r in run_ids:
            result = store.persist_completed_turn(turn(r, f"{prefix}answer for {r}"))
            assert result.status == "admitted", result


def ids_in(root: Path) -> list[str]:
    """Intake ids of the root in journal order, through a writer open (must succeed)."""
    with MemoryStore.open(root, background=False) as store:
        return [r.id for r in store.inspect().records]


def checkpoint(root: Path) -> None:
    """Fold the WAL into journal.db so the file alone holds every committed event."""
    conn = apsw.Connection(str(root / JOURNAL_FILE))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()  # last connection: SQLite removes -wal and -shm
    assert not (root / (JOURNAL_FILE + "-wal")).exists()


def snapshot(root: Path) -> dict[str, bytes]:
    """Bytes of every file in a checkpointed root (no WAL)."""
    return SqliteTamper(root).snapshot()


def restore(root: Path, snap: dict[str, bytes]) -> None:
    """Put back the snapshot's bytes in place (same inodes where the file still exists)."""
    SqliteTamper(root).restore(snap)


# Position 1 is the root's recorded configuration (Root.Configured, written with the first
# admission); run-a is at position 2 ... run-e at position 6.
RUNS = ["run-a", "run-b", "run-c", "run-d", "run-e"]
HASHES = [run_hash(r) for r in RUNS]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root created by the store (0700) holding five admitted turns, closed."""
    r = tmp_path / "root"
    admit(r, RUNS)
    return r


def refuse(root: Path, exc: type[Exception], *words: str) -> str:
    """Opening as writer AND as reader both fail closed with ``exc`` naming ``words``."""
    with pytest.raises(exc) as writer_err:
        MemoryStore.open(root, lock_timeout=0.5, background=False)
    msg = str(writer_err.value)
    for w in words:
        assert w in msg, msg
    with pytest.raises(exc) as reader_err:
        MemoryRoot.open(root).inspect()
    for w in words:
        assert w in str(reader_err.value), str(reader_err.value)
    return msg


# --------------------------------------------------------------------------------------------
# B13: truncation, replacement, edits


# --------------------------------------------------------------------------------------------
# B15: marker, missing files, corrupt catalog


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (JOURNAL_FILE, ("journal is missing", "schema marker")),
        (CATALOG_FILE, ("integrity catalog is missing", "schema marker")),
    ],
)
def test_missing_journal_or_catalog_with_marker_fails_closed(
    root: Path, name: str, words: tuple[str, ...]
) -> None:
    """B15: the marker proves a journal and catalog existed; either one missing fails closed."""
    snap = snapshot(root)
    (root / name).unlink()
    msg = refuse(root, IntegrityError, *words)
    assert str(root / name) in msg
    assert not (root / name).exists(), "a refused open must not recreate the missing file"
    restore(root, snap)
    assert ids_in(root) == HASHES


def test_deleting_journal_and_catalog_cannot_pass_as_fresh_root(root: Path) -> None:
    """B15: deleting both the journal and the catalog is not a fresh root while the marker is."""
    snap = snapshot(root)
    (root / JOURNAL_FILE).unlink()
    (root / CATALOG_FILE).unlink()
    refuse(root, IntegrityError, "missing", "schema marker")
    restore(root, snap)
    assert ids_in(root) == HASHES


def test_deleting_journal_catalog_and_marker_beside_projections_is_refused(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 13 item 3 (B15, B3): with the journal, catalog and schema marker all deleted but
    the index and daily files still there, a writer refuses to start a new journal beside them
    (an old run id would be admitted again); nothing is created. A directory with none of them
    is still a fresh root."""
    for name in (JOURNAL_FILE, CATALOG_FILE, MARKER_FILE):
        (root / name).unlink()
    with pytest.raises(IntegrityError) as err:
        MemoryStore.open(root, lock_timeout=0.5, background=False)
    assert err.value.code == "journal_missing"
    assert "projections remain" in str(err.value) and "index" in str(err.value)
    assert not (root / JOURNAL_FILE).exists() and not (root / MARKER_FILE).exists()
    code = cli.main(["--root", str(root), "admit", "--run-id", RUNS[0], "--answer", "again"])
    assert code != 0 and "projections remain" in capsys.readouterr().err
    assert not (root / JOURNAL_FILE).exists()


def test_missing_marker_with_events_fails_closed(root: Path) -> None:
    """B15: no marker but a journal holding events is refused, not re-initialised."""
    snap = snapshot(root)
    (root / MARKER_FILE).unlink()
    with pytest.raises(IntegrityError) as err:
        MemoryStore.open(root, lock_timeout=0.5, background=False)
    msg = str(err.value)
    assert "schema marker is missing" in msg, msg
    assert "6 events" in msg or "position 6" in msg, msg
    assert not (root / MARKER_FILE).exists(), "the refused open must not write a marker"
    restore(root, snap)
    assert ids_in(root) == HASHES


def test_garbage_marker_fails_closed(root: Path) -> None:
    """B15, B17: a malformed schema marker is refused, naming the marker."""
    snap = snapshot(root)
    (root / MARKER_FILE).write_bytes(b"{not json")
    msg = refuse(root, IntegrityError, "schema marker", "not valid JSON")
    assert str(root / MARKER_FILE) in msg
    restore(root, snap)
    assert ids_in(root) == HASHES


@pytest.mark.parametrize("also_remove_catalog", [False, True])
def test_missing_marker_on_empty_root_is_finished(
    tmp_path: Path, also_remove_catalog: bool
) -> None:
    """B15: a crash during initialisation (before the marker) leaves an empty root that opens."""
    root = tmp_path / "root"
    with MemoryStore.open(root, background=False):
        pass
    (root / MARKER_FILE).unlink()
    if also_remove_catalog:
        (root / CATALOG_FILE).unlink()
    with MemoryStore.open(root, background=False) as store:
        assert store.persist_completed_turn(turn("after-init")).status == "admitted"
    assert (root / MARKER_FILE).exists()
    assert ids_in(root) == [run_hash("after-init")]


def test_corrupt_catalog_fails_closed(root: Path) -> None:
    """B13, B17: both catalog slots unreadable -> 'integrity catalog is corrupt'."""
    snap = snapshot(root)
    path = root / CATALOG_FILE
    path.write_bytes(os.urandom(128))
    msg = refuse(root, IntegrityError, "integrity catalog is corrupt")
    assert str(path) in msg
    restore(root, snap)
    assert ids_in(root) == HASHES


def test_catalog_with_one_torn_slot_uses_the_other(root: Path) -> None:
    """B17: a torn write of one slot is recovered from the other slot (journal ahead)."""
    path = root / CATALOG_FILE
    raw = bytearray(path.read_bytes())
    cat = Catalog.open(path, writable=False)
    newest = cat.read()
    cat.close()
    assert newest[0] == 6
    # Tear the newest slot: keep its first 20 bytes, zero the rest (what a torn pwrite leaves).
    slot = 0 if bytes(raw[4:12]) == (6).to_bytes(8, "little") else 1
    raw[slot * 64 + 20:(slot + 1) * 64] = bytes(44)
    path.write_bytes(bytes(raw))
    opened = open_journal(root, writable=True, lock_timeout=0.5)
    try:
        assert opened.recovered_from == 5
    finally:
        opened.close()
    cat = Catalog.open(path, writable=False)
    assert cat.read() == newest
    cat.close()
    assert ids_in(root) == HASHES


# --------------------------------------------------------------------------------------------
# B14: journal ahead of the catalog


def test_journal_ahead_of_catalog_is_recovered_by_writer_only(tmp_path: Path) -> None:
    """B14: catalog behind the journal: readers accept without writing; the writer advances it."""
    root = tmp_path / "root"
    admit(root, RUNS[:2])
    old_catalog = (root / CATALOG_FILE).read_bytes()
    admit(root, RUNS[2:])
    path = root / CATALOG_FILE
    path.write_bytes(old_catalog)  # in place: same inode, same 0600 mode
    cat = Catalog.open(path, writable=False)
    assert cat.read()[0] == 3  # the configuration and two turns
    cat.close()

    # Read-only: opens (the suffix chain verifies) but changes nothing.
    reader = open_journal(root, writable=False)
    try:
        assert reader.recovered_from == 3
        tail = reader.recorder.verify()
    finally:
        reader.close()
    assert tail[0] == 6
    assert [r.id for r in MemoryRoot.open(root).inspect().records] == HASHES
    assert path.read_bytes() == old_catalog

    # Writer: recovers, and the catalog now records the verified tail.
    writer = open_journal(root, writable=True, lock_timeout=0.5)
    try:
        assert writer.recovered_from == 3
        assert writer.recorder.chain_at(6) == tail[1]
    finally:
        writer.close()
    cat = Catalog.open(path, writable=False)
    assert cat.read() == tail
    cat.close()

    again = open_journal(root, writable=True, lock_timeout=0.5)
    try:
        assert again.recovered_from is None
    finally:
        again.close()
    assert ids_in(root) == HASHES


# --------------------------------------------------------------------------------------------
# B16, B17: filesystem hygiene


def test_fresh_store_is_owner_only(tmp_path: Path) -> None:
    """B16: a new root is 0700 and every file the store creates is 0600 and owned by us."""
    old_umask = os.umask(0)  # the store, not the umask, must make everything private
    try:
        root = tmp_path / "root"
        with MemoryStore.open(root, background=False) as store:
            store.persist_completed_turn(turn("mode-check"))
            names = {p.name for p in root.iterdir()}
            assert {JOURNAL_FILE, CATALOG_FILE, MARKER_FILE, LOCK_FILE} <= names
            assert stat.S_IMODE(root.stat().st_mode) == 0o700
            store.drain()  # projections too: index generation and daily Markdown
            assert (root / "daily").is_dir() and (root / "index" / "CURRENT").is_file()
            for p in root.rglob("*"):
                st = os.lstat(p)
                assert stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode), p
                want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
                assert stat.S_IMODE(st.st_mode) == want, (p, oct(st.st_mode))
                assert st.st_uid == os.geteuid(), p
    finally:
        os.umask(old_umask)


def test_symlinked_root_is_refused(root: Path, tmp_path: Path) -> None:
    """B17: a root reached through a symlink is refused by writer and reader."""
    link = tmp_path / "link"
    link.symlink_to(root)
    msg = refuse(link, UnsafePathError, "symlink")
    assert str(link) in msg
    assert ids_in(root) == HASHES  # the real root is untouched


MANAGED = [JOURNAL_FILE, CATALOG_FILE, MARKER_FILE, LOCK_FILE, JOURNAL_FILE + "-wal"]


def _ensure_wal(root: Path) -> None:
    """Make sure a -wal file exists (the store leaves one behind after close)."""
    if not (root / (JOURNAL_FILE + "-wal")).exists():
        with MemoryStore.open(root, background=False) as store:
            store.persist_completed_turn(turn("wal-maker"))


@pytest.mark.parametrize("name", MANAGED)
def test_symlinked_managed_file_is_refused(root: Path, tmp_path: Path, name: str) -> None:
    """B17: every managed file is refused when it is a symlink; moving it back restores all."""
    _ensure_wal(root)
    expected = ids_in(root)
    path = root / name
    away = tmp_path / "away"
    away.mkdir(mode=0o700)
    target = away / name
    os.rename(path, target)
    path.symlink_to(target)
    with pytest.raises(UnsafePathError) as err:
        MemoryStore.open(root, lock_timeout=0.5, background=False)
    assert str(path) in str(err.value) and "symlink" in str(err.value)
    if name != LOCK_FILE:  # readers never touch the lock file
        with pytest.raises(UnsafePathError, match="symlink"):
            MemoryRoot.open(root).inspect()
    assert target.exists() and not target.is_symlink()
    path.unlink()
    os.rename(target, path)
    assert ids_in(root) == expected


@pytest.mark.parametrize("name", MANAGED)
def test_group_or_other_readable_file_is_refused(root: Path, name: str) -> None:
    """B16, B17: a managed file with mode 0644 is refused, naming the file and the mode."""
    _ensure_wal(root)
    expected = ids_in(root)
    path = root / name
    os.chmod(path, 0o644)
    with pytest.raises(UnsafePathError) as err:
        MemoryStore.open(root, lock_timeout=0.5, background=False)
    msg = str(err.value)
    assert str(path) in msg and "permission" in msg and "0644" in msg, msg
    assert stat.S_IMODE(path.stat().st_mode) == 0o644, "a refused open must not chmod"
    os.chmod(path, 0o600)
    assert ids_in(root) == expected


def test_group_readable_root_is_refused(root: Path) -> None:
    """B16, B17: a root directory with mode 0755 is refused by writer and reader."""
    os.chmod(root, 0o755)
    msg = refuse(root, UnsafePathError, "permission", "0755")
    assert str(root) in msg
    os.chmod(root, 0o700)
    assert ids_in(root) == HASHES


@pytest.mark.parametrize("name", [".", *MANAGED])
def test_foreign_owner_is_refused(root: Path, name: str) -> None:
    """B17: a root or managed file owned by another uid is refused, naming the uid."""
    _ensure_wal(root)
    expected = ids_in(root)
    path = root if name == "." else root / name
    os.chown(path, FOREIGN_UID, -1)
    try:
        with pytest.raises(UnsafePathError) as err:
            MemoryStore.open(root, lock_timeout=0.5, background=False)
        msg = str(err.value)
        assert str(path) in msg and f"owned by uid {FOREIGN_UID}" in msg, msg
    finally:
        os.chown(path, os.geteuid(), -1)
    assert ids_in(root) == expected


@pytest.mark.parametrize("name", [JOURNAL_FILE, CATALOG_FILE, MARKER_FILE])
def test_extra_hard_link_is_refused(root: Path, tmp_path: Path, name: str) -> None:
    """B17: a managed file with a second hard link elsewhere is refused."""
    extra = tmp_path / f"copy-of-{name}"
    os.link(root / name, extra)
    msg = refuse(root, UnsafePathError, "2 hard links")
    assert str(root / name) in msg
    extra.unlink()
    assert ids_in(root) == HASHES


def test_reader_on_missing_root_is_not_a_root(tmp_path: Path) -> None:
    """C1 with B17: a read-only command on a nonexistent path says so and creates nothing."""
    missing = tmp_path / "nowhere"
    with pytest.raises(NotARootError, match="no memory root"):
        MemoryRoot.open(missing).inspect()
    assert not missing.exists()


# --------------------------------------------------------------------------------------------
# B23: one writer per root


@pytest.fixture
def held_root(root: Path) -> Iterator[tuple[Path, LockHolder]]:
    """``root`` with a separate process holding its writer lock until the fixture ends."""
    with hold_writer_lock(root) as holder:
        yield root, holder


def test_writer_lock_excludes_second_writer(
    held_root: tuple[Path, LockHolder],
) -> None:
    """B23: a second writer (library or CLI) times out naming the holder pid; readers still work."""
    root, holder = held_root
    cli = subprocess.Popen(
        [str(CLI), "--root", str(root), "admit", "--run-id", "blocked", "--answer", "x"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    with pytest.raises(LockTimeoutError) as err:
        MemoryStore.open(root, lock_timeout=0.3, background=False)
    msg = str(err.value)
    assert f"pid {holder.pid} (check it with `ps -p {holder.pid}`)" in msg and str(root) in msg
    with pytest.raises(LockTimeoutError):
        open_journal(root, writable=True, lock_timeout=0.1)

    # Readers take no lock.
    assert [r.id for r in MemoryRoot.open(root).inspect().records] == HASHES

    out, errtext = cli.communicate(timeout=HANG_S)
    assert cli.returncode == 3, (out, errtext)  # exit-code contract: 3 = lock held
    assert out == ""
    lines = errtext.splitlines()
    assert len(lines) == 1, errtext
    assert lines[0].startswith("memory-es: error:") and f"pid {holder.pid}" in lines[0]

    assert holder.release() == (0, "closed\n"), holder.stderr
    with MemoryStore.open(root, lock_timeout=0.3, background=False) as store:
        assert store.persist_completed_turn(turn("after-holder")).status == "admitted"
    assert ids_in(root) == [*HASHES, run_hash("after-holder")]
    assert run_hash("blocked") not in [r.id for r in MemoryRoot.open(root).inspect().records]


def test_writer_lock_is_released_when_holder_is_killed(
    held_root: tuple[Path, LockHolder],
) -> None:
    """B23: a SIGKILLed holder leaves no stale lock: the next writer opens at once."""
    root, holder = held_root
    with pytest.raises(LockTimeoutError):
        MemoryStore.open(root, lock_timeout=0.1, background=False)
    assert holder.kill() == -9
    with MemoryStore.open(root, lock_timeout=0.5, background=False) as store:
        assert [r.id for r in store.inspect().records] == HASHES
    # the lock file now names us, not the dead holder
    assert (root / LOCK_FILE).read_text().strip() == str(os.getpid())


def test_unlinking_the_lock_file_does_not_let_a_second_writer_in(
    held_root: tuple[Path, LockHolder],
) -> None:
    """Issue 13 item 4: the lock is on the root directory, so deleting ``.writer.lock`` while an
    agent holds the root neither admits a second writer (library or rebuild) nor lets one
    delete the agent's live generation; the refusal says how to check the holder."""
    root, holder = held_root
    (root / LOCK_FILE).unlink()
    with pytest.raises(LockTimeoutError) as err:
        MemoryStore.open(root, lock_timeout=0.2, background=False)
    msg = str(err.value)  # the pid note is gone: the message says how to find the holder
    assert f"find it with `lsof {root}`" in msg and "removing files does not release" in msg
    rebuild = subprocess.run([str(CLI), "--root", str(root), "rebuild"], capture_output=True,
                             text=True, timeout=HANG_S)
    assert rebuild.returncode != 0 and "writer lock held" in rebuild.stderr
    assert holder.release() == (0, "closed\n"), holder.stderr
    with MemoryStore.open(root, lock_timeout=0.5, background=False) as store:
        assert [r.id for r in store.inspect().records] == HASHES


def test_root_copy_keeps_working(root: Path, tmp_path: Path) -> None:
    """B13 sanity: a byte-exact copy of a closed root (journal + catalog + marker) opens."""
    copy = tmp_path / "copy"
    checkpoint(root)
    shutil.copytree(root, copy)
    os.chmod(copy, 0o700)
    assert ids_in(copy) == HASHES
