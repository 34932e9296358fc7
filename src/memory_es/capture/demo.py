"""The BuJo capture part of ``memory-es demo``: two owner turns, a correction that supersedes.

The chat model is :class:`DemoChat`, a tiny offline stand-in that answers the three capture
calls the way a good model would for these two turns (no network, no download); embeddings come
from the offline ``local`` provider. Everything else is the real pipeline: strict parsing,
retained stages, guards, one atomic commit, graph and sidecar projections, health.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from memory_es.capture.models import Message, ModelError, check_call
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn

DEMO_CONFIG = {"mode": "bujo", "writeMode": "capture",
               "embeddings": {"provider": "local"},
               "llm": {"provider": "ollama", "model": "demo"}}

FIRST = CompletedTurn(
    run_id="demo-capture-1", outcome="success", session="web:demo", speaker_kind="human-turn",
    capture_text="My sister Morgan lives in Berlin and works at Acme Robotics. "
                 "I prefer window seats on trains.",
    answer="Noted: Morgan is in Berlin at Acme Robotics, and you like window seats.")
SECOND = CompletedTurn(
    run_id="demo-capture-2", outcome="success", session="web:demo-2",
    speaker_kind="human-turn",
    capture_text="Correction: Morgan moved to Madrid last month.",
    answer="Thanks, I'll remember that Morgan lives in Madrid now.")

_EXTRACTIONS = {
    FIRST.run_id: {
        "memories": [
            {"text": "Morgan, the user's sister, lives in Berlin", "kind": "note",
             "labels": ["fact"], "source": "user", "salience": 0.8, "entities": ["morgan"]},
            {"text": "Morgan works at Acme Robotics", "kind": "note", "labels": ["fact"],
             "source": "user", "salience": 0.7, "entities": ["morgan", "acme"]},
            {"text": "The user prefers window seats on trains", "kind": "note",
             "labels": ["preference"], "source": "user", "salience": 0.6, "entities": []},
            {"text": "The assistant looked up nothing", "kind": "note", "labels": [],
             "source": "assistant", "salience": 0.2, "entities": []}],
        "entities": [{"id": "morgan", "name": "Morgan", "type": "person"},
                     {"id": "acme", "name": "Acme Robotics", "type": "organization"}],
        "relations": [{"from": "morgan", "to": "acme", "relation": "works_at"}]},
    SECOND.run_id: {
        "memories": [
            {"text": "Morgan moved to Madrid in 2026-11", "kind": "note", "labels": ["fact"],
             "source": "user", "salience": 0.8, "entities": ["morgan"]}],
        "entities": [{"id": "morgan", "name": "Morgan", "type": "person"}],
        "relations": []},
}
_TURN = re.compile(r"^turn: (\S+)$", re.MULTILINE)
_LISTED = re.compile(r"^(\d+)\. ", re.MULTILINE)
_OFFERED = re.compile(r"^   - id (m\d+) \[[^\]]*\] (.*)$", re.MULTILINE)


class DemoChat:
    """Answers extract / review / reconcile for the demo turns; anything else is refused."""

    name = "demo"

    def __init__(self, run_ids: Callable[[str], str] = run_hash) -> None:
        """``run_ids`` maps a run id to the intake id the capture prompt names (the
        engine's ``run_hash``)."""
        self._plans = {run_ids(run_id): plan for run_id, plan in _EXTRACTIONS.items()}
        self.calls: list[str] = []

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        prompt = check_call(messages, timeout)[-1].content
        stage = prompt.split("\n", 1)[0].removeprefix("stage: ")
        found = _TURN.search(prompt)
        turn = found.group(1) if found else ""
        self.calls.append(stage)
        if stage == "extract" and turn in self._plans:
            return json.dumps(self._plans[turn])
        if stage == "review":
            return json.dumps({"decisions": [{"index": int(i), "decision": "keep"}
                                             for i in _LISTED.findall(prompt)]})
        berlin = [ref for ref, text in _OFFERED.findall(prompt) if "Berlin" in text]
        listed = _LISTED.findall(prompt)
        if stage == "reconcile" and berlin and len(listed) == 1:
            # the user's own word wins: supersede the Berlin line
            (index,), target = listed, berlin[0]
            return json.dumps({"decisions": [{
                "index": int(index), "action": "SUPERSEDE", "target": target,
                "text": "Morgan, the user's sister, lives in Madrid (moved 2026-11)"}]})
        raise ModelError(f"demo model has no answer for stage {stage!r}",
                         code="model_invalid_output")
