"""Scripted chat replies, read from JSONL and keyed by stage and turn: for tests, replay
fixtures and the demo, never a real model (:class:`ScriptedChat`)."""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from memory_es.capture.models import (
    CONFIG_INVALID,
    INVALID_OUTPUT,
    Message,
    ModelError,
    check_call,
)

__all__ = ["ScriptedChat"]

Stage = Literal["extract", "review", "reconcile"]
ScriptedErrorCode = Literal["model_timeout", "model_unavailable", "model_invalid_output",
                            "model_request_rejected"]


class _ScriptRecord(msgspec.Struct, forbid_unknown_fields=True):
    stage: Stage
    turn: str
    response: str | None = None
    error: ScriptedErrorCode | None = None


_MARKER = re.compile(r"^[ \t]*(stage|turn):[ \t]*(\S+)[ \t]*$", re.MULTILINE)


def _markers(messages: Sequence[Message]) -> tuple[str | None, str | None]:
    """``stage: X`` / ``turn: Y`` lines of the last user message (the first of each wins)."""
    for message in reversed(messages):
        if message.role == "user":
            found: dict[str, str] = {}
            for key, value in _MARKER.findall(message.content):
                found.setdefault(key, value)
            return found.get("stage"), found.get("turn")
    return None, None


class ScriptedChat:
    """Replies read from a script: one JSON object per line (JSONL), or the same records given
    directly as mappings::

        {"stage": "extract", "turn": "<run id or intake id>", "response": "<reply text>"}
        {"stage": "review", "turn": "<id>", "error": "model_timeout"}

    ``stage`` is ``extract``, ``review`` or ``reconcile``; each record holds exactly one of
    ``response`` or ``error`` (a :class:`ModelError` code to raise, to simulate a failure). A
    (stage, turn) key may appear several times: its records are used in file order, one per
    call, so retries can see a failure and then a success. A call names its key with the
    ``stage``/``turn`` keyword arguments or, to fit the plain :class:`ChatModel` protocol, with
    ``stage: X`` and ``turn: Y`` lines in the last user message (keyword arguments win). An
    unknown or used-up key raises ``model_invalid_output``. ``calls`` logs every call's
    (stage, turn), failed ones included.
    """

    def __init__(self, source: str | Path | Iterable[Mapping[str, Any]], *,
                 name: str = "scripted") -> None:
        self.name = name
        self.calls: list[tuple[str | None, str | None]] = []
        self._lock = threading.Lock()
        self._queues: dict[tuple[str, str], deque[_ScriptRecord]] = {}
        self._used: dict[tuple[str, str], int] = {}
        for where, record in self._load(source):
            if (record.response is None) == (record.error is None):
                raise ModelError(f"{where}: a script record needs exactly one of "
                                 f'"response" or "error"', code=CONFIG_INVALID)
            self._queues.setdefault((record.stage, record.turn), deque()).append(record)

    @staticmethod
    def _load(source: str | Path | Iterable[Mapping[str, Any]]
              ) -> Iterable[tuple[str, _ScriptRecord]]:
        if isinstance(source, str | Path):
            path = Path(source)
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise ModelError(f"cannot read chat script {path}: {exc}",
                                 code=CONFIG_INVALID) from exc
            out = []
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    out.append((where, msgspec.json.decode(line, type=_ScriptRecord,
                                                           strict=True)))
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    raise ModelError(f"{where}: invalid script record: {exc}",
                                     code=CONFIG_INVALID) from exc
            return out
        out = []
        for index, item in enumerate(source):
            where = f"script record {index}"
            try:
                out.append((where, msgspec.convert(dict(item), type=_ScriptRecord, strict=True)))
            except (msgspec.ValidationError, TypeError, ValueError) as exc:
                raise ModelError(f"{where}: invalid script record: {exc}",
                                 code=CONFIG_INVALID) from exc
        return out

    def remaining(self) -> dict[tuple[str, str], int]:
        """Records not yet used, per (stage, turn) key (empty keys left out)."""
        with self._lock:
            return {key: len(queue) for key, queue in self._queues.items() if queue}

    def complete(self, messages: Sequence[Message], *, timeout: float,
                 stage: str | None = None, turn: str | None = None) -> str:
        checked = check_call(messages, timeout)
        marked_stage, marked_turn = _markers(checked)
        stage = stage if stage is not None else marked_stage
        turn = turn if turn is not None else marked_turn
        with self._lock:
            self.calls.append((stage, turn))
            if stage is None or turn is None:
                raise ModelError(f"{self.name}: the call names no stage and turn (pass "
                                 f'stage=/turn= or put "stage: X" and "turn: Y" lines in the '
                                 f"last user message)", code=INVALID_OUTPUT)
            key = (stage, turn)
            queue = self._queues.get(key)
            if queue is None:
                raise ModelError(f"{self.name}: no scripted response for stage {stage!r} "
                                 f"turn {turn!r}", code=INVALID_OUTPUT)
            if not queue:
                raise ModelError(f"{self.name}: scripted responses for stage {stage!r} turn "
                                 f"{turn!r} are used up ({self._used[key]} used)",
                                 code=INVALID_OUTPUT)
            record = queue.popleft()
            self._used[key] = self._used.get(key, 0) + 1
        if record.error is not None:
            raise ModelError(f"{self.name}: scripted {record.error} for stage {stage!r} "
                             f"turn {turn!r}", code=record.error)
        assert record.response is not None
        return record.response
