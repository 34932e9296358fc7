"""``memory-es``: a thin shell over the library. Every command is one library call.

Errors print one line (``memory-es: error: ...``) and exit 2; ``admit`` exits 1 for a
rejected turn and ``validate`` exits 1 for an invalid config.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memory_es.config import ConfigError, MemoryConfig, load_config, validate_file
from memory_es.errors import MemoryEsError
from memory_es.intake import CompletedTurn
from memory_es.reader import export_journal, export_journal_to_file, inspect_root
from memory_es.store import MemoryStore, resolve_root

HEX = set("0123456789abcdef")


class CliError(MemoryEsError):
    """A usage problem the user can fix (bad id, unreadable file)."""


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, sort_keys=True, ensure_ascii=False))


def _config(args: argparse.Namespace) -> MemoryConfig:
    return load_config(args.config)


def _root(args: argparse.Namespace, config: MemoryConfig | None = None) -> Path:
    return resolve_root(args.root, config if config is not None else _config(args))


def cmd_validate(args: argparse.Namespace) -> int:
    path = args.sub_config or args.config
    if path is None:
        print("OK (no config file: all defaults)")
        return 0
    errors = validate_file(path)
    if errors:
        for line in errors:
            print(line)
        return 1
    print("OK")
    return 0


def _read_text(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CliError(f"cannot read {path}: {e}") from e


def cmd_admit(args: argparse.Namespace) -> int:
    config = _config(args)
    answer = _read_text("-") if args.answer == "-" else args.answer
    capture_text = _read_text(args.capture_text_file) if args.capture_text_file else None
    turn = CompletedTurn(
        run_id=args.run_id, outcome=args.outcome, answer=answer, capture_text=capture_text,
        session=args.session, speaker_kind=args.speaker_kind, trigger=args.trigger,
    )
    with MemoryStore.open(_root(args, config), config) as store:
        result = store.persist_completed_turn(turn)
    _print_json(result.to_json())
    return 0 if result.ok else 1


def _check_id(intake_id: str) -> str:
    if len(intake_id) != 64 or not set(intake_id) <= HEX:
        raise CliError(f"intake id {intake_id!r} is not 64 lowercase hex characters "
                       "(the SHA-256 of the run id)")
    return intake_id


def cmd_inspect(args: argparse.Namespace) -> int:
    intake_id = _check_id(args.id) if args.id else None
    report = inspect_root(_root(args), intake_id)
    if intake_id is not None and not report["records"]:
        raise CliError(f"no intake with id {intake_id}")
    if args.json:
        _print_json(report if intake_id is None else report["records"][0])
        return 0
    counts = report["counts"]
    print(" ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    for r in report["records"]:
        print(f"{r['id']}  {r['state']:<8} {'due' if r['due'] else 'delayed':<7} "
              f"attempts={r['attempts']} admitted={r['admitted_at']} next={r['next_due_at']}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    root = _root(args)
    if args.journal == "-":
        count = export_journal(root, sys.stdout.buffer)
        sys.stdout.flush()
    else:
        count = export_journal_to_file(root, args.journal)
    print(f"exported {count} events", file=sys.stderr)
    return 0


DEMO_TURNS = (
    ("first turn", CompletedTurn(run_id="demo-run-1", outcome="success",
                                 answer="Booked the dentist for 2026-12-09 at 10:00.",
                                 speaker_kind="human-turn")),
    ("same run id, same bytes", CompletedTurn(
        run_id="demo-run-1", outcome="success",
        answer="Booked the dentist for 2026-12-09 at 10:00.", speaker_kind="human-turn")),
    ("same run id, other bytes", CompletedTurn(
        run_id="demo-run-1", outcome="success",
        answer="Booked the dentist for 2026-12-10.", speaker_kind="human-turn")),
    ("cron no-op", CompletedTurn(run_id="demo-run-2", outcome="success",
                                 answer="Checked the feeds.\nNOTHING_TO_REPORT",
                                 trigger="cron", speaker_kind="trigger")),
    ("failed turn", CompletedTurn(run_id="demo-run-3", outcome="failed", answer="partial")),
    ("webhook turn", CompletedTurn(run_id="demo-run-4", outcome="success",
                                   answer="The build for 0.9 passed.", trigger="webhook",
                                   speaker_kind="trigger")),
)


def cmd_demo(args: argparse.Namespace) -> int:
    import logging

    logger = logging.getLogger("memory_es")
    level = logger.level
    logger.setLevel(logging.ERROR)  # the demo prints each result itself
    try:
        with tempfile.TemporaryDirectory(prefix="memory-es-demo-") as tmp:
            root = Path(tmp) / "memory"
            print(f"memory root: {root}")
            with MemoryStore.open(root) as store:
                for label, turn in DEMO_TURNS:
                    result = store.persist_completed_turn(turn)
                    print(f"{label:<26} -> {json.dumps(result.to_json(), sort_keys=True)}")
            print("\n$ memory-es inspect")
            return cmd_inspect(
                argparse.Namespace(root=str(root), config=None, id=None, json=False))
    finally:
        logger.setLevel(level)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-es", description="Durable, event-sourced memory for AI agents.")
    parser.add_argument("--root", help="memory root (default: config memory.path, else ./.memory)")
    parser.add_argument("--config", help="JSON config file holding the memory block")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check a config file (SPEC O)")
    p.add_argument("--config", dest="sub_config", help="config file (same as the global flag)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("admit", help="durably admit one completed turn")
    p.add_argument("--run-id", required=True)
    p.add_argument("--answer", required=True, help="the assistant answer; '-' reads stdin")
    p.add_argument("--capture-text-file", help="host-approved capture text (capture mode)")
    p.add_argument("--session")
    p.add_argument("--speaker-kind", default="unknown",
                   choices=["human-turn", "trigger", "unknown"])
    p.add_argument("--trigger", default="human", choices=["human", "cron", "webhook"])
    p.add_argument("--outcome", default="success")
    p.set_defaults(func=cmd_admit)

    p = sub.add_parser("inspect", help="content-free intake states and counts")
    p.add_argument("id", nargs="?", help="64-hex intake id (sha256 of the run id)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("export", help="read-only canonical export (safe while a writer runs)")
    p.add_argument("--journal", required=True, metavar="FILE", help="JSONL output; '-' = stdout")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("demo", help="admit sample turns into a temporary root and inspect it")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except ConfigError as e:
        for line in e.errors or [str(e)]:
            print(f"memory-es: config error: {line}", file=sys.stderr)
        return 2
    except (MemoryEsError, OSError) as e:
        print(f"memory-es: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: still one line, never a traceback in the operator's face
        print(f"memory-es: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
