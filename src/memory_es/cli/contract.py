"""The exit-code contract of ``memory-es`` (SPEC C), in one place.

Every failure, whatever raised it, becomes one :class:`Failure`: an exit code, a stable
content-free ``code`` and a one-line message. It is printed as ``memory-es: error: MESSAGE`` on
stderr, or, under ``--json``, as ``{"error": {"code": ..., "message": ...}}`` on stdout; the exit
code is the same either way. No traceback ever reaches the user.
"""

from __future__ import annotations

import json
import sys
from typing import Final

from memory_es.failures import (
    COULD_NOT_ADMIT,
    COULD_NOT_RUN,
    INTERRUPTED,
    OK,
    REFUSED,
    REFUSED_CODES,
    USAGE,
    USAGE_CODES,
    Failure,
    UsageError,
    classify,
    one_line,
)

__all__ = ["COULD_NOT_ADMIT", "COULD_NOT_RUN", "EXIT_CODES_HELP", "INTERRUPTED", "OK", "REFUSED",
           "REFUSED_CODES", "USAGE", "USAGE_CODES", "Failure", "UsageError", "classify", "emit",
           "one_line"]

EXIT_CODES_HELP: Final = """\
exit codes (every command; under --json an error is {"error": {"code", "message"}} on stdout):
  0  ok
  1  findings or a refused operation (health findings, an invalid config for validate, a
     rejected turn, resolve of a resolved intake or a retained plan, replay into a used root,
     a journal --cursor whose range changed since its first page, anchor of a root whose
     chain is not keyed yet, show of an id no stored memory has or a prefix that names more
     than one, a Remember or status change the lifecycle refuses, a search --about that
     names no person or more than one, a backup onto an existing file, a restore into a
     used root or a key store that already holds that root's keys, an import of a legacy
     folder whose replay state needs adopt-replay first, an adoption that is not needed,
     has nothing to adopt or finds capture work beside a migration, a curate audit or
     decision on a root that is not BuJo, a decision for a line the audit does not list, a
     migrate with unresolved intakes, a line no note can hold or nothing to migrate, a
     migrate --abort with no migration standing, a write to a root whose migrate was cut
     short)
  2  usage error: a bad argument or option, a config file that does not validate, no memory
     root at --root, a file given to --expect-anchor that is no anchor, a backup file that
     is no backup or whose passphrase or key file is missing, wrong or not owner-only, an
     import source that is missing, not JSON or not the format named, a migrate config that
     is not BuJo with an Ollama chat model; nothing was read or written
  3  could not run: I/O error, the writer lock held by another process, a corrupt or unsafe
     root or backup, a missing chain key or an unsafe key store, a model provider down
  130 interrupted (Ctrl-C); a closed stdout (memory-es inspect | head -1) is quiet, exit 0"""

def emit(failure: Failure, *, as_json: bool) -> int:
    """Print ``failure`` per the contract and return its exit code."""
    message = one_line(failure.message)
    if as_json:
        print(json.dumps({"error": {"code": failure.code, "message": message}},
                         sort_keys=True, ensure_ascii=False))
    else:
        print(f"memory-es: error: {message}", file=sys.stderr)
    return failure.exit_code
