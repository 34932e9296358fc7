"""Strict JSON objects: Python's ``json`` keeps the last of two equal keys silently; a config
file and a model's reply must not, so both decode through :func:`object_pairs` and refuse a
:class:`JsonObject` whose ``duplicates`` is not empty."""

from __future__ import annotations

from typing import Any


class JsonObject(dict[str, Any]):
    """A decoded JSON object that remembers which of its keys appeared more than once (each
    such key once, in the order its first repeat was met)."""

    duplicates: list[str]


def object_pairs(pairs: list[tuple[str, Any]]) -> JsonObject:
    """``json.loads``'s ``object_pairs_hook``: the object, its repeated keys recorded."""
    obj = JsonObject()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj and key not in obj.duplicates:
            obj.duplicates.append(key)
        obj[key] = value
    return obj
