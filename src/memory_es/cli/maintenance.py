"""The maintenance commands: each hands a root path to one library function that takes the
root's writer lock itself (refusing a running agent, C15) or builds a new root, with its
options beside its body: ``rebuild`` (a new index generation and Markdown from the journal),
``replay`` (a new root from an export), ``migrate-journal`` (the journal to PostgreSQL or back)
and ``rewrite-journal`` (content-derived ids rewritten, verified, in place).
"""

from __future__ import annotations

import argparse
import os
import sys

from memory_es.cli.common import (
    Command,
    add_lock_timeout,
    check_lock_timeout,
    config,
    print_json,
    root_path,
    vectors,
)
from memory_es.cli.contract import OK, UsageError
from memory_es.text import counted

# -- rebuild, replay ---------------------------------------------------------------------------


def cmd_rebuild(args: argparse.Namespace) -> int:
    from memory_es.transfer import rebuild_root

    loaded = config(args)
    report = rebuild_root(root_path(args, loaded), loaded, lock_timeout=args.lock_timeout)
    if args.json:
        print_json({"generation": report.generation, "position": report.position,
                    "written": len(report.written), "removed": len(report.removed),
                    "vectors_pending": report.vectors_pending})
        return OK
    print(f"activated index gen-{report.generation} at position {report.position}; "
          f"rewrote {counted(len(report.written), 'file')}, removed {len(report.removed)}"
          + vectors(report.vectors_pending))
    return OK


REBUILD = Command("rebuild", "replay the journal into a new index generation + Markdown",
                  cmd_rebuild, add_lock_timeout, check_lock_timeout, progress=True)


def _replay_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("journal", metavar="JOURNAL.jsonl", help="a file written by export")


def cmd_replay(args: argparse.Namespace) -> int:
    from memory_es.transfer import replay_export

    if args.root is None:
        raise UsageError("replay needs --root NEW (a new or empty directory)")
    report = replay_export(args.journal, args.root, config(args))
    if args.json:
        print_json({"position": report.position, "written": len(report.written),
                    "vectors_pending": report.vectors_pending})
        return OK
    print(f"replayed {counted(report.position, 'event')} into {args.root}; "
          f"wrote {counted(len(report.written), 'file')}" + vectors(report.vectors_pending))
    return OK


REPLAY = Command("replay", "build a new root (--root) from an exported journal", cmd_replay,
                 _replay_options, paths=frozenset({"journal"}), progress=True)


# -- migrate-journal ---------------------------------------------------------------------------


