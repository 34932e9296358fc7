"""The ``memory-es`` argument parser (SPEC C): the top-level options, then every command of
:mod:`memory_es.cli.commands`, each declared beside its body in its group's module.

``--root``, ``--config`` and ``--json`` are accepted before or after the command. A parse
error raises :class:`~memory_es.cli.contract.UsageError` (exit 2, one line) instead of printing
usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from memory_es.cli.commands import commands
from memory_es.cli.common import CONFIG_HELP, JSON_HELP, QUIET_HELP, ROOT_HELP
from memory_es.cli.contract import EXIT_CODES_HELP, UsageError


class _Version(argparse.Action):
    """``--version``: the version is looked up only when the option is given."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0,
                         help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from memory_es.version import package_version

        sys.stdout.write(f"memory-es {package_version()}\n")  # stdout, as argparse's own
        parser.exit()


class Parser(argparse.ArgumentParser):
    """argparse that raises a one-line UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser(only: str | None = None) -> Parser:
    """The whole parser, or with ``only`` one holding just that command: building all of
    them is most of a cold command's parsing time, and one command parses its own arguments
    the same way alone (:func:`parse`)."""
    parser = Parser(prog="memory-es", description="Durable, event-sourced memory for AI agents.",
                    epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument("--root", help=ROOT_HELP)
    parser.add_argument("--config", help=CONFIG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="one of the commands below; COMMAND --help for its options")
    for command in commands():
        if only is None or command.name == only:
            command.add_to(sub)
    return parser


def _named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, if one parser of that command alone can parse it: the
    first word that is a command's name, with no top-level help asked for before it."""
    names = {command.name for command in commands()}
    for word in argv:
        if word in names:
            return word
        if word == "-h" or (len(word) > 2 and "--help".startswith(word)):
            return None  # the top-level help lists every command
    return None


def parse(argv: Sequence[str]) -> tuple[Parser, argparse.Namespace]:
    """``argv`` parsed, and the parser that parsed it. The parser of the named command alone
    is tried first; any usage error is worded by the whole parser, so the user reads the same
    message either way (a command's name given as an option's value only costs a retry)."""
    only = _named_command(argv)
    if only is not None:
        parser = build_parser(only)
        try:
            return parser, parser.parse_args(argv)
        except UsageError:
            pass
    parser = build_parser()
    return parser, parser.parse_args(argv)
