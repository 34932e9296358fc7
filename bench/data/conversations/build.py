#!/usr/bin/env python3
"""Assemble a set's JSON from its hand-written sources: ``python3 build.py [SET]`` reads
``../SET/source/*.txt`` and writes ``../SET/SET.json`` (SET: conversations, the default, or
conversations_fresh; SETS holds what differs between them).

Source format (one file per conversation, all content hand-written):

    id: c01
    split: dev
    speakers: Maya | Jonas
    @ 2026-01-04T18:20:00Z          <- starts a new session at that UTC time
    M: a turn by the speaker whose name starts with M
    J[label]: a turn carrying a label that questions can cite
    Q kind | question | label, label | reference answer

Labels are local to a conversation and are resolved to turn ids here.
If a conversation has fewer than the set's min_turns turns, generic sign-off
pairs (which carry no facts) are appended to sessions, earliest first.
Stdlib only; deterministic.
"""

import json
import os
import re
import sys

DATA = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS = {
    "conversations": {
        "min_turns": 205,
        "sort_evidence": False,
        "description": (
            "Conversational recall evaluation set: fictional two-person chats over "
            "dated sessions, with hand-labelled questions (single-hop, multi-hop, "
            "temporal, inference, unanswerable) whose evidence is a list of turn ids. "
            "Written by hand for this project; no public benchmark used. "
            "Split by conversation: dev = c01-c05, test = c06-c10 "
            "(also in each conversation's 'split')."
        ),
    },
    "conversations_fresh": {
        "min_turns": 0,  # no padding: every turn is hand-written
        "sort_evidence": True,  # chronological (ids are zero-padded)
        "description": (
            "Fresh conversational recall evaluation set: four fictional two-person chats "
            "over dated sessions, with hand-labelled questions (single-hop, multi-hop, "
            "temporal, inference, unanswerable) whose evidence is a list of turn ids. "
            "Written by hand, independently of the original set; no public benchmark used. "
            "All conversations (f01-f04) are split 'test'."
        ),
    },
}
SIGNOFFS = [
    ("Anyway, I should go. Talk soon!", "Talk soon!"),
    ("Ok, off I go. Bye for now.", "Bye! x"),
    ("Right, back to it. Later!", "Later!"),
    ("I'll let you go. Speak soon.", "Yep, speak soon."),
    ("Gotta run, catch you later.", "Catch you later!"),
    ("Ok, that's me for now.", "Take care!"),
]

LINE = re.compile(r"^([A-Za-z])(?:\[([^\]]+)\])?:\s?(.*)$")