def _migrate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", required=True, choices=("postgres", "sqlite"),
                   help="where the journal goes")
    dsn = p.add_mutually_exclusive_group()
    dsn.add_argument("--dsn", metavar="DSN",
                     help="the PostgreSQL server (default: memory.journal.dsn of --config, "
                          "else $MEMORY_ES_PG_DSN). A password here is visible to every "
                          "user in ps for the whole migration (a warning says so): prefer "
                          "$MEMORY_ES_PG_DSN, --dsn-file or ~/.pgpass")
    dsn.add_argument("--dsn-file", metavar="FILE",
                     help="read the DSN from the first line of FILE, which must be "
                          "owner-only (mode 0600, owned by you; exit 2 otherwise)")
    p.add_argument("--schema", metavar="NAME",
                   help="the database schema of the tables (default: memory.journal.schema, "
                        "else public)")
    p.add_argument("--batch", type=int, default=2000, metavar="N",
                   help="rows per transaction, 1 to 100000 (default 2000)")
    add_lock_timeout(p)


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
    loaded = config(args)
    block = loaded.journal if loaded is not None else None
    schema = args.schema or (block.pg_schema if block is not None else DEFAULT_PG_SCHEMA)
    dsn = given or (block.dsn.get_secret_value() if block is not None and block.dsn else None)
    target = (PostgresJournal(dsn, schema) if dsn else
              journal_target("postgres", None, schema) if args.to == "postgres" else
              PostgresJournal.from_env(schema))
    report = migrate_journal(root_path(args, loaded), args.to, target, batch=args.batch,
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


MIGRATE_JOURNAL = Command(
    "migrate-journal", "copy the root's journal to PostgreSQL or back to SQLite",
    cmd_migrate_journal, _migrate_options, paths=frozenset({"dsn_file"}), progress=True,
    description="Copy this root's journal, row for row with its chain, payloads "
                "and record keys, to a PostgreSQL database (--to postgres) or from "
                "the server back into the root's own journal.db (--to sqlite); "
                "then point the root at the copy. Resumable (a stopped run goes "
                "on from the target's head) and idempotent (a switched root copies "
                "nothing). Then the source is removed with its record keys (a "
                "copy left behind would keep forgotten text openable): journal.db "
                "and the key store's records.db after a move to PostgreSQL, the "
                "server's journal after a move back (stop its other hosts first). "
                "Run it again to remove what a crash left (health: "
                "journal_leftover).")


# -- rewrite-journal ---------------------------------------------------------------------------


def cmd_rewrite_journal(args: argparse.Namespace) -> int:
    """A thin shell over :func:`memory_es.rewrite.rewrite_journal`."""
    from memory_es.rewrite import rewrite_journal

    loaded = config(args)
    report = rewrite_journal(root_path(args, loaded), loaded)
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


REWRITE_JOURNAL = Command(
    "rewrite-journal", "rewrite a root's content-derived ids, verified, in place",
    cmd_rewrite_journal,
    description="A root written before ids stopped hashing content keeps, in "
                "events already written, digests that confirm a forgotten text "
                "(Journal and Remember ids, entity ids, admission digests). This "
                "rewrites its journal into the new form: new ids for those "
                "memories and entities with every reference following, no digest "
                "in the clear; replays it into a new root beside this one, "
                "verifies every index row against a replay of the old journal, "
                "then swaps it in and deletes the old root and its keys. The "
                "root id (so its anchors) changes; texts, statuses and positions "
                "do not. Nothing to do: says so.")

# -- migrate -----------------------------------------------------------------------------------


def _migrate_lines_options(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--yes", action="store_true",
                      help="migrate (without it, print what would be migrated: read-only, no "
                           "model call)")
    what.add_argument("--abort", action="store_true",
                      help="retire a migration a kill or a model cut short, leaving the lines "
                           "it did not reach as they were")
    add_lock_timeout(p)


def cmd_migrate(args: argparse.Namespace) -> int:
    """A thin shell over :mod:`memory_es.migrate`."""
    from memory_es.migrate import (
        abort_migration,
        check_migration_config,
        migrate_root,
        plan_migration,
    )

    loaded = config(args)
    root = root_path(args, loaded)
    if args.abort:
        migrated, left = abort_migration(root, loaded, lock_timeout=args.lock_timeout)
        if args.json:
            print_json({"aborted": True, "migrated": migrated, "left": left})
        else:
            print(f"stopped the migration: {counted(migrated, 'line')} migrated, "
                  f"{counted(left, 'line')} left as they were")
        return OK
    check_migration_config(loaded)  # before the root is opened
    report = migrate_root(root, loaded, lock_timeout=args.lock_timeout) if args.yes \
        else plan_migration(root, loaded)
    if args.json:
        print_json(report.to_json())
        return OK
    already = f"; {report.already} migrated by the run it resumes" if report.resumed else ""
    if not report.applied:
        print(f"would migrate {counted(report.lines, 'line')} into BuJo notes with "
              f"{report.model}{already}; run again with --yes")
    else:
        print(f"migrated {counted(report.migrated, 'line')} into "
              f"{counted(report.notes, 'note')} with {report.model}{already}; the root is BuJo")
    return OK


MIGRATE = Command(
    "migrate", "turn a Lite or Journal root's lines into BuJo notes with the Ollama chat "
    "model (C12); a dry run without --yes, --abort to stop one cut short", cmd_migrate,
    _migrate_lines_options,
    check_lock_timeout, progress=True,
    description="Reopen a stopped Lite or Journal root as BuJo (the --config given, whose "
                "memory.llm must be ollama) and ask the chat model for each live line's "
                "notes: one commit per line holds its notes and the line's migration "
                "forget (terminal, kept in the journal). Resumable: a run cut short is "
                "finished by running it again (or retired with --abort, the lines it did not reach "
                "left as they were), and nothing else opens the root until then. Without "
                "--yes: what would be migrated, read-only, with no model call.")

COMMANDS = (REBUILD, REPLAY, MIGRATE_JOURNAL, REWRITE_JOURNAL, MIGRATE)
