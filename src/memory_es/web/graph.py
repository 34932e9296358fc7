"""The people-and-relations picture: ``graph.jsonl`` read as it stands, laid out on a circle.

The layout is stable: entities sit on one circle in the order of their names (then ids), so
the same graph draws the same picture on every load and a new entity shifts the others by
one place, never reshuffles them. A picture holds at most :data:`MAX_DRAWN` entities: on a
larger graph, the most connected ones (most relations, then most lines, then name order);
around a chosen entity, that entity and those it is related to. The template draws the SVG,
escaping every name like any text (names are a user's words), with no script and no inline
style.
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
    focus: str | None = None  # the chosen entity the picture is drawn around, if any

    @property
    def partial(self) -> bool:
        """The picture leaves some entities out (the list below it has them all)."""
        return len(self.nodes) < len(self.entities)


def read_graph(root: Path, focus: str | None = None) -> Graph:
    """The root's graph (empty when the tier keeps none), drawn around ``focus`` (an entity
    id) when it names one; rows it does not know are skipped."""
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
                                  if r.source in found and r.target in found), focus)


def chosen(entities: tuple[Entity, ...], relations: tuple[Relation, ...],
           focus: str | None) -> tuple[Entity, ...]:
    """The entities one picture draws, in name order (see the module docstring)."""
    if focus is not None and any(e.id == focus for e in entities):
        near = {focus} | {r.target for r in relations if r.source == focus} \
            | {r.source for r in relations if r.target == focus}
        kept = [e for e in entities if e.id in near]
        if len(kept) > MAX_DRAWN:  # the chosen one always, its best-connected neighbours
            kept = [e for e in kept if e.id == focus] + _most_connected(
                tuple(e for e in kept if e.id != focus), relations, MAX_DRAWN - 1)
            kept.sort(key=lambda e: (e.name.casefold(), e.id))
        return tuple(kept)
    if len(entities) <= MAX_DRAWN:
        return entities
    keep = {e.id for e in _most_connected(entities, relations, MAX_DRAWN)}
    return tuple(e for e in entities if e.id in keep)


def _most_connected(entities: tuple[Entity, ...], relations: tuple[Relation, ...],
                    n: int) -> list[Entity]:
    degree: dict[str, int] = {}
    for r in relations:
        degree[r.source] = degree.get(r.source, 0) + 1
        degree[r.target] = degree.get(r.target, 0) + 1
    order = sorted(range(len(entities)), key=lambda i: (
        -degree.get(entities[i].id, 0), -len(entities[i].memories), i))
    return [entities[i] for i in order[:n]]


def layout(entities: tuple[Entity, ...], relations: tuple[Relation, ...],
           focus: str | None = None) -> Graph:
    """The chosen entities on a circle in name order; each relation between two of them a
    line between its ends."""
    drawn = chosen(entities, relations, focus)
    centre = SIZE / 2
    place: dict[str, tuple[float, float]] = {}
    for n, entity in enumerate(drawn):
        angle = 2 * math.pi * n / max(1, len(drawn)) - math.pi / 2
        place[entity.id] = (round(centre + RADIUS * math.cos(angle), 1),
                            round(centre + RADIUS * math.sin(angle), 1))
    nodes = tuple(Node(e, *place[e.id]) for e in drawn)
    edges = tuple(Edge(r, *place[r.source], *place[r.target]) for r in relations
                  if r.source in place and r.target in place)
    return Graph(entities, relations, nodes, edges, SIZE, {e.id: e.name for e in entities},
                 focus if focus in place else None)
