"""Projection equivalence, one suite per tier (DESIGN 7, D10): the live projections of a root
are what a from-scratch replay of its journal gives.

:class:`ProjectionEquivalenceContract` holds the tests; it is not collected itself (its name
does not start with ``Test``). Each ``Test*`` subclass names a tier (its ``memory`` block) and
may replace the scenario (:meth:`~ProjectionEquivalenceContract.steps`) and, for BuJo capture,
the scripted model replies. Per tier the scenario is built live once (``MemoryStore`` with a
fake clock, drains over two days, a duplicate admission, a repeated text and one turn left
undrained; every admission status and drain count checked by ``regen.run_spec``), then:

- ``MemoryRoot.open(root).health()`` is clean, projections level with the journal;
- ``memory-es replay`` of ``MemoryRoot.open(root).export_to(path)`` into a new root gives
  byte-identical daily/, audit/, graph.jsonl and sidecar files and the same canonical index
  dump (``regen.projection_tree``), is healthy and exports the same journal bytes;
- ``memory-es rebuild`` of a copy of the live root changes none of those bytes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

from helpers_replay import regen
from memory_es.capture.scripted import ScriptedChat
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.ids import run_hash
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from projections.consolidation import INDEX_FILE
from projections.graph import GRAPH_FILE, SIDECAR_FILE

Admit, Drain, cron = regen.Admit, regen.Drain, regen.cron
extract, review, reconcile, memory, entity = (regen.extract, regen.review, regen.reconcile,
                                              regen.memory, regen.entity)

START = datetime(2026, 3, 1, 22, 30, tzinfo=UTC)
STEP = timedelta(minutes=31, seconds=7, milliseconds=3)  # the scenario crosses midnight

REPEATED = "Lantern festival on Friday"
UNDRAINED = "pe-undrained"


@dataclass(frozen=True)
class Roots:
    live: Path
    export: Path
    events: int  # how many events the export holds
    replayed: Path


def kinds(tree: dict[str, bytes]) -> set[str]:
    """Which projections a tree holds: daily, audit, graph.jsonl, the sidecar."""
    return {rel.split("/", 1)[0] if "/" in rel else rel for rel in tree} - {regen.INDEX_DUMP}


def cli(*argv: str) -> int:
    return main(list(argv))


class ProjectionEquivalenceContract:
    """Live projections equal a from-scratch replay; subclasses name the tier."""

    #: the ``memory`` block of the tier
    config: ClassVar[dict[str, Any]]
    #: the projections the tier writes (directories and root files, by name)
    writes: ClassVar[set[str]]
    #: test name -> why the tier does not keep that promise yet (a strict xfail)
    known_gaps: ClassVar[Mapping[str, str]] = {}

    @pytest.fixture(autouse=True)
    def _known_gap(self, request: pytest.FixtureRequest) -> None:
        reason = self.known_gaps.get(request.function.__name__)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True,
                                                  raises=AssertionError))

    # -- factories --------------------------------------------------------------------------

    def steps(self) -> tuple[Any, ...]:
        """The scenario: admissions (with their expected status) and drains (with their
        expected count)."""
        return (
            Admit("pe-1", REPEATED, session="web:x"),
            Admit("pe-2", "Harbour tides  at dawn", session="web:y"),
            Drain(expect=2),
            Admit("pe-1", REPEATED, session="web:x", expect="duplicate"),
            Admit("pe-3", REPEATED, session="web:z"),  # the same text, another run
            Admit("pe-4", "Ｑｕｉｎｃｅ jelly recipe"),
            Drain(expect=2),
            Admit("pe-5", "Orchard pruning <!-- late --> & more", session="é" * 300),
            cron("pe-6", "Cron: feeds fine"),
            Drain(expect=2),
            Admit(UNDRAINED, "Undrained at export time", session="web:q"),
        )

    def script(self) -> tuple[Any, ...]:
        """Scripted model replies (BuJo capture only)."""
        return ()

    def calls(self) -> tuple[tuple[str, str], ...]:
        """The model calls the build must make, as (stage, run id) (BuJo capture only)."""
        return ()

    def memories(self) -> tuple[tuple[str, str, str, str], ...]:
        """The memory lines the build must end with (BuJo capture only)."""
        return ()

    def spec(self) -> Any:
        return regen.Spec(name=type(self).__name__, description="", config=self.config,
                          steps=self.steps(), start=START, step=STEP, script=self.script(),
                          calls=self.calls(), memories=self.memories())

    # -- the roots, built once per tier -----------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def roots(cls, tmp_path_factory: pytest.TempPathFactory) -> Roots:
        base = tmp_path_factory.mktemp(cls.__name__)
        spec = cls().spec()
        live, export, replayed = base / "live", base / "export.jsonl", base / "replayed"
        script = None
        if spec.script:
            script = base / regen.MODEL
            script.write_bytes(regen.model_script(spec))
        regen.run_spec(spec, live, script)
        # Reopening catches the projections up with the undrained admission (it asks no model
        # and processes nothing).
        config = parse_config(cls.config)
        model = ScriptedChat([])
        embedder = (regen.fixture_embedder(config.embeddings.dim)
                    if config.embeddings is not None else None)
        with MemoryStore.open(live, config, background=False, chat_model=model,
                              embedder=embedder):
            pass
        assert model.calls == []
        events = MemoryRoot.open(live).export_to(export)
        assert events > 0
        assert cli("--root", str(replayed), "replay", str(export)) == 0
        return Roots(live, export, events, replayed)

    # -- the tests ----------------------------------------------------------------------------

    def test_the_journal_holds_each_admitted_run_once(self, roots: Roots) -> None:
        admitted = {step.run_id for step in self.steps()
                    if isinstance(step, Admit) and step.expect == "admitted"}
        report = MemoryRoot.open(roots.live).inspect()
        assert report.counts.total == len(admitted)
        pending = [r.id for r in report.records if r.state == "pending"]
        assert pending == [run_hash(UNDRAINED)]  # journalled, not yet processed

    def test_the_live_root_is_healthy(self, roots: Roots) -> None:
        report = MemoryRoot.open(roots.live).health()
        assert report.status == "clean", report.to_json()
        assert report.findings == ()
        assert report.projection_position == report.journal_position > 0

    def test_the_tier_writes_its_projections(self, roots: Roots) -> None:
        tree = regen.projection_tree(roots.live)
        assert kinds(tree) == self.writes
        assert all(tree.values())  # the index dump included: no projection is empty

    def test_a_replay_of_the_export_is_byte_identical(self, roots: Roots) -> None:
        live, replayed = regen.projection_tree(roots.live), regen.projection_tree(roots.replayed)
        assert regen.tree_diff(live, replayed) == []
        assert replayed[regen.INDEX_DUMP] == live[regen.INDEX_DUMP]

    def test_the_replayed_root_is_healthy(self, roots: Roots) -> None:
        report = MemoryRoot.open(roots.replayed).health()
        assert report.projection_position == report.journal_position == roots.events
        assert [(f.code, f.detail) for f in report.findings] == []
        assert report.status == "clean"

    def test_the_replayed_root_exports_the_same_journal(
            self, roots: Roots, tmp_path: Path) -> None:
        again = tmp_path / "again.jsonl"
        assert MemoryRoot.open(roots.replayed).export_to(again) == roots.events
        assert again.read_bytes() == roots.export.read_bytes()

    def test_a_rebuild_in_place_changes_no_byte(self, roots: Roots, tmp_path: Path) -> None:
        copy = tmp_path / "copy"
        shutil.copytree(roots.live, copy)
        os.chmod(copy, 0o700)
        before = regen.projection_tree(copy)
        assert cli("--root", str(copy), "rebuild") == 0
        assert regen.tree_diff(before, regen.projection_tree(copy)) == []
        assert MemoryRoot.open(copy).health().status == "clean"


# --------------------------------------------------------------------------------------------
# One subclass per tier


class TestLite(ProjectionEquivalenceContract):
    config: ClassVar[dict[str, Any]] = {}
    writes: ClassVar[set[str]] = {"daily"}


class TestJournal(ProjectionEquivalenceContract):
    config: ClassVar[dict[str, Any]] = {"mode": "journal", "embeddings": {"dim": 384}}
    writes: ClassVar[set[str]] = {"daily"}


class TestBujoAppendHostSummary(ProjectionEquivalenceContract):
    config: ClassVar[dict[str, Any]] = {
        "mode": "bujo", "writeMode": "append-host-summary", "embeddings": {"dim": 384},
        "llm": {"provider": "ollama", "model": "m"}}
    writes: ClassVar[set[str]] = {"audit", INDEX_FILE}  # L6: every BuJo root has its living index


class TestBujoCapture(ProjectionEquivalenceContract):
    """BuJo capture with scripted model replies and the word-bag embedder (``run_spec``):
    relations (graph.jsonl), a reconcile ADD and a SUPERSEDE (the sidecar's lifecycle), and
    the repeated text a structural NOOP."""

    config: ClassVar[dict[str, Any]] = {
        "mode": "bujo", "writeMode": "capture", "embeddings": {"dim": 256},
        "llm": {"provider": "ollama", "model": "m"}}
    writes: ClassVar[set[str]] = {"daily", "audit", GRAPH_FILE, SIDECAR_FILE, INDEX_FILE}
    known_gaps: ClassVar[Mapping[str, str]] = {
        "test_the_replayed_root_is_healthy":
            "an export carries events, not payloads: the capture intake pending at export "
            "time has no payload in the replayed root (health: payload_missing)",
    }

    def steps(self) -> tuple[Any, ...]:
        return (
            Admit("pe-1", "Noted: Morgan is at Acme.", session="web:x",
                  capture_text="Morgan works at Acme Robotics."),
            Admit("pe-2", "Window seats it is.", session="web:y",
                  capture_text="I prefer window seats on trains."),
            Drain(expect=2),
            Admit("pe-1", "Noted: Morgan is at Acme.", session="web:x", expect="duplicate",
                  capture_text="Morgan works at Acme Robotics."),
            Admit("pe-3", "Window seats, noted again.", session="web:z",
                  capture_text="I prefer window seats on trains."),  # the same text again
            Admit("pe-4", "Berlin, noted.", capture_text="Morgan lives in Berlin."),
            Drain(expect=2),
            Admit("pe-5", "Got it, Madrid <!-- x --> & more.", session="é" * 300,
                  capture_text="Actually Morgan moved to Madrid last month."),
            cron("pe-6", "Cron: feeds fine"),
            Drain(expect=2),
            Admit(UNDRAINED, "Undrained at export time", session="web:q",
                  capture_text="Nothing processed yet."),
        )

    def script(self) -> tuple[Any, ...]:
        return (
            extract("pe-1", [memory("Morgan works at Acme Robotics", salience=0.9,
                                    entities=["m", "a"])],
                    [entity("m", "Morgan", "person"),
                     entity("a", "Acme Robotics", "organization")],
                    [("m", "works_at", "a")]),
            review("pe-1", "keep"),
            extract("pe-2", [memory("I prefer window seats on trains", labels=["preference"])]),
            extract("pe-3", [memory("I prefer window seats on trains", labels=["preference"])]),
            extract("pe-4", [memory("Morgan lives in Berlin", entities=["m"])],
                    [entity("m", "Morgan", "person")]),
            review("pe-4", "keep"),
            reconcile("pe-4", {"action": "ADD"}),
            extract("pe-5", [memory("Morgan moved to Madrid last month", salience=0.9,
                                    entities=["m"])],
                    [entity("m", "Morgan", "person")]),
            review("pe-5", "keep"),
            reconcile("pe-5", {"action": "SUPERSEDE", "target": "m1",
                               "text": "Morgan lives in Madrid"}),
            extract("pe-6", []),  # the cron report holds nothing worth keeping
        )

    def calls(self) -> tuple[tuple[str, str], ...]:
        return (
            ("extract", "pe-1"), ("review", "pe-1"),
            ("extract", "pe-2"),
            ("extract", "pe-3"),
            ("extract", "pe-4"), ("review", "pe-4"), ("reconcile", "pe-4"),
            ("extract", "pe-5"), ("review", "pe-5"), ("reconcile", "pe-5"),
            ("extract", "pe-6"),
        )

    def memories(self) -> tuple[tuple[str, str, str, str], ...]:
        return (
            ("Morgan works at Acme Robotics", "note", "open", "fact"),
            ("I prefer window seats on trains", "note", "open", "fact,preference"),
            ("Morgan lives in Berlin", "note", "superseded", "fact"),
            ("Morgan lives in Madrid", "note", "open", "fact"),
        )
