"""The ``memory-es`` argument parser: every command, option and help text (SPEC C).

``--root``, ``--config`` and ``--json`` are accepted before or after the command. A parse error
raises :class:`~memory_es.cli.contract.UsageError` (exit 2, one line) instead of printing usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from memory_es.cli.contract import EXIT_CODES_HELP, UsageError
from memory_es.vocabulary import LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, LIST_STATUSES

ROOT_HELP = "memory root directory (default: the config's memory.path, else ./.memory)"
CONFIG_HELP = "JSON config file holding the memory block (default: the root's own)"
JSON_HELP = "print one JSON object on stdout, errors too ({\"error\": {\"code\", \"message\"}})"
LOCK_HELP = "seconds to wait for the writer lock, 0 to 86400 (default: 0, refuse at once)"

CALIBRATE_HELP = """\
Fit the six recall calibration numbers (lexicalWeight, noEvidenceCosine, recallFloor,
recallTail, autoFloor, autoWindow) on labelled questions about this root's memories, read-only,
with the configured embedding provider (Journal or BuJo). lexicalWeight is fitted only under
hybrid scoring (otherwise the current one is kept); autoFloor / autoWindow, the automatic
block's, are fitted too: the pair whose block carries the most answers while staying quiet on
the no-answer questions (Youden's J). Prints them, the recall / abstention trade-off of the
reference, the current and the fitted calibration on those questions (in-sample) and of the
fitted rule 2-fold held out, and a config snippet
({"memory": {"embeddings": {"calibration": {...}}}}) to merge into the config file.

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
"""


class _Version(argparse.Action):
    """``--version``: the version is looked up only when the option is given."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0,
                         help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from memory_es.version import package_version

        sys.stdout.write(f"memory-es {package_version()}\n")  # stdout, as argparse's own
        parser.exit()


class Parser(argparse.ArgumentParser):
    """argparse that raises a one-line UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _common(*, json: bool) -> argparse.ArgumentParser:
    """The global options, repeatable after the command (SUPPRESS: absent leaves the value
    given before the command alone)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=argparse.SUPPRESS, help=ROOT_HELP)
    common.add_argument("--config", default=argparse.SUPPRESS, help=CONFIG_HELP)
    if json:
        common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                            help=JSON_HELP)
    return common


