"""Pieces of the attack suite (tests/test_attacks.py); not a test module.

- :func:`tier_config` / :class:`EchoModel`: a root of each tier, BuJo capture with an instant
  offline chat model that extracts one memory per turn, reviews "keep" and ADDs everything.
- :func:`admit_forever`: the body of a child process that admits a few turns as fast as it can
  (then only its worker runs) and sends the run id of each *acknowledged* one
  (``persist_completed_turn`` returned ``admitted``) to the parent before admitting the next;
  the parent SIGKILLs it at a random moment. Sent synchronously over a pipe, so an ack the
  parent holds is one the host saw.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from helpers_capture import entity, extraction, memory, review
from memory_es import CompletedTurn, MemoryStore
from memory_es.capture.models import Message
from memory_es.config import MemoryConfig, parse_config
from memory_es.testing import WordBagEmbedder

TIERS = ("lite", "journal", "bujo_capture")
_CONFIGS: dict[str, dict[str, Any]] = {
    "lite": {"mode": "lite"},
    "journal": {"mode": "journal", "embeddings": {"provider": "local"}},
    "bujo_capture": {"mode": "bujo", "writeMode": "capture",
                     "embeddings": {"provider": "local"},
                     "llm": {"provider": "ollama", "model": "echo"}},
}
_MARKER = re.compile(r"^[ \t]*(stage|turn):[ \t]*(\S+)[ \t]*$", re.MULTILINE)
_CANDIDATE = re.compile(r"^(\d+)\. \[source ", re.MULTILINE)
_OFFERED = re.compile(r"^   - id (m\d+) ", re.MULTILINE)


def tier_config(tier: str) -> MemoryConfig:
    return parse_config(_CONFIGS[tier])


class EchoModel:
    """Instant and offline: extract one memory about a person (so the graph grows), keep it,
    and in reconcile SUPERSEDE the first line offered for every third turn (so the replay
    sidecar grows), ADD otherwise."""

    name = "echo"

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        content = messages[-1].content
        found = dict(_MARKER.findall(content))
        stage, turn = found.get("stage"), found.get("turn", "")
        if stage == "extract":
            return extraction([memory(f"Captured fact {turn[:12]} about Ada", entities=["ada"])],
                              [entity("ada", "Ada Lovelace")])
        if stage == "review":
            return review("keep")
        offered = _OFFERED.findall(content)
        decisions: list[dict[str, Any]] = []
        for i in range(len(_CANDIDATE.findall(content)) or 1):
            if i == 0 and offered and int(turn[:8] or "0", 16) % 3 == 0:
                decisions.append({"index": 0, "action": "SUPERSEDE", "target": offered[0],
                                  "text": f"Captured fact {turn[:12]} about Ada, corrected"})
            else:
                decisions.append({"index": i, "action": "ADD"})
        return json.dumps({"decisions": decisions})


def open_store(root: Path, tier: str, *, background: bool) -> MemoryStore:
    extra: dict[str, Any] = {}
    if tier != "lite":
        extra["embedder"] = WordBagEmbedder()
    if tier == "bujo_capture":
        extra["chat_model"] = EchoModel()
    return MemoryStore.open(root, tier_config(tier), background=background, **extra)


def turn(run_id: str, tier: str) -> CompletedTurn:
    capture = f"Remember that {run_id} happened." if tier == "bujo_capture" else None
    return CompletedTurn(run_id=run_id, outcome="success", answer=f"Answer about {run_id}.",
                         capture_text=capture, session="web:attack", speaker_kind="human-turn")


ADMIT_PER_CHILD = 12  # then the child only runs its worker: kills land in capture work too


def admit_forever(root: str, tier: str, prefix: str, acks: Connection) -> None:
    """Child body: open (with the worker on), admit a few turns, then let the worker run
    until killed. Bounded, so the backlog a final drain must capture stays small."""
    store = open_store(Path(root), tier, background=True)
    acks.send("ready")
    for i in range(ADMIT_PER_CHILD):
        run_id = f"{prefix}-{i}"
        if store.persist_completed_turn(turn(run_id, tier)).status == "admitted":
            acks.send(run_id)
    time.sleep(60)


def three_lines(store: MemoryStore, marker: str) -> None:
    """Three Lite turns, the middle one carrying ``marker``, drained: a root with one line to
    forget or damage between two to keep."""
    for i, answer in enumerate(("The boiler was serviced in April.",
                                f"My locker code word is {marker} today.",
                                "The cat prefers the blue bowl.")):
        store.persist_completed_turn(CompletedTurn(run_id=f"r{i}", outcome="success",
                                                   answer=answer, session="web:c"))
    store.drain()
