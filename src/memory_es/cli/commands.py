"""The ``memory-es`` commands: each one library call, its output, and its exit code (SPEC C).

Arguments arrive checked (:mod:`memory_es.cli.checks`); failures raise and are mapped to the
exit-code contract in :mod:`memory_es.cli.contract`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_es.browse.inventory import check_memory_id, truncate
from memory_es.cli.contract import COULD_NOT_ADMIT, COULD_NOT_RUN, OK, REFUSED, UsageError
from memory_es.config import MemoryConfig, load_config, validate_file
from memory_es.errors import MemoryEsError, StorageError
from memory_es.intake import CompletedTurn, iso_ms_or_none
from memory_es.journal import Anchor, parse_anchor
from memory_es.journal.anchor import MAX_ANCHOR_BYTES
from memory_es.recall.rank.render import format_instant
from memory_es.recall.sections.result import explanation_lines
from memory_es.root import MemoryRoot
from memory_es.rootconfig import resolve_root
from memory_es.text import counted

if TYPE_CHECKING:
    from memory_es.store import MemoryStore

Command = Callable[[argparse.Namespace], int]
JOURNAL_OPTIONS = {"fromDate": "--from", "throughDate": "--through", "timeZone": "--tz"}


def print_json(obj: Any) -> None:
    print(json.dumps(obj, sort_keys=True, ensure_ascii=False))


def open_store(root: Path, config: MemoryConfig | None, **options: Any) -> MemoryStore:
    """``MemoryStore.open``, the writer imported on first use: a reading command never
    imports the capture pipeline, the worker or the journal writer."""
    from memory_es.store import MemoryStore

    return MemoryStore.open(root, config, **options)


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


def _vectors(backlog: int | None) -> str:
    """The vector backlog as the operator commands print it; nothing for a root that never
    embeds (Lite, no provider)."""
    return "" if backlog is None else f"; vectors_pending={backlog}"


def cmd_validate(args: argparse.Namespace) -> int:
    errors = validate_file(args.config) if args.config is not None else []
    if args.json:
        print_json({"valid": not errors, "errors": errors})
    elif args.config is None:
        print("OK (no config file: all defaults)")
    else:
        print("\n".join(errors) if errors else "OK")
    return REFUSED if errors else OK


def _read_text(path: str, option: str) -> str:
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


def cmd_admit(args: argparse.Namespace) -> int:
    config = _config(args)
    answer = _read_text("-", "--answer") if args.answer == "-" else args.answer
    capture_text = (_read_text(args.capture_text_file, "--capture-text-file")
                    if args.capture_text_file is not None else None)
    turn = CompletedTurn(
        run_id=args.run_id, outcome=args.outcome, answer=answer, capture_text=capture_text,
        session=args.session, speaker_kind=args.speaker_kind, trigger=args.trigger,
    )
    with open_store(_root(args, config), config, background=False) as store:
        result = store.persist_completed_turn(turn)
        store.project()  # leave the index at the journal head: a later refused command
        # (which opens the root too) then changes no byte under it
    print_json(result.to_json())
    if result.ok:
        return OK
    return COULD_NOT_RUN if result.code in COULD_NOT_ADMIT else REFUSED


def cmd_remember(args: argparse.Namespace) -> int:
    from memory_es.store.remembering import RememberTerms, checked_text

    config = _config(args)
    text = _read_text("-", "text") if args.text == "-" else args.text
    # Refusals that need no root come before one is opened: bad text or options (exit 2).
    checked_text(text)
    RememberTerms.checked(about=args.about, supersedes=args.supersedes,
                          replaceable=args.replaceable, valid_from=args.valid_from,
                          valid_to=args.valid_to, due_at=args.due)
    # Only admit starts a root (C*): a mistyped --root is "no memory root here" (exit 2),
    # never a new empty root holding the one fact.
    with open_store(_root(args, config), config, background=False, create=False) as store:
        result = store.remember(text, session=args.session, about=args.about,
                                supersedes=args.supersedes, replaceable=args.replaceable,
                                valid_from=args.valid_from, valid_to=args.valid_to,
                                due_at=args.due)
    print_json(result.to_json())
    return OK


def cmd_set_status(args: argparse.Namespace) -> int:
    from memory_es.store.lifecycle import check_status_change

    config = _config(args)
    check_memory_id(args.id)  # usage errors before the root is opened
    check_status_change(args.status, args.reason)
    with open_store(_root(args, config), config, background=False,
                   create=False) as store:  # a line can only be in an existing root
        result = store.set_status(args.id, args.status, reason=args.reason)
    print_json(result.to_json())
    return OK


def cmd_mark(args: argparse.Namespace) -> int:
    config = _config(args)
    check_memory_id(args.id)
    with open_store(_root(args, config), config, background=False,
                   create=False) as store:
        result = store.mark(args.id, insight=args.insight)
    print_json(result.to_json())
    return OK


def cmd_inspect(args: argparse.Namespace) -> int:
    report = _reader(args).inspect(args.id)
    if args.id is not None and not report.records:
        raise UsageError(f"argument id: no intake with id {args.id}", code="not_found")
    if args.json:
        print_json(report.to_json() if args.id is None else report.records[0].to_json())
        return OK
    counts = report.counts.to_json()
    print(" ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    print(f"worker={report.worker}" + _vectors(report.vectors_pending).replace(";", ""))
    for r in report.records:
        if r.state == "pending":
            detail = f"{'due' if r.due else 'delayed':<7} next={iso_ms_or_none(r.next_due_at)}"
        elif r.state == "dead":
            detail = f"category={r.category}"
        else:
            detail = f"outcome={r.outcome}"
        if r.retained and r.state != "resolved":
            detail += f" retained={r.retained}"  # a capture resumes after this stage
        print(f"{r.id}  {r.state:<8} attempts={r.attempts} "
              f"admitted={iso_ms_or_none(r.admitted_at)} {detail}")
    return OK


def cmd_export(args: argparse.Namespace) -> int:
    root = _reader(args)
    if args.journal == "-":
        count = root.export(sys.stdout.buffer)
        sys.stdout.flush()
        print(f"exported {counted(count, 'event')}", file=sys.stderr)
        return OK
    try:
        count = root.export_to(args.journal)
    except OSError as e:
        raise OSError(e.errno, f"argument --journal: cannot write {args.journal}: "
                               f"{e.strerror or e}") from e
    if args.json:
        print_json({"exported": count, "journal": args.journal})
    else:
        print(f"exported {counted(count, 'event')}", file=sys.stderr)
    return OK


def cmd_drain(args: argparse.Namespace) -> int:
    config = _config(args)
    with open_store(_root(args, config), config, background=False,
                   create=False) as store:
        count = store.drain(timeout=args.timeout, embed=not args.no_embed)
        counts = store.inspect().counts
        backlog = store.vector_backlog()
    if args.json:
        print_json({"attempts": count, "counts": counts.to_json(), "vectors_pending": backlog})
        return OK
    print(f"ran {counted(count, 'attempt')}; pending={counts.pending} (due={counts.due}, "
          f"delayed={counts.delayed}) dead={counts.dead} resolved={counts.resolved}"
          + _vectors(backlog))
    return OK


def _operator_store(args: argparse.Namespace) -> MemoryStore:
    """A store for a mutating operator command: refuses at once while an agent holds the
    root (the liveness fence, C16), and never starts the background worker."""
    config = _config(args)
    return open_store(_root(args, config), config, background=False,
                     lock_timeout=args.lock_timeout, create=False)


def cmd_retry(args: argparse.Namespace) -> int:
    with _operator_store(args) as store:
        ids = store.retry(args.id)
    if args.json:
        print_json({"retried": ids})
    elif not ids:
        print("nothing to retry: no dead or delayed intake matched")
    for intake in [] if args.json else ids:
        print(f"retry {intake}: fresh budget of 16 attempts, due now")
    return OK


def cmd_resolve(args: argparse.Namespace) -> int:
    with _operator_store(args) as store:
        store.resolve(args.id, args.reason)
    if args.json:
        print_json({"resolved": args.id, "reason": args.reason})
    else:
        print(f"resolved {args.id}: operator_resolved ({args.reason}); the run id stays "
              "admitted, so it can never be admitted again")
    return OK


def cmd_rebuild(args: argparse.Namespace) -> int:
    from memory_es.transfer import rebuild_root

    config = _config(args)
    report = rebuild_root(_root(args, config), config, lock_timeout=args.lock_timeout)
    if args.json:
        print_json({"generation": report.generation, "position": report.position,
                    "written": len(report.written), "removed": len(report.removed),
                    "vectors_pending": report.vectors_pending})
        return OK
    print(f"activated index gen-{report.generation} at position {report.position}; "
          f"rewrote {counted(len(report.written), 'file')}, removed {len(report.removed)}"
          + _vectors(report.vectors_pending))
    return OK


def cmd_migrate_journal(args: argparse.Namespace) -> int:
    """A thin shell over :func:`memory_es.journal.migrate.migrate_journal`."""
    from memory_es.journal.backend import DEFAULT_PG_SCHEMA, PostgresJournal, journal_target
    from memory_es.journal.migrate import migrate_journal

    if not 1 <= args.batch <= 100_000:
        raise UsageError(f"argument --batch: {args.batch} is not 1 to 100000")
    given = read_dsn_file(args.dsn_file) if args.dsn_file is not None else args.dsn
    if args.dsn is not None and dsn_has_password(args.dsn):
        print("memory-es: warning: --dsn carries a password, which any user can read in ps "
              "while the migration runs; pass it in $MEMORY_ES_PG_DSN, an owner-only "
              "--dsn-file, or ~/.pgpass instead", file=sys.stderr)
    config = _config(args)
    block = config.journal if config is not None else None
    schema = args.schema or (block.pg_schema if block is not None else DEFAULT_PG_SCHEMA)
    dsn = given or (block.dsn.get_secret_value() if block is not None and block.dsn else None)
    target = (PostgresJournal(dsn, schema) if dsn else
              journal_target("postgres", None, schema) if args.to == "postgres" else
              PostgresJournal.from_env(schema))
    report = migrate_journal(_root(args, config), args.to, target, batch=args.batch,
                             lock_timeout=args.lock_timeout)
    if args.json:
        print_json({"to": report.to, "already": report.already, "position": report.position,
                    "copied": report.copied, "resumed_from": report.resumed_from,
                    "payloads": report.payloads, "record_keys": report.record_keys,
                    "location": report.location})
    elif report.already:
        print(f"the journal is already on {report.to} ({report.location}); nothing copied")
    else:
        print(f"copied {counted(report.copied, 'event')} (from position "
              f"{report.resumed_from}), {counted(report.payloads, 'payload')} and "
              f"{counted(report.record_keys, 'record key')} to "
              f"{report.location}; the journal is on {report.to} at position {report.position}")
    return OK


def read_dsn_file(path: str) -> str:
    """The DSN on the first line of ``path``, an owner-only file (the rule of a config file
    holding ``journal.dsn``): group or other access, or another owner, is a usage error
    naming the file, never its content."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"argument --dsn-file: cannot read {path}: {e.strerror or e}") from e
    try:
        st = os.fstat(fd)
        problems = ([f"mode {st.st_mode & 0o7777:04o}"] if st.st_mode & 0o077 else []) + \
            ([f"owned by uid {st.st_uid}"] if st.st_uid != os.geteuid() else [])
        if problems:
            raise UsageError(f"argument --dsn-file: {path} must be owner-only (mode 0600, owned "
                             f"by you; this one is {' and '.join(problems)}): chmod 600 it",
                             code="dsn_file_unsafe")
        data = os.read(fd, 64 * 1024)
    finally:
        os.close(fd)
    try:
        lines = data.decode("utf-8").strip().splitlines()
    except UnicodeDecodeError as e:
        raise UsageError(f"argument --dsn-file: {path} is not UTF-8 text") from e
    if not lines or not lines[0].strip():
        raise UsageError(f"argument --dsn-file: {path} holds no DSN")
    return lines[0].strip()


