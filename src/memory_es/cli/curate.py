"""``memory-es curate`` (C14): the reviewed step before ``memory.recall.intentExpiry``.

``curate audit`` lists, read-only and safe beside a running agent, every live line the policy
would read differently (content shown to the operator only); ``curate decide ID DECISION``
records one reviewed decision (keep, drop, undate, retype ``--as`` a kind) through the
writer holding the root, or by opening it. Nothing changes without a decision.
"""

from __future__ import annotations

import argparse

from memory_es.cli.common import Command, config, named, open_store, print_json, root_path
from memory_es.cli.contract import OK, UsageError
from memory_es.cli.writer import ID_HELP, through_writer


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("audit", "decide"),
                   help="audit: list the lines intentExpiry reads differently; decide: "
                        "record a reviewed decision for one of them")
    p.add_argument("id", nargs="?", help=f"decide: {ID_HELP}")
    p.add_argument("decision", nargs="?",
                   help="decide: keep, drop, undate (remove its date) or retype")
    p.add_argument("--as", dest="kind", metavar="KIND",
                   help="retype: the line's kind from now on: note, task or event")
    p.add_argument("--all", dest="everything", action="store_true",
                   help="audit: list the lines already decided too")
    p.add_argument("--tz", metavar="ZONE",
                   help="audit: the host's IANA zone a date is judged in (default the "
                        "process's)")


def _check(args: argparse.Namespace) -> None:
    from memory_es.browse.inventory import check_memory_id
    from memory_es.store.curation import check_decision
    from memory_es.validity import host_time_zone

    named("--tz", lambda: host_time_zone(args.tz))
    if args.action == "audit":
        if args.id is not None or args.kind is not None:
            raise UsageError("curate audit takes no id, decision or --as")
        return
    if args.id is None or args.decision is None:
        raise UsageError("curate decide needs an id and a decision (keep, drop, undate or "
                         "retype --as KIND)")
    if args.everything or args.tz is not None:
        raise UsageError("curate decide takes no --all or --tz")
    named("id", lambda: check_memory_id(args.id))
    named("decision", lambda: check_decision(args.decision, args.kind))


def cmd_curate(args: argparse.Namespace) -> int:
    loaded = config(args)
    root = root_path(args, loaded)
    if args.action == "audit":
        from memory_es.root import MemoryRoot

        audit = MemoryRoot.open(root, loaded, time_zone=args.tz).curate_audit(
            everything=args.everything)
        if args.json:
            print_json(audit.to_json())
        else:
            print(audit.render())
        return OK
    request = {"memory_id": args.id, "decision": args.decision, "kind": args.kind}
    shown = through_writer(root, "curate", request)
    if shown is None:
        with open_store(root, loaded, background=False, create=False) as store:
            shown = store.curate(args.id, args.decision, kind=args.kind).to_json()
    print_json(shown)
    return OK


CURATE = Command(
    "curate", "the reviewed step before intentExpiry (C14): audit lists the dated and done "
    "lines it reads differently; decide records keep, drop, undate or retype for one",
    cmd_curate, _options, _check)

COMMANDS = (CURATE,)
