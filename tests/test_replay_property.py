"""Property: after every drain, the live projections equal a from-scratch replay of the journal.

Random operation sequences (admissions from a small pool of run ids, so duplicates and
conflicts happen, with hostile text, sessions and triggers) are interleaved with ``drain()``.
After each drain the live daily/, audit/ and index rows must equal what ``replay_export`` of
the exported journal prefix builds in a fresh root (DESIGN 7, D5, D10). Admission must never
write a second Admitted event for a run id nor admit conflicting content (B2, B3). It runs
with the journal in SQLite and in PostgreSQL (issue 18).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from journal_backends import BACKENDS, database_of, use_backend
from memory_es.config import parse_config
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn, is_nothing_to_report
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export

FIXTURES = Path(__file__).resolve().parent.parent / "replay_fixtures"


def _load_regenerate() -> ModuleType:
    """The fixture script: its canonical index dump and fake clock are reused here."""
    spec = importlib.util.spec_from_file_location("replay_fixtures_regenerate",
                                                  FIXTURES / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


regen = _load_regenerate()

CONFIGS: dict[str, dict[str, Any]] = {
    "lite": regen.LITE, "journal": regen.JOURNAL_MODE, "bujo": regen.BUJO_AUDIT,
}
RUN_IDS = ("run-a", "run-b", "run-c", "run-d", "run-e", "run-f")
SENTINEL = "NOTHING_TO_REPORT"

FRAGMENTS = (
    "Coffee", "coffee", "COFFEE", "Ｃｏｆｆｅｅ", " order", "oat", "flat white", ".",
    " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\x85",
    "<!--", "-->", "&", "&amp;", "<b>", "</b>", "\x00", "\x07", "\x1b[0m", "\x7f", "\x9b",
    "\u202e", "\u2066", "\u2069", "שלום", "مرحبا", "👩\u200d💻", "👨\u200d👩\u200d👧", "🇮🇱",
    "👍🏽", "東京", "会議", "e\u0301", "é", "ﬁ", "①", "㎏", SENTINEL, "_", "x",
)

answers = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=6).map("".join),
    st.text(max_size=24),
    st.sampled_from(["Coffee order: oat flat white.", " Coffee  order:\toat flat white.\n",
                     "Ｃｏｆｆｅｅ order: oat flat white.", "coffee order: oat flat white.",
                     SENTINEL, f"done\n{SENTINEL}", f"not_{SENTINEL}", " \n\t", ""]),
)
sessions = st.one_of(
    st.none(),
    st.sampled_from(["s-1", "web:thread one", "a=b&c-->", "web:שיחה", "微信:群", "--> <!--"]),
    st.just("web:" + "x" * 509),  # 513 bytes: stored as "unknown" (K7)
    st.just("web:" + "x" * 508),  # exactly 512 bytes: kept
    st.just("é" * 257),  # 514 UTF-8 bytes, 257 characters
    st.text(max_size=8),
)


@dataclass(frozen=True)
class AdmitOp:
    run_id: str
    answer: str
    session: str | None
    trigger: str
    speaker_kind: str

    def turn(self) -> CompletedTurn:
        return CompletedTurn(run_id=self.run_id, outcome="success", answer=self.answer,
                             session=self.session, trigger=self.trigger,
                             speaker_kind=self.speaker_kind)

    def content(self) -> tuple[str, str | None, str, str]:
        return self.answer, self.session, self.trigger, self.speaker_kind


@st.composite
def admit_ops(draw: st.DrawFn) -> AdmitOp:
    trigger = draw(st.sampled_from(["human", "human", "cron", "webhook"]))
    speaker = (draw(st.sampled_from(["human-turn", "unknown"])) if trigger == "human"
               else "trigger")
    return AdmitOp(draw(st.sampled_from(RUN_IDS)), draw(answers), draw(sessions), trigger,
                   speaker)


DRAIN, REOPEN, REBUILD = "drain", "reopen", "rebuild"
operations = st.lists(
    st.one_of(admit_ops(), admit_ops(), st.just(DRAIN), st.sampled_from([REOPEN, REBUILD])),
    max_size=14,
)


def _journal_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _stored_session(session: str | None) -> str | None:
    """K7: a conversation id over 512 UTF-8 bytes is stored as "unknown"."""
    if session is None or len(session.encode("utf-8")) <= 512:
        return session
    return "unknown"


def _ws(text: str) -> str:
    return " ".join(text.split())


class Model:
    """What admission must answer, and which memories the journal must end up holding."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.admitted: dict[str, AdmitOp] = {}  # run id -> the first admitted op

    def expect(self, op: AdmitOp) -> tuple[str, str | None]:
        if is_nothing_to_report(op.answer):
            return "skipped", "nothing_to_report"
        first = self.admitted.get(op.run_id)
        if first is None:
            self.admitted[op.run_id] = op
            return "admitted", None
        if first.content() == op.content():
            return "duplicate", None
        return "rejected", "run_id_conflict"

    def memory_texts(self) -> list[str]:
        """Texts of the memories the admitted turns must yield, sorted."""
        if self.mode == "bujo":
            return []
        ops = self.admitted.values()
        if self.mode == "lite":
            return sorted(t for t in (_ws(op.answer) for op in ops) if t)
        return sorted({t for t in (_ws(unicodedata.normalize("NFKC", op.answer))
                                   for op in ops) if t})


