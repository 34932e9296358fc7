"""Argument checks run before any command touches a root: a rejected call reads and writes
nothing. Ranges come from the library's own validators, so ``memory-es`` and the API agree."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from memory_es.bounds import check_intake_id, check_seconds, describe
from memory_es.browse.inventory import check_cursor, check_list_limit, check_memory_id, check_since
from memory_es.browse.journal_request import check_limit as check_journal_limit
from memory_es.cli.contract import UsageError
from memory_es.cli.parser import option_names
from memory_es.errors import MemoryEsError
from memory_es.recall.as_of import check_as_of
from memory_es.recall.asking import check_limit as check_recall_limit

MAX_PAGE = 1000  # a journal snapshot holds at most 1,000 entries
# Arguments that name files: any bytes the filesystem allows (a non-UTF-8 name is legal).
PATH_DESTS = frozenset({"root", "config", "capture_text_file", "labelled", "expect_anchor",
                        "dsn_file", "token_file"})


def _utf8_problem(value: str) -> str | None:
    """Where ``value`` stops being UTF-8 text: an undecodable byte of the command line
    (surrogate-escaped) or an unpaired surrogate."""
    for index, ch in enumerate(value):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            if 0xDC80 <= ord(ch) <= 0xDCFF:
                return f"byte 0x{ord(ch) - 0xDC00:02x} at character {index}"
            return f"unpaired surrogate U+{ord(ch):04X} at character {index}"
    return None


def _named(name: str, check: Callable[[], object]) -> None:
    """Run a library check; its error becomes a usage error naming the argument."""
    try:
        check()
    except MemoryEsError as e:
        message = str(e).removeprefix(f"{e.code}: ")
        code = "" if e.code == "invalid_argument" else f"{e.code}: "
        raise UsageError(f"argument {name}: {code}{message}", code=e.code) from e


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    names = option_names(parser, args.command)
    for dest, value in vars(args).items():
        if isinstance(value, str) and dest not in PATH_DESTS \
                and not (dest == "journal" and args.command == "replay"):
            problem = _utf8_problem(value)
            if problem is not None:
                raise UsageError(f"argument {names.get(dest, dest)}: not valid UTF-8 text "
                                 f"({problem})")
    root = getattr(args, "root", None)
    problem = _utf8_problem(root) if isinstance(root, str) else None
    if problem is not None:  # SQLite opens UTF-8 paths only: refuse before creating anything
        raise UsageError(f"argument --root: SQLite can open only a UTF-8 path ({problem})")
    command = args.command
    if command == "forget":
        if args.id is not None:
            _named("id", lambda: check_memory_id(args.id))
        _named("--lock-timeout", lambda: check_seconds("lock timeout", args.lock_timeout))
    if command in ("inspect", "retry", "resolve") and args.id is not None:
        _named("id", lambda: check_intake_id(args.id))
    if command in ("retry", "resolve", "rebuild"):
        _named("--lock-timeout", lambda: check_seconds("lock timeout", args.lock_timeout))
    if command == "drain" and args.timeout is not None:
        _named("--timeout", lambda: check_seconds("timeout", args.timeout))
    if command == "search":
        _named("--limit", lambda: check_recall_limit(args.limit))
        if args.as_of is not None:
            _named("--as-of", lambda: check_as_of(args.as_of))
    if command == "journal":
        if args.limit is not None:
            _named("--limit", lambda: check_journal_limit(args.limit))
        if not 1 <= args.page <= MAX_PAGE:
            raise UsageError(f"argument --page: must be a page number from 1 to {MAX_PAGE}, "
                             f"got {describe(args.page)}")
    if command == "list":
        _named("--limit", lambda: check_list_limit(args.limit))
        _named("--since", lambda: check_since(args.since))
        _named("--cursor", lambda: check_cursor(args.cursor))
    if command == "show":
        _named("id", lambda: check_memory_id(args.id))
    if command == "export" and args.journal != "-" and (
            not args.journal or args.journal.endswith("/") or args.journal in (".", "..")):
        raise UsageError(f"argument --journal: must be a file path or '-' (stdout), "
                         f"got {describe(args.journal)}")
