"""The migration contract (``memory-es migrate``, C12): one legacy line as BuJo notes::

    {"notes": [{"text": str, "kind": "note"|"event"|"task",
                "labels": ["fact"|"preference"|"lesson", ...], "salience": 0..1}, ...]}

One to :data:`MAX_NOTES` notes per line, each checked like an extracted memory's text (unsafe
text, 2 KiB), parsed by the same strict decoder as capture's contracts: any violation is a
content-free ``model_invalid_output``. The prompt states exactly these rules.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from memory_es.capture.contracts.common import (
    TEXT_MAX_BYTES,
    NonBlank,
    Salience,
    Strict,
    decode,
    distinct,
    require,
    text_rule,
)
from memory_es.capture.models import Message

MAX_NOTES: Final = 8  # like extraction's memories per turn (E2)

MIGRATE_SYSTEM: Final = f"""\
You curate a personal long-term memory. One line of an older, uncurated memory log follows. \
Rewrite it as 1 to {MAX_NOTES} atomic, self-contained notes that keep its meaning and nothing \
more.

Answer with exactly one JSON object and nothing else:
{{"notes": [{{"text": string, "kind": "note"|"event"|"task",
             "labels": array of distinct "fact"|"preference"|"lesson",
             "salience": number from 0 to 1}}]}}

Rules:
- Every field is required; no other field is allowed.
- 1 to {MAX_NOTES} notes; each text is one sentence in the line's language, at most \
{TEXT_MAX_BYTES} UTF-8 bytes, with no HTML comment markers and no secrets.
- "event" for something that happened at a time, "task" for something still to do, else \
"note".
- Never add facts, names or dates the line does not state.
"""


class MigratedNote(Strict, frozen=True):
    """One note a legacy line becomes."""

    text: NonBlank
    kind: Literal["note", "event", "task"]
    labels: Annotated[list[Literal["fact", "preference", "lesson"]], msgspec.Meta(max_length=3)]
    salience: Salience

    def __post_init__(self) -> None:
        require("text", text_rule(self.text, TEXT_MAX_BYTES))
        distinct("labels", self.labels)


class MigrationPlan(Strict, frozen=True):
    """The model's whole answer for one line."""

    notes: Annotated[list[MigratedNote], msgspec.Meta(min_length=1, max_length=MAX_NOTES)]


def parse_migration(raw: str) -> MigrationPlan:
    """The notes of one line, or a content-free ``model_invalid_output``."""
    return decode(raw, MigrationPlan)


def migration_messages(line_id: str, day: str, text: str) -> list[Message]:
    """The call for one line: the rules, then the line with its id and day (the id is the key
    a scripted model answers by, like capture's ``turn:``)."""
    return [Message(role="system", content=MIGRATE_SYSTEM),
            Message(role="user", content=f"stage: migrate\nline: {line_id}\nday: {day}\n\n"
                                         f"{text}")]
