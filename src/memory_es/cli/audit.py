"""The operator's commands over the read-only handle (:class:`~memory_es.root.MemoryRoot`: no
lock, nothing written, safe beside a running agent), each with its options beside its body:
``inspect`` (content-free intake states, C1, C2), ``export`` (the canonical journal, C5),
``health`` (replay into scratch and report drift), ``anchor`` (the signed journal head) and
``calibrate`` (the recall calibration fitted on labelled questions).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from memory_es.bounds import describe
from memory_es.cli.common import (
    Command,
    check_intake_arg,
    print_json,
    reader,
    root_path,
    vectors,
)
from memory_es.cli.contract import OK, UsageError
from memory_es.errors import MemoryEsError
from memory_es.text import counted

if TYPE_CHECKING:
    from memory_es.journal import Anchor

def _print_forgets(args: argparse.Namespace) -> int:
    log = reader(args).forgets()
    if args.json:
        print_json(log.to_json())
        return OK
    print(f"forgets={log.total}" + (f" (the latest {len(log.recent)} below)"
                                    if len(log.recent) < log.total else ""))
    for f in log.recent:
        print(f"{f.position} {f.at.isoformat(timespec='seconds')} {f.kind:<6} {f.subject} "
              f"reason={f.reason} keys_destroyed={f.keys_destroyed}"
              + (f" entities_pruned={f.entities_pruned}" if f.entities_pruned else "")
              + (f" turns_erased={f.turns_erased}" if f.turns_erased else ""))
    return OK


# -- inspect, export ---------------------------------------------------------------------------


def _inspect_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", help="64-hex intake id (sha256 of the run id)")
    p.add_argument("--forgets", action="store_true",
                   help="the forget receipts instead (content-free: memory or intake id, "
                        "instant, reason, keys destroyed), the latest 50, newest first")


def cmd_inspect(args: argparse.Namespace) -> int:
    from memory_es.intake import iso_ms_or_none

    if args.forgets:
        if args.id is not None:
            raise UsageError("--forgets lists every forget: give it without an intake id")
        return _print_forgets(args)
    root = reader(args)
    report = root.inspect(args.id)
    if args.id is not None and not report.records:
        raise UsageError(f"argument id: no intake with id {args.id}", code="not_found")
    if args.json:
        print_json(report.to_json() if args.id is None else report.records[0].to_json())
        return OK
    counts = report.counts.to_json()
    print(" ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    print(f"worker={report.worker}" + vectors(report.vectors_pending).replace(";", ""))
    snapshot = root.worker_snapshot()
    if snapshot.heartbeat is not None:
        queued = " ".join(f"{k}={'-' if v is None else v}" for k, v in snapshot.queue)
        print(f"snapshot={snapshot.snapshot} shutdown={snapshot.shutdown} "
              f"heartbeat={snapshot.heartbeat} {queued}")
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


INSPECT = Command("inspect", "content-free intake states and counts (C1, C2)", cmd_inspect,
                  _inspect_options, check_intake_arg)


def _export_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--journal", required=True, metavar="FILE",
                   help="JSONL output file (written owner-only); '-' = stdout")


def _export_check(args: argparse.Namespace) -> None:
    if args.journal != "-" and (
            not args.journal or args.journal.endswith("/") or args.journal in (".", "..")):
        raise UsageError(f"argument --journal: must be a file path or '-' (stdout), "
                         f"got {describe(args.journal)}")


def cmd_export(args: argparse.Namespace) -> int:
    root = reader(args)
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


EXPORT = Command("export", "read-only canonical export (safe while a writer runs, C5)",
                 cmd_export, _export_options, _export_check, progress=True)


# -- health, anchor ----------------------------------------------------------------------------


def _health_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--expect-anchor", metavar="FILE",
                   help="an anchor written earlier by memory-es anchor: a finding (exit 1) "
                        "unless this root is the anchored one and its journal extends the "
                        "anchored head (detects a rollback to an older copy of the root and "
                        "a swap with another root)")
    p.add_argument("--deep", action="store_true",
                   help="also decrypt every live sealed record (a damaged record key: "
                        "record_seal_invalid) and read every vector-cache entry (reads every "
                        "byte once more: slower on large roots)")


def _read_anchor(path: str) -> Anchor:
    from memory_es.journal import parse_anchor
    from memory_es.journal.anchor import MAX_ANCHOR_BYTES

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


def cmd_health(args: argparse.Namespace) -> int:
    anchor = _read_anchor(args.expect_anchor) if args.expect_anchor is not None else None
    report = reader(args).health(expect_anchor=anchor, deep=args.deep)
    if report.status == "cannot_audit":  # no root there (exit 2), or unreadable (exit 3)
        code = report.findings[0].code if report.findings else "not_a_root"
        if code == "not_a_root":
            message = f"not_a_root: {root_path(args)}: no memory root here; check --root"
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
              f"worker={report.worker}" + vectors(report.vectors_pending))
        for f in sorted(report.findings):
            print(f"{f.code}  {f.path}  {f.detail}")
    return report.exit_code


HEALTH = Command("health", "replay into scratch and report any drift (exit 1 on findings)",
                 cmd_health, _health_options, paths=frozenset({"expect_anchor"}),
                 progress=True)


def cmd_anchor(args: argparse.Namespace) -> int:
    print(reader(args).anchor().line())  # the same one JSON line with or without --json
    return OK


ANCHOR = Command(
    "anchor", "print the signed head of the journal, to keep outside the root", cmd_anchor,
    description="Print one line of JSON: this root's id, its journal head "
                "(position and chain) and a MAC under the root's chain key. Keep "
                "it outside the root (another machine, a log, a ticket); "
                "health --expect-anchor FILE then fails on any root that does "
                "not extend it.")


# -- calibrate ---------------------------------------------------------------------------------

CALIBRATE_HELP = """\
Fit the recall calibration numbers (echoRemoval, lexicalWeight, dialogueWeight,
dialogueBoost, dialogueSupport or a turnModel, noEvidenceCosine, recallFloor, recallTail,
autoFloor, autoWindow) on labelled questions about this root's memories, read-only, with the
configured embedding provider (Journal or BuJo). echoRemoval, lexicalWeight, and
dialogueWeight / dialogueBoost / dialogueSupport for the turns of a conversation, are fitted
only under hybrid scoring (otherwise the current ones are kept); when the questions' pools
hold conversation turns, a turnModel (six weights scoring a turn, replacing dialogueWeight
and dialogueSupport) is fitted on them too and kept if it ranks them better; autoFloor /
autoWindow, the
automatic
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


def _calibrate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("labelled", metavar="LABELLED.json", help="the labelled questions (above)")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from memory_es.calibration.report import render_text

    report = reader(args).calibrate(args.labelled)
    if args.json:
        print_json(report.to_json())
    else:
        print(render_text(report))
    return OK


CALIBRATE = Command("calibrate", "fit the recall calibration on your own labelled questions",
                    cmd_calibrate, _calibrate_options, description=CALIBRATE_HELP,
                    paths=frozenset({"labelled"}))

COMMANDS = (INSPECT, EXPORT, HEALTH, ANCHOR, CALIBRATE)
