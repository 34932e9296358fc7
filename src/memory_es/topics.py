"""Resolving a stored event's topic to its class, when the class may not be imported yet.

Each event class registers its explicit topic with eventsourcing as the class is built, so a
topic resolves only once its module was imported. The domain imports its event modules on
first use (:mod:`memory_es.events`), and hands :func:`resolve_missing_with` the one function
that imports them all; :func:`resolve` calls it when it meets a topic nothing registered, then
tries once more. The journal's mapper resolves through here and so knows no event class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventsourcing.utils import TopicError, resolve_topic

_load_all: list[Callable[[], None]] = []


def resolve_missing_with(load_all: Callable[[], None]) -> None:
    """What :func:`resolve` calls for a topic no imported class has registered."""
    if load_all not in _load_all:
        _load_all.append(load_all)


def resolve(topic: str) -> Any:
    """The class ``topic`` names; ``TopicError`` for a topic no event class carries."""
    try:
        return resolve_topic(topic)
    except TopicError:
        if not _load_all:
            raise
    for load in _load_all:
        load()
    return resolve_topic(topic)