def build_parser() -> Parser:
    parser = Parser(prog="memory-es", description="Durable, event-sourced memory for AI agents.",
                    epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument("--root", help=ROOT_HELP)
    parser.add_argument("--config", help=CONFIG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="one of the commands below; COMMAND --help for its options")
    common = [_common(json=True)]

    def command(name: str, help: str, **kw: Any) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(
            name, help=help, description=kw.pop("description", help[:1].upper() + help[1:]),
            epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=kw.pop("parents", common), **kw)
        return p

    p = command("validate", "check a config file against SPEC O (exit 1 when invalid)")
    p.set_defaults(func="validate")

    p = command("remember", "store one explicitly stated fact now, recallable at once "
                "(exit 1 when refused)")
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
    p.set_defaults(func="remember")

    p = command("set-status", "move a stored line through its lifecycle: open, done, "
                "scheduled, migrated or the terminal dropped (exit 1 when refused)")
    p.add_argument("id", help="a memory id, or a unique prefix of at least 8 hex characters")
    p.add_argument("status", help="open, done, scheduled, migrated or dropped")
    p.add_argument("--reason", metavar="SLUG", help="why, as a slug (optional)")
    p.set_defaults(func="set_status")

    p = command("mark", "set or clear a stored line's insight marker (K14)")
    p.add_argument("id", help="a memory id, or a unique prefix of at least 8 hex characters")
    marker = p.add_mutually_exclusive_group(required=True)
    marker.add_argument("--insight", dest="insight", action="store_true", default=None,
                        help="mark the line as an insight")
    marker.add_argument("--no-insight", dest="insight", action="store_false",
                        help="clear the marker")
    p.set_defaults(func="mark")

    p = command("admit", "durably admit one completed turn (exit 1 when rejected)")
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
    p.set_defaults(func="admit")

    p = command("inspect", "content-free intake states and counts (C1, C2)")
    p.add_argument("id", nargs="?", help="64-hex intake id (sha256 of the run id)")
    p.set_defaults(func="inspect")

    p = command("export", "read-only canonical export (safe while a writer runs, C5)")
    p.add_argument("--journal", required=True, metavar="FILE",
                   help="JSONL output file (written owner-only); '-' = stdout")
    p.set_defaults(func="export")

    p = command("drain", "run every due intake now, in the foreground")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="stop starting new attempts (and embedding) after S seconds, 0 to "
                        "86400 (default: no limit)")
    p.add_argument("--no-embed", action="store_true",
                   help="leave memories without a vector to the worker (recall finds them "
                        "lexically meanwhile)")
    p.set_defaults(func="drain")

    p = command("serve-mcp", "serve the memory tools (recall, journal, remember; forget "
                "when enabled) to MCP clients over stdio or HTTP, holding the store open",
                parents=[_common(json=False)])
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default: the client starts this process) or http (Streamable "
                        "HTTP with a bearer token)")
    p.add_argument("--host", default="127.0.0.1",
                   help="http: the address to bind (default 127.0.0.1; another address "
                        "serves plain HTTP beyond this machine, and a warning says so; "
                        "0.0.0.0 or :: accept this machine's names and addresses as Host)")
    p.add_argument("--port", type=int, default=8765, help="http: the port (default 8765)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="http: one more name clients may send as Host (and Origin), e.g. "
                        "the DNS name they reach this machine by; repeatable. Any other "
                        "Host is answered 421, any other Origin 403")
    p.add_argument("--token-file", metavar="FILE",
                   help="http: read the bearer token from FILE, which must be owner-only "
                        "(mode 0600; default: generated on first start into an owner-only "
                        "file beside the root's keys)")
    p.add_argument("--max-sessions", type=int, default=None, metavar="N",
                   help="http: MCP sessions open at once, 1 to 10000 (default 32); one more "
                        "is answered 503")
    p.add_argument("--session-idle", type=float, default=None, metavar="S",
                   help="http: end a session after S seconds without a request, 1 to 86400 "
                        "(default 600); its id then answers 404 and the client starts anew")
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)
    p.set_defaults(func="serve_mcp")

    p = command("retry", "fresh 16-attempt budget for dead/delayed intakes (C3)")
    p.add_argument("id", nargs="?", help="one 64-hex intake id (default: all dead/delayed)")
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)
    p.set_defaults(func="retry")

    p = command("resolve", "accept the loss of one intake: operator_resolved (C4)")
    p.add_argument("id", help="64-hex intake id")
    p.add_argument("reason", metavar="REASON-SLUG",
                   help="why, as a slug: 1-64 of a-z, 0-9 and '-' (e.g. provider-retired)")
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)
    p.set_defaults(func="resolve")

    p = command("forget", "erase a memory, a turn's memories (--run-id) or a search's "
                "(--query) everywhere, journal included (crypto-shredding); prints a "
                "content-free receipt (exit 1 when the id is unknown)")
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
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)
    p.set_defaults(func="forget")

    p = command("rebuild", "replay the journal into a new index generation + Markdown")
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)
    p.set_defaults(func="rebuild")

    p = command("consolidate", "refresh the living index.md now (BuJo; no model call)")
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)
    p.set_defaults(func="consolidate")

    p = command("replay", "build a new root (--root) from an exported journal")
    p.add_argument("journal", metavar="JOURNAL.jsonl", help="a file written by export")
    p.set_defaults(func="replay")

    p = command("health", "replay into scratch and report any drift (exit 1 on findings)")
    p.add_argument("--expect-anchor", metavar="FILE",
                   help="an anchor written earlier by memory-es anchor: a finding (exit 1) "
                        "unless this root is the anchored one and its journal extends the "
                        "anchored head (detects a rollback to an older copy of the root and "
                        "a swap with another root)")
    p.add_argument("--deep", action="store_true",
                   help="also decrypt every live sealed record (a damaged record key: "
                        "record_seal_invalid) and read every vector-cache entry (reads every "
                        "byte once more: slower on large roots)")
    p.set_defaults(func="health")

    p = command("anchor", "print the signed head of the journal, to keep outside the root",
                description="Print one line of JSON: this root's id, its journal head "
                            "(position and chain) and a MAC under the root's chain key. Keep "
                            "it outside the root (another machine, a log, a ticket); "
                            "health --expect-anchor FILE then fails on any root that does "
                            "not extend it.")
    p.set_defaults(func="anchor")

    p = command("migrate-journal", "copy the root's journal to PostgreSQL or back to SQLite",
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
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="S", help=LOCK_HELP)
    p.set_defaults(func="migrate_journal")

    p = command("rewrite-journal", "rewrite a root's content-derived ids, verified, in place",
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
    p.set_defaults(func="rewrite_journal")

    p = command("search", "hybrid recall (FTS5 + vectors), read-only (C9)")
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
    p.set_defaults(func="search")

    p = command("calibrate", "fit the recall calibration on your own labelled questions",
                description=CALIBRATE_HELP)
    p.add_argument("labelled", metavar="LABELLED.json", help="the labelled questions (above)")
    p.set_defaults(func="calibrate")

    p = command("journal", "chronological memories over civil dates (I*)")
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
    p.set_defaults(func="journal")

    p = command("list", "the stored memories, newest first (content-bearing; read-only)",
                description="List stored memories, newest first (recording instant, then "
                            "id): one line each (id prefix, recorded date, status, text), or "
                            "with --json full ids and recall's fields. Read-only, no lock. "
                            "inspect and health stay content-free; list and show are the "
                            "commands that print what is stored.")
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
    p.set_defaults(func="list")

    p = command("show", "everything stored about one memory (content-bearing; read-only)",
                description="Show one memory: text, type, status, currentness, labels, scope "
                            "and salience (BuJo capture), entities, provenance (intake id, "
                            "session, origin, tier, daily file), the supersession chain both "
                            "ways and the journal events of its aggregate (position, topic, "
                            "time). Read-only, no lock.")
    p.add_argument("id", metavar="ID", help="a 64-hex memory id, or a unique prefix of at "
                                            "least 8 hex characters (list shows 12)")
    p.set_defaults(func="show")

    p = command("profile", "the owner profile (content-bearing; read-only)",
                description="Print the owner profile (SPEC M3-M7): whole entries of the "
                            "owner's own stated facts and agent-scope preferences, current and "
                            "open only (no superseded, ended, conflicting, dated or episode "
                            "lines), newest day first, at most 600 code points and "
                            "memory.maxBytes. The same rule as the automatic context under "
                            "memory.profile.enabled (BuJo); shown even when that is off. "
                            "Read-only, no lock, no model call.")
    p.set_defaults(func="profile")

    p = command("demo", "the whole Lite flow, then BuJo capture, in a temporary root "
                "(removed afterwards), or kept at --root DIR (and DIR-bujo)",
                description="Run the whole Lite flow, then BuJo capture with an offline demo "
                            "model. Without --root the roots live in a temporary directory "
                            "and are removed with their keys; with --root DIR the Lite root is "
                            "made at DIR and the BuJo root at DIR-bujo, both kept (each must "
                            "be new or empty: exit 1 otherwise, nothing written).",
                parents=[_common(json=False)])
    p.set_defaults(func="demo")
    return parser


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