def dsn_has_password(dsn: str) -> bool:
    """Does ``dsn`` carry a non-empty password (``password=`` or ``user:pw@`` in a URI)?"""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        return bool(conninfo_to_dict(dsn).get("password"))
    except ProgrammingError:
        return ":" in dsn.split("@", 1)[0].split("//", 1)[-1] if "@" in dsn else False


def cmd_consolidate(args: argparse.Namespace) -> int:
    """L6-L9: refresh index.md now; prints counts only (N12)."""
    config = _config(args)
    with open_store(_root(args, config), config, background=False, create=False,
                   lock_timeout=args.lock_timeout) as store:
        summary = store.consolidate()
    if args.json:
        print_json(summary.to_json())
        return OK
    if summary.tier != "bujo":
        print(f"nothing to consolidate: a {summary.tier} root keeps no index.md (only BuJo "
              "has the living index)" + ("; removed a stray index.md" if summary.changed
                                          else ""))
        return OK
    print(f"scanned {counted(summary.entities_scanned, 'entity row')}"
          + ("" if summary.scan_complete else " (ceiling reached)")
          + f"; rendered {summary.groups_rendered} of {counted(summary.groups, 'group')}; "
          f"duplicate_groups={summary.duplicate_groups}; "
          f"index.md {'rewritten' if summary.changed else 'unchanged'}")
    return OK


