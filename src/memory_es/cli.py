"""``memory-es``: a thin shell over the library. Every command is one library call.

Errors print one line (``memory-es: error: ...``) and exit 2; ``admit`` exits 1 for a
rejected turn and ``validate`` exits 1 for an invalid config.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memory_es.config import ConfigError, MemoryConfig, load_config, validate_file
from memory_es.errors import MemoryEsError
from memory_es.intake import CompletedTurn, iso_ms
from memory_es.recall.result import explanation_lines
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore, resolve_root
from memory_es.transfer import rebuild_root, replay_export

HEX = set("0123456789abcdef")


class CliError(MemoryEsError):
    """A usage problem the user can fix (bad id, unreadable file)."""


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, sort_keys=True, ensure_ascii=False))


def _config(args: argparse.Namespace) -> MemoryConfig | None:
    """The ``--config`` file, or None: the root's own recorded configuration (defaults for a
    new root)."""
    return load_config(args.config) if args.config is not None else None


def _root(args: argparse.Namespace, config: MemoryConfig | None = None) -> Path:
    return resolve_root(args.root, config if config is not None else _config(args))


def _reader(args: argparse.Namespace) -> MemoryRoot:
    """The read-only handle for a reading command (no lock, nothing written)."""
    config = _config(args)
    return MemoryRoot.open(_root(args, config), config)


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
    with MemoryStore.open(_root(args, config), config, background=False) as store:
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
    report = _reader(args).inspect(intake_id)
    if intake_id is not None and not report.records:
        raise CliError(f"no intake with id {intake_id}")
    if args.json:
        _print_json(report.to_json() if intake_id is None else report.records[0].to_json())
        return 0
    counts = report.counts.to_json()
    print(" ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    print(f"worker={report.worker}" + _vectors(report.vectors_pending).replace(";", ""))
    for r in report.records:
        if r.state == "pending":
            detail = f"{'due' if r.due else 'delayed':<7} next={iso_ms(r.next_due_at)}"
        elif r.state == "dead":
            detail = f"category={r.category}"
        else:
            detail = f"outcome={r.outcome}"
        if r.retained and r.state != "resolved":
            detail += f" retained={r.retained}"  # a capture resumes after this stage
        print(f"{r.id}  {r.state:<8} attempts={r.attempts} "
              f"admitted={iso_ms(r.admitted_at)} {detail}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    root = _reader(args)
    if args.journal == "-":
        count = root.export(sys.stdout.buffer)
        sys.stdout.flush()
    else:
        count = root.export_to(args.journal)
    print(f"exported {count} events", file=sys.stderr)
    return 0


def cmd_drain(args: argparse.Namespace) -> int:
    config = _config(args)
    with MemoryStore.open(_root(args, config), config, background=False,
                          create=False) as store:
        count = store.drain(timeout=args.timeout, embed=not args.no_embed)
        counts = store.inspect().counts
        backlog = store.vector_backlog()
    print(f"ran {count} attempts; pending={counts.pending} (due={counts.due}, "
          f"delayed={counts.delayed}) dead={counts.dead} resolved={counts.resolved}"
          + _vectors(backlog))
    return 0


def _vectors(backlog: int | None) -> str:
    """The vector backlog as the operator commands print it; nothing for a root that never
    embeds (Lite, no provider)."""
    return "" if backlog is None else f"; vectors_pending={backlog}"


def _operator_store(args: argparse.Namespace) -> MemoryStore:
    """A store for a mutating operator command: refuses at once while an agent holds the
    root (the liveness fence, C16), and never starts the background worker."""
    config = _config(args)
    return MemoryStore.open(_root(args, config), config, background=False,
                            lock_timeout=args.lock_timeout, create=False)


def cmd_retry(args: argparse.Namespace) -> int:
    intake_id = _check_id(args.id) if args.id else None
    with _operator_store(args) as store:
        ids = store.retry(intake_id)
    if not ids:
        print("nothing to retry: no dead or delayed intake matched")
        return 0
    for intake in ids:
        print(f"retry {intake}: fresh budget of 16 attempts, due now")
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    intake_id = _check_id(args.id)
    with _operator_store(args) as store:
        store.resolve(intake_id, args.reason)
    print(f"resolved {intake_id}: operator_resolved ({args.reason}); the run id stays "
          "admitted, so it can never be admitted again")
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    config = _config(args)
    report = rebuild_root(_root(args, config), config, lock_timeout=args.lock_timeout)
    print(f"activated index gen-{report.generation} at position {report.position}; "
          f"rewrote {len(report.written)} files, removed {len(report.removed)}"
          + _vectors(report.vectors_pending))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    if args.root is None:
        raise CliError("replay needs --root NEW (a new or empty directory)")
    report = replay_export(args.journal, args.root, _config(args))
    print(f"replayed {report.position} events into {args.root}; "
          f"wrote {len(report.written)} files" + _vectors(report.vectors_pending))
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    report = _reader(args).health()
    if args.json:
        _print_json(report.to_json())
    else:
        print(f"{report.status}: journal at {report.journal_position}, projections at "
              f"{report.projection_position}, {len(report.findings)} findings; "
              f"worker={report.worker}" + _vectors(report.vectors_pending))
        for f in sorted(report.findings):
            print(f"{f.code}  {f.path}  {f.detail}")
    return report.exit_code


def cmd_search(args: argparse.Namespace) -> int:
    result = _reader(args).recall(args.query, args.limit, explain=args.explain)
    if args.json:
        _print_json(result.to_json())
        return 0
    print(result.text if result.recall.hits else "no matching memory")
    if result.degraded:
        print(f"(degraded: {result.reason}" + (f", {result.vectors_pending} memories without "
              "a vector" if result.vectors_pending else "") + ")", file=sys.stderr)
    if args.explain:
        print("\n" + "\n".join(explanation_lines(result)))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from memory_es.recall.calibrate_report import render_text

    report = _reader(args).calibrate(args.labelled)
    if args.json:
        _print_json(report.to_json())
    else:
        print(render_text(report))
    return 0


def cmd_journal(args: argparse.Namespace) -> int:
    """MemoryJournal over the active index generation, read-only (I*).

    This process is its own store handle with its own cursor key, so a cursor printed by an
    earlier ``memory-es journal`` cannot continue here (journal_invalid_cursor); ``--page N``
    re-runs the query and follows the cursors within this process instead.
    """
    if args.page < 1:
        raise CliError("--page must be 1 or more")
    request: dict[str, Any] = {}
    if args.cursor is not None:
        if args.page != 1:
            raise CliError("--page and --cursor cannot be combined")
        request["cursor"] = args.cursor
    for name, value in (("fromDate", args.from_date), ("throughDate", args.through_date),
                        ("timeZone", args.tz), ("limit", args.limit)):
        if value is not None:
            request[name] = value
    root = _reader(args)
    try:
        result = root.journal(request)
        for page in range(2, args.page + 1):
            if result.cursor is None:
                raise CliError(f"page {args.page} is past the end: the range has "
                               f"{page - 1} page(s)")
            result = root.journal({"cursor": result.cursor})
    except CliError:
        raise
    except MemoryEsError as e:
        hint = (" (a cursor is private to the process that issued it; use --page N)"
                if e.code == "journal_invalid_cursor" else "")
        raise MemoryEsError(f"{e.code}: {e}{hint}", code=e.code) from e
    if args.json:
        _print_json(result.to_json())
        return 0
    r = result.range.to_json()
    print(f"{r['fromDate']}..{r['throughDate']} {r['timeZone']} = "
          f"[{r['fromUtc']}, {r['toUtc']})", file=sys.stderr)
    if result.no_data:
        print("no memories in this range")
    for entry in result.entries:
        print(f"{entry.day} {entry.time} {entry.text}")
    if not result.coverage.complete:
        print(f"snapshot stopped early: {result.coverage.stopped_by}", file=sys.stderr)
    if result.cursor is not None:
        print(f"more: --page {args.page + 1}", file=sys.stderr)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The whole Lite flow, then BuJo capture, in a temporary root (memory_es.demo)."""
    from memory_es.demo import run_demo

    return run_demo(main)


