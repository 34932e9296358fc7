"""The attack classes of issue 13, kept as regression suites. Each prints one summary line,
``attack <class>: tried N, ... silent S, lost L``, and fails unless silent and lost are 0.

- **Random-point SIGKILL** (B1, B3, B14, B22): a child process admits a dozen turns as fast as
  it can, then lets its background worker run (Lite projects, BuJo capture runs the capture
  pipeline with an instant model), and is killed at a random moment,
  ``MEMORY_ES_ATTACK_KILLS`` times per tier (default 50: 100 in CI; ``make soak`` runs more).
  Every acknowledged turn must be in the journal exactly once afterwards, no run id twice, and
  after one final drain health is clean.
  Children fork from a preloaded server (``multiprocessing`` ``forkserver``), so a kill costs
  milliseconds, not an interpreter start.
- **Tamper** (B13-B17, N*): every file of a populated, closed root of each tier x every
  operation (delete, truncate, flip a byte, append, roll back to an older copy of that file,
  swap with the same file of another root, chmod 0644, replace with a symlink to an identical
  copy). ``detected``: health reports a finding or the journal fails closed; ``harmless``:
  health is clean and the journal export and every projection file are byte-identical to the
  untouched root's; ``silent``: health is clean but something differs.

The full disk and drip-feeding model servers have their own suites: tests/test_disk_full.py,
and the drip tests in tests/test_embeddings.py and tests/test_chat_models.py.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ceilings import HANG_S
from helpers_attack import TIERS, admit_forever, open_store, turn
from memory_es import MemoryRoot
from memory_es.errors import MemoryEsError
from memory_es.events import Intake
from memory_es.ids import run_hash

KILLS = int(os.environ.get("MEMORY_ES_ATTACK_KILLS", "50"))


def summary(name: str, counts: Counter[str]) -> str:
    line = (f"attack {name}: tried {sum(counts.values())}, detected {counts['detected']}, "
            f"harmless {counts['harmless']}, silent {counts['silent']}, lost {counts['lost']}")
    print(line)
    return line


# --------------------------------------------------------------------------------------------
# Random-point SIGKILL


@pytest.fixture(scope="module")
def forkserver() -> multiprocessing.context.ForkServerContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["helpers_attack", "memory_es.store", "memory_es.capture"])
    return ctx


@pytest.mark.parametrize("tier", ["lite", "bujo_capture"])
def test_random_sigkill_loses_and_duplicates_nothing(
        tmp_path: Path, tier: str, forkserver: multiprocessing.context.ForkServerContext
) -> None:
    root = tmp_path / "root"
    rng = random.Random(f"sigkill-{tier}")
    acked: list[str] = []
    for k in range(KILLS):
        parent, child = forkserver.Pipe(duplex=False)
        proc = forkserver.Process(target=admit_forever, args=(str(root), tier, f"k{k}", child))
        proc.start()
        child.close()
        # One kill in four lands during open/recovery; the rest while turns are admitted.
        if rng.random() < 0.25:
            time.sleep(rng.uniform(0.0, 0.05))
        else:
            deadline = time.monotonic() + HANG_S
            while time.monotonic() < deadline and not (parent.poll(0.05) and
                                                       parent.recv() == "ready"):
                pass
            time.sleep(rng.uniform(0.0, 0.15))
        proc.kill()
        proc.join(10)
        while parent.poll():
            try:
                message = parent.recv()
            except EOFError:
                break
            if message != "ready":
                acked.append(message)
        parent.close()
    admitted = Counter(e.run_hash for _, e in MemoryRoot.open(root).events()
                       if isinstance(e, Intake.Admitted))
    kept = sum(1 for run_id in acked if admitted[run_hash(run_id)] >= 1)
    duplicated = [h for h, n in admitted.items() if n > 1]
    with open_store(root, tier, background=False) as store:
        for _ in range(5):
            if not store.drain():
                break
        assert store.inspect().counts.pending == 0
    report = MemoryRoot.open(root).health()
    line = (f"attack sigkill {tier} ({KILLS} kills): tried {len(acked)} acknowledged turns, "
            f"kept {kept}, duplicated {len(duplicated)}, silent 0, lost {len(acked) - kept}")
    print(line)
    assert kept == len(acked) and not duplicated, line
    assert len(acked) >= KILLS, f"too few acknowledged turns to mean anything: {line}"
    assert report.status == "clean", report.findings


# --------------------------------------------------------------------------------------------
# Tamper: every file x every operation


def populate(root: Path, tier: str, runs: range) -> None:
    with open_store(root, tier, background=False) as store:
        for i in runs:
            assert store.persist_completed_turn(turn(f"t{i}", tier)).status == "admitted"
        store.drain()


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, Path]]:
    """Per tier: (root, the same root earlier, another root of the tier), all closed."""
    out = {}
    for tier in TIERS:
        base = tmp_path_factory.mktemp(tier)
        root, older, other = base / "root", base / "older", base / "other"
        populate(root, tier, range(0, 3))
        shutil.copytree(root, older)
        populate(root, tier, range(3, 6))
        populate(other, tier, range(100, 106))
        out[tier] = (root, older, other)
    return out


def managed(root: Path) -> list[str]:
    """Every file of a closed root but the lock's pid note and runtime state."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and p.name != ".writer.lock" and ".runtime" not in p.parts)


