"""Issue 11: the layering of docs/ARCHITECTURE.md holds in src/, and the checker catches a
planted violation and a planted circle (so a green run means something)."""

from __future__ import annotations

from pathlib import Path

from import_rules import cycles, import_graph, violations

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