def parse(path, rules):
    conv = {"sessions": [], "questions": []}
    labels = {}
    keys = {}
    qraw = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            where = f"{path}:{n}"
            if line.startswith("id:"):
                conv["id"] = line[3:].strip()
            elif line.startswith("split:"):
                conv["split"] = line[6:].strip()
            elif line.startswith("speakers:"):
                names = [s.strip() for s in line[9:].split("|")]
                conv["speakers"] = names
                keys = {nm[0]: nm for nm in names}
                assert len(keys) == 2, where + " speaker initials must differ"
            elif line.startswith("@ "):
                conv["sessions"].append({"at": line[2:].strip(), "turns": []})
            elif line.startswith("Q "):
                parts = [p.strip() for p in line[2:].split("|")]
                assert len(parts) == 4, where + " question needs 4 fields"
                qraw.append((where, parts))
            else:
                m = LINE.match(line)
                assert m, where + " unparsable line: " + line
                k, label, text = m.groups()
                assert k in keys, where + " unknown speaker key " + k
                assert conv["sessions"], where + " turn before first session"
                turn = {"speaker": keys[k], "text": text.strip()}
                conv["sessions"][-1]["turns"].append(turn)
                if label:
                    for lb in label.split(","):
                        lb = lb.strip()
                        assert lb not in labels, where + " duplicate label " + lb
                        labels[lb] = turn
    # pad with content-free sign-offs if short
    total = sum(len(s["turns"]) for s in conv["sessions"])
    i = 0
    while total < rules["min_turns"]:
        s = conv["sessions"][i % len(conv["sessions"])]
        last = s["turns"][-1]["speaker"]
        a = conv["speakers"][1] if last == conv["speakers"][0] else conv["speakers"][0]
        b = conv["speakers"][0] if a == conv["speakers"][1] else conv["speakers"][1]
        x, y = SIGNOFFS[i % len(SIGNOFFS)]
        s["turns"].append({"speaker": a, "text": x})
        s["turns"].append({"speaker": b, "text": y})
        total += 2
        i += 1
    if i:
        print(f"{conv.get('id')}: appended {i} sign-off pairs", file=sys.stderr)
    # assign ids
    cid = conv["id"]
    out_sessions = []
    for si, s in enumerate(conv["sessions"], 1):
        sid = f"{cid}-s{si:02d}"
        turns = []
        for ti, t in enumerate(s["turns"], 1):
            t["id"] = f"{sid}-t{ti:03d}"
            turns.append({"id": t["id"], "speaker": t["speaker"], "text": t["text"]})
        out_sessions.append({"id": sid, "at": s["at"], "turns": turns})
    qs = []
    for qi, (where, (kind, q, ev, ans)) in enumerate(qraw, 1):
        ev_ids = []
        for lb in [e.strip() for e in ev.split(",") if e.strip()]:
            assert lb in labels, where + " unknown label " + lb
            ev_ids.append(labels[lb]["id"])
        if rules["sort_evidence"]:
            ev_ids.sort()
        qs.append(
            {
                "id": f"{cid}-q{qi:03d}",
                "kind": kind,
                "question": q,
                "evidence": ev_ids,
                "answer": ans,
            }
        )
    return {
        "id": cid,
        "split": conv["split"],
        "speakers": conv["speakers"],
        "sessions": out_sessions,
        "questions": qs,
    }


def dump(data):
    """Pretty JSON with one turn / one question per line."""
    L = [
        "{",
        f'  "version": {data["version"]},',
        f'  "description": {json.dumps(data["description"], ensure_ascii=False)},',
        '  "conversations": [',
    ]
    for ci, c in enumerate(data["conversations"]):
        L.append("    {")
        L.append(
            f'      "id": {json.dumps(c["id"])}, "split": {json.dumps(c["split"])}, '
            f'"speakers": {json.dumps(c["speakers"], ensure_ascii=False)},'
        )
        L.append('      "sessions": [')
        for si, s in enumerate(c["sessions"]):
            L.append(
                f'        {{"id": {json.dumps(s["id"])}, "at": {json.dumps(s["at"])}, "turns": ['
            )
            for ti, t in enumerate(s["turns"]):
                comma = "," if ti < len(s["turns"]) - 1 else ""
                L.append("          " + json.dumps(t, ensure_ascii=False) + comma)
            L.append("        ]}" + ("," if si < len(c["sessions"]) - 1 else ""))
        L.append("      ],")
        L.append('      "questions": [')
        for qi, q in enumerate(c["questions"]):
            comma = "," if qi < len(c["questions"]) - 1 else ""
            L.append("        " + json.dumps(q, ensure_ascii=False) + comma)
        L.append("      ]")
        L.append("    }" + ("," if ci < len(data["conversations"]) - 1 else ""))
    L.append("  ]")
    L.append("}")
    return "\n".join(L) + "\n"


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "conversations"
    if name not in SETS:
        print(f"unknown set {name!r}: one of {', '.join(SETS)}", file=sys.stderr)
        return 2
    rules = SETS[name]
    src = os.path.join(DATA, name, "source")
    convs = [parse(os.path.join(src, fn), rules)
             for fn in sorted(os.listdir(src)) if fn.endswith(".txt")]
    data = {"version": 1, "description": rules["description"], "conversations": convs}
    text = dump(data)
    json.loads(text)  # sanity
    with open(os.path.join(DATA, name, name + ".json"), "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote", len(convs), "conversations")


if __name__ == "__main__":
    sys.exit(main())
