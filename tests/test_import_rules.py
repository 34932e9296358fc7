"""Issue 11: the layering of docs/ARCHITECTURE.md holds in src/, and the checker catches a
planted violation and a planted circle (so a green run means something)."""

from __future__ import annotations

from pathlib import Path

import pytest

from import_rules import FORBIDDEN, cycles, import_graph, violations

SRC = Path(__file__).resolve().parents[1] / "src"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


def test_src_has_no_forbidden_arrow_and_no_circle() -> None:
    graph = import_graph(SRC)
    assert "memory_es.store.facade" in graph and "projections.replay" in graph  # really read
    for room in ("memory_es.vectors.matrix", "memory_es.browse.journal",
                 "memory_es.calibration.fit", "memory_es.recall.rank.score",
                 "memory_es.recall.retrieve.candidates", "memory_es.recall.sections.result"):
        assert room in graph  # the rooms the newer rules name are really read
    assert violations(graph) == []
    assert cycles(graph) == []


def test_checker_reports_a_planted_forbidden_arrow(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "memory_es/__init__.py": "",
        "memory_es/store/__init__.py": "",
        "memory_es/cli.py": "from memory_es.store import MemoryStore\n",
        "memory_es/events.py": "",
        "memory_es/journal/__init__.py": "",
        "memory_es/journal/codec.py": "def f():\n    from memory_es import events\n",
        "projections/__init__.py": "",
        "projections/replay.py": "from ..memory_es import cli\nimport memory_es.store\n",
    })
    found = violations(import_graph(src))
    assert "memory_es.journal.codec -> memory_es.events: the journal stores bytes, not domain " \
           "events" in found  # an import inside a function counts
    assert "projections.replay -> memory_es.store: projections never see the store" in found
    assert any(v.startswith("projections.replay -> memory_es.store: projections import only")
               for v in found)


def test_checker_reports_a_planted_circle(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "memory_es/__init__.py": "",
        "memory_es/worker.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from memory_es.store import MemoryStore\n",
        "memory_es/store.py": "from memory_es.worker import Worker\n",
        "memory_es/text.py": "from . import text\n",
    })
    graph = import_graph(src)
    assert cycles(graph) == [["memory_es.store", "memory_es.worker"]]
    assert "memory_es.worker -> memory_es.store: the worker drives a protocol" in violations(graph)


# The rooms' floors (docs/ARCHITECTURE.md): (importer, imported, why), each planted below.
ROOM_RULES = [
    ("memory_es.vectors.matrix", "memory_es.recall.engine",
     "the vectors are the floor recall stands on"),
    ("memory_es.vectors.matrix", "memory_es.browse.journal",
     "the vectors are the floor browsing stands on"),
    ("memory_es.vectors.matrix", "memory_es.calibration.fit",
     "the vectors never see a tool over them"),
    ("memory_es.recall.engine", "memory_es.browse.journal", "answering a question never browses"),
    ("memory_es.recall.engine", "memory_es.calibration.fit",
     "answering a question never fits one"),
    ("memory_es.recall.rank.score", "memory_es.recall.retrieve.candidates",
     "ranking is pure over a pool"),
    ("memory_es.recall.rank.score", "memory_es.recall.sections.result",
     "ranking is pure over a pool"),
    ("memory_es.capture.extract", "memory_es.vectors.matrix",
     "capture learns vocabulary from the domain"),
    ("memory_es.capture.extract", "memory_es.browse.journal",
     "capture learns vocabulary from the domain"),
    ("memory_es.capture.extract", "memory_es.calibration.fit",
     "capture learns vocabulary from the domain"),
    ("projections.replay", "memory_es.vectors.matrix", "projections never see the read path"),
    ("projections.replay", "memory_es.browse.journal", "projections never see the read path"),
    ("projections.replay", "memory_es.calibration.fit", "projections never see the read path"),
]
_ROOM_TREE = ["memory_es/__init__.py", "memory_es/vectors/__init__.py",
              "memory_es/vectors/matrix.py", "memory_es/browse/__init__.py",
              "memory_es/browse/journal.py", "memory_es/calibration/__init__.py",
              "memory_es/calibration/fit.py", "memory_es/recall/__init__.py",
              "memory_es/recall/engine.py", "memory_es/recall/rank/__init__.py",
              "memory_es/recall/rank/score.py", "memory_es/recall/retrieve/__init__.py",
              "memory_es/recall/retrieve/candidates.py", "memory_es/recall/sections/__init__.py",
              "memory_es/recall/sections/result.py", "memory_es/capture/__init__.py",
              "memory_es/capture/extract.py", "projections/__init__.py", "projections/replay.py"]


def test_every_room_rule_is_a_forbidden_arrow() -> None:
    for importer, imported, why in ROOM_RULES:
        assert any(importer.startswith(a) and imported.startswith(b) and why == w
                   for a, b, w in FORBIDDEN), (importer, imported)


@pytest.mark.parametrize(("importer", "imported", "why"), ROOM_RULES)
def test_checker_reports_a_planted_room_violation(tmp_path: Path, importer: str, imported: str,
                                                  why: str) -> None:
    """Each floor of the rooms, planted alone on a synthetic tree (a lazy import inside a
    function, which still counts), is reported by name; the same tree without it is clean."""
    files = dict.fromkeys(_ROOM_TREE, "")
    clean = violations(import_graph(_tree(tmp_path / "clean", files)))
    assert clean == []
    planted = importer.replace(".", "/") + ".py"
    files[planted] = f"def f() -> None:\n    import {imported}\n"
    found = violations(import_graph(_tree(tmp_path / "planted", files)))
    assert f"{importer} -> {imported}: {why}" in found
