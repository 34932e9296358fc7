"""``memory-es profile``: the owner profile of a root (C11, M9), read-only through
:meth:`MemoryRoot.profile`, by the same rule the automatic context uses.

It prints the profile as the automatic context would carry it, or ``no profile``; with
``--json`` the entries and whether ``memory.profile.enabled`` is on. A profile is shown even
when the switch is off (a preview before enabling), with a one-line note on stderr.
"""

from __future__ import annotations

import argparse
import sys

from memory_es.cli.commands import _reader, print_json
from memory_es.cli.contract import OK

DISABLED_NOTE = ("note: memory.profile.enabled is off; the automatic context does not carry "
                 "this profile")


def cmd_profile(args: argparse.Namespace) -> int:
    profile = _reader(args).profile()
    if args.json:
        print_json(profile.to_json())
        return OK
    print(profile.text or "no profile")
    if profile.text and not profile.enabled:
        print(DISABLED_NOTE, file=sys.stderr)
    return OK
