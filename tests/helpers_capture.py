"""Shared pieces for BuJo capture tests: config, a word-bag embedder, scripted model replies
and a store opened on a fake clock.

The scripted model answers by (stage, intake id); :func:`script` builds its records from plain
Python values, so a test reads as the conversation it models.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_es import fsutil
from memory_es.capture.scripted import ScriptedChat
from memory_es.config import parse_config
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn
from memory_es.store import MemoryStore
from memory_es.testing import WordBagEmbedder

CAPTURE: dict[str, Any] = {"mode": "bujo", "writeMode": "capture",
                           "embeddings": {"dim": 256},
                           "llm": {"provider": "ollama", "model": "m"}}
START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


BagEmbedder = WordBagEmbedder  # the shared deterministic word-bag embedder


def memory(text: str, *, source: str = "user", kind: str = "note", labels: Sequence[str] = (),
           salience: float = 0.8, entities: Sequence[str] = (),
           fact: tuple[str, str, str] | None = None) -> dict[str, Any]:
    """One extracted memory; ``fact`` is (entity ref, key, value)."""
    out: dict[str, Any] = {"text": text, "kind": kind, "labels": list(labels), "source": source,
                           "salience": salience, "entities": list(entities)}
    if fact is not None:
        out["fact"] = {"entity": fact[0], "key": fact[1], "value": fact[2]}
    return out


def entity(id_: str, name: str, type_: str = "person") -> dict[str, Any]:
    return {"id": id_, "name": name, "type": type_}


def extraction(memories: Iterable[dict[str, Any]], entities: Iterable[dict[str, Any]] = (),
               relations: Iterable[tuple[str, str, str]] = ()) -> str:
    return json.dumps({"memories": list(memories), "entities": list(entities),
                       "relations": [{"from": a, "relation": r, "to": b}
                                     for a, r, b in relations]})


def review(*decisions: str) -> str:
    return json.dumps({"decisions": [{"index": i, "decision": d}
                                     for i, d in enumerate(decisions)]})


def reconcile(*decisions: dict[str, Any]) -> str:
    return json.dumps({"decisions": [{"index": i, **d} for i, d in enumerate(decisions)]})


def script(*records: tuple[str, str, str]) -> list[dict[str, str]]:
    """(stage, run id, response or "!error_code") -> ScriptedChat records."""
    out = []
    for stage, run_id, reply in records:
        key = {"stage": stage, "turn": run_hash(run_id)}
        if reply.startswith("!"):
            out.append({**key, "error": reply[1:]})
        else:
            out.append({**key, "response": reply})
    return out


def turn(run_id: str, text: str, *, answer: str = "Noted.", session: str | None = "web:t1",
         speaker_kind: str = "human-turn", trigger: str = "human") -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=answer, capture_text=text,
                         session=session, speaker_kind=speaker_kind, trigger=trigger)


class Clock:
    """A fake clock that moves only when told to."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def open_capture(root: Path, records: Iterable[dict[str, str]], *, clock: Clock | None = None,
                 embedder: BagEmbedder | None = None, **overrides: Any
                 ) -> tuple[MemoryStore, ScriptedChat]:
    """A BuJo capture store with no background worker (tests call drain)."""
    model = ScriptedChat(list(records))
    config = parse_config({**CAPTURE, **overrides})
    store = MemoryStore.open(root, config, clock=clock or Clock(), background=False,
                             embedder=embedder or BagEmbedder(), chat_model=model)
    return store, model


class _InterruptAt:
    """Crash hooks that raise KeyboardInterrupt at one named boundary: an in-process stand-in
    for a kill where the test needs to keep going in the same process."""

    def __init__(self, name: str) -> None:
        self.name = name

    def point(self, name: str) -> None:
        if name == self.name:
            raise KeyboardInterrupt

    def armed(self, name: str) -> bool:
        return False


@contextlib.contextmanager
def interrupt_at(name: str) -> Iterator[None]:
    """Raise KeyboardInterrupt at crash point ``name`` while the block runs."""
    fsutil.set_crash_hooks(_InterruptAt(name))
    try:
        yield
    finally:
        fsutil.set_crash_hooks(None)
