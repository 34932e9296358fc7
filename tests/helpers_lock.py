"""Another process holding a root's writer lock (an agent that is running); not a test module.

:func:`hold_writer_lock` starts this file as a script in a fresh interpreter::

    python helpers_lock.py ROOT [RUN_ID ANSWER ...]

The script opens a ``MemoryStore`` on ROOT (no background worker), admits each (run id,
answer) pair without draining it, prints ``ready`` and holds the writer lock until a line or
the end of its stdin arrives; it then closes the store and prints ``closed``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ceilings import HANG_S

SCRIPT = Path(__file__).resolve()


class LockHolder:
    """The running holder: its ``pid`` (error messages name it), :meth:`release` and
    :meth:`kill`."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.stderr = ""  # what it wrote to stderr, once released

    @property
    def pid(self) -> int:
        return self.proc.pid

    def release(self) -> tuple[int, str]:
        """Let the holder close its store and exit: (exit code, what it printed after ready);
        its stderr is kept in :attr:`stderr`."""
        stdout, self.stderr = self.proc.communicate(input="\n", timeout=HANG_S)
        return self.proc.returncode, stdout

    def kill(self) -> int:
        """SIGKILL the holder (it closes nothing): its exit code."""
        self.proc.kill()
        return self.proc.wait(timeout=HANG_S)


@contextmanager
def hold_writer_lock(root: Path, turns: Sequence[tuple[str, str]] = ()) -> Iterator[LockHolder]:
    """A holder process that admitted ``turns`` ((run id, answer) pairs, undrained) on
    ``root`` and holds its writer lock until released, killed or the block ends."""
    argv = [sys.executable, str(SCRIPT), str(root)]
    for run_id, answer in turns:
        argv += [run_id, answer]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line != "ready\n":
            proc.kill()
            _, stderr = proc.communicate(timeout=HANG_S)
            raise AssertionError(f"the lock holder did not start: {line!r} {stderr}")
        yield LockHolder(proc)
    finally:
        if proc.poll() is None:
            try:
                proc.communicate(input="\n", timeout=HANG_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


def main(argv: list[str]) -> int:
    from memory_es.intake import CompletedTurn
    from memory_es.store import MemoryStore

    root, pairs = argv[0], argv[1:]
    if len(pairs) % 2:
        print("run ids and answers come in pairs", file=sys.stderr)
        return 3
    with MemoryStore.open(root, background=False) as store:
        for run_id, answer in zip(pairs[::2], pairs[1::2], strict=True):
            result = store.persist_completed_turn(
                CompletedTurn(run_id=run_id, outcome="success", answer=answer))
            if result.status != "admitted":
                print(f"{run_id}: {result}", file=sys.stderr)
                return 4
        print("ready", flush=True)
        sys.stdin.readline()
    print("closed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
