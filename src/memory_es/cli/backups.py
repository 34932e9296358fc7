"""``backup``, ``import`` and ``adopt-replay``: memory in and out (C5-C8, C16).

``backup`` reads (safe beside a running agent); ``import restore`` builds a new root and
refuses a used one. Both are thin shells over :mod:`memory_es.backup.archive`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memory_es.cli.common import (
    Command,
    add_lock_timeout,
    check_lock_timeout,
    config,
    print_json,
    root_path,
)
from memory_es.cli.contract import OK, UsageError
from memory_es.text import counted
from memory_es.vocabulary import IMPORT_FORMATS

if TYPE_CHECKING:
    from memory_es.backup.fileformat import Secret

SECRET_HELP = ("FILE must be yours with mode 0600; a passphrase is its first line (at least 8 "
               "characters), a key file at least 32 bytes (head -c 32 /dev/urandom > FILE)")


def _secret_options(p: argparse.ArgumentParser, *, writing: bool) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--passphrase-file", metavar="FILE",
                       help="encrypt under the passphrase in FILE (scrypt, AES-256-GCM)"
                       if writing else "the passphrase the backup was encrypted under")
    group.add_argument("--key-file", metavar="FILE",
                       help="encrypt under the key in FILE (HKDF-SHA256, AES-256-GCM)"
                       if writing else "the key file the backup was encrypted under")
    if writing:
        group.add_argument("--unencrypted", action="store_true",
                           help="write the backup in the clear (it holds every memory and "
                                "the keys that open them: only its 0600 mode protects it)")


def _secret(args: argparse.Namespace) -> Secret | None:
    """The secret the options name; None: none given (a restore of an unencrypted backup)."""
    from memory_es.backup.fileformat import NONE, Secret

    if args.passphrase_file is not None:
        return Secret.from_file("passphrase", args.passphrase_file)
    if args.key_file is not None:
        return Secret.from_file("key-file", args.key_file)
    return NONE if getattr(args, "unencrypted", False) else None


def _backup_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("dest", metavar="DEST", nargs="?",
                   help="the new backup file (never replaced; not inside the root)")
    p.add_argument("--list", action="store_true",
                   help="write nothing: list the backups the key store's ledger records for "
                        "this root (id, time, position, state, path)")
    _secret_options(p, writing=True)


def _backup_check(args: argparse.Namespace) -> None:
    chosen = args.passphrase_file is not None or args.key_file is not None or args.unencrypted
    if args.list:
        if args.dest is not None or chosen:
            raise UsageError("backup --list takes no DEST and no protection option")
    elif args.dest is None:
        raise UsageError("backup needs DEST (or --list)")
    elif not chosen:
        raise UsageError("backup needs one of --passphrase-file FILE, --key-file FILE or "
                         "--unencrypted")


def _list(args: argparse.Namespace) -> int:
    from memory_es.backup.archive import backups_of

    loaded = config(args)
    root_id, entries = backups_of(root_path(args, loaded), config=loaded)
    if args.json:
        print_json({"root_id": root_id, "backups": entries})
    elif not entries:
        print(f"no backups recorded for root {root_id}")
    for e in entries if not args.json else ():
        print(f"{e['backup_id']}  {e.get('created_at')}  position {e.get('position')}  "
              f"{e['state']}  {e.get('path') or '-'}")
    return OK


def cmd_backup(args: argparse.Namespace) -> int:
    from memory_es.backup.archive import take_backup

    if args.list:
        return _list(args)
    loaded = config(args)
    secret = _secret(args)
    assert secret is not None  # _backup_check requires one of the three
    report = take_backup(root_path(args, loaded), args.dest, secret, config=loaded)
    if args.json:
        print_json({"backup_id": report.backup_id, "path": report.path,
                    "root_id": report.root_id, "position": report.position,
                    "record_keys": report.record_keys, "protection": report.protection,
                    "bytes": report.bytes})
    else:
        print(f"backup {report.backup_id}: {counted(report.position, 'event')} and "
              f"{counted(report.record_keys, 'record key')} of root {report.root_id} in "
              f"{report.path} ({report.protection})")
    return OK


BACKUP = Command("backup", "write the journal and its keys to one owner-only file (C5)",
                 cmd_backup, _backup_options, _backup_check, paths=frozenset({"dest"}))


def _import_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("restore", "apply"),
                   help="restore: a backup written by memory-es backup into --root, a new "
                        "or empty directory; apply: another tool's memories into --root "
                        "(a dry run unless --yes)")
    p.add_argument("source", metavar="SRC",
                   help="the backup file (restore) or the source file or folder (apply)")
    p.add_argument("--from", dest="fmt", choices=IMPORT_FORMATS, metavar="FORMAT",
                   help=f"apply: the source's format, one of {', '.join(IMPORT_FORMATS)}")
    p.add_argument("--yes", action="store_true",
                   help="apply: write (without it, print what would be written and refused)")
    add_lock_timeout(p)
    _secret_options(p, writing=False)


def _import_check(args: argparse.Namespace) -> None:
    check_lock_timeout(args)
    if args.action == "apply":
        if args.fmt is None:
            raise UsageError("import apply needs --from FORMAT")
        if args.passphrase_file is not None or args.key_file is not None:
            raise UsageError("import apply takes no --passphrase-file or --key-file")
    elif args.fmt is not None or args.yes:
        raise UsageError("import restore takes no --from or --yes")


def cmd_import(args: argparse.Namespace) -> int:
    if args.action == "apply":
        return _apply(args)
    from memory_es.backup.restore import restore_backup

    if args.root is None:
        raise UsageError("import restore needs --root NEW (a new or empty directory)")
    report = restore_backup(args.source, args.root, _secret(args), config=config(args))
    if args.json:
        print_json({"backup_id": report.backup_id, "root_id": report.root_id,
                    "position": report.position, "record_keys": report.record_keys,
                    "journal": report.journal, "generation": report.generation,
                    "vectors_pending": report.vectors_pending, "resumed": report.resumed})
    else:
        print(f"restored backup {report.backup_id} into {args.root}: "
              f"{counted(report.position, 'event')}, "
              f"{counted(report.record_keys, 'record key')}, root {report.root_id} on "
              f"{report.journal}; activated index gen-{report.generation}"
              + ("; resumed a restore that was cut short" if report.resumed else ""))
    return OK


def _apply(args: argparse.Namespace) -> int:
    from memory_es.imports import apply_import, plan_import
    from memory_es.imports.apply import PART

    loaded = config(args)
    root = root_path(args, loaded)
    if args.yes:
        report = apply_import(root, args.source, args.fmt, config=loaded,
                              lock_timeout=args.lock_timeout)
    else:
        report = plan_import(root, args.source, args.fmt, config=loaded)
    if args.json:
        print_json(report.to_json())
        return OK
    verb = "imported" if report.applied else "would import"
    print(f"{verb} {counted(len(report.new), 'new item')} from {report.fmt} source "
          f"{report.source_sha256[:16]}; {report.already} already here; "
          f"{len(report.refused)} refused")
    for sample in report.samples:
        print(f"  + {sample['at']}  {sample['id']}: {sample['text']}")
    for refusal in report.refused:
        print(f"  refused {refusal.original_id}: {refusal.reason}")
    if report.receipts:
        ids = report.receipts
        print((f"receipt {ids[0][:16]}" if len(ids) == 1 else
               f"{len(ids)} receipts ({PART} items each at most), first {ids[0][:16]}")
              + (f"; {report.waiting_for_capture} turns wait for capture (memory-es drain, "
                 "or the agent's worker)" if report.waiting_for_capture else ""))
    if not report.applied and report.new:
        print("dry run: nothing written; add --yes to import")
    return OK


def cmd_adopt_replay(args: argparse.Namespace) -> int:
    from memory_es.imports.adopt import adopt_replay

    report = adopt_replay(args.source)
    if args.json:
        print_json(report.to_json())
    else:
        print(f"adopted {counted(report.lifecycle, 'lifecycle entry', 'lifecycle entries')} "
              f"and {counted(report.threads, 'thread')} from {report.source} into "
              f"{report.folder}/.replay-projection-v1.json (sha256 "
              f"{report.sidecar_sha256[:16]}); attested {report.pending_intents} pending "
              f"capture intents, {report.receipts} receipts, "
              f"{'a' if report.migration_marker else 'no'} migration marker; next: "
              f"memory-es --root NEW import apply {report.folder} --from reference --yes")
    return OK


def _adopt_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="SRC",
                   help="a reference host's memory folder whose SQLite holds replay state "
                        "but which has no sidecar; its agent stopped")


ADOPT_REPLAY = Command(
    "adopt-replay", "adopt a legacy folder's replay state from its SQLite as its sidecar, "
    "metadata only, before importing it (C7, F11-F14)", cmd_adopt_replay, _adopt_options,
    paths=frozenset({"source"}))


IMPORT = Command("import", "restore a backup into a new root, or bring another tool's "
                 "memories in (C6, C16)", cmd_import, _import_options, _import_check,
                 paths=frozenset({"source"}), progress=True)

COMMANDS = (BACKUP, IMPORT, ADOPT_REPLAY)
