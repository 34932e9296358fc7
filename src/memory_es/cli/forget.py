"""``memory-es forget``: a thin shell over :meth:`MemoryStore.forget` and
:meth:`MemoryStore.forget_turn`. One of ``ID``, ``--run-id`` or
``--query``; ``--dry-run`` lists what would go (a query lists texts, it is the owner's own
search; ``--show-text`` adds them to the other listings); a query erases only with ``--yes``.
"""

from __future__ import annotations

import argparse

from memory_es.browse.inventory import truncate
from memory_es.cli.commands import _operator_store, print_json
from memory_es.cli.contract import OK, REFUSED, UsageError
from memory_es.store.forgetting import ForgetReceipt
from memory_es.text import counted

QUERY_LIMIT = 20


def cmd_forget(args: argparse.Namespace) -> int:
    given = [x for x in (args.id, args.run_id, args.query) if x is not None]
    if len(given) != 1:
        raise UsageError("forget: give exactly one of ID, --run-id RUN or --query Q")
    if args.query is not None and not (args.dry_run or args.yes):
        raise UsageError("forget --query: list first with --dry-run, then erase with --yes")
    with _operator_store(args) as store:
        if args.run_id is not None:
            receipt = store.forget_turn(args.run_id, reason=args.reason, dry_run=args.dry_run,
                                        show_text=args.show_text)
        elif args.query is not None:
            receipt = store.forget_matching(args.query, reason=args.reason,
                                            dry_run=args.dry_run, limit=QUERY_LIMIT)
        else:
            receipt = store.forget(args.id, reason=args.reason, dry_run=args.dry_run,
                                   show_text=args.show_text)
    if args.json:
        print_json(receipt.to_json())
    else:
        _print(receipt)
    clean = receipt.byte_scan is None or receipt.byte_scan.clean
    return OK if clean else REFUSED


def _print(receipt: ForgetReceipt) -> None:
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
