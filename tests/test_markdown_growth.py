"""A day's Markdown grows in place (K10, N3): a pass that only adds lines at the end of a day
appends them to the file instead of writing the whole day again; anything else, or a file
that is not our own private one, is replaced whole and atomically.

Real roots on disk; the kill after an append is in tests/test_crash_matrix.py and
tests/test_crash_residue.py.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.root import MemoryRoot
from projections.replay import grow_or_write

ANSWERS = ("The dentist moved my appointment to Thursday at nine.",
           "Priya prefers the window seat on long flights.",
           "The garden tomatoes need water every second evening.")


def admit(store: MemoryStore, i: int) -> None:
    turn = CompletedTurn(run_id=f"grow-{i}", outcome="success", answer=ANSWERS[i],
                         session="chat-1")
    assert store.persist_completed_turn(turn).status == "admitted"
    assert store.drain() == 1


def test_a_day_that_only_gains_lines_is_appended_in_place(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config({}), background=False) as store:
        admit(store, 0)
        [day] = (root / "daily").glob("*.md")
        first = os.stat(day)
        before = day.read_bytes()
        admit(store, 1)
        admit(store, 2)
        after = day.read_bytes()
        same = os.stat(day)
    assert (same.st_ino, same.st_dev) == (first.st_ino, first.st_dev)  # grown, not replaced
    assert after.startswith(before) and len(after) > len(before)
    assert all(a.encode() in after for a in ANSWERS)
    assert not [p for p in (root / "daily").iterdir() if p.name.startswith(".")]  # no temp
    assert MemoryRoot.open(root).health().status == "clean"  # the bytes are replay's


def test_a_day_whose_earlier_line_changed_is_written_whole(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config({}), background=False) as store:
        admit(store, 0)
        admit(store, 1)
        [day] = (root / "daily").glob("*.md")
        first = os.stat(day)
        [hit] = store.recall("dentist appointment", limit=1).recall.hits
        store.forget(hit.id, reason="test")
        after = day.read_bytes()
        replaced = os.stat(day)
    assert ANSWERS[0].encode() not in after and ANSWERS[1].encode() in after
    assert replaced.st_ino != first.st_ino
    assert MemoryRoot.open(root).health().status == "clean"


def private_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    os.close(fd)


def test_grow_or_write_appends_only_to_our_own_prefix(tmp_path: Path) -> None:
    root = tmp_path
    os.chmod(root, 0o700)
    private_file(root / "daily" / "d.md", b"# d\n\n- one\n")
    before = os.stat(root / "daily" / "d.md").st_ino
    assert grow_or_write(root, "daily/d.md", b"# d\n\n- one\n\n- two\n")
    assert (root / "daily" / "d.md").read_bytes() == b"# d\n\n- one\n\n- two\n"
    assert os.stat(root / "daily" / "d.md").st_ino == before
    # the same bytes: nothing written
    assert not grow_or_write(root, "daily/d.md", b"# d\n\n- one\n\n- two\n")
    # not a prefix (a torn or edited file): replaced whole
    (root / "daily" / "d.md").write_bytes(b"# d\n\n- on")
    os.chmod(root / "daily" / "d.md", 0o600)
    assert grow_or_write(root, "daily/d.md", b"# d\n\n- one\n\n- two\n")
    assert (root / "daily" / "d.md").read_bytes() == b"# d\n\n- one\n\n- two\n"
    # longer than wanted (a line removed at the end): replaced whole, never left with a tail
    assert grow_or_write(root, "daily/d.md", b"# d\n\n- one\n")
    assert (root / "daily" / "d.md").read_bytes() == b"# d\n\n- one\n"
    # None: the file goes
    assert grow_or_write(root, "daily/d.md", None)
    assert not (root / "daily" / "d.md").exists()


def test_grow_or_write_never_appends_through_a_link_or_into_a_shared_file(
        tmp_path: Path) -> None:
    """A hard link, a symlink or a group-readable file holding the day's prefix is replaced
    by our own private file; what the link pointed at keeps its bytes."""
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    prefix, grown = b"# d\n\n- one\n", b"# d\n\n- one\n\n- two\n"
    outside = tmp_path / "outside.md"
    private_file(outside, prefix)
    (root / "daily").mkdir(mode=0o700)
    os.link(outside, root / "daily" / "d.md")
    assert grow_or_write(root, "daily/d.md", grown)
    assert outside.read_bytes() == prefix
    assert os.stat(root / "daily" / "d.md").st_nlink == 1

    os.unlink(root / "daily" / "d.md")
    os.symlink(outside, root / "daily" / "d.md")
    assert grow_or_write(root, "daily/d.md", grown)
    assert outside.read_bytes() == prefix
    assert not (root / "daily" / "d.md").is_symlink()
    assert (root / "daily" / "d.md").read_bytes() == grown

    os.unlink(root / "daily" / "d.md")
    private_file(root / "daily" / "d.md", prefix)
    os.chmod(root / "daily" / "d.md", 0o644)
    ino = os.stat(root / "daily" / "d.md").st_ino
    assert grow_or_write(root, "daily/d.md", grown)
    st = os.stat(root / "daily" / "d.md")
    assert (st.st_mode & 0o777, (root / "daily" / "d.md").read_bytes()) == (0o600, grown)
    assert st.st_ino != ino
