"""``memory-es``: a thin shell over the library. Every command is one library call.

One exit-code contract for every command (:mod:`memory_es.cli.contract`): 0 ok, 1 findings or a
refused operation, 2 usage error, 3 could not run; an error is one line on stderr, or a JSON
error object on stdout under ``--json``, and never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

from memory_es.cli.contract import INTERRUPTED, OK, classify, emit
from memory_es.cli.parser import build_parser

__all__ = ["build_parser", "main"]


def _cmd_demo(root: str | None) -> int:
    """The whole Lite flow, then BuJo capture, in a temporary root, or kept at ``--root``
    (memory_es.demo)."""
    from pathlib import Path

    from memory_es.demo import run_demo

    return run_demo(main, Path(root) if root is not None else None)


def _quiet_stdout() -> None:
    """The reader went away (``| head -1``): send what is left, and the interpreter's final
    flush, to /dev/null instead of raising BrokenPipeError again."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # a usage error answers in the form asked for
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help, --version
            return e.code if isinstance(e.code, int) else OK
        as_json = bool(getattr(args, "json", False))
        # the commands (and the store, the read path, numpy) load only now: --help and
        # --version never need them
        from memory_es.cli.checks import check_args
        from memory_es.cli.commands import COMMANDS

        check_args(parser, args)
        if args.func == "demo":
            return _cmd_demo(args.root)
        if args.func == "forget":
            from memory_es.cli.forget import cmd_forget

            return cmd_forget(args)
        if args.func == "profile":
            from memory_es.cli.profile import cmd_profile

            return cmd_profile(args)
        if args.func == "serve_mcp":
            from memory_es.cli.serve import cmd_serve_mcp

            return cmd_serve_mcp(args)
        return COMMANDS[args.func](args)
    except BrokenPipeError:
        _quiet_stdout()
        return OK
    except KeyboardInterrupt:
        return INTERRUPTED
    except Exception as e:
        try:
            return emit(classify(e), as_json=as_json)
        except BrokenPipeError:
            _quiet_stdout()
            return classify(e).exit_code
