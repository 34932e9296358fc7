"""The layering rules of docs/ARCHITECTURE.md as data, and a checker that reads imports with ast.

Every import counts, including those inside functions and ``TYPE_CHECKING`` blocks: a lazy
import hides a circle from the interpreter, not from a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

# (importer prefix, imported prefix, why): an importer under the first may not import the second.
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("projections", "memory_es.store", "projections never see the store"),
    ("projections", "memory_es.cli", "projections never see the CLI"),
    ("projections", "memory_es.capture", "projections never see capture"),
    ("projections", "memory_es.recall", "projections never see the read path"),
    ("projections", "memory_es.vectors", "projections never see the read path"),
    ("projections", "memory_es.browse", "projections never see the read path"),
    ("projections", "memory_es.calibration", "projections never see the read path"),
    ("projections", "memory_es.worker", "projections never see the worker"),
    ("memory_es.journal", "memory_es.events", "the journal stores bytes, not domain events"),
    ("memory_es.journal", "projections", "the journal knows no projection"),
    ("memory_es.recall", "memory_es.capture", "reading never depends on capture"),
    ("memory_es.recall", "memory_es.browse", "answering a question never browses"),
    ("memory_es.recall", "memory_es.calibration", "answering a question never fits one"),
    ("memory_es.recall.rank", "memory_es.recall.retrieve", "ranking is pure over a pool"),
    ("memory_es.recall.rank", "memory_es.recall.sections", "ranking is pure over a pool"),
    ("memory_es.vectors", "memory_es.recall", "the vectors are the floor recall stands on"),
    ("memory_es.vectors", "memory_es.browse", "the vectors are the floor browsing stands on"),
    ("memory_es.vectors", "memory_es.calibration", "the vectors never see a tool over them"),
    ("memory_es.capture", "projections", "capture learns vocabulary from the domain"),
    ("memory_es.capture", "memory_es.recall", "capture learns vocabulary from the domain"),
    ("memory_es.capture", "memory_es.vectors", "capture learns vocabulary from the domain"),
    ("memory_es.capture", "memory_es.browse", "capture learns vocabulary from the domain"),
    ("memory_es.capture", "memory_es.calibration", "capture learns vocabulary from the domain"),
    ("memory_es.capture", "memory_es.store", "a step never sees the store"),
    ("memory_es.worker", "memory_es.store", "the worker drives a protocol"),
    ("memory_es.step", "memory_es.store", "the step contract belongs to neither side"),
    ("memory_es.step", "memory_es.worker", "the step contract belongs to neither side"),
    ("", "memory_es.cli", "nothing imports the CLI"),
)
# The only memory_es modules projections may import: the domain and the journal's read side.
PROJECTIONS_MAY_IMPORT = (
    "memory_es.errors", "memory_es.events", "memory_es.fsutil", "memory_es.ids",
    "memory_es.journal", "memory_es.text", "memory_es.vocabulary",
)


def _under(name: str, prefix: str) -> bool:
    return prefix == "" or name == prefix or name.startswith(prefix + ".")


def module_names(src: Path) -> dict[str, Path]:
    """Every module under ``src`` by dotted name (a package by its ``__init__``)."""
    names: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def import_graph(src: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``src`` it imports (``from pkg import sub`` names ``pkg.sub``)."""
    names = module_names(src)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")
                    anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in names else base)
        graph[name] = {t for t in targets if t in names and t != name}
    return graph


def violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Every forbidden arrow, as 'importer -> imported: why'."""
    found = []
    for importer, targets in sorted(graph.items()):
        for target in sorted(targets):
            for src_prefix, dst_prefix, why in FORBIDDEN:
                if _under(importer, src_prefix) and _under(target, dst_prefix) \
                        and not _under(importer, dst_prefix):
                    found.append(f"{importer} -> {target}: {why}")
            if _under(importer, "projections") and _under(target, "memory_es") \
                    and not any(_under(target, p) for p in PROJECTIONS_MAY_IMPORT) \
                    and target != "memory_es":
                found.append(f"{importer} -> {target}: projections import only the domain")
    return found


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Import circles (strongly connected components of more than one module, or a self-loop),
    found with Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
