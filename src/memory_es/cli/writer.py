"""The commands that write through the store (:class:`~memory_es.store.MemoryStore`), each
with its options beside its body.

The agent's writes: ``admit`` (the only command that starts a root), ``remember``,
``set-status``, ``mark`` and ``forget``: while a long-lived writer (a host, ``serve-mcp``)
holds the root they go through its control socket (:mod:`memory_es.control`) and print its
answer; otherwise they open the root themselves. The operator's: ``drain``, and under
``--lock-timeout`` (refused at once while an agent holds the root, the liveness fence C16)
``retry`` (C3), ``resolve`` (C4) and ``consolidate`` (L6-L9). None starts the background
worker.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_es.bounds import check_seconds
from memory_es.cli.common import (
    Command,
    add_lock_timeout,
    check_intake_arg,
    check_lock_timeout,
    config,
    named,
    open_store,
    operator_store,
    print_json,
    read_text,
    root_path,
    vectors,
)
from memory_es.cli.contract import COULD_NOT_ADMIT, COULD_NOT_RUN, OK, REFUSED, UsageError
from memory_es.text import counted

if TYPE_CHECKING:
    from memory_es.store.forgetting import ForgetReceipt

ID_HELP = "a memory id, or a unique prefix of at least 8 hex characters"


def through_writer(root: Path, op: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """The answer of the writer holding ``root`` (a host, ``serve-mcp``) through its control
    socket; None when no writer answers there, and this process opens the root itself."""
    from memory_es import control

    if not control.live(root):
        return None
    try:
        return control.call(root, op, args)
    except control.WriterGone:  # a socket left by a writer that died: nothing was sent
        return None


# -- admit -------------------------------------------------------------------------------------


def _admit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run-id", required=True, help="the host's unique id of this turn")
    p.add_argument("--answer", required=True, help="the assistant answer; '-' reads stdin")
    p.add_argument("--capture-text-file", metavar="FILE",
                   help="host-approved capture text, UTF-8 (BuJo capture mode)")
    p.add_argument("--session", help="the conversation or session id (optional)")
    p.add_argument("--speaker-kind", default="unknown",
                   choices=["human-turn", "trigger", "unknown"],
                   help="who started the turn (default: unknown)")
    p.add_argument("--trigger", default="human", choices=["human", "cron", "webhook"],
                   help="what started the turn (default: human)")
    p.add_argument("--outcome", default="success",
                   help="the turn's outcome; only success is admitted (default: success)")


def cmd_admit(args: argparse.Namespace) -> int:
    from memory_es.intake import CompletedTurn

    loaded = config(args)
    answer = read_text("-", "--answer") if args.answer == "-" else args.answer
    capture_text = (read_text(args.capture_text_file, "--capture-text-file")
                    if args.capture_text_file is not None else None)
    fields = {"run_id": args.run_id, "outcome": args.outcome, "answer": answer,
              "capture_text": capture_text, "session": args.session,
              "speaker_kind": args.speaker_kind, "trigger": args.trigger}
    root = root_path(args, loaded)
    shown = through_writer(root, "admit", fields)
    if shown is None:
        with open_store(root, loaded, background=False) as store:
            shown = store.persist_completed_turn(CompletedTurn(**fields)).to_json()
            store.project()  # leave the index at the journal head: a later refused command
            # (which opens the root too) then changes no byte under it
    print_json(shown)
    if shown["status"] != "rejected":
        return OK
    return COULD_NOT_RUN if shown["code"] in COULD_NOT_ADMIT else REFUSED


ADMIT = Command("admit", "durably admit one completed turn (exit 1 when rejected)", cmd_admit,
                _admit_options, paths=frozenset({"capture_text_file"}))


# -- remember, set-status, mark ----------------------------------------------------------------


def _remember_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", help="the fact, one self-contained sentence; '-' reads stdin")
    p.add_argument("--session", help="the conversation or session id (optional)")
    p.add_argument("--about", metavar="ID",
                   help="BuJo: the entity id (or unique prefix) of an existing person (J7)")
    p.add_argument("--supersedes", metavar="ID",
                   help="BuJo: the id of a current captured note or event, or of an enhanced "
                        "Remember line, that this fact replaces; it stays as history (J8)")
    p.add_argument("--replaceable", action="store_true",
                   help="BuJo: a later capture may supersede this line (J10)")
    for flag, what in (("--valid-from", "holds from"), ("--valid-to", "holds through"),
                       ("--due", "is due")):
        p.add_argument(flag, metavar="WHEN",
                       help=f"BuJo: when the fact {what}: an ISO date (inclusive, the host's "
                            "local day) or an instant with its offset (G13-G15)")


def cmd_remember(args: argparse.Namespace) -> int:
    from memory_es.store.remembering import RememberTerms, checked_text

    loaded = config(args)
    text = read_text("-", "text") if args.text == "-" else args.text
    # Refusals that need no root come before one is opened: bad text or options (exit 2).
    checked_text(text)
    RememberTerms.checked(about=args.about, supersedes=args.supersedes,
                          replaceable=args.replaceable, valid_from=args.valid_from,
                          valid_to=args.valid_to, due_at=args.due)
    # Only admit starts a root (C*): a mistyped --root is "no memory root here" (exit 2),
    # never a new empty root holding the one fact.
    terms = {"text": text, "session": args.session, "about": args.about,
             "supersedes": args.supersedes, "replaceable": args.replaceable,
             "valid_from": args.valid_from, "valid_to": args.valid_to, "due_at": args.due}
    root = root_path(args, loaded)
    shown = through_writer(root, "remember", terms)
    if shown is None:
        with open_store(root, loaded, background=False, create=False) as store:
            shown = store.remember(**terms).to_json()
    print_json(shown)
    return OK


REMEMBER = Command("remember", "store one explicitly stated fact now, recallable at once "
                   "(exit 1 when refused)", cmd_remember, _remember_options)


def _set_status_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help=ID_HELP)
    p.add_argument("status", help="open, done, scheduled, migrated or dropped")
    p.add_argument("--reason", metavar="SLUG", help="why, as a slug (optional)")


def cmd_set_status(args: argparse.Namespace) -> int:
    from memory_es.browse.inventory import check_memory_id
    from memory_es.store.lifecycle import check_status_change

    loaded = config(args)
    check_memory_id(args.id)  # usage errors before the root is opened
    check_status_change(args.status, args.reason)
    root = root_path(args, loaded)
    change = {"memory_id": args.id, "status": args.status, "reason": args.reason}
    shown = through_writer(root, "set_status", change)
    if shown is None:
        with open_store(root, loaded, background=False,
                        create=False) as store:  # a line can only be in an existing root
            shown = store.set_status(args.id, args.status, reason=args.reason).to_json()
    print_json(shown)
    return OK


SET_STATUS = Command("set-status", "move a stored line through its lifecycle: open, done, "
                     "scheduled, migrated or the terminal dropped (exit 1 when refused)",
                     cmd_set_status, _set_status_options)


def _mark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help=ID_HELP)
    marker = p.add_mutually_exclusive_group(required=True)
    marker.add_argument("--insight", dest="insight", action="store_true", default=None,
                        help="mark the line as an insight")
    marker.add_argument("--no-insight", dest="insight", action="store_false",
                        help="clear the marker")


def cmd_mark(args: argparse.Namespace) -> int:
    from memory_es.browse.inventory import check_memory_id

    loaded = config(args)
    check_memory_id(args.id)
    root = root_path(args, loaded)
    shown = through_writer(root, "mark", {"memory_id": args.id, "insight": args.insight})
    if shown is None:
        with open_store(root, loaded, background=False, create=False) as store:
            shown = store.mark(args.id, insight=args.insight).to_json()
    print_json(shown)
    return OK


MARK = Command("mark", "set or clear a stored line's insight marker (K14)", cmd_mark,
               _mark_options)


# -- drain, retry, resolve ---------------------------------------------------------------------


def _drain_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=float, metavar="S",
                   help="stop starting new attempts (and embedding) after S seconds, 0 to "
                        "86400 (default: no limit)")
    p.add_argument("--no-embed", action="store_true",
                   help="leave memories without a vector to the worker (recall finds them "
                        "lexically meanwhile)")


def _drain_check(args: argparse.Namespace) -> None:
    if args.timeout is not None:
        named("--timeout", lambda: check_seconds("timeout", args.timeout))


def cmd_drain(args: argparse.Namespace) -> int:
    loaded = config(args)
    with open_store(root_path(args, loaded), loaded, background=False,
                    create=False) as store:
        count = store.drain(timeout=args.timeout, embed=not args.no_embed)
        counts = store.inspect().counts
        backlog = store.vector_backlog()
    if args.json:
        print_json({"attempts": count, "counts": counts.to_json(), "vectors_pending": backlog})
        return OK
    print(f"ran {counted(count, 'attempt')}; pending={counts.pending} (due={counts.due}, "
          f"delayed={counts.delayed}) dead={counts.dead} resolved={counts.resolved}"
          + vectors(backlog))
    return OK


DRAIN = Command("drain", "run every due intake now, in the foreground", cmd_drain,
                _drain_options, _drain_check, progress=True)


def _check_intake_and_lock(args: argparse.Namespace) -> None:
    check_intake_arg(args)
    check_lock_timeout(args)


def _retry_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", help="one 64-hex intake id (default: all dead/delayed)")
    add_lock_timeout(p)


def cmd_retry(args: argparse.Namespace) -> int:
    with operator_store(args) as store:
        ids = store.retry(args.id)
    if args.json:
        print_json({"retried": ids})
    elif not ids:
        print("nothing to retry: no dead or delayed intake matched")
    for intake in [] if args.json else ids:
        print(f"retry {intake}: fresh budget of 16 attempts, due now")
    return OK


RETRY = Command("retry", "fresh 16-attempt budget for dead/delayed intakes (C3)", cmd_retry,
                _retry_options, _check_intake_and_lock)


def _resolve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="64-hex intake id")
    p.add_argument("reason", metavar="REASON-SLUG",
                   help="why, as a slug: 1-64 of a-z, 0-9 and '-' (e.g. provider-retired)")
    add_lock_timeout(p)


def cmd_resolve(args: argparse.Namespace) -> int:
    with operator_store(args) as store:
        store.resolve(args.id, args.reason)
    if args.json:
        print_json({"resolved": args.id, "reason": args.reason})
    else:
        print(f"resolved {args.id}: operator_resolved ({args.reason}); the run id stays "
              "admitted, so it can never be admitted again")
    return OK


RESOLVE = Command("resolve", "accept the loss of one intake: operator_resolved (C4)",
                  cmd_resolve, _resolve_options, _check_intake_and_lock)


# -- forget ------------------------------------------------------------------------------------

QUERY_LIMIT = 20  # what forget --query lists or erases at most


def _forget_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", help="the memory id, or a unique prefix of 8+ hex "
                   "characters (memory-es list / show)")
    p.add_argument("--run-id", metavar="RUN", help="forget this turn and what only it supports")
    p.add_argument("--query", metavar="Q", help="forget what a lexical search finds (list it "
                   "with --dry-run, erase with --yes)")
    p.add_argument("--reason", required=True, metavar="SLUG",
                   help="why, as a slug: 1-64 of a-z, 0-9 and '-' (e.g. user-request)")
    p.add_argument("--dry-run", action="store_true", help="list what would go; write nothing")
    p.add_argument("--show-text", action="store_true",
                   help="with --dry-run, list the texts too (your own stored content)")
    p.add_argument("--yes", action="store_true", help="erase what --query finds")
    add_lock_timeout(p)


def _forget_check(args: argparse.Namespace) -> None:
    from memory_es.browse.inventory import check_memory_id

    if args.id is not None:
        named("id", lambda: check_memory_id(args.id))
    check_lock_timeout(args)


def cmd_forget(args: argparse.Namespace) -> int:
    """A thin shell over :meth:`MemoryStore.forget`, :meth:`MemoryStore.forget_turn` and
    :meth:`MemoryStore.forget_matching`. One of ``ID``, ``--run-id`` or ``--query``;
    ``--dry-run`` lists what would go (a query lists texts, it is the owner's own search;
    ``--show-text`` adds them to the other listings); a query erases only with ``--yes``."""
    given = [x for x in (args.id, args.run_id, args.query) if x is not None]
    if len(given) != 1:
        raise UsageError("forget: give exactly one of ID, --run-id RUN or --query Q")
    if args.query is not None and not (args.dry_run or args.yes):
        raise UsageError("forget --query: list first with --dry-run, then erase with --yes")
    receipt = _forget_through_writer(args)
    if receipt is None:
        with operator_store(args) as store:
            if args.run_id is not None:
                receipt = store.forget_turn(args.run_id, reason=args.reason,
                                            dry_run=args.dry_run, show_text=args.show_text)
            elif args.query is not None:
                receipt = store.forget_matching(args.query, reason=args.reason,
                                                dry_run=args.dry_run, limit=QUERY_LIMIT)
            else:
                receipt = store.forget(args.id, reason=args.reason, dry_run=args.dry_run,
                                       show_text=args.show_text)
    if args.json:
        print_json(receipt.to_json())
    else:
        _print_receipt(receipt)
    clean = receipt.byte_scan is None or receipt.byte_scan.clean
    return OK if clean else REFUSED


def _forget_through_writer(args: argparse.Namespace) -> ForgetReceipt | None:
    """The forget done by the writer holding the root (its control socket), or None."""
    import msgspec

    from memory_es.store.forgetting import ForgetReceipt

    target, value = next((t, v) for t, v in (("run_id", args.run_id), ("query", args.query),
                                             ("memory_id", args.id)) if v is not None)
    shown = through_writer(root_path(args), "forget", {
        "target": target, "value": value, "reason": args.reason, "dry_run": args.dry_run,
        "show_text": args.show_text, "limit": QUERY_LIMIT})
    return None if shown is None else msgspec.convert(shown, ForgetReceipt)


def _print_receipt(receipt: ForgetReceipt) -> None:
    from memory_es.browse.inventory import truncate

    if receipt.status == "dry_run":
        print(f"would forget {counted(len(receipt.memory_ids), 'memory', 'memories')}, "
              f"{counted(len(receipt.turns), 'turn')} (kept: {len(receipt.kept)}); run again "
              "without --dry-run to erase")
        for item in receipt.listing or []:
            text = f"  {truncate(item.text, 80)}" if item.text is not None else ""
            print(f"{item.kind:<9} {item.id}{text}")
        return
    if receipt.status == "already_forgotten":
        print("already forgotten: nothing to do")
        return
    scan = receipt.byte_scan
    print(f"forgot {counted(len(receipt.memory_ids), 'memory', 'memories')} and "
          f"{counted(len(receipt.turns), 'turn')} ({receipt.reason}); "
          f"{counted(receipt.keys_destroyed, 'key')} destroyed, "
          f"{counted(len(receipt.files_rewritten), 'file')} rewritten")
    if scan is not None:
        verdict = "clean" if scan.clean else "FOUND in " + ", ".join(scan.found_in)
        print(f"byte scan of {counted(scan.files, 'file')}: {verdict}")
    for kept in receipt.retained:
        print(f"not reached: {kept.where} (until {kept.until})")
    for memory_id in receipt.kept:
        print(f"kept      {memory_id} (another turn supports it)")


FORGET = Command("forget", "erase a memory, a turn's memories (--run-id) or a search's "
                 "(--query) everywhere, journal included (crypto-shredding); prints a "
                 "content-free receipt (exit 1 when the id is unknown)", cmd_forget,
                 _forget_options, _forget_check)


# -- consolidate -------------------------------------------------------------------------------


def cmd_consolidate(args: argparse.Namespace) -> int:
    """L6-L9: refresh index.md now; prints counts only (N12)."""
    loaded = config(args)
    with open_store(root_path(args, loaded), loaded, background=False, create=False,
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


CONSOLIDATE = Command("consolidate", "refresh the living index.md now (BuJo; no model call)",
                      cmd_consolidate, add_lock_timeout)

COMMANDS = (ADMIT, REMEMBER, SET_STATUS, MARK, DRAIN, RETRY, RESOLVE, FORGET, CONSOLIDATE)
