"""The commands that print what a root stores, through the read-only handle
(:class:`~memory_es.root.MemoryRoot`: no lock, nothing written), each with its options beside
its body: ``search`` (hybrid recall, C9), ``journal`` (MemoryJournal over civil dates, I*),
``list`` and ``show`` (the stored memories) and ``profile`` (the owner profile, M3-M7, M9).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from memory_es.bounds import describe
from memory_es.cli.common import Command, config, named, print_json, reader, root_path
from memory_es.cli.contract import OK, UsageError
from memory_es.errors import MemoryEsError, StorageError
from memory_es.text import counted
from memory_es.vocabulary import (
    JOURNAL_CURRENTNESS,
    JOURNAL_STATUSES,
    LIST_DEFAULT_LIMIT,
    LIST_MAX_LIMIT,
    LIST_STATUSES,
    REFLECT_SOON_DAYS,
)

if TYPE_CHECKING:
    from memory_es.browse.journal_request import JournalFilter

# -- search ------------------------------------------------------------------------------------


def _search_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help="what to recall (UTF-8 text)")
    p.add_argument("--limit", type=int, default=5,
                   help="hits at most, 1 to 50 (default 5: one screen for a person reading "
                        "the terminal; the API's recall and the MCP memory_recall tool "
                        "default to 10, what a model reads)")
    p.add_argument("--explain", action="store_true",
                   help="each hit's score parts (cosine, lexical evidence, anchors, RRF hint, "
                        "graph hop) and the cut it passed")
    p.add_argument("--as-of", dest="as_of", metavar="INSTANT",
                   help="answer from what the journal held at this ISO 8601 instant, which "
                        "must carry its offset (2026-05-04T09:00:00Z, 2026-05-04T11:00+02:00): "
                        "lines superseded since are current, later lines absent; before the "
                        "first event nothing, in the future the same as now")
    p.add_argument("--kind", metavar="KIND",
                   help="show only this label in the \"Preferences & lessons\" section, "
                        "below the guidance floor too (still the query's top 8; G27)")
    p.add_argument("--about", metavar="ID",
                   help="a person's entity id (or a unique prefix of at least 8): that "
                        "person's fact sheet, and no guidance section (G27, G28)")


def _search_check(args: argparse.Namespace) -> None:
    from memory_es.recall.as_of import check_as_of
    from memory_es.recall.asking import check_limit as check_recall_limit

    named("--limit", lambda: check_recall_limit(args.limit))
    if args.as_of is not None:
        named("--as-of", lambda: check_as_of(args.as_of))


def cmd_search(args: argparse.Namespace) -> int:
    from memory_es.recall.sections.result import explanation_lines

    result = reader(args).recall(args.query, args.limit, explain=args.explain,
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


SEARCH = Command("search", "hybrid recall (FTS5 + vectors), read-only (C9)", cmd_search,
                 _search_options, _search_check)


# -- journal -----------------------------------------------------------------------------------

MAX_PAGE = 1000  # a journal snapshot holds at most 1,000 entries
JOURNAL_OPTIONS = {"fromDate": "--from", "throughDate": "--through", "timeZone": "--tz"}


def _journal_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="from_date", metavar="YYYY-MM-DD",
                   help="first civil date (0001-01-02 to 9999-12-30)")
    p.add_argument("--through", dest="through_date", metavar="YYYY-MM-DD",
                   help="last civil date (inclusive; at most 31 days after --from)")
    p.add_argument("--tz", metavar="ZONE", help="explicit IANA zone, e.g. Europe/Berlin "
                                                "(no default)")
    p.add_argument("--limit", type=int, help="entries per page: 1 to 25 (default 10)")
    p.add_argument("--cursor", help="continue where an earlier page stopped: the cursor it "
                                    "printed (any process, this root only; exit 1 "
                                    "journal_cursor_stale when the range changed since)")
    p.add_argument("--page", type=int, default=1,
                   help="page N of the query, 1 to 1000 (default 1)")
    p.add_argument("--status", choices=JOURNAL_STATUSES,
                   help="only memories with this status (before the snapshot is cut)")
    p.add_argument("--type", dest="kind", metavar="KIND",
                   help="only memories of this kind: observation, note, task, event")
    p.add_argument("--session", help="only memories that came from this session")
    p.add_argument("--currentness", choices=JOURNAL_CURRENTNESS,
                   help="only memories current, ended or superseded when the snapshot is read")


def _journal_filter(args: argparse.Namespace) -> JournalFilter | None:
    from memory_es.browse.journal_request import JournalFilter

    chosen = JournalFilter(status=args.status, type=args.kind, session=args.session,
                           currentness=args.currentness)
    return chosen or None


def _journal_check(args: argparse.Namespace) -> None:
    from memory_es.browse.journal_request import check_limit as check_journal_limit

    if args.limit is not None:
        named("--limit", lambda: check_journal_limit(args.limit))
    if not 1 <= args.page <= MAX_PAGE:
        raise UsageError(f"argument --page: must be a page number from 1 to {MAX_PAGE}, "
                         f"got {describe(args.page)}")
    from memory_es.browse.journal_request import JournalFilter

    named("--type", lambda: JournalFilter(type=args.kind))
    named("--session", lambda: JournalFilter(session=args.session))
    if args.cursor is not None and _journal_filter(args) is not None:
        raise UsageError("--cursor carries its query's filter: give it without --status, "
                         "--type, --session or --currentness")


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
    root = reader(args)
    try:
        result = root.journal(request, filters=_journal_filter(args))
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


JOURNAL = Command("journal", "chronological memories over civil dates (I*)", cmd_journal,
                  _journal_options, _journal_check)


# -- list, show --------------------------------------------------------------------------------

LIST_TEXT_WIDTH = 100  # characters of text per line of ``list`` (the JSON has it whole)
LIST_ID_WIDTH = 12  # hex characters of an id in ``list``: unique far past 100k memories


def _list_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--status", choices=list(LIST_STATUSES),
                   help="only memories with this status")
    p.add_argument("--since", metavar="DATE|INSTANT",
                   help="only memories recorded at or after this ISO date (UTC midnight) or "
                        "instant (UTC unless it has an offset), e.g. 2026-12-02 or "
                        "2026-12-02T09:00+01:00")
    p.add_argument("--limit", type=int, default=LIST_DEFAULT_LIMIT,
                   help=f"memories per page, 1 to {LIST_MAX_LIMIT} (default "
                        f"{LIST_DEFAULT_LIMIT})")
    p.add_argument("--cursor", help="continue after an earlier page: the cursor it printed "
                                    "(give the same --status and --since again)")


def _list_check(args: argparse.Namespace) -> None:
    from memory_es.browse.inventory import check_cursor, check_list_limit, check_since

    named("--limit", lambda: check_list_limit(args.limit))
    named("--since", lambda: check_since(args.since))
    named("--cursor", lambda: check_cursor(args.cursor))


def cmd_list(args: argparse.Namespace) -> int:
    """Stored memories, newest first: one line per memory, or ``--json``."""
    from memory_es.browse.inventory import truncate
    from memory_es.recall.rank.render import format_instant

    page = reader(args).list_memories(status=args.status, since=args.since,
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


LIST = Command(
    "list", "the stored memories, newest first (content-bearing; read-only)", cmd_list,
    _list_options, _list_check,
    description="List stored memories, newest first (recording instant, then "
                "id): one line each (id prefix, recorded date, status, text), or "
                "with --json full ids and recall's fields. Read-only, no lock. "
                "inspect and health stay content-free; list and show are the "
                "commands that print what is stored.")


def _show_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="a 64-hex memory id, or a unique prefix of at "
                                            "least 8 hex characters (list shows 12)")


def _show_check(args: argparse.Namespace) -> None:
    from memory_es.browse.inventory import check_memory_id

    named("id", lambda: check_memory_id(args.id))


def cmd_show(args: argparse.Namespace) -> int:
    """Everything stored about one memory, as text or ``--json``."""
    from memory_es.browse.inventory import truncate
    from memory_es.recall.rank.render import format_instant

    detail = reader(args).show(args.id)
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
    for s in detail.status_history:
        why = f" ({s.reason})" if s.reason else f" (by {s.by[:LIST_ID_WIDTH]})" if s.by else ""
        print(f"history     {s.position} {s.at} {s.before or '-'} -> {s.after}{why}")
    for e in detail.events:
        print(f"event       {e.position} {e.timestamp} {e.topic}")
    return OK


SHOW = Command(
    "show", "everything stored about one memory (content-bearing; read-only)", cmd_show,
    _show_options, _show_check,
    description="Show one memory: text, type, status, currentness, labels, scope "
                "and salience (BuJo capture), entities, provenance (intake id, "
                "session, origin, tier, daily file), the supersession chain both "
                "ways, its status history (from -> to, with the reason or the "
                "replacing line) and the journal events of its aggregate (position, "
                "topic, time). Read-only, no lock.")


# -- profile -----------------------------------------------------------------------------------

DISABLED_NOTE = ("note: memory.profile.enabled is off; the automatic context does not carry "
                 "this profile")


def cmd_profile(args: argparse.Namespace) -> int:
    """The owner profile by the rule the automatic context uses (:meth:`MemoryRoot.profile`),
    or ``no profile``; with ``--json`` the entries and whether ``memory.profile.enabled`` is
    on. Shown even when the switch is off (a preview before enabling), with a one-line note
    on stderr."""
    profile = reader(args).profile()
    if args.json:
        print_json(profile.to_json())
        return OK
    print(profile.text or "no profile")
    if profile.text and not profile.enabled:
        print(DISABLED_NOTE, file=sys.stderr)
    return OK


PROFILE = Command(
    "profile", "the owner profile (content-bearing; read-only)", cmd_profile,
    description="Print the owner profile (SPEC M3-M7): whole entries of the "
                "owner's own stated facts and agent-scope preferences, current and "
                "open only (no superseded, ended, conflicting, dated or episode "
                "lines), newest day first, at most 600 code points and "
                "memory.maxBytes. The same rule as the automatic context under "
                "memory.profile.enabled (BuJo); shown even when that is off. "
                "Read-only, no lock, no model call.")


# -- reflect -----------------------------------------------------------------------------------


def _reflect_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--as-of", dest="day", metavar="YYYY-MM-DD",
                   help="the day to report (default today); a past day reads the journal as "
                        "it stood at the end of that day")
    p.add_argument("--tz", metavar="ZONE",
                   help="the host's IANA zone the days are read in (default the process's)")
    p.add_argument("--soon", type=int, default=REFLECT_SOON_DAYS, metavar="DAYS",
                   help="validity ending within this many days: 0 to 366 (default 7)")


def _reflect_check(args: argparse.Namespace) -> None:
    from memory_es.browse.reflect import check_day, check_soon
    from memory_es.validity import host_time_zone

    named("--as-of", lambda: check_day(args.day))
    named("--soon", lambda: check_soon(args.soon))
    named("--tz", lambda: host_time_zone(args.tz))


def cmd_reflect(args: argparse.Namespace) -> int:
    """The due-state report (C13): read-only, no model, safe beside a running agent."""
    from memory_es.root import MemoryRoot

    loaded = config(args)
    handle = MemoryRoot.open(root_path(args, loaded), loaded, time_zone=args.tz)
    report = handle.reflect(args.day, soon=args.soon)
    if args.json:
        print_json(report.to_json())
    else:
        print(report.render())
    return OK


REFLECT = Command(
    "reflect", "the due-state report: due today, overdue, scheduled, migrated, validity "
    "ending or ended (C13); read-only, no model", cmd_reflect, _reflect_options,
    _reflect_check)


COMMANDS = (SEARCH, JOURNAL, LIST, SHOW, PROFILE, REFLECT)
