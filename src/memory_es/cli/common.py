"""What every ``memory-es`` command shares (SPEC C): the :class:`Command` record a command
module declares its commands with, the global options (``--root``, ``--config``, ``--json``,
``--lock-timeout``), the checks every argument gets before a command touches a root, the three
handles a command opens, and the output helpers.

The exit codes and the error line live in :mod:`memory_es.cli.contract`. This module imports
nothing heavy: ``--help`` and ``--version`` load it, so the config, the store and the read path
are imported inside the functions that open them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_es.bounds import check_intake_id, check_seconds
from memory_es.cli.contract import EXIT_CODES_HELP, UsageError
from memory_es.errors import MemoryEsError

if TYPE_CHECKING:
    from memory_es.config import MemoryConfig
    from memory_es.root import MemoryRoot
    from memory_es.store import MemoryStore

Handler = Callable[[argparse.Namespace], int]
Check = Callable[[argparse.Namespace], None]
Options = Callable[[argparse.ArgumentParser], None]

ROOT_HELP = "memory root directory (default: the config's memory.path, else ./.memory)"
CONFIG_HELP = "JSON config file holding the memory block (default: the root's own)"
JSON_HELP = "print one JSON object on stdout, errors too ({\"error\": {\"code\", \"message\"}})"
QUIET_HELP = "no progress on stderr (shown only when stderr is a terminal)"
LOCK_HELP = "seconds to wait for the writer lock, 0 to 86400 (default: 0, refuse at once)"

# Arguments that name files, whatever the command: any bytes the filesystem allows (a
# non-UTF-8 name is legal). A command adds its own in ``Command.paths``.
PATH_DESTS = frozenset({"root", "config"})


def _no_options(parser: argparse.ArgumentParser) -> None:
    """A command with no options of its own."""


def _no_check(args: argparse.Namespace) -> None:
    """A command with no argument check of its own."""


@dataclass(frozen=True)
class Command:
    """One ``memory-es`` command: its name and help, its options, the checks its arguments
    get before anything is opened, and its body.

    ``run`` None: ``main`` runs it (``demo``, which drives ``memory-es`` itself).
    ``paths``: the dests that name files (exempt from the UTF-8 check).
    ``json``: whether it takes ``--json``.
    ``progress``: long work, shown as it goes on a terminal.
    """

    name: str
    help: str
    run: Handler | None
    options: Options = _no_options
    check: Check = _no_check
    description: str | None = None
    paths: frozenset[str] = frozenset()
    json: bool = True
    progress: bool = False  # long work: a progress bar on a terminal (memory_es.cli.progress)

    def add_to(self, sub: argparse._SubParsersAction[Any]) -> None:
        """Add this command's parser, with the global options, to ``sub``."""
        parser: argparse.ArgumentParser = sub.add_parser(
            self.name, help=self.help,
            description=self.description or self.help[:1].upper() + self.help[1:],
            epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=[common_options(json=self.json)])
        self.options(parser)
        parser.set_defaults(cmd=self)


def common_options(*, json: bool) -> argparse.ArgumentParser:
    """The global options, repeatable after the command (SUPPRESS: absent leaves the value
    given before the command alone)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=argparse.SUPPRESS, help=ROOT_HELP)
    common.add_argument("--config", default=argparse.SUPPRESS, help=CONFIG_HELP)
    if json:
        common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                            help=JSON_HELP)
    common.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                        help=QUIET_HELP)
    return common


def add_lock_timeout(parser: argparse.ArgumentParser) -> None:
    """``--lock-timeout S``: how long a command that takes the writer lock waits for it."""
    parser.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)


# -- checks before a command runs: a rejected call reads and writes nothing --------------------


def option_names(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """dest -> how the user wrote it (``--run-id``, ``query``), for the command and the
    global options, so an error can name the argument."""
    names: dict[str, str] = {}
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    chosen = [parser, *(s.choices[command] for s in subparsers if command in s.choices)]
    for p in chosen:
        for action in p._actions:
            if action.option_strings:
                names[action.dest] = max(action.option_strings, key=len)
            elif isinstance(action.metavar, str):
                names[action.dest] = action.metavar
            else:
                names[action.dest] = action.dest
    return names


def _utf8_problem(value: str) -> str | None:
    """Where ``value`` stops being UTF-8 text: an undecodable byte of the command line
    (surrogate-escaped) or an unpaired surrogate."""
    for index, ch in enumerate(value):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            if 0xDC80 <= ord(ch) <= 0xDCFF:
                return f"byte 0x{ord(ch) - 0xDC00:02x} at character {index}"
            return f"unpaired surrogate U+{ord(ch):04X} at character {index}"
    return None


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every text argument is UTF-8 and ``--root`` a path SQLite can open; then the command's
    own checks (ranges from the library's own validators, so ``memory-es`` and the API
    agree)."""
    command: Command = args.cmd
    names = option_names(parser, args.command)
    paths = PATH_DESTS | command.paths
    for dest, value in vars(args).items():
        if isinstance(value, str) and "\x00" in value:  # no file name or text holds one
            raise UsageError(f"argument {names.get(dest, dest)}: contains a NUL byte")
        if isinstance(value, str) and dest not in paths:
            problem = _utf8_problem(value)
            if problem is not None:
                raise UsageError(f"argument {names.get(dest, dest)}: not valid UTF-8 text "
                                 f"({problem})")
    root = getattr(args, "root", None)
    problem = _utf8_problem(root) if isinstance(root, str) else None
    if problem is not None:  # SQLite opens UTF-8 paths only: refuse before creating anything
        raise UsageError(f"argument --root: SQLite can open only a UTF-8 path ({problem})")
    command.check(args)