def cmd_rewrite_journal(args: argparse.Namespace) -> int:
    """A thin shell over :func:`memory_es.rewrite.rewrite_journal`."""
    from memory_es.rewrite import rewrite_journal

    config = _config(args)
    report = rewrite_journal(_root(args, config), config)
    if args.json:
        print_json({"already": report.already, "position": report.position,
                    "memories": report.memories, "entities": report.entities,
                    "digests": report.digests, "root_id": report.root_id})
    elif report.already:
        print("no id or digest in this journal hashes content; nothing rewritten")
    else:
        print(f"rewrote {counted(report.memories, 'memory', 'memories')}, "
              f"{counted(report.entities, 'entity', 'entities')} and "
              f"{counted(report.digests, 'payload digest')} at position {report.position}; "
              f"verified; new root id {report.root_id} (anchors made before no longer apply)")
    return OK


def cmd_replay(args: argparse.Namespace) -> int:
    from memory_es.transfer import replay_export

    if args.root is None:
        raise UsageError("replay needs --root NEW (a new or empty directory)")
    report = replay_export(args.journal, args.root, _config(args))
    if args.json:
        print_json({"position": report.position, "written": len(report.written),
                    "vectors_pending": report.vectors_pending})
        return OK
    print(f"replayed {counted(report.position, 'event')} into {args.root}; "
          f"wrote {counted(len(report.written), 'file')}" + _vectors(report.vectors_pending))
    return OK