def _check_drain(live: Path, scratch: Path, number: int) -> Path:
    """Export the live journal, replay it into a fresh root, compare the projections."""
    export = scratch / f"export-{number}.jsonl"
    MemoryRoot.open(live).export_to(export)
    replayed = scratch / f"replayed-{number}"
    replay_export(export, replayed)
    live_tree, replayed_tree = regen.projection_tree(live), regen.projection_tree(replayed)
    assert regen.tree_diff(replayed_tree, live_tree) == []
    assert live_tree == replayed_tree
    return export


def _check_journal(export: Path, model: Model) -> None:
    admitted = [e["state"] for e in _journal_events(export)
                if e["topic"] == "memory_es/Intake.Admitted"]
    hashes = [state["run_hash"] for state in admitted]
    assert len(hashes) == len(set(hashes)), "a run id was admitted twice"
    want = {run_hash(rid): op for rid, op in model.admitted.items()}
    assert set(hashes) == set(want)
    for state in admitted:  # the content admitted is the first content, never a conflict
        op = want[state["run_hash"]]
        got = (state["summary"], state["session"], state["trigger"], state["speaker_kind"])
        assert got == op.content()


@pytest.fixture(autouse=True, params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Issue 18: the property holds of a journal on PostgreSQL too (each example's roots get
    databases of their own, so nothing carries over between examples)."""
    return use_backend(request, monkeypatch)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.sampled_from(sorted(CONFIGS)), ops=operations,
       step=st.sampled_from([timedelta(milliseconds=1), timedelta(minutes=37),
                             timedelta(hours=5, milliseconds=7)]))
def test_live_projections_equal_replay_after_every_drain(
    journal_backend: str, mode: str, ops: list[AdmitOp | str], step: timedelta
) -> None:
    model = Model(mode)
    with tempfile.TemporaryDirectory(prefix="replay-property-") as tmp:
        scratch = Path(tmp)
        live = scratch / "live"
        export: Path | None = None
        config, clock = parse_config(CONFIGS[mode]), regen.FakeClock(step=step)
        store = MemoryStore.open(live, config, clock=clock, background=False)
        assert (database_of(live) is not None) == (journal_backend == "postgres")
        try:
            for number, op in enumerate([*ops, DRAIN]):  # always end with a drain
                clock.tick()  # time moves per operation (days are crossed with big steps)
                if op == DRAIN:
                    store.drain()
                    assert store.inspect().counts.pending == 0
                    export = _check_drain(live, scratch, number)
                    _check_journal(export, model)
                elif op == REOPEN:  # pending intakes survive; the next drain projects them
                    store.close()
                    store = MemoryStore.open(live, config, clock=clock, background=False)
                elif op == REBUILD:  # a new index generation replaces the live one (D10)
                    store.rebuild()
                else:
                    assert isinstance(op, AdmitOp)
                    result = store.persist_completed_turn(op.turn())
                    assert (result.status, result.code) == model.expect(op), op
                    if result.status != "skipped":
                        assert result.intake_id == run_hash(op.run_id)
        finally:
            store.close()
        assert export is not None
        rows = [json.loads(line) for line in regen.index_dump(live).splitlines()]
        memories = [r["row"] for r in rows if r["table"] == "memories"]
        # D5: repeats converge only in journal
        assert sorted(row[3] for row in memories) == model.memory_texts()
        audit = [r["row"] for r in rows if r["table"] == "audit"]
        assert sorted(row[1] for row in audit) == (
            sorted(run_hash(rid) for rid in model.admitted) if mode == "bujo" else [])
        by_hash = {run_hash(rid): op for rid, op in model.admitted.items()}
        for session, rh in [(row[8], row[9]) for row in memories] + [
                (row[8], row[1]) for row in audit]:
            assert session == _stored_session(by_hash[rh].session)  # D12, K6, K7
        report = MemoryRoot.open(live).health()
        assert report.status == "clean", report.to_json()
