"""Regenerate the golden replay fixtures: ``python replay_fixtures/regenerate.py``.

Each fixture below is a list of steps (admit a turn, or drain) run against a fresh root with
a fake clock, so the journal is byte-deterministic. For each fixture this script

1. builds the root live (``MemoryStore`` + ``drain``) in a temp dir and exports its journal;
2. replays that export into a second, fresh temp root (``replay_export``);
3. asserts the replayed tree (daily/, audit/, index dump) equals the live one, and that
   ``health`` is clean on both, so a fixture can never capture a live/replay mismatch;
4. only then writes ``<name>/journal.jsonl`` and ``<name>/expected/`` (daily/*.md,
   audit/*.md and index.jsonl, a canonical dump of the index tables).

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw

from memory_es.config import parse_config
from memory_es.intake import AdmissionResult, Attachment, CompletedTurn
from memory_es.reader import export_journal_to_file, health
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export
from projections.replay import MARKDOWN_DIRS, ROOT_FILES, generation_path, read_current
from projections.sqlite_index import DUMP_ORDER, DUMP_TABLES

FIXTURES_DIR = Path(__file__).resolve().parent
JOURNAL = "journal.jsonl"
EXPECTED = "expected"
INDEX_DUMP = "index.jsonl"

LITE: dict[str, Any] = {}
JOURNAL_MODE: dict[str, Any] = {"mode": "journal", "embeddings": {"dim": 384}}
BUJO_AUDIT: dict[str, Any] = {
    "mode": "bujo", "embeddings": {"dim": 384}, "llm": {"provider": "ollama", "model": "m"},
}
EPOCH = datetime(2026, 7, 6, 12, 0, 0, tzinfo=UTC)


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


# -- canonical dumps (shared with the tests) ----------------------------------------------------


def dump_line(table: str, row: Any) -> str:
    return json.dumps({"table": table, "row": list(row)}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


def index_dump(root: Path) -> bytes:
    """Every row of the active index generation: table order, then rowid order."""
    generation = read_current(root)
    assert generation is not None, f"{root}: no active index generation"
    conn = apsw.Connection(str(generation_path(root, generation)),
                           flags=apsw.SQLITE_OPEN_READONLY)
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
    """daily/*.md and audit/*.md by root-relative path (every file there, whatever its name)."""
    found: dict[str, bytes] = {name: (root / name).read_bytes() for name in ROOT_FILES
                               if (root / name).is_file()}
    for kind in MARKDOWN_DIRS:
        directory = root / kind
        if directory.is_dir():
            for path in sorted(directory.iterdir()):
                found[f"{kind}/{path.name}"] = path.read_bytes()
    return found


def projection_tree(root: Path) -> dict[str, bytes]:
    """What a fixture's ``expected/`` holds for ``root``: Markdown plus the index dump."""
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

    def turn(self) -> CompletedTurn:
        return CompletedTurn(
            run_id=self.run_id, outcome="success", answer=self.answer, session=self.session,
            speaker_kind=self.speaker_kind, trigger=self.trigger, attachments=self.attachments,
        )


@dataclass(frozen=True)
class Drain:
    """``store.drain()``; ``expect`` is how many intakes it must resolve."""

    expect: int


Step = Admit | Drain


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    config: dict[str, Any]
    steps: tuple[Step, ...]
    step: timedelta = timedelta(minutes=1)
    start: datetime = EPOCH


def cron(run_id: str, answer: str, **kw: Any) -> Admit:
    return Admit(run_id, answer, trigger="cron", speaker_kind="trigger", **kw)


def webhook(run_id: str, answer: str, **kw: Any) -> Admit:
    return Admit(run_id, answer, trigger="webhook", speaker_kind="trigger", **kw)


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
)


# -- building -----------------------------------------------------------------------------------


def run_spec(spec: Spec, root: Path) -> None:
    """Build ``root`` live from the spec's steps, checking every expected status and count."""
    config = parse_config(spec.config)
    clock = FakeClock(spec.start, spec.step)
    with MemoryStore.open(root, config, clock=clock, background=False) as store:
        for number, step in enumerate(spec.steps):
            clock.tick()
            if isinstance(step, Drain):
                got: int | str = store.drain()
                want: int | str = step.expect
            else:
                result: AdmissionResult = store.persist_completed_turn(step.turn())
                got, want = result.status, step.expect
            if got != want:
                raise AssertionError(f"{spec.name} step {number} ({step}): got {got!r}, "
                                     f"expected {want!r}")


def render_fixture(spec: Spec) -> dict[str, bytes]:
    """Fixture-relative path -> bytes, after checking that replay reproduces the live root."""
    with tempfile.TemporaryDirectory(prefix=f"fixture-{spec.name}-") as tmp:
        live, replayed, export = Path(tmp) / "live", Path(tmp) / "replayed", Path(tmp) / JOURNAL
        run_spec(spec, live)
        export_journal_to_file(live, export)
        journal = export.read_bytes()
        live_tree = projection_tree(live)
        replay_export(export, replayed)
        replayed_tree = projection_tree(replayed)
        mismatch = tree_diff(live_tree, replayed_tree)
        if mismatch:
            raise AssertionError(f"{spec.name}: replay differs from live: {mismatch}")
        for root in (live, replayed):
            report = health(root)
            if report.status != "clean":
                raise AssertionError(f"{spec.name}: health of {root.name}: {report.to_json()}")
        re_export = Path(tmp) / "re-export.jsonl"
        export_journal_to_file(replayed, re_export)
        if re_export.read_bytes() != journal:
            raise AssertionError(f"{spec.name}: exporting the replayed root changes the journal")
    files = {JOURNAL: journal}
    files.update({f"{EXPECTED}/{rel}": data for rel, data in live_tree.items()})
    return files


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
    sys.exit(main())