def _read_anchor(path: str) -> Anchor:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, MAX_ANCHOR_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as e:
        raise UsageError(f"argument --expect-anchor: cannot read {path}: {e.strerror or e}",
                         code="anchor_invalid") from e
    try:
        return parse_anchor(data)
    except MemoryEsError as e:
        raise UsageError(f"argument --expect-anchor: {path}: {e}", code=e.code) from e


def cmd_anchor(args: argparse.Namespace) -> int:
    print(_reader(args).anchor().line())  # the same one JSON line with or without --json
    return OK


def cmd_health(args: argparse.Namespace) -> int:
    anchor = _read_anchor(args.expect_anchor) if args.expect_anchor is not None else None
    report = _reader(args).health(expect_anchor=anchor, deep=args.deep)
    if report.status == "cannot_audit":  # no root there (exit 2), or unreadable (exit 3)
        code = report.findings[0].code if report.findings else "not_a_root"
        if code == "not_a_root":
            message = f"not_a_root: {_root(args)}: no memory root here; check --root"
        else:
            f = report.findings[0]
            message = f"{code}: {f.path}: {f.detail}"
        if args.json:
            print_json(report.to_json() | {"error": {"code": code, "message": message}})
        else:
            print(f"memory-es: error: {message}", file=sys.stderr)
        return report.exit_code
    if args.json:
        print_json(report.to_json())
    else:
        print(f"{report.status}: journal at {report.journal_position}, projections at "
              f"{report.projection_position}, {counted(len(report.findings), 'finding')}; "
              f"worker={report.worker}" + _vectors(report.vectors_pending))
        for f in sorted(report.findings):
            print(f"{f.code}  {f.path}  {f.detail}")
    return report.exit_code


def cmd_search(args: argparse.Namespace) -> int:
    result = _reader(args).recall(args.query, args.limit, explain=args.explain,
                                  as_of=args.as_of, kind=args.kind, about=args.about)
    if args.json:
        print_json(result.to_json())
        return OK
    print("no matching memory" if result.empty else result.text)
    if result.as_of is not None:
        print(f"(as of {result.as_of}: journal position {result.position})", file=sys.stderr)
    if result.degraded:
        print(f"(degraded: {result.reason}" + (
            f", {counted(result.vectors_pending, 'memory', 'memories')} without a vector"
            if result.vectors_pending else "") + ")", file=sys.stderr)
    if args.explain:
        print("\n" + "\n".join(explanation_lines(result)))
    return OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from memory_es.calibration.report import render_text

    report = _reader(args).calibrate(args.labelled)
    if args.json:
        print_json(report.to_json())
    else:
        print(render_text(report))
    return OK


