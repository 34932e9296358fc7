"""``memory-es``: a thin shell over the library. Every command is one library call.

:func:`main` parses (:mod:`memory_es.cli.parser`), checks the arguments before anything is
opened (:func:`memory_es.cli.common.check_args`), then runs the command's body, which lives
beside its options in its group's module (:mod:`memory_es.cli.commands`).

One exit-code contract for every command (:mod:`memory_es.cli.contract`): 0 ok, 1 findings or a
refused operation, 2 usage error, 3 could not run; an error is one line on stderr, or a JSON
error object on stdout under ``--json``, and never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_es.cli.parser import build_parser

__all__ = ["build_parser", "main"]


def __getattr__(name: str) -> Any:
    """``build_parser``, imported on first use: ``memory-es --version`` never builds one."""
    if name == "build_parser":
        from memory_es.cli.parser import build_parser

        return build_parser
    raise AttributeError(f"module 'memory_es.cli' has no attribute {name!r}")


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
    if argv == ["--version"]:  # answered before any parser or command module is imported
        from memory_es.version import package_version

        sys.stdout.write(f"memory-es {package_version()}\n")
        return 0
    # the parser, the command modules and the exit-code contract load only now; the store,
    # the read path and numpy only inside the command's body
    from memory_es.cli.common import Command, check_args
    from memory_es.cli.contract import INTERRUPTED, OK, classify, emit
    from memory_es.cli.parser import parse
    from memory_es.cli.progress import shown
    from memory_es.cli.standalone import cmd_demo

    as_json = "--json" in argv  # a usage error answers in the form asked for
    try:
        try:
            parser, args = parse(argv)
        except SystemExit as e:  # --help, --version
            return e.code if isinstance(e.code, int) else OK
        as_json = bool(getattr(args, "json", False))
        check_args(parser, args)
        command: Command = args.cmd
        if command.run is None:  # demo drives memory-es itself: it is handed main
            return cmd_demo(args, main)
        with shown(args) if command.progress else contextlib.nullcontext():
            return command.run(args)  # (progress on stderr, on a terminal, for long work)
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
