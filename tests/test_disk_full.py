"""A full disk (issue 13 item 6): a real ENOSPC from a small tmpfs, mounted in a private mount
namespace so nothing outlives the test. Admissions are refused with the one code ``io_error``
("disk full"), the background worker backs off instead of spinning, ``close()`` never raises or
leaks descriptors, ``memory-es admit`` (through the running writer) is refused as not written
(exit 3), and once space is back the store admits again with every earlier acknowledged turn
kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S

HELPER = Path(__file__).with_name("helpers_disk_full.py")


def namespace_prefix() -> list[str]:
    """``unshare`` into a private mount namespace (a user namespace too when not root)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux unshare to mount a private tmpfs")
    if os.geteuid() == 0:
        return ["unshare", "--mount", "--propagation", "private"]
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def run_on_small_tmpfs(tmp_path: Path, size: str, setup: str, *args: str) -> dict[str, Any]:
    """Mount a private tmpfs of ``size``, run ``setup`` in it (``{mount}`` names it), then
    the helper script on it with ``args``; return the JSON object it printed last."""
    mount = tmp_path / "small"
    mount.mkdir()
    script = (f"mount -t tmpfs -o size={size} tmpfs {mount} && "
              + setup.format(mount=mount)
              + f"exec {sys.executable} {HELPER} {mount} {' '.join(args)}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent), *[p for p in sys.path if p]])}
    done = subprocess.run([*namespace_prefix(), "sh", "-c", script], capture_output=True,
                          text=True, timeout=HANG_S, env=env)
    if done.returncode != 0 and "mount" in done.stderr and "permission" in done.stderr.lower():
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_a_full_disk_is_refused_cleanly_and_recovers(tmp_path: Path) -> None:
    # admissions fill 1.5 MB; freeing the filler gives back more than catching the index up
    # with them takes, so the reopened store drains on a disk that has room again
    seen = run_on_small_tmpfs(tmp_path, "5m", "head -c 3500000 /dev/zero > {mount}/filler && ")
    assert seen["admitted"] > 0
    assert set(seen["rejected"]) == {"io_error:disk full"}, seen["rejected"]
    assert seen["worker_logs"] <= 4, seen  # backed off: 1st, 2nd, 4th... failures only
    code, out, err = seen["cli"]  # through the running writer's control socket: its answer
    assert code == 3 and json.loads(out)["code"] == "io_error" and err == "", seen["cli"]
    assert seen["after"] == "admitted"
    assert seen["close_error"] is None and seen["fd_growth"] <= 0, seen
    assert seen["all_admitted_kept"] is True
    assert seen["resolved"] == seen["admitted"] + 1


@pytest.mark.parametrize("spare", [0, 32 * 1024], ids=["no_byte_left", "room_to_open"])
def test_a_root_whose_index_lags_opens_on_a_full_disk_and_catches_up_later(
        tmp_path: Path, spare: int) -> None:
    """B4: the index is derived, so a full disk that stops it catching up at open (it cannot
    open the index, or it opens and cannot commit) leaves the projections degraded and logged
    as ``io_error``, never the open failing; the turns are recalled once space is back."""
    seen = run_on_small_tmpfs(tmp_path, "3m", "", "lagging", str(spare))
    assert seen["open_error"] is None, seen
    assert seen["degraded"] and "io_error" in seen["degraded"][0], seen
    assert seen["pending_while_full"] == 40
    assert seen["refused"] == ["rejected", "io_error", "disk full"]
    assert "turn 7" in seen["recalled"], seen