def cmd_journal(args: argparse.Namespace) -> int:
    """MemoryJournal over the active index generation, read-only (I*).

    A cursor carries its query and is signed with the root's cursor key, so ``--cursor`` takes
    one printed by any earlier ``memory-es journal`` (or the API) on this root: it fails
    ``journal_cursor_stale`` (exit 1) when the range's memories changed since the first page,
    ``journal_cursor_invalid`` (exit 2) when altered or from another root. ``--page N`` re-runs
    the query and follows the cursors within this process.
    """
    request: dict[str, Any] = {}
    if args.cursor is not None:
        if args.page != 1:
            raise UsageError("--page and --cursor cannot be combined")
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
                raise UsageError(f"argument --page: page {args.page} is past the end: the "
                                 f"range has {page - 1} page(s)")
            result = root.journal({"cursor": result.cursor})
    except MemoryEsError as e:
        if not e.code.startswith("journal_") or isinstance(e, StorageError):
            raise  # journal_corrupt is the journal.db file, not the MemoryJournal tool
        message = str(e)
        for field, option in JOURNAL_OPTIONS.items():  # name the CLI's own options
            message = message.replace(field, option)
        raise MemoryEsError(f"{e.code}: {message}", code=e.code) from e
    if args.json:
        print_json(result.to_json())
        return OK
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
        more = "" if args.cursor is not None else f" (or --page {args.page + 1})"
        print(f"more: --cursor {result.cursor}{more}", file=sys.stderr)
    return OK


LIST_TEXT_WIDTH = 100  # characters of text per line of ``list`` (the JSON has it whole)
LIST_ID_WIDTH = 12  # hex characters of an id in ``list``: unique far past 100k memories


def cmd_list(args: argparse.Namespace) -> int:
    """Stored memories, newest first: one line per memory, or ``--json``."""
    page = _reader(args).list_memories(status=args.status, since=args.since,
                                       limit=args.limit, cursor=args.cursor)
    if args.json:
        print_json(page.to_json())
        return OK
    if not page.memories:
        print("no memories" + (" match" if args.status or args.since or args.cursor else ""))
    for m in page.memories:
        print(f"{m.id[:LIST_ID_WIDTH]}  {format_instant(m.created_at)[:10]}  "
              f"{m.status:<11}  {truncate(m.text, LIST_TEXT_WIDTH)}")
    if page.cursor is not None:
        again = "".join(f" {option} {value}" for option, value in (
            ("--status", args.status), ("--since", args.since)) if value is not None)
        print(f"more:{again} --cursor {page.cursor}", file=sys.stderr)
    return OK


def cmd_show(args: argparse.Namespace) -> int:
    """Everything stored about one memory, as text or ``--json``."""
    detail = _reader(args).show(args.id)
    if args.json:
        print_json(detail.to_json())
        return OK
    m = detail.memory
    print(m.text)
    print(f"id          {m.id}")
    print(f"type        {m.type}")
    print(f"status      {m.status} ({m.currentness})")
    print(f"recorded    {format_instant(m.created_at)}")
    if detail.labels is not None:
        print(f"labels      {', '.join(detail.labels) or '-'}")
        print(f"scope       {detail.scope}")
        print(f"salience    {detail.salience}")
    for entity_id, name, kind in detail.entities:
        print(f"entity      {name} ({kind}) {entity_id[:LIST_ID_WIDTH]}")
    print(f"intake      {m.source.intake_id or '-'}")
    print(f"session     {m.source.session or '-'}"
          + (f" ({m.attribution})" if m.attribution else ""))
    print(f"origin      {detail.origin}, tier {detail.tier}, daily/{detail.day}.md")
    for label, links in (("supersedes", detail.supersedes),
                         ("superseded by", detail.superseded_by)):
        for link in links:
            print(f"{label:<11} {link.id[:LIST_ID_WIDTH]} {link.status} {link.at}  "
                  f"{truncate(link.text, LIST_TEXT_WIDTH)}")
    for e in detail.events:
        print(f"event       {e.position} {e.timestamp} {e.topic}")
    return OK


COMMANDS: dict[str, Command] = {
    "validate": cmd_validate, "admit": cmd_admit, "remember": cmd_remember, "inspect": cmd_inspect,
    "export": cmd_export, "drain": cmd_drain, "retry": cmd_retry, "resolve": cmd_resolve,
    "rebuild": cmd_rebuild, "replay": cmd_replay, "health": cmd_health, "anchor": cmd_anchor,
    "search": cmd_search, "calibrate": cmd_calibrate, "journal": cmd_journal,
    "list": cmd_list, "show": cmd_show, "set_status": cmd_set_status,
    "mark": cmd_mark, "consolidate": cmd_consolidate, "migrate_journal": cmd_migrate_journal,
    "rewrite_journal": cmd_rewrite_journal,
}