CALIBRATE_HELP = """\
Fit the five recall calibration numbers (noEvidenceCosine, recallFloor, recallTail, autoFloor,
autoWindow) on labelled questions about this root's memories, read-only, with the configured
embedding provider (Journal or BuJo). Prints them, the recall / abstention trade-off of the
reference, the current and the fitted calibration on those questions (in-sample), and a config
snippet ({"memory": {"embeddings": {"calibration": {...}}}}) to merge into the config file.

LABELLED.json (UTF-8):
  {"questions": [
    {"q": "When is my dentist appointment?", "gold": ["<memory id>"]},
    {"q": "What is the capital of Mongolia?", "gold": [], "kind": "unrelated"},
    {"q": "What is PR-1235 about?", "gold": [], "kind": "near-miss"}
  ]}
gold: ids of memories that answer the question (any one counts), the id= of the
<!--mem id=... --> line under each bullet of daily/*.md; [] means nothing stored answers it.
kind (optional, no-answer questions only): unrelated or near-miss, reported apart. An optional
"note" string per question is ignored. At least 10 answerable and 5 no-answer questions.
autoFloor / autoWindow stay at the reference's 0.62 / 0.04 (no automatic-block labels).
"""


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

    p = sub.add_parser("drain", help="run every due intake now, in the foreground")
    p.add_argument("--timeout", type=float,
                   help="stop starting new attempts (and embedding) after S seconds")
    p.add_argument("--no-embed", action="store_true",
                   help="leave memories without a vector to the worker (recall finds them "
                        "lexically meanwhile)")
    p.set_defaults(func=cmd_drain)

    p = sub.add_parser("retry", help="fresh 16-attempt budget for dead/delayed intakes (C3)")
    p.add_argument("id", nargs="?", help="one 64-hex intake id (default: all dead/delayed)")
    p.add_argument("--lock-timeout", type=float, default=0.0,
                   help="seconds to wait for the writer lock (default: refuse at once)")
    p.set_defaults(func=cmd_retry)

    p = sub.add_parser("resolve", help="accept the loss of one intake: operator_resolved (C4)")
    p.add_argument("id", help="64-hex intake id")
    p.add_argument("reason", metavar="REASON-SLUG", help="e.g. provider-retired")
    p.add_argument("--lock-timeout", type=float, default=0.0,
                   help="seconds to wait for the writer lock (default: refuse at once)")
    p.set_defaults(func=cmd_resolve)

    p = sub.add_parser("rebuild", help="replay the journal into a new index generation + Markdown")
    p.add_argument("--lock-timeout", type=float, default=0.0,
                   help="seconds to wait for the writer lock (default: refuse at once)")
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("replay", help="build a new root (--root) from an exported journal")
    p.add_argument("journal", metavar="JOURNAL.jsonl")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("health", help="replay into scratch and report any drift (exit 0/1/2)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_health)

    p = sub.add_parser("search", help="hybrid recall (FTS5 + vectors), read-only (C9)")
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("--explain", action="store_true",
                   help="each hit's score parts (cosine, lexical evidence, anchors, RRF hint, "
                        "graph hop) and the cut it passed")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "calibrate", help="fit the recall calibration on your own labelled questions",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=CALIBRATE_HELP)
    p.add_argument("labelled", metavar="LABELLED.json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("journal", help="chronological memories over civil dates (I*)")
    p.add_argument("--from", dest="from_date", metavar="YYYY-MM-DD", help="first civil date")
    p.add_argument("--through", dest="through_date", metavar="YYYY-MM-DD",
                   help="last civil date (inclusive; at most 31 days)")
    p.add_argument("--tz", metavar="ZONE", help="explicit IANA zone (no default)")
    p.add_argument("--limit", type=int, help="entries per page: 1..25 (default 10)")
    p.add_argument("--cursor", help="continue a snapshot (only within the issuing process)")
    p.add_argument("--page", type=int, default=1, help="page N of the query (default 1)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_journal)

    p = sub.add_parser("demo", help="the whole Lite flow, then BuJo capture, in a temporary "
                                    "root")
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
