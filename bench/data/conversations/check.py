#!/usr/bin/env python3
"""Validate conversations.json or conversations_fresh.json (stdlib only).

Usage: python3 check.py [path]   (default: conversations.json next to this file; the
minimums are the ones RULES gives the file's name)
Exit 0 and print counts when valid; exit 1 naming the first problem otherwise.
"""

import json
import os
import sys
from collections import Counter
from datetime import datetime, timedelta
from typing import NamedTuple

KINDS = ("single-hop", "multi-hop", "temporal", "inference", "unanswerable")
MIN_TURNS = 200


class Rules(NamedTuple):
    splits: tuple[str, ...]
    min_questions: int  # in the whole file
    min_q_per_conv: int
    min_sessions: int
    min_span: timedelta


RULES = {
    "conversations.json": Rules(("dev", "test"), 600, 1, 1, timedelta(days=89)),
    # written to test only, after every ranking choice: no dev split
    "conversations_fresh.json": Rules(("test",), 200, 55, 10, timedelta(days=120)),
}


class Bad(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Bad(msg)


def parse_at(s, where):
    need(
        isinstance(s, str) and s.endswith("Z"),
        f"{where}: 'at' must be an ISO UTC time ending in Z",
    )
    try:
        return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise Bad(f"{where}: bad 'at' {s!r}") from None


def nonempty_str(x):
    return isinstance(x, str) and x.strip() != ""


def check(data, rules=RULES["conversations.json"]):
    need(isinstance(data, dict), "top level must be an object")
    need(data.get("version") == 1, "version must be 1")
    need(nonempty_str(data.get("description")), "description missing")
    convs = data.get("conversations")
    need(isinstance(convs, list) and convs, "conversations must be a non-empty list")
    ids = set()
    counts = {s: Counter() for s in rules.splits}
    conv_split = Counter()
    turns_split = Counter()
    total_q = 0
    for c in convs:
        cid = c.get("id")
        need(nonempty_str(cid), "conversation without id")
        need(cid not in ids, f"duplicate id {cid}")
        ids.add(cid)
        split = c.get("split")
        need(split in rules.splits, f"{cid}: split must be one of {rules.splits}")
        conv_split[split] += 1
        sp = c.get("speakers")
        need(
            isinstance(sp, list)
            and len(sp) == 2
            and all(nonempty_str(s) for s in sp)
            and sp[0] != sp[1],
            f"{cid}: speakers must be two distinct names",
        )
        sessions = c.get("sessions")
        need(isinstance(sessions, list) and sessions, f"{cid}: no sessions")
        need(len(sessions) >= rules.min_sessions,
             f"{cid}: {len(sessions)} sessions, need at least {rules.min_sessions}")
        turn_ids = set()
        prev = None
        first = None
        nturns = 0
        for s in sessions:
            sid = s.get("id")
            need(nonempty_str(sid) and sid.startswith(cid + "-"), f"{cid}: bad session id {sid!r}")
            need(sid not in ids, f"duplicate id {sid}")
            ids.add(sid)
            at = parse_at(s.get("at"), sid)
            if prev is not None:
                need(at > prev, f"{sid}: session date not after the previous session")
            else:
                first = at
            prev = at
            turns = s.get("turns")
            need(isinstance(turns, list) and turns, f"{sid}: no turns")
            for t in turns:
                tid = t.get("id")
                need(
                    nonempty_str(tid) and tid.startswith(sid + "-"), f"{sid}: bad turn id {tid!r}"
                )
                need(tid not in ids, f"duplicate id {tid}")
                ids.add(tid)
                turn_ids.add(tid)
                need(t.get("speaker") in sp, f"{tid}: speaker {t.get('speaker')!r} not in {sp}")
                need(nonempty_str(t.get("text")), f"{tid}: empty text")
                nturns += 1
        need(nturns >= MIN_TURNS, f"{cid}: {nturns} turns, need at least {MIN_TURNS}")
        need(
            prev - first >= rules.min_span,
            f"{cid}: sessions span {(prev - first).days} days, need {rules.min_span.days}",
        )
        turns_split[split] += nturns
        qs = c.get("questions")
        need(isinstance(qs, list) and qs, f"{cid}: no questions")
        need(len(qs) >= rules.min_q_per_conv,
             f"{cid}: {len(qs)} questions, need at least {rules.min_q_per_conv}")
        for q in qs:
            qid = q.get("id")
            need(
                nonempty_str(qid) and qid.startswith(cid + "-q"), f"{cid}: bad question id {qid!r}"
            )
            need(qid not in ids, f"duplicate id {qid}")
            ids.add(qid)
            kind = q.get("kind")
            need(kind in KINDS, f"{qid}: unknown kind {kind!r}")
            need(nonempty_str(q.get("question")), f"{qid}: empty question")
            need(nonempty_str(q.get("answer")), f"{qid}: empty answer")
            ev = q.get("evidence")
            need(isinstance(ev, list), f"{qid}: evidence must be a list")
            need(len(set(ev)) == len(ev), f"{qid}: duplicate evidence ids")
            if kind == "unanswerable":
                need(ev == [], f"{qid}: unanswerable question must have empty evidence")
            else:
                need(len(ev) > 0, f"{qid}: answerable question needs evidence")
            for e in ev:
                need(e in turn_ids, f"{qid}: evidence {e!r} is not a turn of {cid}")
            if kind == "multi-hop":
                need(len(ev) >= 2, f"{qid}: multi-hop question needs at least 2 evidence turns")
            counts[split][kind] += 1
            total_q += 1
    need(total_q >= rules.min_questions,
         f"{total_q} questions, need at least {rules.min_questions}")
    for s in rules.splits:
        need(conv_split[s] > 0, f"no conversations in split {s!r}")
    return convs, counts, conv_split, turns_split, total_q


def main():
    path = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(os.path.dirname(os.path.abspath(__file__)), "conversations.json")
    )
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        rules = RULES.get(os.path.basename(path), RULES["conversations.json"])
        convs, counts, conv_split, turns_split, total_q = check(data, rules)
    except (OSError, ValueError) as e:
        print(f"INVALID: cannot read {path}: {e}")
        return 1
    except Bad as e:
        print(f"INVALID: {e}")
        return 1
    print(f"OK {path}")
    splits = rules.splits
    print(f"conversations: {len(convs)} ({', '.join(f'{s} {conv_split[s]}' for s in splits)})")
    for s in splits:
        cs = [c["id"] for c in convs if c["split"] == s]
        print(f"  {s}: {' '.join(cs)}")
    print(f"turns: {sum(turns_split.values())} "
          f"({', '.join(f'{s} {turns_split[s]}' for s in splits)})")
    print(f"questions: {total_q}")
    print(f"{'kind':<14}" + "".join(f"{s:>7}" for s in splits) + f"{'total':>7}")
    for k in KINDS:
        print(
            f"{k:<14}"
            + "".join(f"{counts[s][k]:>7}" for s in splits)
            + f"{sum(counts[s][k] for s in splits):>7}"
        )
    print(f"{'all':<14}" + "".join(f"{sum(counts[s].values()):>7}" for s in splits)
          + f"{total_q:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
