"""Subprocess driver for the forget crash matrix (issue 14); not a test module.

Usage: ``python helpers_crash_forget.py ROOT TIER (ID | run:RUN_ID)``: open the store of
``TIER`` (helpers_attack's configs, or ``capture``: helpers_capture's) on ROOT and forget one
memory or one turn. With ``FORGET_CRASH_AT`` set (armed once the store is open) the process
dies by SIGKILL at that boundary; reaching the end prints ``survived``.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    import os
    from pathlib import Path

    from helpers_attack import open_store
    from helpers_capture import open_capture
    from memory_es import fsutil

    root, tier, target = argv
    store = open_capture(Path(root), [])[0] if tier == "capture" \
        else open_store(Path(root), tier, background=False)
    # armed only now: the open itself passes some of the same boundaries (its garbage
    # collection of record keys, its projection catch-up), and the kill must hit the forget
    fsutil._CRASH_AT = os.environ.get("FORGET_CRASH_AT")
    with store:
        if target.startswith("run:"):
            store.forget_turn(target[4:], reason="crash-test")
        else:
            store.forget(target, reason="crash-test")
    print("survived", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
