"""The people-and-relations picture: ``graph.jsonl`` read as it stands, laid out on a circle.

The layout is stable: entities sit on one circle in the order of their names (then ids), so
the same graph draws the same picture on every load and a new entity shifts the others by
one place, never reshuffles them. The SVG is made here, as markup the template escapes like
any text (names are a user's words), with no script and no inline style.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

GRAPH_FILE: Final = "graph.jsonl"
SIZE: Final = 640  # the picture's width and height, in SVG units
RADIUS: Final = 250
MAX_DRAWN: Final = 200  # past this many entities the picture would be a blot: the list remains


@dataclass(frozen=True, slots=True)
class Entity:
    id: str
    name: str
    type: str
    memories: tuple[str, ...] = ()  # ids of the lines associated with it, in graph order


@dataclass(frozen=True, slots=True)
class Relation:
    source: str  # entity ids
    target: str
    relation: str
    memory: str


@dataclass(frozen=True, slots=True)
class Node:
    entity: Entity
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Edge:
    relation: Relation
    x1: float
    y1: float
    x2: float
    y2: float


@dataclass(frozen=True, slots=True)
class Graph:
    entities: tuple[Entity, ...] = ()
    relations: tuple[Relation, ...] = ()
    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    size: int = SIZE
    names: dict[str, str] = field(default_factory=dict)  # entity id -> name


def read_graph(root: Path) -> Graph:
    """The root's graph (empty when the tier keeps none); rows it does not know are skipped."""
    try:
        lines = (root / GRAPH_FILE).read_text("utf-8").splitlines()
    except FileNotFoundError:
        return Graph()
    found: dict[str, dict[str, Any]] = {}
    memories: dict[str, list[str]] = {}
    relations: list[Relation] = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        kind = row.get("kind")
        if kind == "entity" and isinstance(row.get("id"), str):
            found[row["id"]] = row
        elif kind == "association":
            memories.setdefault(str(row.get("entity")), []).append(str(row.get("memory")))
        elif kind == "relation":
            relations.append(Relation(str(row.get("from")), str(row.get("to")),
                                      str(row.get("relation")), str(row.get("memory"))))
    entities = tuple(sorted(
        (Entity(i, str(r.get("name", "")), str(r.get("type", "")),
                tuple(memories.get(i, ()))) for i, r in found.items()),
        key=lambda e: (e.name.casefold(), e.id)))
    return layout(entities, tuple(r for r in relations
                                  if r.source in found and r.target in found))


def layout(entities: tuple[Entity, ...], relations: tuple[Relation, ...]) -> Graph:
    """Entities on a circle in name order; each relation a line between its two ends."""
    drawn = entities[:MAX_DRAWN]
    centre = SIZE / 2
    place: dict[str, tuple[float, float]] = {}
    for n, entity in enumerate(drawn):
        angle = 2 * math.pi * n / max(1, len(drawn)) - math.pi / 2
        place[entity.id] = (round(centre + RADIUS * math.cos(angle), 1),
                            round(centre + RADIUS * math.sin(angle), 1))
    nodes = tuple(Node(e, *place[e.id]) for e in drawn)
    edges = tuple(Edge(r, *place[r.source], *place[r.target]) for r in relations
                  if r.source in place and r.target in place)
    return Graph(entities, relations, nodes, edges, SIZE, {e.id: e.name for e in entities})