def fingerprint(root: Path) -> tuple[bytes, dict[str, bytes]]:
    """The journal export and every projection file's bytes."""
    export = b"".join(_export_lines(root))
    files = {rel: (root / rel).read_bytes() for rel in managed(root)
             if not rel.startswith(("journal.", ".memory-es"))
             and not rel.endswith((".db", "-wal", "-shm"))}  # SQLite files: health dumps them
    return export, files


def _export_lines(root: Path) -> Iterator[bytes]:
    import io
    out = io.BytesIO()
    MemoryRoot.open(root).export(out)
    yield out.getvalue()


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    if data:
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))


def replace_with(source: Path) -> Callable[[Path], None]:
    def op(path: Path) -> None:
        if source.exists():
            path.write_bytes(source.read_bytes())
        else:
            path.unlink()
    return op


OPS = ["delete", "truncate", "flip", "append", "rollback", "swap", "chmod", "symlink"]


def tamper(path: Path, op: str, older: Path, other: Path, outside: Path) -> None:
    """Apply ``op`` to ``path``; ``older`` / ``other``: the same file of the earlier copy and of
    another root; ``outside``: where a symlink's identical copy goes (outside the root)."""
    if op == "delete":
        path.unlink()
    elif op == "truncate":
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)
    elif op == "flip":
        flip(path)
    elif op == "append":
        with open(path, "ab") as f:
            f.write(b"\n- appended by an attacker\n")
    elif op == "rollback":
        replace_with(older)(path)
    elif op == "swap":
        replace_with(other)(path)
    elif op == "chmod":
        os.chmod(path, 0o644)
    else:
        outside.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(outside)


@pytest.mark.parametrize("tier", TIERS)
def test_every_tamper_is_detected_or_harmless(
        tmp_path: Path, tier: str, roots: dict[str, tuple[Path, Path, Path]]) -> None:
    root, older, other = roots[tier]
    truth = fingerprint(root)
    counts: Counter[str] = Counter()
    silent: list[str] = []
    for rel in managed(root):
        for op in OPS:
            case = tmp_path / "case"
            shutil.copytree(root, case, symlinks=True)
            tamper(case / rel, op, older / rel, other / rel, tmp_path / "outside")
            try:
                clean = MemoryRoot.open(case).health().status == "clean"
            except MemoryEsError:
                clean = False  # the journal failed closed
            if not clean:
                counts["detected"] += 1
            elif fingerprint(case) == truth:
                counts["harmless"] += 1
            else:
                counts["silent"] += 1
                silent.append(f"{op} {rel}")
            shutil.rmtree(case)
    line = summary(f"tamper {tier} ({len(managed(root))} files)", counts)
    assert not silent, f"{line}: {silent}"
    assert counts["detected"] > counts["harmless"], line