def named(name: str, check: Callable[[], object]) -> None:
    """Run a library check; its error becomes a usage error naming the argument."""
    try:
        check()
    except MemoryEsError as e:
        message = str(e).removeprefix(f"{e.code}: ")
        code = "" if e.code == "invalid_argument" else f"{e.code}: "
        raise UsageError(f"argument {name}: {code}{message}", code=e.code) from e


def check_lock_timeout(args: argparse.Namespace) -> None:
    """``--lock-timeout``: 0 to 86400 seconds."""
    named("--lock-timeout", lambda: check_seconds("lock timeout", args.lock_timeout))


def check_intake_arg(args: argparse.Namespace) -> None:
    """An optional ``id`` argument that names an intake (64 hex)."""
    if args.id is not None:
        named("id", lambda: check_intake_id(args.id))


# -- the handles a command opens ---------------------------------------------------------------


def config(args: argparse.Namespace) -> MemoryConfig | None:
    """The ``--config`` file, or None: the root's own recorded configuration (defaults for a
    new root)."""
    if args.config is None:
        return None
    from memory_es.config import load_config  # pydantic: only for a config file

    return load_config(args.config)


def root_path(args: argparse.Namespace, loaded: MemoryConfig | None = None) -> Path:
    from memory_es.rootconfig import resolve_root

    return resolve_root(args.root, loaded if loaded is not None else config(args))


def reader(args: argparse.Namespace) -> MemoryRoot:
    """The read-only handle for a reading command (no lock, nothing written)."""
    from memory_es.root import MemoryRoot

    loaded = config(args)
    return MemoryRoot.open(root_path(args, loaded), loaded)


def open_store(root: Path, loaded: MemoryConfig | None, **options: Any) -> MemoryStore:
    """``MemoryStore.open``, the writer imported on first use: a reading command never
    imports the capture pipeline, the worker or the journal writer."""
    from memory_es.store import MemoryStore

    return MemoryStore.open(root, loaded, **options)


def operator_store(args: argparse.Namespace) -> MemoryStore:
    """A store for a mutating operator command: refuses at once while an agent holds the
    root (the liveness fence, C16), and never starts the background worker."""
    loaded = config(args)
    return open_store(root_path(args, loaded), loaded, background=False,
                      lock_timeout=args.lock_timeout, create=False)


# -- output ------------------------------------------------------------------------------------


def print_json(obj: Any) -> None:
    print(json.dumps(obj, sort_keys=True, ensure_ascii=False))


def vectors(backlog: int | None) -> str:
    """The vector backlog as the operator commands print it; nothing for a root that never
    embeds (Lite, no provider)."""
    return "" if backlog is None else f"; vectors_pending={backlog}"


def read_text(path: str, option: str) -> str:
    """A UTF-8 text argument read from a file, or from stdin for ``-``."""
    try:
        if path == "-":  # bytes, so a non-UTF-8 stdin is an error rather than escaped
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else \
                sys.stdin.read().encode("utf-8", "surrogateescape")
            return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"argument {option}: {'stdin' if path == '-' else path} is not valid "
                         f"UTF-8 (byte {e.start})") from e
    except OSError as e:
        raise UsageError(f"argument {option}: cannot read {path}: {e.strerror or e}") from e
