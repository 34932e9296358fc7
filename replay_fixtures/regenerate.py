"""Regenerate the golden replay fixtures: ``python replay_fixtures/regenerate.py``.

Each fixture below is a list of steps (admit a turn, or drain) run against a fresh root with
a fake clock, so the journal is byte-deterministic. For each fixture this script

1. builds the root live (``MemoryStore`` + ``drain``) in a temp dir and exports its journal;
2. replays that export into a second, fresh temp root (``replay_export``);
3. asserts the replayed tree (daily/, audit/, index dump) equals the live one, and that
   ``health`` is clean on both, so a fixture can never capture a live/replay mismatch;
4. only then writes ``<name>/journal.jsonl`` and ``<name>/expected/`` (daily/*.md,
   audit/*.md, graph.jsonl and .replay-projection-v1.json when the root has them, and
   index.jsonl, a canonical dump of the index tables).

A BuJo capture fixture also has ``<name>/model.jsonl``: the scripted model responses
(:class:`~memory_es.capture.scripted.ScriptedChat` records, keyed by stage and intake id) the
live build ran against, with a deterministic bag-of-words embedder. Only generation needs
them: replay never calls a model or embeds.

``--check`` builds everything into a temp dir and exits 1 (listing the files) if the
committed fixtures differ, without touching them. ``tests/test_fixtures.py`` imports this
file and calls :func:`build_all`, so a behaviour change fails the test suite; regenerating
then shows the change as a reviewable ``git diff`` of text files.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_es.capture.scripted import ScriptedChat
from memory_es.config import parse_config
from memory_es.ids import run_hash, run_memory_id
from memory_es.intake import AdmissionResult, Attachment, CompletedTurn
from memory_es.keystore import throwaway_key_store
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.testing import WordBagEmbedder
from memory_es.text import journal_text
from memory_es.transfer import replay_export
from projections.derived import open_active_index
from projections.index_schema import DUMP_ORDER, DUMP_TABLES
from projections.replay import MARKDOWN_DIRS, ROOT_FILES

FIXTURES_DIR = Path(__file__).resolve().parent
JOURNAL = "journal.jsonl"
EXPECTED = "expected"
INDEX_DUMP = "index.jsonl"
MODEL = "model.jsonl"
READS = "reads.jsonl"

LITE: dict[str, Any] = {}
JOURNAL_MODE: dict[str, Any] = {"mode": "journal", "embeddings": {"dim": 384}}
BUJO_AUDIT: dict[str, Any] = {
    "mode": "bujo", "embeddings": {"dim": 384}, "llm": {"provider": "ollama", "model": "m"},
}
BUJO_CAPTURE: dict[str, Any] = {
    "mode": "bujo", "writeMode": "capture", "embeddings": {"dim": 256},
    "llm": {"provider": "ollama", "model": "m"},
}
BUJO_INTENTS: dict[str, Any] = {
    **BUJO_CAPTURE, "capture": {"intentLifecycle": True},
    "recall": {"intentExpiry": True, "recency": True},
}
EPOCH = datetime(2026, 7, 6, 12, 0, 0, tzinfo=UTC)
BUJO_PROFILE: dict[str, Any] = {**BUJO_CAPTURE, "profile": {"enabled": True}}
READ_AT = datetime(2026, 8, 25, 12, 0, 0, tzinfo=UTC)  # golden reads of the M fixtures
NO_POLICY: dict[str, dict[str, Any]] = {"recall": {"intentExpiry": False, "recency": False}}


# -- fake clock ---------------------------------------------------------------------------------


class FakeClock:
    """Tz-aware UTC time that moves only when a step says so (``tick``), never per read:
    the fixtures must not depend on how often the engine looks at the clock."""

    def __init__(self, start: datetime = EPOCH, step: timedelta = timedelta(minutes=1)) -> None:
        self.now = start
        self.step = step

    def tick(self) -> None:
        self.now += self.step

    def __call__(self) -> datetime:
        return self.now


# -- deterministic embedder (generation of capture fixtures only) -------------------------------
# Capture reconciles against close stored lines (cosine >= 0.75), so generation needs vectors;
# replay never embeds, so the embedder leaves no trace in a fixture.


def fixture_embedder(dim: int) -> WordBagEmbedder:
    return WordBagEmbedder(dim, provider="fixture", model="bag-of-words")


# -- canonical dumps (shared with the tests) ----------------------------------------------------


def dump_line(table: str, row: Any) -> str:
    return json.dumps({"table": table, "row": list(row)}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


def index_dump(root: Path) -> bytes:
    """Every row of the active index generation: table order, then rowid order."""
    conn = open_active_index(root)
    assert conn is not None, f"{root}: no active index generation"
    try:
        lines = [
            dump_line(table, row)
            for table, columns in DUMP_TABLES.items()
            for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table} "
                                    f"ORDER BY {DUMP_ORDER.get(table, 'rowid')}")
        ]
    finally:
        conn.close()
    return "".join(line + "\n" for line in lines).encode("utf-8")


def markdown_files(root: Path) -> dict[str, bytes]:
    """graph.jsonl and the replay sidecar (when present), then daily/*.md and audit/*.md, by
    root-relative path (every file there, whatever its name)."""
    found: dict[str, bytes] = {name: (root / name).read_bytes() for name in ROOT_FILES
                               if (root / name).is_file()}
    for kind in MARKDOWN_DIRS:
        directory = root / kind
        if directory.is_dir():
            for path in sorted(directory.iterdir()):
                found[f"{kind}/{path.name}"] = path.read_bytes()
    return found


def projection_tree(root: Path) -> dict[str, bytes]:
    """What a fixture's ``expected/`` holds for ``root``: the rendered files (Markdown,
    graph.jsonl, the sidecar) plus the index dump."""
    tree = markdown_files(root)
    tree[INDEX_DUMP] = index_dump(root)
    return tree


def tree_diff(want: dict[str, bytes], have: dict[str, bytes]) -> list[str]:
    """Paths that are missing, extra or different (empty when equal)."""
    return [
        f"{rel}: {'missing' if rel not in have else 'extra' if rel not in want else 'differs'}"
        for rel in sorted(set(want) | set(have))
        if want.get(rel) != have.get(rel)
    ]


# -- fixture specs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Admit:
    """Admit one successful turn; ``expect`` is the admission status the step must get."""

    run_id: str
    answer: str
    expect: str = "admitted"
    session: str | None = None
    trigger: str = "human"
    speaker_kind: str = "human-turn"
    attachments: tuple[Attachment, ...] = ()
    capture_text: str | None = None  # BuJo capture: the host-approved text (A4)

    def turn(self) -> CompletedTurn:
        return CompletedTurn(
            run_id=self.run_id, outcome="success", answer=self.answer, session=self.session,
            speaker_kind=self.speaker_kind, trigger=self.trigger, attachments=self.attachments,
            capture_text=self.capture_text,
        )


@dataclass(frozen=True)
class Drain:
    """``store.drain()``; ``expect`` is how many intakes it must resolve."""

    expect: int


@dataclass(frozen=True)
class Remember:
    """``store.remember``; ``about`` names a person, ``supersedes`` the text of a Remember line
    (its id is the content hash) or a captured line as (run id, plan index)."""

    text: str
    expect: str = "remembered"
    session: str | None = None
    about: str | None = None
    supersedes: str | tuple[str, int] | None = None
    replaceable: bool = False
    valid_from: str | None = None
    valid_to: str | None = None
    due_at: str | None = None


@dataclass(frozen=True)
class SetStatus:
    """``store.set_status`` of the line with ``text``."""

    text: str
    status: str
    reason: str | None = None


@dataclass(frozen=True)
class Mark:
    """``store.mark`` of the line with ``text`` (or a captured line's (run id, index))."""

    line: str | tuple[str, int]
    insight: bool = True


@dataclass(frozen=True)
class Forget:
    """``store.forget`` of the line with ``text`` (or a captured line's (run id, index))."""

    line: str | tuple[str, int]
    reason: str = "user-request"


@dataclass(frozen=True)
class Wait:
    """Let ``days`` pass before the next step (ages for the recency read policy, M28)."""

    days: float


Step = Admit | Drain | Remember | SetStatus | Mark | Forget | Wait


@dataclass(frozen=True)
class Read:
    """One read of the replayed root, kept byte for byte in ``reads.jsonl``: the golden output
    of the read-side switches (profile, intentExpiry, recency), which change no projection.
    ``call`` is ``recall`` (limit 10), ``auto`` (the automatic context of a turn whose text is
    ``text``; ``owner``: a host-verified owner turn) or ``profile``; ``switches`` are the
    ``memory`` blocks merged into the spec's config for this read (``{"recall": {...}}``); it
    runs at ``at`` in UTC with the fixture embedder and a chat model that must not be called."""

    name: str
    call: str
    at: datetime
    text: str = ""
    owner: bool = True
    switches: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """One scripted model reply (a ``model.jsonl`` line): ``response`` text, or ``error``, a
    ModelError code the call raises. Keyed by stage and the intake id of ``run_id``."""

    stage: str
    run_id: str
    response: str | None = None
    error: str | None = None

    def record(self) -> dict[str, str]:
        out = {"stage": self.stage, "turn": run_hash(self.run_id)}
        if self.error is not None:
            out["error"] = self.error
        else:
            assert self.response is not None, self
            out["response"] = self.response
        return out


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    config: dict[str, Any]
    steps: tuple[Step, ...]
    step: timedelta = timedelta(minutes=1)
    start: datetime = EPOCH
    # BuJo capture only: the scripted replies (written as model.jsonl; every one must be
    # used), the model calls the build must make, in order, as (stage, run id), and the
    # memory lines it must end with, in index order, as (text, kind, status, labels).
    script: tuple[Reply, ...] = ()
    calls: tuple[tuple[str, str], ...] = ()
    memories: tuple[tuple[str, str, str, str], ...] = ()
    reads: tuple[Read, ...] = ()


def cron(run_id: str, answer: str, **kw: Any) -> Admit:
    return Admit(run_id, answer, trigger="cron", speaker_kind="trigger", **kw)


def webhook(run_id: str, answer: str, **kw: Any) -> Admit:
    return Admit(run_id, answer, trigger="webhook", speaker_kind="trigger", **kw)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def memory(text: str, *, source: str = "user", kind: str = "note", labels: Sequence[str] = (),
           salience: float = 0.8, entities: Sequence[str] = ()) -> dict[str, Any]:
    return {"text": text, "kind": kind, "labels": list(labels), "source": source,
            "salience": salience, "entities": list(entities)}


def intention(text: str, *, state: str | None = None, end: str | None = None,
              source: str = "user", kind: str = "task", entities: Sequence[str] = ()
              ) -> dict[str, Any]:
    """An extracted memory of the intent-lifecycle contract (M14-M19)."""
    out = memory(text, source=source, kind=kind, entities=entities)
    if state is not None:
        out["intentState"] = state
    if end is not None:
        out["validTo"] = end
    return out


def entity(id_: str, name: str, type_: str) -> dict[str, str]:
    return {"id": id_, "name": name, "type": type_}


def extract(run_id: str, memories: Sequence[dict[str, Any]],
            entities: Sequence[dict[str, str]] = (),
            relations: Sequence[tuple[str, str, str]] = ()) -> Reply:
    """Call 1's reply: the extraction plan."""
    return Reply("extract", run_id, _json({
        "memories": list(memories), "entities": list(entities),
        "relations": [{"from": a, "relation": r, "to": b} for a, r, b in relations]}))


def review(run_id: str, *decisions: str) -> Reply:
    """Call 2's reply: one decision per listed (eligible) line, in listing order."""
    return Reply("review", run_id, _json({"decisions": [
        {"index": i, "decision": d} for i, d in enumerate(decisions)]}))


def reconcile(run_id: str, *decisions: dict[str, str]) -> Reply:
    """Call 3's reply: one decision per candidate offered stored lines (ids m1, m2, ...)."""
    return Reply("reconcile", run_id, _json({"decisions": [
        {"index": i, **d} for i, d in enumerate(decisions)]}))


def failure(stage: str, run_id: str, code: str) -> Reply:
    return Reply(stage, run_id, error=code)


LONG_SESSION = "web:" + "long-thread-" * 50  # 604 bytes > 512: stored as "unknown" (K7)
COFFEE = "Coffee order: oat flat white."

SPECS: tuple[Spec, ...] = (
    Spec(
        name="lite",
        description="Lite tier: sessions, cron and webhook turns, a >512-byte session, "
                    "multi-line answers, a duplicate, a skip, an empty answer, two days.",
        config=LITE,
        step=timedelta(hours=3, minutes=1, seconds=1, milliseconds=1),
        steps=(
            Admit("lite-1", "The staging database moved to db-2.internal.",
                  session="web:thread-1"),
            Admit("lite-2", "Plan for the week:\n- ship replay fixtures\n- review  the   "
                            "health auditor\n\n  Done by Friday.\n",
                  session="web:thread-1",
                  attachments=(Attachment(media_type="image/png", size_bytes=1234),)),
            cron("lite-cron-1", "Nightly backup finished: 3 files, 0 errors."),
            Admit("lite-long-session", "Long conversation ids are stored as unknown.",
                  session=LONG_SESSION, speaker_kind="unknown"),
            Drain(expect=4),  # the clock crosses midnight here
            Admit("lite-1", "The staging database moved to db-2.internal.",
                  session="web:thread-1", expect="duplicate"),
            Admit("lite-1", "The staging database moved to db-3.internal.",
                  session="web:thread-1", expect="rejected"),
            Admit("lite-skip", "Checked the inbox.\nNOTHING_TO_REPORT", expect="skipped"),
            webhook("lite-hook-1", "Deploy webhook: release 1.4.2 is live.",
                    session="hook:deploy"),
            Admit("lite-blank", " \n\t \n", session="web:thread-2"),
            Admit("lite-3", "Second day, second thread.\r\nWindows line endings collapse.",
                  session="web:thread-2"),
            Drain(expect=3),
            Drain(expect=0),
        ),
    ),
    Spec(
        name="journal-repeats",
        description="Journal tier: whitespace, NBSP, full-width and ligature (NFKC) variants "
                    "converge on one memory; case variants stay distinct; repeats within one "
                    "drain, across drains and across days.",
        config=JOURNAL_MODE,
        step=timedelta(hours=5, minutes=7, milliseconds=250),
        steps=(
            Admit("jr-1", COFFEE, session="s-1"),
            Admit("jr-2", "  Coffee   order:\toat flat white.\n", session="s-2"),
            Admit("jr-3", "Ｃｏｆｆｅｅ order: oat\u00a0flat white.", session="s-3"),
            Admit("jr-4", "coffee order: oat flat white.", session="s-1"),
            Admit("jr-5", "COFFEE ORDER: OAT FLAT WHITE.", session="s-1"),
            Drain(expect=5),
            Admit("jr-6", "The \ufb01le lives in ~/notes.", session="s-4"),
            Admit("jr-7", "The file lives in ~/notes.", session="s-5"),
            Admit("jr-8", "Caf\u00e9 at noon.", session="s-4"),
            Admit("jr-9", "Cafe\u0301 at noon.", session="s-5"),  # combining acute: NFKC
            Drain(expect=4),  # next day
            Admit("jr-10", "Coffee order:\n\noat flat white.", session="s-6"),  # across days
            Admit("jr-1", COFFEE, session="s-1", expect="duplicate"),
            Admit("jr-1", COFFEE.upper(), session="s-1", expect="rejected"),
            Admit("jr-11", "\u2003\u3000", session="s-6"),  # only whitespace: outcome empty
            Drain(expect=2),
        ),
    ),
    Spec(
        name="bujo-audit",
        description="BuJo tier with append-host-summary: audit lines only (no daily/), "
                    "including cron and webhook turns, a >512-byte session, multi-line text, "
                    "a duplicate and a skip.",
        config=BUJO_AUDIT,
        step=timedelta(hours=4, minutes=13, seconds=7, milliseconds=5),
        steps=(
            Admit("bj-1", "Booked the dentist for Tuesday 9:00.", session="web:abc"),
            cron("bj-cron-1", "Weekly review reminder sent."),
            webhook("bj-hook-1", "GitHub push: 3 commits to main.", session="hook:gh"),
            Drain(expect=3),
            Admit("bj-2", "Notes:\n  first line\n  second line", session=LONG_SESSION),
            Admit("bj-1", "Booked the dentist for Tuesday 9:00.", session="web:abc",
                  expect="duplicate"),
            Admit("bj-skip", "NOTHING_TO_REPORT", expect="skipped"),
            Admit("bj-3", "Day two: picked up the parcel.", speaker_kind="unknown"),
            Drain(expect=2),
        ),
    ),
    Spec(
        name="escaping-unicode",
        description="Journal tier: Markdown/HTML escaping (<!--, -->, &, <b>), C0/C1 controls, "
                    "U+202E bidi override, Hebrew/Arabic RTL, emoji incl. ZWJ sequences, CJK, "
                    "full-width letters and combining accents (NFKC); sessions with spaces, "
                    "'=', '-->' and non-ASCII (percent-encoded in the metadata comment).",
        config=JOURNAL_MODE,
        step=timedelta(hours=6, minutes=59, seconds=59, milliseconds=999),
        steps=(
            Admit("eu-html", "Comment <!-- not closed, then --> and a & b <b>bold</b> "
                             "&amp; <script>x</script>", session="web:thread one"),
            Admit("eu-controls", "bell\x07 nul\x00 esc\x1b[31mred\x1b[0m del\x7f c1\x9b "
                                 "nel\x85 ls\u2028 ps\u2029 vt\x0b ff\x0c end",
                  session="k=v&x=y"),
            Admit("eu-bidi", "invoice \u202egnp.exe and \u2066isolate\u2069 \u202aemb\u202c",
                  session="--> <!-- x"),
            Admit("eu-rtl", "שלום עולם — مرحبا بالعالم — mixed עברית and English",
                  session="web:שיחה"),
            Drain(expect=4),
            Admit("eu-emoji", "👩\u200d💻 coder, 👨\u200d👩\u200d👧\u200d👦 family, 🏳️\u200d🌈, "
                              "🇮🇱 flag, 👍🏽 tone", session="web:スレッド-1"),
            Admit("eu-cjk", "東京で会議、明日は大阪。 회의는 내일. 中文测试", session="微信:群"),
            Admit("eu-fullwidth", "ＡＢＣ１２３ ｆｕｌｌ－ｗｉｄｔｈ ① ㎏ ﬃ", session="s p a c e"),
            Admit("eu-combining", "re\u0301sume\u0301 na\u00efve Z\u0351\u0362a\u0308lgo",
                  session="%41%20encoded?"),
            Admit("eu-markdown", "# not a heading * [link](http://x) `code` _u_ | table |",
                  session="web:thread one"),
            Admit("eu-fullwidth-dup", "ABC123 full-width ① ㎏ ﬃ", session="s p a c e"),
            Drain(expect=6),
        ),
    ),
    Spec(
        name="escaping-audit",
        description="BuJo audit lines with the same hostile text: escaping, controls, bidi, "
                    "RTL, emoji, CJK (audit keeps the summary as given: no NFKC), and "
                    "percent-encoded sessions in <!--audit ...--> comments.",
        config=BUJO_AUDIT,
        step=timedelta(hours=11, minutes=11, milliseconds=111),
        steps=(
            Admit("ea-html", "<!-- open --> close & <b>b</b>", session="a b=c-->d"),
            Admit("ea-bidi", "x \u202egnp.exe\x00\x1b[0m שלום مرحبا", session="web:שיחה"),
            webhook("ea-emoji", "👩\u200d💻 東京 ＡＢＣ re\u0301sume\u0301", session="微信"),
            Drain(expect=3),
        ),
    ),
    Spec(
        name="bujo-capture",
        description="BuJo capture with a scripted model: novel facts with entities and a "
                    "relation (graph.jsonl), an owner preference (stated and added in review), "
                    "a low-salience assistant line dropped with the entity and relation only it "
                    "named, a task line stored as a note (A19), a failed review retried from "
                    "the retained plan, a correction that SUPERSEDEs (sidecar lifecycle), an "
                    "UPDATE that rewrites text, a review that drops an assistant line, "
                    "structural duplicates (NOOP, outcome empty) and unicode/escaping in "
                    "capture text, answers, memory text, entity names and sessions.",
        config=BUJO_CAPTURE,
        step=timedelta(hours=2, minutes=3, seconds=7, milliseconds=11),
        steps=(
            # day 1
            Admit("cap-facts", "Noted: Morgan is at Acme, and window seats it is.",
                  session="web:chat-1",
                  capture_text="Morgan works at Acme Robotics. I prefer window seats on "
                               "trains."),
            Admit("cap-task", "I'll keep that in mind.", session="web:chat-1",
                  capture_text="Morgan lives in Berlin. Remind me to call the dentist on "
                               "Friday."),
            Drain(expect=2),
            Admit("cap-retry", "Your flight lands at 18:05.", session="web:chat-2",
                  capture_text="When does the Lisbon flight land? Also, I always take the "
                               "stairs."),
            Drain(expect=1),  # extraction retained, the review times out: AttemptFailed
            Drain(expect=1),  # backoff passed: the retained plan is reviewed, not re-extracted
            # day 2
            Admit("cap-correction", "Got it, Madrid.", session="web:chat-3",
                  capture_text="Actually Morgan moved to Madrid last month."),
            Drain(expect=1),
            Admit("cap-update", "Congratulations to Morgan!", session="web:chat-3",
                  capture_text="Morgan got promoted: lead engineer at Acme Robotics now."),
            Drain(expect=1),
            Admit("cap-duplicate", "Window seats, noted again.", session="web:chat-4",
                  capture_text="Remember: window seats on trains."),
            Admit("cap-unicode",
                  "Noted \u2014 Zo\u00eb in \u6771\u4eac <!-- x --> & <b>ok</b> "
                  "\U0001f1ef\U0001f1f5 \u0645\u0631\u062d\u0628\u0627 \u202eevil\u202c",
                  session="web:\u6771\u4eac <b>&</b> --> x=1%",
                  capture_text="Zo\u00eb \u00c5ngstr\u00f6m lives in \u6771\u4eac <!-- not a "
                               "comment --> & <b>bold</b> \u202ebidi\u202c bell\x07 "
                               "\U0001f469\u200d\U0001f4bb \u05e9\u05dc\u05d5\u05dd\r\n"
                               "\uff26\uff55\uff4c\uff4c\uff0d\uff57\uff49\uff44\uff54\uff48 "
                               "\ufb01le"),
            Drain(expect=2),
            Drain(expect=0),
        ),
        script=(
            extract("cap-facts", [
                memory("Morgan works at Acme Robotics", salience=0.9, entities=["m", "a"]),
                memory("I prefer window seats on trains", labels=["preference"]),
                # an assistant line under salience 0.5: dropped, with Zürich and m visits z
                memory("Z\u00fcrich is lovely in July", source="assistant", salience=0.3,
                       entities=["z"]),
            ], [entity("m", "Morgan", "person"), entity("a", "Acme Robotics", "organization"),
                entity("z", "Z\u00fcrich", "place")],
                [("m", "works_at", "a"), ("m", "visits", "z")]),
            review("cap-facts", "keep"),  # listed: the owner fact (the preference is not)
            # no reconcile call: nothing is stored yet, every line is clearly novel (E5)
            extract("cap-task", [
                memory("Morgan lives in Berlin", entities=["m"]),
                memory("Call the dentist on Friday", kind="task", salience=0.7),
            ], [entity("m", "Morgan", "person")]),
            review("cap-task", "keep", "keep"),
            # Berlin shares Morgan with a stored line (E29): offered as m1, the model adds it
            reconcile("cap-task", {"action": "ADD"}),
            extract("cap-retry", [
                memory("I always take the stairs", salience=0.7),
                memory("The assistant retried the search tool twice", source="assistant",
                       salience=0.8),
                memory("The Lisbon flight lands at 18:05", source="assistant", salience=0.9),
            ]),
            failure("review", "cap-retry", "model_timeout"),
            review("cap-retry", "add_preference", "drop", "keep"),
            extract("cap-correction", [
                memory("Morgan moved to Madrid last month", salience=0.9, entities=["m"]),
            ], [entity("m", "Morgan", "person")]),
            review("cap-correction", "keep"),
            # offered, newest first: m1 "Morgan lives in Berlin", m2 "Morgan works at Acme"
            reconcile("cap-correction", {"action": "SUPERSEDE", "target": "m1",
                                         "text": "Morgan lives in Madrid"}),
            extract("cap-update", [
                memory("Morgan is now a lead engineer at Acme Robotics", salience=0.9,
                       entities=["m", "a"]),
            ], [entity("m", "Morgan", "person"), entity("a", "Acme Robotics", "organization")],
                [("m", "works_at", "a")]),  # already stated: no second relation
            review("cap-update", "keep"),
            # offered: m1 "Morgan lives in Madrid" (newest), m2 "Morgan works at Acme Robotics"
            reconcile("cap-update", {"action": "UPDATE", "target": "m2",
                                     "text": "Morgan is a lead engineer at Acme Robotics"}),
            # the same words in the same order as a stored line, and twice in the plan (E16):
            # NOOP without a review (nothing eligible) or a reconcile call; outcome empty
            extract("cap-duplicate", [
                memory("I prefer  window seats\ton trains", labels=["preference"]),
                memory("I prefer window seats on trains", labels=["preference"]),
            ]),
            extract("cap-unicode", [
                memory("Zo\u00eb \u00c5ngstr\u00f6m lives in \u6771\u4eac & likes <b>bold</b> "
                       "type \U0001f469\u200d\U0001f4bb", entities=["zoe", "tokyo"]),
                memory("\uff26\uff55\uff4c\uff4c\uff0d\uff57\uff49\uff44\uff54\uff48 \ufb01le "
                       "names: re\u0301sume\u0301, na\u00efve, \u05e9\u05dc\u05d5\u05dd, "
                       "\u0645\u0631\u062d\u0628\u0627, \u6771\u4eac\u3067\u4f1a\u8b70, "
                       "a | b * [x](y) `z`", source="document", salience=0.6),
            ], [entity("zoe", "Zo\u00eb \u00c5ngstr\u00f6m", "person"),
                entity("tokyo", "\u6771\u4eac", "place")],
                [("zoe", "lives_in", "tokyo")]),
            review("cap-unicode", "keep"),
        ),
        calls=(
            ("extract", "cap-facts"), ("review", "cap-facts"),
            ("extract", "cap-task"), ("review", "cap-task"), ("reconcile", "cap-task"),
            ("extract", "cap-retry"), ("review", "cap-retry"),
            ("review", "cap-retry"),
            ("extract", "cap-correction"), ("review", "cap-correction"),
            ("reconcile", "cap-correction"),
            ("extract", "cap-update"), ("review", "cap-update"), ("reconcile", "cap-update"),
            ("extract", "cap-duplicate"),
            ("extract", "cap-unicode"), ("review", "cap-unicode"),
        ),
        memories=(
            # the UPDATE rewrote this line in place (it keeps its row and its labels)
            ("Morgan is a lead engineer at Acme Robotics", "note", "open", "fact"),
            ("I prefer window seats on trains", "note", "open", "fact,preference"),
            ("Morgan lives in Berlin", "note", "superseded", "fact"),
            ("Call the dentist on Friday", "note", "open", ""),  # A19: no coarse fact
            ("I always take the stairs", "note", "open", "fact,preference"),  # review added
            ("The Lisbon flight lands at 18:05", "note", "open", ""),
            ("Morgan lives in Madrid", "note", "open", "fact"),
            ("Zo\u00eb \u00c5ngstr\u00f6m lives in \u6771\u4eac & likes <b>bold</b> type "
             "\U0001f469\u200d\U0001f4bb", "note", "open", "fact"),
            ("\uff26\uff55\uff4c\uff4c\uff0d\uff57\uff49\uff44\uff54\uff48 \ufb01le names: "
             "re\u0301sume\u0301, na\u00efve, \u05e9\u05dc\u05d5\u05dd, "
             "\u0645\u0631\u062d\u0628\u0627, \u6771\u4eac\u3067\u4f1a\u8b70, "
             "a | b * [x](y) `z`", "note", "open", ""),
        ),
    ),
    Spec(
        name="lifecycle",
        description="The note lifecycle and Remember on BuJo (issue 14): a capture that names "
                    "a person and stores a document's note; text-only and enhanced Remember "
                    "writes (about an existing person, replaceable, validity as a date and as "
                    "an offset instant, a due date); a Remember that supersedes the captured "
                    "note and a second that supersedes the first (sidecar lifecycle with a "
                    "Remember authority); a duplicate; and a status change to each of done, "
                    "scheduled, migrated and dropped, one back to open; the insight marker on "
                    "a dropped and a superseded line; a forget (a tombstone in the export).",
        config=BUJO_CAPTURE,
        step=timedelta(hours=5, minutes=7, seconds=11, milliseconds=13),
        steps=(
            Admit("lc-morgan", "Noted, green tea for Morgan.", session="web:lc-1",
                  capture_text="The cafe menu says Morgan orders green tea."),
            Drain(expect=1),
            Remember("Morgan is allergic to peanuts.", about="Morgan", session="web:lc-1"),
            Remember("Morgan switched to black tea.", supersedes=("lc-morgan", 0),
                     about="Morgan", session="web:lc-2"),
            Remember("Morgan now drinks only water.",
                     supersedes="Morgan switched to black tea.", session="web:lc-2"),
            Remember("The inbox holds 3 unread messages.", replaceable=True),
            Remember("The inbox holds 3 unread messages.", expect="duplicate",
                     session="web:lc-3"),
            Remember("The office is closed for renovation.", valid_from="2026-07-06",
                     valid_to="2026-08-01T17:00:00+02:00"),
            Remember("Renew the passport.", due_at="2026-09-30"),
            Remember("Water the ferns."),
            Remember("Book the venue."),
            Remember("Send the invitations."),
            Remember("Order the cake."),
            SetStatus("Water the ferns.", "done", reason="watered"),
            SetStatus("Book the venue.", "scheduled"),
            SetStatus("Send the invitations.", "migrated"),
            SetStatus("Order the cake.", "dropped", reason="no-party"),
            SetStatus("Water the ferns.", "open"),
            Mark("Order the cake."),  # H6: a closed line keeps its insight marker
            Mark(("lc-morgan", 0)),
            # a forget: the line's text is sealed, so the export keeps a tombstone
            Forget("Morgan is allergic to peanuts."),
            Drain(expect=0),
        ),
        script=(
            extract("lc-morgan", [
                memory("Morgan orders green tea", source="document", salience=0.7,
                       entities=["m"]),
            ], [entity("m", "Morgan", "person")]),
        ),
        calls=(("extract", "lc-morgan"),),
        memories=(
            ("Morgan orders green tea", "note", "superseded", ""),
            ("Morgan switched to black tea.", "note", "superseded", ""),
            ("Morgan now drinks only water.", "note", "open", ""),
            ("The inbox holds 3 unread messages.", "note", "open", ""),
            ("The office is closed for renovation.", "note", "open", ""),
            ("Renew the passport.", "note", "open", ""),
            ("Water the ferns.", "note", "open", ""),
            ("Book the venue.", "note", "scheduled", ""),
            ("Send the invitations.", "note", "migrated", ""),
            ("Order the cake.", "note", "dropped", ""),
        ),
    ),
    Spec(
        name="intentions",
        description="The intention lifecycle with every M switch on (M13-M22): the owner's "
                    "task lines in each intentState (planned, pending, done, abandoned), ends "
                    "as a civil date and as an offset instant (due=, never valid_to); "
                    "proposals an assistant line, a plain note and a cron turn carry are "
                    "ignored; the same sentence in a new state supersedes without a "
                    "classifier; a classifier UPDATE becomes a SUPERSEDE that inherits the "
                    "end; a NOOP without an end keeps it; a NOOP with a new end supersedes.",
        config=BUJO_INTENTS,
        step=timedelta(hours=2, minutes=3, seconds=5),
        steps=(
            Admit("in-plans", "Noted your plans.", session="web:in-1",
                  capture_text="Passport by June 30; the Lisbon trip by July 31 (London "
                               "time); I called the dentist; the cello is off."),
            Admit("in-lisbon", "Enjoy Lisbon!", session="web:in-1",
                  capture_text="The Lisbon trip is booked."),
            Admit("in-consulate", "Good.", session="web:in-2",
                  capture_text="My passport appointment at the consulate is set."),
            Admit("in-again", "Noted.", session="web:in-2",
                  capture_text="I'll do the passport at the consulate soon."),
            Admit("in-july", "Noted.", session="web:in-3",
                  capture_text="The passport can wait until July 15."),
            cron("in-cron", "Back up the laptop by June 20."),
            Drain(expect=6),
            # two unlabelled notes 45 days apart, equal on every base signal: recency's case
            Remember("Cafe Oak serves lunch."),
            Wait(days=45),
            Remember("Cafe Elm serves lunch."),
        ),
        script=(
            extract("in-plans", [
                intention("Renew the passport", state="planned", end="2026-06-30",
                          entities=["pp"]),
                intention("Book the Lisbon trip", state="pending",
                          end="2026-07-31T23:59:59.999+01:00", entities=["lx"]),
                intention("Call the dentist", state="done", entities=["dn"]),
                intention("Learn the cello", state="abandoned"),
                intention("The assistant will compare flight prices", state="planned",
                          end="2026-06-01", source="assistant"),
                intention("The passport office opens at nine", state="pending",
                          end="2026-06-02", kind="note"),
            ], [entity("pp", "passport", "document"), entity("lx", "Lisbon", "place"),
                entity("dn", "dentist", "person")]),
            review("in-plans", "keep", "keep", "keep", "keep", "keep", "keep"),
            extract("in-lisbon", [intention("Book the Lisbon trip", state="done",
                                            entities=["lx"])],
                    [entity("lx", "Lisbon", "place")]),
            review("in-lisbon", "keep"),
            extract("in-consulate", [intention("Passport appointment at the consulate",
                                               state="planned", entities=["pp"])],
                    [entity("pp", "passport", "document")]),
            review("in-consulate", "keep"),
            reconcile("in-consulate", {"action": "UPDATE", "target": "m1",
                                       "text": "Renew the passport at the consulate"}),
            extract("in-again", [intention("Renew the passport at the consulate soon",
                                           state="planned", entities=["pp"])],
                    [entity("pp", "passport", "document")]),
            review("in-again", "keep"),
            reconcile("in-again", {"action": "NOOP", "target": "m1"}),
            extract("in-july", [intention("Renew the passport before mid July",
                                          end="2026-07-15", entities=["pp"])],
                    [entity("pp", "passport", "document")]),
            review("in-july", "keep"),
            reconcile("in-july", {"action": "NOOP", "target": "m1"}),
            extract("in-cron", [intention("Back up the laptop", state="planned",
                                          end="2026-06-20")]),
            review("in-cron", "keep"),
        ),
        calls=(("extract", "in-plans"), ("review", "in-plans"),
               ("extract", "in-lisbon"), ("review", "in-lisbon"),
               ("extract", "in-consulate"), ("review", "in-consulate"),
               ("reconcile", "in-consulate"),
               ("extract", "in-again"), ("review", "in-again"), ("reconcile", "in-again"),
               ("extract", "in-july"), ("review", "in-july"), ("reconcile", "in-july"),
               ("extract", "in-cron"), ("review", "in-cron")),
        memories=(
            ("Renew the passport", "note", "superseded", ""),
            ("Book the Lisbon trip", "note", "superseded", ""),
            ("Call the dentist", "note", "done", ""),
            ("Learn the cello", "note", "dropped", ""),
            ("The assistant will compare flight prices", "note", "open", ""),
            ("The passport office opens at nine", "note", "open", "fact"),
            ("Book the Lisbon trip", "note", "done", ""),
            ("Renew the passport at the consulate", "note", "superseded", ""),
            ("Renew the passport before mid July", "note", "scheduled", ""),
            ("Back up the laptop", "note", "open", ""),
            ("Cafe Oak serves lunch.", "note", "open", ""),
            ("Cafe Elm serves lunch.", "note", "open", ""),
        ),
        reads=(
            # M25: the note's due date (07-15, passed) ends it only under intentExpiry
            Read("passport, switches off", "recall", READ_AT, "renew the passport",
                 switches=NO_POLICY),
            Read("passport, intentExpiry", "recall", READ_AT, "renew the passport",
                 switches={"recall": {"intentExpiry": True, "recency": False}}),
            # M24: the automatic context leaves out every dated and every closed line
            Read("automatic, switches off", "auto", READ_AT,
                 "Should I renew the passport before mid July?", switches=NO_POLICY),
            Read("automatic, intentExpiry", "auto", READ_AT,
                 "Should I renew the passport before mid July?",
                 switches={"recall": {"intentExpiry": True, "recency": False}}),
            # M28-M31: recency puts the newer of two equal notes first, scores unchanged
            Read("cafes, switches off", "recall", READ_AT, "cafe serves lunch",
                 switches=NO_POLICY),
            Read("cafes, recency", "recall", READ_AT, "cafe serves lunch",
                 switches={"recall": {"intentExpiry": False, "recency": True}}),
        ),
    ),
    Spec(
        name="profile",
        description="The owner profile (M1-M9): owner-stated facts and agent-scope "
                    "preferences of host-verified owner turns, newest first; a superseded "
                    "fact, a task turned note (an intention), an event (an episode), a peer's "
                    "preference and an assistant-noted Remember line stay out. Golden reads: "
                    "the profile, and the automatic context of an owner turn (profile first), "
                    "of a turn that is not the owner's (nothing, M2) and with the profile off.",
        config=BUJO_PROFILE,
        step=timedelta(hours=3, minutes=1, seconds=7),
        steps=(
            Admit("pr-me", "Noted.", session="web:pr-1",
                  capture_text="I live in Lisbon, like window seats and take the stairs; the "
                               "passport renewal is on my list; I ran a marathon in May."),
            Admit("pr-peer", "Noted.", session="web:pr-2", speaker_kind="unknown",
                  capture_text="I prefer aisle seats."),
            Admit("pr-moved", "Congratulations!", session="web:pr-3",
                  capture_text="I moved to Porto last week."),
            Drain(expect=3),
            Remember("The owner's dentist is Dr. Sousa."),
        ),
        script=(
            extract("pr-me", [
                {**memory("I live in Lisbon", entities=["me"]),
                 "fact": {"entity": "me", "key": "home_town", "value": "Lisbon"}},
                memory("I prefer window seats", labels=["preference"]),
                memory("I take the stairs every morning"),
                memory("Renew the passport", kind="task"),
                memory("I ran a marathon in May", kind="event"),
            ], [entity("me", "Ana", "person")]),
            review("pr-me", "keep", "keep", "keep", "keep"),
            extract("pr-peer", [memory("I prefer aisle seats", labels=["preference"])]),
            # close to the owner's own taste, which a peer never replaces (E14)
            reconcile("pr-peer", {"action": "ADD"}),
            extract("pr-moved", [
                {**memory("I moved to Porto", entities=["me"]),
                 "fact": {"entity": "me", "key": "home_town", "value": "Porto"}},
            ], [entity("me", "Ana", "person")]),
            review("pr-moved", "keep"),
            reconcile("pr-moved", {"action": "SUPERSEDE", "target": "m1",
                                   "text": "I live in Porto"}),
        ),
        calls=(("extract", "pr-me"), ("review", "pr-me"), ("extract", "pr-peer"),
               ("reconcile", "pr-peer"), ("extract", "pr-moved"), ("review", "pr-moved"),
               ("reconcile", "pr-moved")),
        memories=(
            ("I live in Lisbon", "note", "superseded", "fact"),
            ("I prefer window seats", "note", "open", "fact,preference"),
            ("I take the stairs every morning", "note", "open", "fact"),
            ("Renew the passport", "note", "open", ""),
            ("I ran a marathon in May", "event", "open", "fact"),
            ("I prefer aisle seats", "note", "open", "preference"),
            ("I live in Porto", "note", "open", "fact"),
            ("The owner's dentist is Dr. Sousa.", "note", "open", ""),
        ),
        reads=(
            Read("profile", "profile", READ_AT),
            Read("automatic, owner turn", "auto", READ_AT,
                 "Do I prefer window seats on the train?"),
            Read("automatic, not the owner", "auto", READ_AT,
                 "Do I prefer window seats on the train?", owner=False),
            Read("automatic, profile off", "auto", READ_AT,
                 "Do I prefer window seats on the train?",
                 switches={"profile": {"enabled": False}}),
        ),
    ),
    Spec(
        name="consolidation",
        description="The living index.md (L6-L9): a capture naming one person under three "
                    "lexically equivalent display names (case, fullwidth NFKC; three graph "
                    "nodes of different types, one preview group), a project, and three "
                    "calendar/time nodes (a weekday, an ISO date, a relative week) the preview "
                    "leaves out; two Remember lines whose folded text collides (one duplicate "
                    "group, though not structural duplicates); a Remember that supersedes a "
                    "captured line, whose mentions then leave the preview.",
        config=BUJO_CAPTURE,
        step=timedelta(hours=1, minutes=2, seconds=3),
        steps=(
            Admit("co-graph", "Noted the Atlas plans.", session="web:co-1",
                  capture_text="The plan says Morgan launches Atlas on Friday."),
            Drain(expect=1),
            Remember("Tea with Morgan at noon."),
            Remember("tea with  MORGAN at noon."),
            # the first line leaves recall (sidecar lifecycle): its mentions leave the preview
            Remember("Morgan hands the Atlas launch over.", supersedes=("co-graph", 0)),
            Drain(expect=0),
        ),
        script=(
            extract("co-graph", [
                memory("Morgan plans the Atlas launch for Friday", source="document",
                       salience=0.7, entities=["m", "a", "fri"]),
                memory("MORGAN ships Atlas on 2026-07-10", source="document", salience=0.7,
                       entities=["mo", "a", "d"]),
                memory("The \uff2d\uff4f\uff52\uff47\uff41\uff4e project starts next week",
                       source="document", salience=0.7, entities=["w", "nw"]),
            ], [entity("m", "Morgan", "person"), entity("mo", "MORGAN", "organization"),
                entity("w", "\uff2d\uff4f\uff52\uff47\uff41\uff4e", "project"),
                entity("a", "Atlas", "project"), entity("fri", "Friday", "concept"),
                entity("d", "2026-07-10", "date"), entity("nw", "next week", "event")],
                [("m", "leads", "a")]),
        ),
        calls=(("extract", "co-graph"),),
        memories=(
            ("Morgan plans the Atlas launch for Friday", "note", "superseded", ""),
            ("MORGAN ships Atlas on 2026-07-10", "note", "open", ""),
            ("The \uff2d\uff4f\uff52\uff47\uff41\uff4e project starts next week", "note",
             "open", ""),
            ("Tea with Morgan at noon.", "note", "open", ""),
            ("tea with MORGAN at noon.", "note", "open", ""),  # Remember collapses spaces
            ("Morgan hands the Atlas launch over.", "note", "open", ""),
        ),
    ),
)


# -- building -----------------------------------------------------------------------------------


def model_script(spec: Spec) -> bytes:
    """The spec's scripted replies as ``model.jsonl`` (one ScriptedChat record a line)."""
    return "".join(json.dumps(reply.record(), ensure_ascii=False) + "\n"
                   for reply in spec.script).encode("utf-8")


def memory_lines(root: Path) -> list[tuple[str, str, str, str]]:
    """(text, kind, status, labels) of every memory line, in index order."""
    conn = open_active_index(root)
    assert conn is not None, f"{root}: no active index generation"
    try:
        return [tuple(row) for row in conn.execute(
            "SELECT m.text, m.kind, m.status, coalesce(mm.labels, '') FROM memories m "
            "LEFT JOIN memory_meta mm ON mm.id = m.id ORDER BY m.rowid")]
    finally:
        conn.close()


def _index_value(root: Path, sql: str, key: str) -> str:
    conn = open_active_index(root)
    assert conn is not None, f"{root}: no active index generation"
    try:
        row = conn.execute(sql, (key,)).fetchone()
    finally:
        conn.close()
    assert row is not None, f"{root}: nothing stored for {key!r}"
    return str(row[0])


def line_id(root: Path, ref: str | tuple[str, int] | None) -> str | None:
    """The memory id a step names: a stored line by its text, or a captured line's run id."""
    if ref is None or isinstance(ref, str):
        return None if ref is None else _index_value(
            root, "SELECT id FROM memories WHERE text = ? ORDER BY rowid", journal_text(ref))
    return run_memory_id(run_hash(ref[0]), ref[1])


def person_id(root: Path, name: str) -> str:
    """The person node a capture made for ``name``."""
    return _index_value(root, "SELECT id FROM entities WHERE type = 'person' AND name = ?",
                        name)


def run_spec(spec: Spec, root: Path, script: Path | None = None) -> None:
    """Build ``root`` live from the spec's steps, checking every expected status and count.

    A capture spec runs against ``script`` (its model.jsonl) and must make exactly the
    expected model calls, use every scripted reply and end with the expected memory lines.
    """
    config = parse_config(spec.config)
    clock = FakeClock(spec.start, spec.step)
    model = ScriptedChat(script) if script is not None else None
    embedder = fixture_embedder(config.embeddings.dim) if model is not None and \
        config.embeddings is not None else None
    with MemoryStore.open(root, config, clock=clock, background=False, chat_model=model,
                          embedder=embedder) as store:
        for number, step in enumerate(spec.steps):
            clock.tick()
            if isinstance(step, Wait):
                clock.now += timedelta(days=step.days)
                continue
            if isinstance(step, Drain):
                got: int | str = store.drain()
                want: int | str = step.expect
            elif isinstance(step, Remember):
                got, want = store.remember(
                    step.text, session=step.session,
                    about=None if step.about is None else person_id(root, step.about),
                    supersedes=line_id(root, step.supersedes),
                    replaceable=step.replaceable, valid_from=step.valid_from,
                    valid_to=step.valid_to, due_at=step.due_at).status, step.expect
            elif isinstance(step, Mark):
                memory_id = line_id(root, step.line)
                assert memory_id is not None
                got, want = store.mark(memory_id, insight=step.insight).outcome, "changed"
            elif isinstance(step, Forget):
                memory_id = line_id(root, step.line)
                assert memory_id is not None
                got, want = store.forget(memory_id, reason=step.reason).status, "forgotten"
            elif isinstance(step, SetStatus):
                got = store.set_status(line_id(root, step.text) or "", step.status,
                                       reason=step.reason).outcome
                want = "changed"
            else:
                result: AdmissionResult = store.persist_completed_turn(step.turn())
                got, want = result.status, step.expect
            if got != want:
                raise AssertionError(f"{spec.name} step {number} ({step}): got {got!r}, "
                                     f"expected {want!r}")
    if model is not None:
        names = {run_hash(reply.run_id): reply.run_id for reply in spec.script}
        calls = tuple((stage, names.get(turn or "", turn)) for stage, turn in model.calls)
        if calls != spec.calls:
            raise AssertionError(f"{spec.name}: model calls {calls}, expected {spec.calls}")
        if model.remaining():
            raise AssertionError(f"{spec.name}: unused scripted replies {model.remaining()}")
        lines = tuple(memory_lines(root))
        if lines != spec.memories:
            raise AssertionError(f"{spec.name}: memory lines {lines}, expected "
                                 f"{spec.memories}")


def render_fixture(spec: Spec, script: Path | None = None) -> dict[str, bytes]:
    """Fixture-relative path -> bytes, after checking that replay reproduces the live root.

    A capture spec runs against its own replies written as model.jsonl, or against
    ``script`` (a committed model.jsonl) when given.
    """
    with tempfile.TemporaryDirectory(prefix=f"fixture-{spec.name}-") as tmp:
        live, replayed, export = Path(tmp) / "live", Path(tmp) / "replayed", Path(tmp) / JOURNAL
        replies: bytes | None = None
        if spec.script:
            if script is None:
                script = Path(tmp) / MODEL
                script.write_bytes(model_script(spec))
            replies = script.read_bytes()
        elif script is not None:
            raise ValueError(f"{spec.name} is not a capture fixture: it takes no model script")
        run_spec(spec, live, script)
        MemoryRoot.open(live).export_to(export)
        journal = export.read_bytes()
        live_tree = projection_tree(live)
        replay_export(export, replayed)
        replayed_tree = projection_tree(replayed)
        mismatch = tree_diff(live_tree, replayed_tree)
        if mismatch:
            raise AssertionError(f"{spec.name}: replay differs from live: {mismatch}")
        for root in (live, replayed):
            report = MemoryRoot.open(root).health()
            if report.status != "clean":
                raise AssertionError(f"{spec.name}: health of {root.name}: {report.to_json()}")
        re_export = Path(tmp) / "re-export.jsonl"
        MemoryRoot.open(replayed).export_to(re_export)
        if re_export.read_bytes() != journal:
            raise AssertionError(f"{spec.name}: exporting the replayed root changes the journal")
        reads = golden_reads(spec, replayed) if spec.reads else None
    files = {JOURNAL: journal}
    if reads is not None:
        files[READS] = reads
    if replies is not None:
        files[MODEL] = replies
    files.update({f"{EXPECTED}/{rel}": data for rel, data in live_tree.items()})
    return files


class _NoModel:
    """A chat model for golden reads: reading never calls one (G1)."""

    name = "none"

    def complete(self, messages: Sequence[Any], *, timeout: float) -> str:
        raise AssertionError("a read called the chat model")


def golden_reads(spec: Spec, root: Path) -> bytes:
    """``reads.jsonl``: each of the spec's reads on ``root`` (a replayed root), one canonical
    JSON line ``{"name", "result"}`` per read (see :class:`Read`)."""
    lines = []
    for read in spec.reads:
        block = dict(spec.config)
        for key, values in read.switches.items():
            block[key] = {**block.get(key, {}), **values}
        config = parse_config(block)
        assert config.embeddings is not None, spec.name
        with MemoryStore.open(root, config, clock=lambda at=read.at: at, background=False,
                              chat_model=_NoModel(), time_zone="UTC",
                              embedder=fixture_embedder(config.embeddings.dim)) as store:
            store.background.embed_pending()
            if read.call == "recall":
                result = store.recall(read.text, 10).to_json()
            elif read.call == "auto":
                result = store.auto_context(read.text, owner=read.owner).to_json()
            else:
                assert read.call == "profile", read
                result = store.profile().to_json()
        lines.append(json.dumps({"name": read.name, "result": result}, sort_keys=True,
                                ensure_ascii=False) + "\n")
    return "".join(lines).encode("utf-8")


def fixture_files(directory: Path) -> dict[str, bytes]:
    """Every file under a fixture directory, by fixture-relative path."""
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def write_fixture(directory: Path, files: dict[str, bytes]) -> None:
    """Replace ``directory`` with exactly ``files`` (plain 0644 files, no stale leftovers)."""
    if directory.exists():
        shutil.rmtree(directory)
    for rel, data in sorted(files.items()):
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def fixture_dirs(base: Path) -> list[Path]:
    """Fixture directories under ``base``: those holding a journal.jsonl."""
    return sorted(p for p in base.iterdir() if p.is_dir() and (p / JOURNAL).is_file())


def build_all(dest: Path, specs: tuple[Spec, ...] = SPECS) -> list[str]:
    """Write every fixture under ``dest`` (all built and verified before any is written).

    Fixture directories under ``dest`` that no spec names any more are removed.
    """
    names = [spec.name for spec in specs]
    assert len(set(names)) == len(names), "fixture names must be unique"
    rendered = {spec.name: render_fixture(spec) for spec in specs}
    dest.mkdir(parents=True, exist_ok=True)
    for stale in fixture_dirs(dest):
        if stale.name not in rendered:
            shutil.rmtree(stale)
    for name, files in rendered.items():
        write_fixture(dest / name, files)
    return names


def iter_differences(committed: Path, fresh: Path) -> Iterator[str]:
    want = {p.name: p for p in fixture_dirs(fresh)}
    have = {p.name: p for p in fixture_dirs(committed)}
    for name in sorted(set(want) | set(have)):
        if name not in have:
            yield f"{name}/: missing"
        elif name not in want:
            yield f"{name}/: no spec builds it"
        else:
            for line in tree_diff(fixture_files(want[name]), fixture_files(have[name])):
                yield f"{name}/{line}"


def main(argv: list[str] | None = None, *, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed fixtures; write nothing")
    args = parser.parse_args(argv)
    # Specs include expected rejections (run id conflicts): keep their warnings quiet here.
    logging.getLogger("memory_es").setLevel(logging.ERROR)
    if args.check:
        with tempfile.TemporaryDirectory(prefix="fixtures-check-") as tmp:
            build_all(Path(tmp))
            differences = list(iter_differences(FIXTURES_DIR, Path(tmp)))
        for line in differences:
            out(line)
        out("fixtures are up to date" if not differences else
            "fixtures differ: run python replay_fixtures/regenerate.py and review git diff")
        return 1 if differences else 0
    for name in build_all(FIXTURES_DIR):
        out(f"wrote {FIXTURES_DIR.name}/{name}/")
    return 0


if __name__ == "__main__":
    with throwaway_key_store():  # the fixture roots are thrown away (exports keep no key)
        code = main()
    sys.exit(code)
